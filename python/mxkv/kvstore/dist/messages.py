"""What workers, relays and shards say to each other (no Ray).

One module for the protocol's vocabulary, so that the sender and the
receiver of a message cannot drift apart:

* the payloads of a part (:func:`to_nd` reads them on a shard,
  :func:`export` writes a stored value as one);
* the commands (MXNet's command ids, and mxkv's own);
* :class:`ShardRestarted`, the answer to a call that names a shard
  incarnation which is gone.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ..compression import GradientCompression

__all__ = ["ShardRestarted", "to_nd", "export", "CMD_OPTIMIZER", "CMD_MULTI_PRECISION",
           "CMD_STOP", "CMD_SYNC_MODE", "CMD_COMPRESSION", "CMD_PROFILER", "CMD_UPDATER",
           "CMD_LOAD_STATES"]

# MXNet's CommandType ids (kvstore.py's _get_kvstore_server_command_type)
CMD_OPTIMIZER, CMD_MULTI_PRECISION, CMD_STOP, CMD_SYNC_MODE, CMD_COMPRESSION, \
    CMD_PROFILER = range(6)
#: mxkv's own: a cloudpickled ``_set_updater`` callable; optimizer states to load
CMD_UPDATER, CMD_LOAD_STATES = -1, -2


class ShardRestarted(MXNetError):
    """The shard (or relay) restarted since the caller last synced with it.

    Attributes
    ----------
    incarnation : str
        The new incarnation.
    rounds : dict
        Completed rounds of the parts the call named, as restored.
    """

    def __init__(self, incarnation: str, rounds: Dict[Any, int]) -> None:
        super().__init__(f"server shard restarted (incarnation {incarnation[:8]})")
        self.incarnation = incarnation
        self.rounds = rounds

    def __reduce__(self):
        return (ShardRestarted, (self.incarnation, self.rounds))


def to_nd(payload: Any, shape: Tuple[int, ...], gc: Optional[GradientCompression]) -> Any:
    """A pushed payload as the NDArray the shard's local store sums."""
    ctx = cpu(0)
    if isinstance(payload, tuple):
        kind = payload[0]
        if kind == "rsp":
            return RowSparseNDArray(payload[1], payload[2], shape, ctx)
        if kind == "gc":
            if gc is None:
                raise MXNetError("a compressed push reached a shard that has no gradient "
                                 "compression set")
            out = np.empty(shape, np.float32)
            gc.dequantize(payload[1], out)
            return NDArray(out, ctx)
        raise MXNetError(f"unknown payload kind {kind!r}")
    return NDArray(payload.reshape(shape), ctx)


def export(stored: Any) -> Any:
    """The stored value of a part as a payload of plain arrays (not copied)."""
    if isinstance(stored, RowSparseNDArray):
        return ("rsp", stored._data, stored._indices)
    return stored._array
