"""A shard's checkpoint log, copied to another host (the shard's side).

Without a checkpoint directory every host shares, a shard's log lives on
its own host, and a host that is lost takes it along. So every record a
shard writes also goes, before the shard calls it durable, to the
:class:`~.node_keeper.NodeAgent` of another node, which writes the same
bytes there (:meth:`~.node_keeper.NodeAgent.replica_append`); a shard that
starts without a log of its own (Ray restarted it on another node) fetches
the copy first (:func:`fetch`). The coordinator says which node holds each
shard's copy (:meth:`~.coordinator.Coordinator.replica_target`).

The copy is the log's bytes, records and checksums included: a record that
fails its check there is refused as it is locally (:mod:`.checkpoint`).
When the replica's node stops answering, another node's agent takes the
whole log; with no other node left the shard goes on without a copy, and
says so.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Optional

from .checkpoint import CheckpointLog, open_private

__all__ = ["Replica", "fetch"]

#: Seconds a replica call may take before its node is taken for gone.
CALL_TIMEOUT = 60.0


def fetch(ray: Any, coordinator: Any, index: int, path: str) -> Optional[str]:
    """Put shard ``index``'s replicated log at ``path`` when there is no
    log there; returns the host it came from, or None."""
    try:
        if os.path.getsize(path) > 0:
            return None
    except FileNotFoundError:
        pass
    source = ray.get(coordinator.replica_source.remote(index), timeout=CALL_TIMEOUT)
    if source is None:
        return None
    agent, host = source
    data = ray.get(agent.replica_fetch.remote(index), timeout=CALL_TIMEOUT)
    if data is None:
        return None
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    with open_private(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return host


class Replica:
    """Mirrors a :class:`~.checkpoint.CheckpointLog` to another node's agent.

    Parameters
    ----------
    ray, coordinator
        Ray and the job's coordinator.
    index : int
        The shard.
    node : str
        The shard's node (the copy goes to another one).
    """

    def __init__(self, ray: Any, coordinator: Any, index: int, node: Optional[str]) -> None:
        self.ray, self.coordinator = ray, coordinator
        self.index, self.node = int(index), node
        self.agent: Any = None
        self.host: Optional[str] = None
        self.agent_node: Optional[str] = None
        self._gone: list = []

    def start(self, log: CheckpointLog) -> Optional[str]:
        """Send the whole log to a node's agent and mirror every record from
        now on; returns that node's host, or None when no other node is there."""
        if self._target(log.read()):
            log.mirror = self.mirror
        else:
            log.mirror = None
        self._log = log
        return self.host

    def _target(self, whole: bytes) -> bool:
        """Find an agent on another node and give it ``whole``."""
        while True:
            found = self.ray.get(self.coordinator.replica_target.remote(
                self.index, self.node, self._gone), timeout=CALL_TIMEOUT)
            if found is None:
                if self.agent is not None:
                    print(f"mxkv: server shard {self.index}: no other node takes a copy of "
                          "its checkpoint; it goes on without one", file=sys.stderr,
                          flush=True)
                self.agent = self.host = None
                return False
            agent, node, host = found
            try:
                self.ray.get(agent.replica_reset.remote(self.index, whole),
                             timeout=CALL_TIMEOUT)
            except Exception:  # noqa: BLE001 - that node is gone: the next one
                self._gone.append(node)
                continue
            self.ray.get(self.coordinator.replica_set.remote(self.index, node, host),
                         timeout=CALL_TIMEOUT)
            self.agent, self.host, self.agent_node = agent, host, node
            return True

    def mirror(self, kind: str, offset: int, data: bytes) -> None:
        """:attr:`CheckpointLog.mirror`: the record is on the other node when this returns."""
        if self.agent is not None:
            try:
                if kind == "reset":
                    self.ray.get(self.agent.replica_reset.remote(self.index, data),
                                 timeout=CALL_TIMEOUT)
                    return
                if self.ray.get(self.agent.replica_append.remote(self.index, offset, data),
                                timeout=CALL_TIMEOUT):
                    return
            except Exception:  # noqa: BLE001 - its node is gone: another one takes it
                self._gone.append(self.agent_node)
        self._target(self._log.read())
