"""The distributed KVStore on Ray (``dist_sync``, ``dist_async``, ``dist_device_sync``).

One concept per module:

=================  ==========================================================
``job``            the job's settings from the environment; joining Ray
``sharding``       which shard holds which part of a key
``rounds``         sync rounds, async order and exactly-once sequence numbers
``shard``          the server shard actor (MXNet's KVStoreDistServer)
``coordinator``    ranks, heartbeats, barriers, the command log (the scheduler)
``checkpoint``     shard checkpoints: append-only logs of what changed
``channel``        a worker's calls to the shards: waits, timeouts, resends
``worker``         the worker's store (MXNet's KVStoreDist)
``p3``             P3: priority-ordered sending within a window of bytes
``states``         optimizer states gathered from / scattered to the shards
``cluster``        creating and removing a job's actors
``launch``         ``mxkv launch``
=================  ==========================================================

Ray is imported only when a distributed store is created, so ``import mxkv``
works without it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["create_dist"]


def create_dist(name: str) -> Any:
    """Build the store for a ``dist*`` type name (``mx.kv.create`` calls this).

    In a worker process it joins the job in the environment; in a server
    process (``DMLC_ROLE=server``) it returns the handle that
    :class:`~mxkv.kvstore.kvstore_server.KVStoreServer` runs.
    """
    from .job import JobEnv

    job = JobEnv.from_env(name)
    if job.role in ("server", "scheduler"):
        from .server_process import ServerHandle

        return ServerHandle(name, job)
    from .worker import DistKVStore

    return DistKVStore(name, job)
