"""Optimizer states of a distributed store, as one file a local store reads too.

The shards run the optimizer, each on its parts, so each holds the states
of its parts. ``save_optimizer_states`` gathers them and joins the parts of
split keys back into whole arrays (the key's shape), giving exactly the
bytes a local store's :meth:`~mxkv.optimizer.Updater.get_states` would
write; ``load_optimizer_states`` does the reverse. So a states file moves
freely between a local store and distributed jobs of any shard count.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List

import numpy as np

from ...base import MXNetError
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ...optimizer import Updater, get_updater

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


def _blank_updater(blob: bytes = b"") -> Updater:
    """An Updater with no optimizer yet, filled from ``blob`` when given."""
    u = Updater.__new__(Updater)
    u.optimizer, u.states, u.states_synced, u.aggregate_updates = None, {}, {}, False
    u._lock, u._unchecked = threading.RLock(), {}
    if blob:
        u.set_states(blob)
    return u


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


def gather_states(store: Any, dump_optimizer: bool) -> bytes:
    """The states of ``store``'s shards as one local-store states file."""
    chan = store._chan
    blobs = store._ray.get([s.get_states.remote() for s in chan.shards],
                           timeout=store._job.timeouts.fail)
    if all(b is None for b in blobs):
        raise MXNetError("save_optimizer_states: no optimizer is set on the servers "
                         "(call set_optimizer)")
    per_shard: List[Dict[Any, Any]] = []
    optimizers = []
    for blob in blobs:
        if blob is None:
            per_shard.append({})
            continue
        u = _blank_updater(blob)
        per_shard.append(u.states)
        optimizers.append(u.optimizer)
    merged: Dict[Any, Any] = {}
    for key, plan in store._plans.items():
        stored = store._data[key]
        stype = "row_sparse" if isinstance(stored, RowSparseNDArray) else "default"
        pieces = [per_shard[p.shard].get(p.name) for p in plan]
        if any(p is None for p in pieces):
            continue  # never updated: no state yet, as in a local store
        merged[key] = pieces[0] if len(plan) == 1 and plan[0].shape == tuple(stored.shape) \
            else join_parts(pieces, tuple(stored.shape), stype)
    out = get_updater(_merge_counts(optimizers))
    out.states = merged
    out.states_synced = dict.fromkeys(merged, True)
    return out.get_states(dump_optimizer)


def scatter_states(store: Any, data: bytes, fname: str) -> None:
    """Load a states file (from a local or distributed store) onto the shards."""
    try:
        u = _blank_updater(data)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure
        raise MXNetError(f"load_optimizer_states: {fname} is not an optimizer states file "
                         f"({exc})") from exc
    has_optimizer = u.optimizer is not None
    shards: List[Dict[Any, Any]] = [{} for _ in store._chan.shards]
    for key, state in u.states.items():
        if key not in store._data:
            raise MXNetError(f"load_optimizer_states: {fname} holds a state for key {key!r}, "
                             "which this store has not initialized")
        stored = store._data[key]
        stype = "row_sparse" if isinstance(stored, RowSparseNDArray) else "default"
        for part in store._plan(key, stored):
            shards[part.shard][part.name] = split_state(state, part, stype)
    from .shard import CMD_LOAD_STATES

    for i, states in enumerate(shards):
        piece = get_updater(u.optimizer) if has_optimizer else _blank_updater()
        piece.states = states
        piece.states_synced = dict.fromkeys(states, True)
        store._command_to(i, CMD_LOAD_STATES, piece.get_states(has_optimizer))
