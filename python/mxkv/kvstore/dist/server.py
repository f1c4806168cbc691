"""A server process of a job (``DMLC_ROLE=server``), as MXNet starts them.

MXNet's launch scripts start server processes that create a ``dist`` store
and run :class:`~mxkv.kvstore.kvstore_server.KVStoreServer` on it (in
Clojure, ``kvstore-server/init`` then ``kvstore-server/start``). In mxkv the
server shards are Ray actors the job already has, so such a process joins
the job as a server, tells the coordinator where it runs, and blocks until
every worker has left (or the job is stopped); then it returns, and the
process can exit as MXNet's servers do.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from ...base import MXNetError
from ..base import KVStoreBase
from .job import NAMESPACE, JobEnv, connect, coordinator_name, host_label

__all__ = ["ServerHandle"]

log = logging.getLogger("mxkv.kvstore.dist")


class ServerHandle(KVStoreBase):
    """What ``mx.kv.create('dist')`` returns in a server process."""

    def __init__(self, name: str, job: JobEnv) -> None:
        self._type = name
        self._job = job
        self._ray = connect(job.address)
        try:
            self._coord = self._ray.get_actor(coordinator_name(job.job), namespace=NAMESPACE)
        except ValueError:
            raise MXNetError(f"job {job.job!r} has no coordinator on the Ray cluster "
                             f"{job.address!r}: start it with `mxkv launch`") from None
        self._index: Optional[int] = None

    @property
    def type(self) -> str:
        return self._type

    @property
    def rank(self) -> int:
        return -1 if self._index is None else self._index

    @property
    def num_workers(self) -> int:
        return self._job.num_workers

    def is_capable(self, capability: str) -> bool:
        return False

    def run_server(self, controller: Optional[Callable[[int, Any], None]] = None,
                   poll: float = 1.0) -> None:
        """Join as a server and block until the job ends."""
        self._index = self._ray.get(self._coord.server_join.remote(host_label()))
        log.info("mxkv server %d of job %s waits for the workers to finish", self._index,
                 self._job.job)
        while True:
            try:
                done = self._ray.get(self._coord.wait_done.remote(poll), timeout=poll + 30)
            except Exception:  # noqa: BLE001 - the coordinator is gone: the job ended
                return
            if done:
                return
