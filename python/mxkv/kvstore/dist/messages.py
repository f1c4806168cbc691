"""What workers, relays and shards say to each other (no Ray).

One module for the protocol's vocabulary, so that the sender and the
receiver of a message cannot drift apart:

* what a message names: :class:`Init` (parts and their shapes),
  :class:`Push` and :class:`Pull` (parts and a sequence number each, the
  round of :mod:`.rounds`), and who sends it (:data:`Rank`: a worker, or a
  host's relay for a group of workers);
* what a pull answers (:class:`PullReply`);
* the payloads of a part: a dense part is a plain numpy array (the common
  case, pickled as it is), a row-sparse one a :class:`RowSparse`, a
  compressed one a :class:`Compressed`; :func:`to_nd` reads them on a
  shard, :func:`export` writes a stored value as one;
* the commands (MXNet's command ids, and mxkv's own);
* :class:`ShardRestarted`, the answer to a call that names a shard
  incarnation which is gone.

A message's parts are columns (one tuple of names, one of sequence numbers
or shapes), not an object per part: a push of 200 small keys pickles as
fast as plain tuples.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ..compression import GradientCompression

__all__ = ["Rank", "Init", "Push", "Pull", "PullReply", "RowSparse", "Compressed",
           "ShardRestarted", "to_nd", "export", "CMD_OPTIMIZER", "CMD_MULTI_PRECISION",
           "CMD_STOP", "CMD_SYNC_MODE", "CMD_COMPRESSION", "CMD_PROFILER", "CMD_UPDATER",
           "CMD_LOAD_STATES"]

# MXNet's CommandType ids (kvstore.py's _get_kvstore_server_command_type)
CMD_OPTIMIZER, CMD_MULTI_PRECISION, CMD_STOP, CMD_SYNC_MODE, CMD_COMPRESSION, \
    CMD_PROFILER = range(6)
#: mxkv's own: a cloudpickled ``_set_updater`` callable; optimizer states to load
CMD_UPDATER, CMD_LOAD_STATES = -1, -2


#: who sends a push: a worker's rank, or the ranks a host's relay sums for (:mod:`.relay`)
Rank = Union[int, Tuple[int, ...]]


@dataclass(frozen=True)
class Init:
    """An init message's parts: ``names[i]`` has shape ``shapes[i]``."""

    names: Tuple[Any, ...]
    shapes: Tuple[Tuple[int, ...], ...]

    @classmethod
    def of(cls, pairs: Sequence[Tuple[Any, Tuple[int, ...]]]) -> "Init":
        """From (name, shape) pairs."""
        return cls(tuple(n for n, _ in pairs), tuple(tuple(s) for _, s in pairs))

    def pairs(self) -> Iterator[Tuple[Any, Tuple[int, ...]]]:
        return zip(self.names, self.shapes)

    def durable_at(self, durable_of: Callable[[Any], int]) -> bool:
        """Whether every part is on disk (an init is round 0), given each
        part's durable round (-1: none)."""
        return all(durable_of(n) >= 0 for n in self.names)


@dataclass(frozen=True)
class Push:
    """A push message's parts: ``names[i]``'s push number ``seqs[i]`` (its round)."""

    names: Tuple[Any, ...]
    seqs: Tuple[int, ...]

    @classmethod
    def of(cls, pairs: Sequence[Tuple[Any, int]]) -> "Push":
        """From (name, seq) pairs."""
        return cls(tuple(n for n, _ in pairs), tuple(int(s) for _, s in pairs))

    def pairs(self) -> Iterator[Tuple[Any, int]]:
        return zip(self.names, self.seqs)

    def durable_at(self, durable_of: Callable[[Any], int]) -> bool:
        """Whether every part's round is on disk (the push need not be kept),
        given each part's durable round (-1: none)."""
        return all(durable_of(n) >= s for n, s in zip(self.names, self.seqs))


@dataclass(frozen=True)
class Pull(Push):
    """A pull's parts: ``names[i]`` at the round of the puller's push ``seqs[i]``."""


@dataclass(frozen=True)
class PullReply:
    """A pull's answer: ``ref`` (a :class:`~.shm.ShmBatch`, or an object-store
    reference to the list of payloads) and each part's durable round."""

    ref: Any
    durable: Tuple[int, ...]


@dataclass(frozen=True)
class RowSparse:
    """A row-sparse part's payload: its rows (``data``) and their indices,
    relative to the part."""

    data: np.ndarray
    indices: np.ndarray

    @property
    def nbytes(self) -> int:
        """Bytes on the wire (a streamed round's chunks are cut by them)."""
        return int(self.data.nbytes + self.indices.nbytes)


@dataclass(frozen=True)
class Compressed:
    """A compressed push's payload: the packed gradient
    (:mod:`~mxkv.kvstore.compression`)."""

    packed: np.ndarray

    @property
    def nbytes(self) -> int:
        """Bytes on the wire."""
        return int(self.packed.nbytes)


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
    if isinstance(payload, np.ndarray):
        return NDArray(payload.reshape(shape), ctx)
    if isinstance(payload, RowSparse):
        return RowSparseNDArray(payload.data, payload.indices, shape, ctx)
    if isinstance(payload, Compressed):
        if gc is None:
            raise MXNetError("a compressed push reached a shard that has no gradient "
                             "compression set")
        out = np.empty(shape, np.float32)
        gc.dequantize(payload.packed, out)
        return NDArray(out, ctx)
    raise MXNetError(f"unknown payload {type(payload).__name__}")


def export(stored: Any) -> Any:
    """The stored value of a part as a payload of plain arrays (not copied)."""
    if isinstance(stored, RowSparseNDArray):
        return RowSparse(stored._data, stored._indices)
    return stored._array
