"""The Comm interface: how the values pushed for a key are reduced, and how
a stored value reaches the outputs of a pull.

A comm knows arrays and devices, never key names, updaters or optimizers.
Every reduce and broadcast that touches a GPU runs as one operation of the
comm's :class:`~.streams.StreamOrder`: ordered after the caller's streams on
the way in, and the caller's streams after it on the way out (docs/gpu.md,
"Streams"). Subclasses implement ``_reduce`` and ``_broadcast``; the public
``reduce`` and ``broadcast`` here are the only doors in.
Comms are registered by name (``Comm.register``) and built by
:func:`create_comm`; the store factory picks ``cpu``, ``device``, ``tree``
(``MXNET_KVSTORE_USETREE=1``) or ``nccl`` from the type string.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np

from ...base import MXNetError
from ...context import Context, cpu_pinned
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ..compression import GradientCompression
from .copies import copy_array
from .reduce import Reducer
from .streams import StreamOrder

__all__ = ["Comm", "create_comm", "copy_array", "sum_row_sparse"]


def sum_row_sparse(values: Sequence[RowSparseNDArray], xp: Any = np):
    """Sum row-sparse arrays: the union of their rows, rows present in
    several arrays added. Returns ``(data, indices)`` as arrays of ``xp``."""
    idx_parts = [xp.asarray(v._indices) for v in values]
    uniq = xp.unique(xp.concatenate(idx_parts)) if idx_parts else xp.zeros(0, np.int64)
    first = values[0]
    data = xp.zeros((uniq.shape[0],) + tuple(first.shape[1:]), dtype=first._data.dtype)
    for v, idx in zip(values, idx_parts):
        if idx.shape[0]:
            # indices of one array are unique, so a fancy-indexed += is exact
            data[xp.searchsorted(uniq, idx)] += xp.asarray(v._data)
    return data, uniq.astype(np.int64)


class Comm:
    """Reduces and broadcasts arrays for a store.

    Subclasses set ``name`` and are registered with :meth:`Comm.register`.
    """

    name = "base"
    registry: Dict[str, Type["Comm"]] = {}
    #: Whether this comm's ``reduce(key, [src], out)`` and ``broadcast(key,
    #: src, [dst])`` of small host arrays are plain copies, so a store may do
    #: a whole batch of them with one :meth:`copy_each` (``kvstore/small.py``).
    batch_copies = False

    def __init__(self) -> None:
        self.reducer = Reducer()
        self.gc: Optional[GradientCompression] = None
        self.store_ctx: Context = cpu_pinned(0)
        self.streams = StreamOrder()
        self.closed = False

    @staticmethod
    def register(klass: Type["Comm"]) -> Type["Comm"]:
        """Class decorator: register comm class ``klass`` under its ``name`` (:func:`create_comm`
        finds it there); returns ``klass``."""
        Comm.registry[klass.name] = klass
        return klass

    # -- the interface --------------------------------------------------
    def init(self, key: Any, shape: tuple, dtype: Any, stype: str) -> None:
        """Called once per key at init, before any reduce of that key."""

    def validate_push(self, grouped: Dict[Any, list]) -> None:
        """Raise, before the store changes anything, if this comm cannot reduce
        the values of a push (``{key: [values]}``); the default accepts all."""

    def set_gradient_compression(self, gc: Any) -> None:
        """Compress the values of every later reduce with ``gc`` (a GradientCompression; None for
        none)."""
        self.gc = gc

    def reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        """Sum the dense ``srcs``; into ``out`` when given, else into a buffer
        the comm owns (or, for one source and no ``out``, the source itself).

        With a GPU among the arrays, one stream-ordered operation: the result
        is ready for work the caller enqueues next on its current streams
        (and for the host when it is in host memory).
        """
        if out is None or out._ctx.device_typeid != 2:
            for s in srcs:
                if s._ctx.device_typeid == 2:
                    break
            else:
                return self._reduce(key, srcs, out)
        with self.streams.op(srcs, [] if out is None else [out]) as written:
            result = self._reduce(key, srcs, out)
            written.append(result)
        return result

    def _reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray]) -> NDArray:
        raise NotImplementedError

    def reduce_many(self, jobs: Sequence[Tuple[Any, List[NDArray], NDArray]]) -> None:
        """:meth:`reduce` ``(key, srcs, out)`` for every job, in order; a comm
        may run them together (``CommCPU``: host arrays on the reducer's threads)."""
        for key, srcs, out in jobs:
            self.reduce(key, srcs, out)

    def reduce_row_sparse(self, key: Any, srcs: List[RowSparseNDArray]) -> RowSparseNDArray:
        """Sum row-sparse ``srcs`` (union of rows) into a new array on the store context."""
        data, idx = sum_row_sparse(srcs)
        return RowSparseNDArray(data, idx, srcs[0].shape, self.store_ctx)

    def broadcast(self, key: Any, src: NDArray, dsts: List[NDArray]) -> None:
        """Copy dense ``src`` into every dense ``dst`` (stream-ordered, as :meth:`reduce`)."""
        if src._ctx.device_typeid != 2:
            for d in dsts:
                if d._ctx.device_typeid == 2:
                    break
            else:
                self._broadcast(key, src, dsts)
                return
        with self.streams.op([src], dsts):
            self._broadcast(key, src, dsts)

    def broadcast_many(self, jobs: Sequence[Tuple[Any, NDArray, List[NDArray]]]) -> None:
        """:meth:`broadcast` ``(key, src, dsts)`` for every job, in order; a
        comm may run them together, as :meth:`reduce_many`."""
        for key, src, dsts in jobs:
            self.broadcast(key, src, dsts)

    def _broadcast(self, key: Any, src: NDArray, dsts: List[NDArray]) -> None:
        s = src._array
        if len(dsts) == 1:
            d = dsts[0]._array
            if s.size >= self.reducer.bigarray_bound and type(d) is np.ndarray and \
                    type(s) is np.ndarray and d.dtype == s.dtype:
                self.reducer.copy_to_all(s, [d])  # a big copy: on the reducer's threads
                return
            copy_array(d, s)
            return
        host = [d._array for d in dsts
                if isinstance(d._array, np.ndarray) and d._array.dtype == s.dtype]
        if isinstance(s, np.ndarray) and len(host) == len(dsts):
            self.reducer.copy_to_all(s, host)
            return
        for d in dsts:
            copy_array(d._array, s)

    def copy_each(self, dsts: Sequence[np.ndarray], srcs: Sequence[np.ndarray]) -> None:
        """``dst[...] = src`` for each pair of small same-shaped host arrays
        (cast to the dst's dtype): a batch of one-source reduces into an out,
        or of one-out broadcasts, for a comm with ``batch_copies``."""
        for d, s in zip(dsts, srcs):
            d[...] = s

    def close(self) -> None:
        """Wait for the comm's streams, then free what it holds (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.streams.close()
        self._free()
        self.reducer.close()

    def _free(self) -> None:
        """Drop the comm's buffers (after its streams are idle); subclasses extend."""


def create_comm(name: str) -> Comm:
    """A new comm of the class registered under ``name``.

    Raises
    ------
    MXNetError
        No comm is registered under ``name``; names the known ones.
    """
    try:
        klass = Comm.registry[name]
    except KeyError:
        raise MXNetError(f"unknown comm {name!r}; known: {sorted(Comm.registry)}") from None
    return klass()
