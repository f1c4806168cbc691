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
import time
from typing import Any, Callable, Optional

from ...base import MXNetError, MXNetTimeoutError, MXNetValueError
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
        """The type string the process created the store with."""
        return self._type

    @property
    def rank(self) -> int:
        """This server's index among the job's server processes (-1 before it joined)."""
        return -1 if self._index is None else self._index

    @property
    def num_workers(self) -> int:
        """The job's number of workers."""
        return self._job.num_workers

    def is_capable(self, capability: str) -> bool:
        """No capability: a server process holds no values and runs no optimizer."""
        return False

    def run_server(self, controller: Optional[Callable[[int, Any], None]] = None,
                   poll: float = 1.0) -> None:
        """Join the job as a server process and block until the job ends.

        Parameters
        ----------
        controller : None
            MXNet's servers hand the workers' commands to a controller. In
            mxkv the job's server shards (Ray actors) apply those commands
            themselves (head 0 sets the optimizer on every shard), so a
            controller in this process would never be called: passing one
            raises instead of silently dropping what it waits for.
        poll : float, default 1.0
            Seconds between checks that the job is still running.

        Returns when every worker has closed its store or died, or when the
        job was removed (its coordinator is gone), as MXNet's servers return
        when the job is over.

        Raises
        ------
        MXNetValueError
            A ``controller`` was given.
        MXNetTimeoutError
            The job's coordinator did not answer for ``MXKV_FAIL_TIMEOUT``
            seconds.
        MXNetError
            Any other failure to reach the job (the Ray cluster was lost, the
            coordinator failed): not the job's end, so not a quiet return.
        """
        if controller is not None:
            raise MXNetValueError(
                "run_server: mxkv's server shards apply the workers' commands themselves "
                "(head 0 sets the optimizer on every shard); a controller cannot run in a "
                "server process. Run the server without one (KVStoreServer(kv).run() does, "
                "unless a subclass overrides _controller)")
        errors = self._ray.exceptions
        job, fail = self._job.job, self._job.timeouts.fail
        self._index = self._ray.get(self._coord.server_join.remote(host_label()))
        log.info("mxkv server %d of job %s waits for the workers to finish", self._index, job)
        answered = time.monotonic()
        while True:
            try:
                done = self._ray.get(self._coord.wait_done.remote(poll), timeout=poll + 30)
            except errors.GetTimeoutError:
                silent = time.monotonic() - answered
                if silent > fail:
                    raise MXNetTimeoutError(
                        f"server {self._index} of job {job!r}: the job's coordinator has not "
                        f"answered for {silent:.0f} s (MXKV_FAIL_TIMEOUT={fail:g})") from None
                continue
            except errors.RayActorError:
                log.info("mxkv server %d: job %s was removed", self._index, job)
                return   # the launcher removed the job's actors: its end
            except Exception as exc:  # noqa: BLE001 - reported, with its cause
                raise MXNetError(f"server {self._index} of job {job!r} lost the job: "
                                 f"{type(exc).__name__}: {exc}") from exc
            answered = time.monotonic()
            if done:
                return
