"""The array records of states files written by mxkv before 0.3.

Those files pickled each array of a state as a :class:`_SavedArray` (a host
copy plus its context). ``get_states`` now writes MXNet's format
(``states_writer.py``), but old files still load: ``states_file.py`` admits
these records, checks them and turns them back into NDArrays with
:func:`_thaw`. The class was defined in ``updater.py`` then, so old files name
it ``mxkv.optimizer.updater._SavedArray`` (:data:`LEGACY_NAME`).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..context import Context, cpu, xp_for
from ..ndarray import sparse
from ._arrays import array_module, device_scope, is_row_sparse, new_like

#: (module, name) under which files written before this module existed name the class
LEGACY_NAME = ("mxkv.optimizer.updater", "_SavedArray")


class _SavedArray:
    """A picklable record of one NDArray of a state: host copy plus context.

    States files written by earlier mxkv versions hold these; they still
    load. (``get_states`` now writes MXNet's format: ``states_writer.py``.)
    """

    __slots__ = ("array", "device_id", "device_type", "indices", "shape")
    indices: Optional[np.ndarray]  # (a row_sparse array's only)

    def __init__(self, nd: Any) -> None:
        ctx = nd.context
        self.device_type = ctx.device_type
        self.device_id = ctx.device_id
        self.shape = tuple(nd.shape)
        if is_row_sparse(nd):
            self.array = _to_host(nd._data)
            self.indices = _to_host(nd._indices)
        else:
            self.array = _to_host(nd._array)
            self.indices = None

    def __getstate__(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict) -> None:
        for k in self.__slots__:
            setattr(self, k, state[k])

    def restore(self) -> Any:
        """Rebuild the NDArray on its context, or on ``cpu(0)`` when that is unavailable.

        A state restored elsewhere than its weight moves to the weight's
        context on the key's next update (``sync_state_context``).
        """
        ctx = Context(self.device_type, self.device_id)
        try:
            xp = xp_for(ctx)
        except MXNetError:
            ctx, xp = cpu(0), np
        with device_scope(ctx):
            data = xp.array(self.array, copy=True)
            if self.indices is None:
                return new_like(data, ctx)
            return _row_sparse_class()(data, xp.array(self.indices, copy=True), self.shape, ctx)


def _row_sparse_class() -> type:
    klass = getattr(ndarray, "RowSparseNDArray", None)
    if klass is None:
        klass = sparse.RowSparseNDArray
    return klass


def _to_host(arr: Any) -> np.ndarray:
    if array_module(arr) is np:
        return np.array(arr, copy=True)
    return arr.get()


def _thaw(obj: Any) -> Any:
    """Every _SavedArray inside ``obj`` (tuples, lists, dicts) as an NDArray
    (the array records of states files written by mxkv before 0.3)."""
    if isinstance(obj, _SavedArray):
        return obj.restore()
    if isinstance(obj, tuple):
        return tuple(_thaw(x) for x in obj)
    if isinstance(obj, list):
        return [_thaw(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _thaw(v) for k, v in obj.items()}
    return obj
