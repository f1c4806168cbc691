"""A distributed job: its settings from the environment, and the Ray connection.

A job is a Ray cluster plus, in Ray's ``mxkv`` namespace, a coordinator
actor named ``mxkv:<job>`` and the server shard actors ``mxkv:<job>:shard<i>``.
``mxkv launch`` creates them and starts the workers with this environment:

================  ======================================================
variable          meaning
================  ======================================================
MXKV_JOB          the job's name (which coordinator to join)
MXKV_RAY_ADDRESS  the Ray cluster (else ``RAY_ADDRESS``)
DMLC_ROLE         ``worker`` or ``server`` (MXNet's)
DMLC_NUM_WORKER   number of workers (MXNet's)
DMLC_NUM_SERVER   number of server shards (MXNet's)
MXKV_RANK         this worker's rank; unset: the coordinator assigns ranks
                  in order of joining, as ps-lite's scheduler does
DMLC_PS_VAN_TYPE  ``p3`` turns on P3 slicing and priorities (MXNet's)
================  ======================================================

The store's knobs (timeouts, sizes, paths) are read with them, once, into
a :class:`~.config.DistConfig`.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any, Optional

from ...base import MXNetError, env
from .config import DistConfig, Timeouts

__all__ = ["JobEnv", "Timeouts", "NAMESPACE", "RELAY_PULLS", "coordinator_name", "shard_name",
           "import_ray", "connect"]

#: the Ray namespace holding every mxkv job's actors
NAMESPACE = "mxkv"
#: a relay's concurrency group for its host's pulls (relay.py): threads of
#: their own, so pulls waiting for a round never hold up the pushes that
#: complete it
RELAY_PULLS = "pulls"


def coordinator_name(job: str) -> str:
    """The Ray actor name of job ``job``'s coordinator."""
    return f"mxkv:{job}"


def shard_name(job: str, index: int) -> str:
    """The Ray actor name of job ``job``'s server shard ``index``."""
    return f"mxkv:{job}:shard{index}"


def import_ray():
    """Ray, or an MXNetError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise MXNetError("the distributed kvstore (dist_sync, dist_async, dist_device_sync) "
                         "runs on Ray, which is not installed: pip install 'mxkv[dist]'") from None
    return ray


@dataclass(frozen=True)
class JobEnv:
    """What a process needs to join a job, and the store's knobs
    (``config``), read from the environment once."""

    job: str
    address: Optional[str]
    role: str
    num_workers: int
    num_servers: int
    rank: Optional[int]
    p3: bool
    config: DistConfig = field(default_factory=DistConfig)

    @property
    def timeouts(self) -> Timeouts:
        """The job's fault knobs (``config.timeouts``)."""
        return self.config.timeouts

    @classmethod
    def from_env(cls, kind: str = "dist_sync") -> "JobEnv":
        """The job this process belongs to, from the environment ``mxkv
        launch`` sets; an MXNetError saying how to start one when there is none."""
        job = env("MXKV_JOB", "")
        if not job:
            raise MXNetError(
                f"kvstore '{kind}' needs a distributed job, and none is set in this process's "
                "environment (MXKV_JOB). Start the workers with `mxkv launch -n WORKERS -s "
                "SERVERS -- CMD ...`, which creates the job on a Ray cluster and sets "
                "MXKV_JOB, MXKV_RAY_ADDRESS, DMLC_NUM_WORKER and DMLC_NUM_SERVER; see "
                "docs/distributed.md")
        address = env("MXKV_RAY_ADDRESS", "") or env("RAY_ADDRESS", "") or None
        rank = env("MXKV_RANK", -1, int)
        return cls(job=job, address=address,
                   role=env("DMLC_ROLE", "worker").strip().lower(),
                   num_workers=env("DMLC_NUM_WORKER", 1, int, minimum=1),
                   num_servers=env("DMLC_NUM_SERVER", 1, int, minimum=1),
                   rank=None if rank < 0 else rank,
                   p3=env("DMLC_PS_VAN_TYPE", "").strip().lower() == "p3",
                   config=DistConfig.from_env())

    def environ(self) -> dict:
        """The variables that reproduce this job in a child process."""
        out = {"MXKV_JOB": self.job, "DMLC_ROLE": self.role,
               "DMLC_NUM_WORKER": str(self.num_workers),
               "DMLC_NUM_SERVER": str(self.num_servers)}
        if self.address:
            out["MXKV_RAY_ADDRESS"] = self.address
        if self.rank is not None:
            out["MXKV_RANK"] = str(self.rank)
        if self.p3:
            out["DMLC_PS_VAN_TYPE"] = "p3"
        return out


def connect(address: Optional[str]) -> Any:
    """Join the Ray cluster at ``address`` (once per process); returns ``ray``.

    Inside a Ray worker (an actor or task) the existing connection is used.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    from .ray_dirs import private_ray_directories

    private_ray_directories()   # (a driver creates its session's directories too)
    try:
        ray.init(address=address or "auto", namespace=NAMESPACE, log_to_driver=False,
                 logging_level="WARNING", configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise MXNetError(f"cannot join the Ray cluster at {address or 'auto'!r} "
                         f"(MXKV_RAY_ADDRESS): {exc}") from exc
    return ray


def host_label() -> str:
    """``host:pid`` of this process, as messages name a worker or server."""
    return f"{socket.gethostname()}:{os.getpid()}"
