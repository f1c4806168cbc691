"""The row-sparse array type: :class:`RowSparseNDArray`, its structure and
index checks, its conversions to and from dense storage, and its arithmetic.

A :class:`RowSparseNDArray` of shape ``(n, ...)`` stores only some rows:
``_data`` (an xp array of shape ``(nnz,) + shape[1:]``) and ``_indices``
(xp int64, sorted, unique, each in ``[0, n)``). ``RowSparseNDArray(data,
indices, shape, ctx)`` and :func:`from_xp` wrap raw arrays without copying and
check only their structure (cheap); :meth:`RowSparseNDArray.check_format`
checks the indices. Building one from user input (``row_sparse_array``...)
is ``sparse.py``'s, the ``mx.nd.sparse`` namespace, which re-exports this
module's public names.
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..base import MXNetError, numeric_types
from ..context import Context
from ._util import (
    MXNetTypeError,
    MXNetValueError,
    check_wrappable,
    device_scope,
    is_host,
    local_operand,
    normalize_dtype,
    normalize_shape,
    to_device,
)
from .ndarray import NDArray, _ctx_arg, _provided, _shape_str, check_same_device_kind, provide

__all__ = ["RowSparseNDArray", "cast_storage", "check_stype", "dense_to_rsp", "empty_row_sparse",
           "from_xp"]

_INT64 = np.dtype(np.int64)


def check_stype(stype: str) -> None:
    """Raise MXNetValueError unless ``stype`` is ``'default'`` or ``'row_sparse'``
    (csr arrays are ``csr.py``'s: callers route ``'csr'`` there first)."""
    if stype not in ("default", "row_sparse"):
        raise MXNetValueError(f"invalid storage type {stype!r}: valid values are "
                              f"'default', 'row_sparse', 'csr'")


class RowSparseNDArray(NDArray):
    """A row-sparse array (``stype == 'row_sparse'``).

    Parameters
    ----------
    data : xp array, shape ``(nnz,) + shape[1:]``, C-contiguous
    indices : xp int64 array, shape ``(nnz,)``, sorted and unique
    shape : tuple
    ctx : Context
        Where ``data`` and ``indices`` live. Both are wrapped, not copied.
    """

    # Its public name, where pickles (and states files) have always found it.
    __module__ = "mxkv.ndarray.sparse"

    def __init__(self, data: Any, indices: Any, shape: Any, ctx: Context) -> None:
        shape = normalize_shape(shape)
        check_wrappable(data, ctx)
        check_wrappable(indices, ctx)
        if not shape:
            raise MXNetValueError("a row_sparse array needs at least one dimension")
        if indices.dtype != _INT64 or indices.ndim != 1:
            raise MXNetTypeError(f"row_sparse indices must be a 1-d int64 array, got "
                                 f"{indices.ndim}-d {indices.dtype.name}")
        if tuple(data.shape) != (indices.shape[0],) + shape[1:]:
            raise MXNetValueError(f"row_sparse data of shape {tuple(data.shape)} does not fit "
                                  f"{indices.shape[0]} indices and shape {shape}: expected "
                                  f"{(indices.shape[0],) + shape[1:]}")
        self._data = data
        self._indices = indices
        self._shape = shape
        self._ctx = ctx

    # ------------------------------------------------------------------ attributes
    @property
    def _array(self) -> Any:
        raise MXNetTypeError("this operation needs a dense array, and this one has "
                             "row_sparse storage: use tostype('default') first")

    @property
    def shape(self) -> tuple:
        """The dense shape: every row, stored or not."""
        return self._shape

    @property
    def dtype(self) -> type:
        """The element type, a numpy scalar type (``numpy.float32``...), as
        :attr:`NDArray.dtype`."""
        return self._data.dtype.type

    @property
    def stype(self) -> str:
        """The storage type: ``'row_sparse'``."""
        return "row_sparse"

    _num_aux = 1  # one auxiliary array, the indices (MXNet's attribute)

    @property
    def size(self) -> int:
        """The number of elements of the dense shape (absent rows count)."""
        return int(np.prod(self._shape))

    @property
    def ndim(self) -> int:
        """The number of dimensions of the dense shape."""
        return len(self._shape)

    @property
    def data(self) -> NDArray:
        """The stored rows, an NDArray sharing this array's memory."""
        return NDArray(self._data, self._ctx)

    @property
    def indices(self) -> NDArray:
        """The stored rows' indices (int64), an NDArray sharing this array's memory."""
        return NDArray(self._indices, self._ctx)

    def __len__(self) -> int:
        return self._shape[0]

    def __repr__(self) -> str:
        return f"\n<RowSparseNDArray {_shape_str(self._shape)} @{self._ctx}>"

    def __bool__(self) -> bool:
        return bool(self.tostype("default"))

    # ------------------------------------------------------------------ checks
    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError, as MXNet (``kRSPIdxErr``), unless the indices are
        sorted, unique and in range; ``full_check=False`` checks only the
        structure, which every RowSparseNDArray has, as MXNet."""
        if not full_check:
            return
        problem = self.index_problem()
        if problem is not None:
            raise MXNetError("Check failed: err != kRSPIdxErr (5 vs. 5) : Indices of "
                             "row_sparse NDArray should be non-negative, less than the size "
                             f"of first dimension and in ascending order ({problem})")

    def index_problem(self) -> str | None:
        """What is wrong with the indices (out of range, repeated, unsorted),
        naming the first index at fault and the shape; None when they are valid."""
        idx = self._indices if is_host(self._indices) else self._indices.get()
        n = self._shape[0]
        if idx.size == 0:
            return None
        bad = np.flatnonzero((idx < 0) | (idx >= n))
        if bad.size:
            return f"row_sparse index {int(idx[bad[0]])} is out of range for shape {self._shape}"
        steps = np.diff(idx)
        dup = np.flatnonzero(steps == 0)
        if dup.size:
            return (f"row_sparse index {int(idx[dup[0]])} appears more than once "
                    f"(shape {self._shape})")
        down = np.flatnonzero(steps < 0)
        if down.size:
            i = int(down[0]) + 1
            return (f"row_sparse indices must be sorted: index {int(idx[i])} at position "
                    f"{i} follows {int(idx[i - 1])} (shape {self._shape})")
        return None

    # ------------------------------------------------------------------ conversion
    def _densify(self) -> Any:
        xp = self._xp()
        with device_scope(self._ctx):
            out = xp.zeros(self._shape, dtype=self._data.dtype)
            if self._indices.size:
                idx, data = self._indices, self._data
                inside = (idx >= 0) & (idx < self._shape[0])
                if not bool(inside.all()):  # an array check_format refuses: drop those rows
                    idx, data = idx[inside], data[inside]
                out[idx] = data
        return out

    def asnumpy(self) -> np.ndarray:
        """A dense numpy copy."""
        out = self._densify()
        return out if is_host(out) else out.get()

    def asscalar(self) -> Any:
        """The single element of a shape-``(1,)`` array, as a numpy scalar (0 when its row is
        absent).

        Raises
        ------
        MXNetValueError
            For any other shape.
        """
        return self.tostype("default").asscalar()

    def copy(self) -> RowSparseNDArray:
        """A new row_sparse array with the same rows and values, on the same context."""
        return self._copy_onto(self._ctx)

    def _copy_onto(self, ctx: Context) -> RowSparseNDArray:
        """A new row_sparse array with these rows and values, on ``ctx``."""
        return RowSparseNDArray(to_device(self._data, ctx), to_device(self._indices, ctx),
                                self._shape, ctx)

    def copyto(self, other: Any) -> NDArray:
        """Copy onto a Context (new array) or into an NDArray of either storage."""
        if isinstance(other, Context):
            return self._copy_onto(other)
        if self._copy_is_noop(other):
            return self
        if isinstance(other, RowSparseNDArray):
            other._data = to_device(self._data, other._ctx, other._data.dtype)
            other._indices = to_device(self._indices, other._ctx)
            return other
        dense = self._densify()
        other[:] = NDArray(dense, self._ctx)
        return other

    def astype(self, dtype: Any, copy: bool = True) -> RowSparseNDArray:
        """The array with its values in ``dtype`` (the same rows); ``copy=False`` returns this
        array itself when it already has that dtype."""
        dt = normalize_dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return RowSparseNDArray(to_device(self._data, self._ctx, dt),
                                to_device(self._indices, self._ctx), self._shape, self._ctx)

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type ``stype``: ``'default'`` (dense, absent rows zero),
        ``'row_sparse'`` or ``'csr'`` (see :func:`cast_storage`)."""
        return cast_storage(self, stype)

    def retain(self, row_ids: Any) -> RowSparseNDArray:
        """Only the rows ``row_ids`` (see :func:`retain`)."""
        return _provided("retain")(self, row_ids)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> NDArray:
        if isinstance(key, slice) and key == slice(None):
            return self
        raise MXNetTypeError(f"RowSparseNDArray supports only [:] indexing, got [{key!r}]")

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetTypeError(f"RowSparseNDArray supports only [:] assignment, got "
                                 f"[{key!r}]")
        if isinstance(value, RowSparseNDArray):
            value.copyto(self)
            return
        if isinstance(value, numeric_types) and not isinstance(value, np.ndarray):
            # as MXNet: every row is stored, holding the value (zero included)
            xp = self._xp()
            n = self._shape[0]
            with device_scope(self._ctx):
                self._data = xp.full(self._shape, value, dtype=self._data.dtype)
                self._indices = xp.arange(n, dtype=np.int64)
            return
        if isinstance(value, NDArray):
            src = value
        elif isinstance(value, (np.ndarray, list, tuple)):
            src = NDArray(np.ascontiguousarray(value, dtype=self._data.dtype), None)
        else:
            raise MXNetTypeError(f"RowSparseNDArray[:] = {type(value).__name__} is not "
                                 f"supported: assign an NDArray, a numpy array or a scalar")
        if src.shape != self._shape:
            raise MXNetValueError(f"cannot assign a value of shape {src.shape} to a "
                                  f"row_sparse array of shape {self._shape}")
        rsp = dense_to_rsp(src.as_in_context(self._ctx), self._data.dtype)
        self._data, self._indices = rsp._data, rsp._indices

    # ------------------------------------------------------------------ arithmetic
    def _binary(self, other: Any, name: str, reverse: bool = False,
                inplace: bool = False) -> NDArray:
        res: NDArray | None = None
        if isinstance(other, RowSparseNDArray) and name in ("add", "subtract") and \
                other.shape == self._shape:
            res = _rsp_add(self, other, name, reverse)
        elif isinstance(other, numeric_types) and not isinstance(other, np.ndarray) and \
                self._keeps_zero(other, name, reverse):
            # the rows not stored stay zero: the result is row_sparse on the same rows
            data = NDArray(self._data, self._ctx)._binary(other, name, reverse)
            res = RowSparseNDArray(data._array, to_device(self._indices, self._ctx),
                                   self._shape, self._ctx)
        if res is None:
            dense = self.tostype("default")
            if isinstance(other, RowSparseNDArray):
                other = other.tostype("default")
            res = dense._binary(other, name, reverse)
        if inplace:
            if res.shape != self._shape:
                raise MXNetValueError(f"in-place operator: the result shape {res.shape} "
                                      f"differs from the destination's shape {self._shape}")
            rsp = res if isinstance(res, RowSparseNDArray) else dense_to_rsp(res)
            self._data, self._indices = rsp._data, rsp._indices
            return self
        return res

    def _keeps_zero(self, scalar: Any, name: str, reverse: bool) -> bool:
        """Whether ``0 <op> scalar`` (or ``scalar <op> 0``) is 0 in this dtype."""
        zero = NDArray(np.zeros(1, dtype=self._data.dtype), None)
        return not bool(zero._binary(scalar, name, reverse)._array[0])

    def __neg__(self) -> RowSparseNDArray:
        # (0 * -1 is 0: _binary keeps row_sparse storage, on the same rows)
        return cast(RowSparseNDArray, self._binary(-1, "multiply"))

    @property
    def T(self) -> NDArray:
        """The transpose, dense (as MXNet's storage fallback)."""
        return self.tostype("default").T



def _rsp_add(a: RowSparseNDArray, b: RowSparseNDArray, name: str,
             reverse: bool) -> RowSparseNDArray:
    sym = "+" if name == "add" else "-"
    if a.shape != b.shape:
        raise MXNetValueError(f"operator {sym}: shapes {a.shape} and {b.shape} differ")
    if a._data.dtype != b._data.dtype:
        raise MXNetTypeError(f"operator {sym}: operands have dtypes {a._data.dtype.name} and "
                             f"{b._data.dtype.name}")
    check_same_device_kind(a._ctx, b._ctx, f"operator {sym}")
    b_data, b_idx = (b._data, b._indices) if a._ctx == b._ctx or not a._ctx.is_gpu else (
        to_device(b._data, a._ctx), to_device(b._indices, a._ctx))
    xp = a._xp()
    with device_scope(a._ctx):
        idx = xp.unique(xp.concatenate([a._indices, local_operand(b_idx, a._indices)]))
        data = xp.zeros((idx.shape[0],) + a.shape[1:], dtype=a._data.dtype)
        first, second = (b_data, a._data) if reverse else (a._data, b_data)
        first_idx, second_idx = (b_idx, a._indices) if reverse else (a._indices, b_idx)
        data[xp.searchsorted(idx, local_operand(first_idx, idx))] = local_operand(first, data)
        pos = xp.searchsorted(idx, local_operand(second_idx, idx))
        if name == "add":
            data[pos] += local_operand(second, data)
        else:
            data[pos] -= local_operand(second, data)
    return RowSparseNDArray(data, idx, a.shape, a._ctx)



# ---------------------------------------------------------------------- conversions
def from_xp(data: Any, indices: Any, shape: Any, ctx: Context,
            check: bool = False) -> RowSparseNDArray:
    """Wrap raw xp arrays as a RowSparseNDArray without copying (shares memory).

    ``indices`` must already be int64; ``check=True`` also runs check_format.
    """
    rsp = RowSparseNDArray(data, indices, shape, ctx)
    if check:
        rsp.check_format()
    return rsp


def dense_to_rsp(src: NDArray, dtype: np.dtype | None = None) -> RowSparseNDArray:
    """A row-sparse copy of a dense NDArray, keeping rows with any nonzero."""
    if src.ndim == 0:
        raise MXNetValueError("cannot store a 0-d array as row_sparse")
    xp = src._xp()
    arr = src._array
    dt = arr.dtype if dtype is None else dtype
    with device_scope(src._ctx):
        # (the row size spelled out: -1 cannot be inferred for a zero-size array)
        flat = arr.reshape(arr.shape[0], int(np.prod(arr.shape[1:], dtype=np.int64)))
        keep = xp.flatnonzero(xp.any(flat != 0, axis=1)).astype(np.int64)
        data = xp.ascontiguousarray(arr[keep], dtype=dt)
    return RowSparseNDArray(data, keep, src.shape, src._ctx)


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """A copy of ``data`` in storage ``stype`` ('default', 'row_sparse' or 'csr';
    csr.py converts to and from csr)."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"cast_storage expects an NDArray, got {type(data).__name__}")
    if stype == "csr" or data.stype == "csr":
        return _provided("csr_cast_storage")(data, stype)
    check_stype(stype)
    if isinstance(data, RowSparseNDArray):
        if stype == "row_sparse":
            return data.copy()
        return NDArray(data._densify(), data._ctx)
    if stype == "default":
        return data.copy()
    return dense_to_rsp(data)


def empty_row_sparse(shape: Any, ctx: Context | None = None, dtype: Any = None
                     ) -> RowSparseNDArray:
    """An all-zero row_sparse array: it stores no rows."""
    shape = normalize_shape(shape)
    ctx = _ctx_arg(ctx)
    dt = normalize_dtype(dtype)
    host_data = np.zeros((0,) + shape[1:], dtype=dt)
    host_idx = np.zeros((0,), dtype=np.int64)
    if ctx.is_gpu:
        return RowSparseNDArray(to_device(host_data, ctx), to_device(host_idx, ctx), shape, ctx)
    return RowSparseNDArray(host_data, host_idx, shape, ctx)


provide(cast_storage=cast_storage)
