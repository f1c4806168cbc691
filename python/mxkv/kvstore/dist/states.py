"""Optimizer states of a distributed store, as one file a local store reads too.

The shards run the optimizer, each on its parts, so each holds the states
of its parts. ``save_optimizer_states`` gathers them and joins the parts of
split keys back into whole arrays (the key's shape), giving exactly the
bytes a local store's :meth:`~mxkv.optimizer.Updater.get_states` would
write; ``load_optimizer_states`` does the reverse. So a states file moves
freely between a local store and distributed jobs of any shard count.

Pure functions of bytes and plans (no Ray, no store): the worker asks the
shards and sends the pieces.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ...optimizer.states_file import read_states
from ...optimizer.states_writer import dumps as dump_states
from ..local import KeyLayout
from .sharding import Part

__all__ = ["gather_states", "scatter_states", "join_parts", "split_state"]


def _flat(nd: Any) -> np.ndarray:
    return np.asarray(nd.asnumpy())


def join_parts(pieces: List[Any], shape: tuple, stype: str) -> Any:
    """Join one state's per-part pieces (same structure) into the key's state."""
    first = pieces[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        joined = [join_parts([p[i] for p in pieces], shape, stype) for i in range(len(first))]
        return tuple(joined) if isinstance(first, tuple) else joined
    if not isinstance(first, NDArray):
        return first
    if isinstance(first, RowSparseNDArray):
        dense = np.concatenate([_flat(p) for p in pieces], axis=0)
        return NDArray(dense.reshape(shape), cpu(0)).tostype("row_sparse")
    if stype == "row_sparse":
        return NDArray(np.ascontiguousarray(np.concatenate([_flat(p) for p in pieces], axis=0)
                                            .reshape(shape)), cpu(0))
    flat = np.concatenate([_flat(p).reshape(-1) for p in pieces])
    return NDArray(np.ascontiguousarray(flat.reshape(shape)), cpu(0))


def split_state(state: Any, part: Any, stype: str) -> Any:
    """The piece of a key's state that ``part`` holds."""
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        out = [split_state(s, part, stype) for s in state]
        return tuple(out) if isinstance(state, tuple) else out
    if not isinstance(state, NDArray):
        return state
    host = _flat(state)
    if stype == "row_sparse":
        piece = host[part.lo:part.hi]
    else:
        piece = host.reshape(-1)[part.lo:part.hi].reshape(part.shape)
    nd = NDArray(np.ascontiguousarray(piece), cpu(0))
    return nd.tostype("row_sparse") if isinstance(state, RowSparseNDArray) else nd


def _read(blob: bytes) -> Tuple[Dict[Any, Any], Any]:
    """A states file's (states, optimizer or None), checked whole."""
    loaded = read_states(blob)
    return loaded.states, loaded.optimizer


def _write(states: Dict[Any, Any], optimizer: Any, dump_optimizer: bool) -> bytes:
    """States (and the optimizer) as a local store's states file would hold them."""
    return dump_states((dict(states), optimizer) if dump_optimizer else dict(states))


def _merge_counts(optimizers: List[Any]) -> Any:
    """One optimizer whose update counts are the largest any shard saw."""
    base = optimizers[0]
    counts: Dict[Any, int] = {}
    for o in optimizers:
        for k, v in getattr(o, "_index_update_count", {}).items():
            counts[k] = max(counts.get(k, 0), v)
    if hasattr(base, "_index_update_count"):
        base._index_update_count.clear()
        base._index_update_count.update(counts)
        base.num_update = max([o.num_update for o in optimizers] + [base.num_update])
    return base


#: a key's plan (its parts, :mod:`.sharding`) and layout (shape, dtype, stype)
KeyPlans = Mapping[Any, Tuple[Sequence[Part], KeyLayout]]


def gather_states(blobs: Sequence[Optional[bytes]], keys: KeyPlans,
                  dump_optimizer: bool) -> bytes:
    """The shards' states (``blobs``: each shard's ``get_states``, None for a
    shard without an optimizer) as one local-store states file, over the
    keys ``keys`` plans."""
    if all(b is None for b in blobs):
        raise MXNetError("save_optimizer_states: no optimizer is set on the servers "
                         "(call set_optimizer)")
    per_shard: List[Dict[Any, Any]] = []
    optimizers = []
    for blob in blobs:
        if blob is None:
            per_shard.append({})
            continue
        states, optimizer = _read(blob)
        per_shard.append(states)
        optimizers.append(optimizer)
    merged: Dict[Any, Any] = {}
    for key, (plan, layout) in keys.items():
        pieces = [per_shard[p.shard].get(p.name) for p in plan]
        if any(p is None for p in pieces):
            continue  # never updated: no state yet, as in a local store
        merged[key] = pieces[0] if len(plan) == 1 and plan[0].shape == layout.shape \
            else join_parts(pieces, layout.shape, layout.stype)
    return _write(merged, _merge_counts(optimizers), dump_optimizer)


def scatter_states(data: bytes, keys: KeyPlans, num_shards: int, fname: str) -> List[bytes]:
    """A states file (from a local or distributed store) as each shard's
    piece (a states file over its parts), for the keys ``keys`` plans."""
    try:
        states, optimizer = _read(data)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure
        raise MXNetError(f"load_optimizer_states: {fname} is not an optimizer states file "
                         f"({exc})") from exc
    shards: List[Dict[Any, Any]] = [{} for _ in range(num_shards)]
    for key, state in states.items():
        if key not in keys:
            raise MXNetError(f"load_optimizer_states: {fname} holds a state for key {key!r}, "
                             "which this store has not initialized")
        plan, layout = keys[key]
        for part in plan:
            shards[part.shard][part.name] = split_state(state, part, layout.stype)
    return [_write(piece, optimizer, optimizer is not None) for piece in shards]
