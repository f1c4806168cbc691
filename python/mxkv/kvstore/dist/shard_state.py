"""A shard's state as its checkpoint log holds it, and back (no Ray).

:func:`record` turns what a checkpoint must write (:class:`~.durability.Taken`)
into a delta of :mod:`.checkpoint`'s format; :func:`restore` puts a loaded
log's state back into a fresh shard's local store and round book. The
format itself (parts with round, seen, shape, value and state; a meta
record with mode, command sequence, compression and updater) is
:mod:`.checkpoint`'s.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ...optimizer.states_writer import dumps as dump_states
from ..compression import GradientCompression
from ..local import KVStore
from .checkpoint import copy_state
from .durability import Taken
from .messages import RowSparse, export
from .rounds import RoundBook

__all__ = ["Restored", "restore", "record", "record_value"]


def record_value(payload: Any) -> Any:
    """A part's value as the log holds it: a dense array, or a row-sparse
    one as ``('rsp', data, indices)``."""
    if isinstance(payload, RowSparse):
        return ("rsp", payload.data, payload.indices)
    return payload


@dataclass
class Restored:
    """What :func:`restore` read besides the values and rounds it put back."""

    shapes: Dict[Any, Tuple[int, ...]] = field(default_factory=dict)
    #: part -> its round in the log (durable by definition)
    rounds: Dict[Any, int] = field(default_factory=dict)
    gc: Optional[GradientCompression] = None
    #: a cloudpickled ``_set_updater`` callable for the caller to apply
    updater_blob: Optional[bytes] = None
    cmd_seq: int = 0


def restore(state: Dict[str, Any], kv: KVStore, book: RoundBook) -> Restored:
    """Put a loaded log's ``state`` into ``kv`` (values, optimizer and its
    states) and ``book`` (mode, rounds, pushes seen)."""
    out = Restored()
    seen, states = {}, {}
    for name, entry in state["parts"].items():
        value, shape = entry["value"], tuple(entry["shape"])
        if isinstance(value, tuple):
            kv.init(name, RowSparseNDArray(value[1], value[2], shape, cpu(0)))
        else:
            kv.init(name, NDArray(value, cpu(0)))   # copies out of the log
        out.shapes[name] = shape
        out.rounds[name], seen[name] = entry["round"], entry["seen"]
        if entry.get("state") is not None:
            states[name] = entry["state"]
    meta = state["meta"]
    book.sync = meta.get("sync", True)
    book.restore({"rounds": dict(out.rounds), "seen": seen})
    if meta.get("gc"):
        out.gc = GradientCompression.create(meta["gc"])
    updater = meta.get("updater")
    if updater is not None and updater[0] == "blob":
        out.updater_blob = updater[1]
    elif updater is not None and updater[0] == "optimizer":
        optimizer = pickle.loads(updater[1])
        kv.set_optimizer(optimizer)
        thawed = {name: pickle.loads(st) for name, st in states.items()}
        kv.set_updater_states(dump_states((thawed, optimizer)))
    out.cmd_seq = meta.get("cmd_seq", 0)
    return out


def record(taken: Taken, kv: KVStore, book: RoundBook, shapes: Dict[Any, Tuple[int, ...]],
           *, updater_blob: Optional[bytes], gc: Optional[GradientCompression],
           cmd_seq: int) -> Dict[str, Any]:
    """The delta a checkpoint writes, safe to write while the shard goes on:
    values nothing writes to (``taken.fresh``) are taken as they are, the
    others copied (only those of changed parts); states are pickled (a
    copy: the updater goes on writing into them)."""
    parts = {}
    for name, fields in taken.dirty.items():
        entry: Dict[str, Any] = {"round": book.rounds[name],
                                 "seen": dict(book.seen[name]),
                                 "shape": shapes[name]}
        if "value" in fields:
            fresh = taken.fresh.get(name)
            entry["value"] = record_value(fresh) if fresh is not None else \
                copy_state(record_value(export(kv.stored_value(name))))
        if "state" in fields:
            st = kv.updater_state(name) if updater_blob is None else None
            entry["state"] = None if st is None else pickle.dumps(st, protocol=5)
        parts[name] = entry
    meta: Dict[str, Any] = {"sync": book.sync, "cmd_seq": cmd_seq,
                            "gc": gc.get_params() if gc else None,
                            "reset_states": taken.reset_states}
    if taken.meta_dirty:
        if updater_blob is not None:
            meta["updater"] = ("blob", updater_blob)
        elif kv.keeps_states:
            meta["updater"] = ("optimizer", pickle.dumps(kv.updater.optimizer))
        else:
            meta["updater"] = None
    return {"parts": parts, "meta": meta}
