"""Row-sparse arrays, as MXNet 1.9's ``mxnet.nd.sparse`` (``row_sparse`` only).

A :class:`RowSparseNDArray` of shape ``(n, ...)`` stores only some rows:
``_data`` (an xp array of shape ``(nnz,) + shape[1:]``) and ``_indices``
(xp int64, sorted, unique, each in ``[0, n)``). ``csr`` arrays and
``dot`` live in ``csr.py`` (reached through this module, as MXNet's
``mx.nd.sparse``).

``RowSparseNDArray(data, indices, shape, ctx)`` and :func:`from_xp` wrap raw
arrays without copying and check only their structure (cheap). As MXNet,
:func:`row_sparse_array` builds the array it is given even when its indices
are unsorted, repeated or out of range; :meth:`RowSparseNDArray.check_format`
then raises MXNet's error. A store refuses such a value (``kvstore.keys``).
"""
from __future__ import annotations

from typing import Any

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
from .creation import zeros as _dense_zeros
from .ndarray import NDArray, _ctx_arg, _shape_str, check_same_device_kind

__all__ = [
    "RowSparseNDArray",
    "array",
    "cast_storage",
    "dense_to_rsp",
    "empty",
    "from_xp",
    "retain",
    "zeros_like",
    "row_sparse_array",
    "zeros",
]

_INT64 = np.dtype(np.int64)


def _check_stype(stype: str) -> None:
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
        return self._shape

    @property
    def dtype(self) -> type:
        return self._data.dtype.type

    @property
    def stype(self) -> str:
        return "row_sparse"

    _num_aux = 1  # one auxiliary array, the indices (MXNet's attribute)

    @property
    def size(self) -> int:
        return int(np.prod(self._shape))

    @property
    def ndim(self) -> int:
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
        return self.tostype("default").asscalar()

    def copy(self) -> RowSparseNDArray:
        return self.copyto(self._ctx)

    def copyto(self, other: Any) -> NDArray:
        """Copy onto a Context (new array) or into an NDArray of either storage."""
        if isinstance(other, Context):
            return RowSparseNDArray(to_device(self._data, other), to_device(self._indices, other),
                                    self._shape, other)
        if not isinstance(other, NDArray):
            raise MXNetTypeError(f"copyto does not support type {type(other)}")
        if other is self:
            return self
        if other.shape != self._shape:
            raise MXNetValueError(f"copyto: source shape {self._shape} differs from "
                                  f"destination shape {other.shape}")
        if isinstance(other, RowSparseNDArray):
            other._data = to_device(self._data, other._ctx, other._data.dtype)
            other._indices = to_device(self._indices, other._ctx)
            return other
        dense = self._densify()
        other[:] = NDArray(dense, self._ctx)
        return other

    def astype(self, dtype: Any, copy: bool = True) -> RowSparseNDArray:
        dt = normalize_dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return RowSparseNDArray(to_device(self._data, self._ctx, dt),
                                to_device(self._indices, self._ctx), self._shape, self._ctx)

    def tostype(self, stype: str) -> NDArray:
        return cast_storage(self, stype)

    def retain(self, row_ids: Any) -> RowSparseNDArray:
        """Only the rows ``row_ids`` (see :func:`retain`)."""
        return retain(self, row_ids)

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
        res = None
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
            if res.stype != "row_sparse":
                res = dense_to_rsp(res)
            self._data, self._indices = res._data, res._indices
            return self
        return res

    def _keeps_zero(self, scalar: Any, name: str, reverse: bool) -> bool:
        """Whether ``0 <op> scalar`` (or ``scalar <op> 0``) is 0 in this dtype."""
        zero = NDArray(np.zeros(1, dtype=self._data.dtype), None)
        return not bool(zero._binary(scalar, name, reverse)._array[0])

    def __neg__(self) -> RowSparseNDArray:
        return self._binary(-1, "multiply")

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


# ---------------------------------------------------------------------- helpers
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
        flat = arr.reshape(arr.shape[0], -1)
        keep = xp.flatnonzero(xp.any(flat != 0, axis=1)).astype(np.int64)
        data = xp.ascontiguousarray(arr[keep], dtype=dt)
    return RowSparseNDArray(data, keep, src.shape, src._ctx)


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """A copy of ``data`` in storage ``stype`` ('default', 'row_sparse' or 'csr')."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"cast_storage expects an NDArray, got {type(data).__name__}")
    if stype == "csr" or data.stype == "csr":
        from . import csr
        return csr.cast_storage(data, stype)
    _check_stype(stype)
    if isinstance(data, RowSparseNDArray):
        if stype == "row_sparse":
            return data.copy()
        return NDArray(data._densify(), data._ctx)
    if stype == "default":
        return data.copy()
    return dense_to_rsp(data)


def zeros(stype: str, shape: Any, ctx: Context | None = None, dtype: Any = None,
          **kwargs: Any) -> NDArray:
    """An all-zero array of storage ``stype`` (a row_sparse or csr one stores nothing)."""
    if stype == "csr":
        from . import csr
        return csr.zeros(shape, ctx=ctx, dtype=dtype)
    _check_stype(stype)
    if stype == "default":
        return _dense_zeros(shape, ctx=ctx, dtype=dtype)
    shape = normalize_shape(shape)
    ctx = _ctx_arg(ctx)
    dt = normalize_dtype(dtype)
    host_data = np.zeros((0,) + shape[1:], dtype=dt)
    host_idx = np.zeros((0,), dtype=np.int64)
    if ctx.is_gpu:
        return RowSparseNDArray(to_device(host_data, ctx), to_device(host_idx, ctx), shape, ctx)
    return RowSparseNDArray(host_data, host_idx, shape, ctx)


def empty(stype: str, shape: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """As :func:`zeros` (an empty row_sparse array stores nothing)."""
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def _source_dtype(src: Any, dtype: Any) -> np.dtype:
    """MXNet's default: keep a numpy/NDArray source's dtype, else float32."""
    if dtype is not None:
        return normalize_dtype(dtype)
    if isinstance(src, NDArray):
        return np.dtype(src.dtype)
    if is_host(src) or hasattr(src, "__cuda_array_interface__"):
        return normalize_dtype(src.dtype)
    return normalize_dtype(None)


def _host_or_xp(src: Any, dtype: np.dtype | None) -> Any:
    if isinstance(src, NDArray):
        return src._array if src.stype == "default" else src._densify()
    if is_host(src) or hasattr(src, "__cuda_array_interface__"):
        return src
    try:
        return np.asarray(src, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise MXNetTypeError(f"expected an array-like, got {type(src).__name__}: {exc}") \
            from None


def _check_shape(got: tuple, shape: Any) -> None:
    """MXNet's rule: an explicit ``shape`` must equal the one the source has."""
    if shape is not None and tuple(int(d) for d in got) != normalize_shape(shape):
        raise MXNetValueError(f"Shape mismatch detected. {tuple(got)} v.s. {tuple(shape)}")


def row_sparse_array(arg1: Any, shape: Any = None, ctx: Context | None = None,
                     dtype: Any = None) -> RowSparseNDArray:
    """Create a RowSparseNDArray (copies its sources).

    ``arg1`` is ``(data, indices)`` (kept as given, as MXNet: invalid
    indices are reported by ``check_format``); a shape tuple (an empty array); a
    RowSparseNDArray; or a dense source (NDArray, numpy array, nested lists;
    its nonzero rows are kept). A ``shape`` that contradicts the source's
    raises ValueError, as MXNet.

    >>> a = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2))
    >>> a.indices.asnumpy()
    array([1, 3])
    """
    ctx = _ctx_arg(ctx)
    if isinstance(arg1, tuple):
        is_shape = all(isinstance(d, (int, np.integer)) for d in arg1)
        if len(arg1) < 2 or (len(arg1) > 2 and not is_shape):
            raise MXNetValueError(f"Unexpected length of input tuple: {len(arg1)} (expected "
                                  "(data, indices) or a shape)")
        if is_shape:
            _check_shape(arg1, shape)
            return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
        src_data, src_idx = arg1
        dt = _source_dtype(src_data, dtype)
        data = _host_or_xp(src_data, dt)
        idx = _host_or_xp(src_idx, None)
        for what, a in (("data", data), ("indices", idx)):
            if a.dtype.kind not in "biuf":
                raise MXNetTypeError(f"row_sparse {what} must be numbers, got dtype {a.dtype}")
        if data.ndim < 1 or idx.ndim != 1 or data.shape[0] != idx.shape[0]:
            raise MXNetValueError(f"row_sparse data of shape {tuple(data.shape)} needs one "
                                  f"index per row, got indices of shape {tuple(idx.shape)}")
        if idx.size and idx.dtype.kind == "f" and not bool((idx == idx.astype(np.int64)).all()):
            raise MXNetValueError("row_sparse indices must be integers")
        if shape is None:  # as MXNet: the last index + 1 (right when they are sorted)
            nrows = int(idx[-1]) + 1 if idx.size else 0
            if nrows < 0:
                raise MXNetValueError(f"row_sparse_array: cannot infer a shape from the "
                                      f"last index {int(idx[-1])}: give shape")
            shape = (nrows,) + tuple(data.shape[1:])
        shape = normalize_shape(shape)
        if tuple(data.shape[1:]) != shape[1:]:
            raise MXNetValueError(f"row_sparse data of shape {tuple(data.shape)} does not "
                                  f"match shape {shape}: rows must have shape {shape[1:]}")
        # as MXNet: unsorted, repeated or out-of-range indices are kept as given
        # (check_format reports them)
        return RowSparseNDArray(to_device(data, ctx, dt), to_device(idx, ctx, _INT64),
                                shape, ctx)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        out = arg1.copyto(ctx)
        return out if dtype is None else out.astype(dtype, copy=False)
    if isinstance(arg1, NDArray):
        _check_shape(arg1.shape, shape)
        dense = arg1 if arg1.context == ctx else arg1.copyto(ctx)
        return dense_to_rsp(dense, _source_dtype(arg1, dtype))
    dt = _source_dtype(arg1, dtype)
    try:
        host = arg1 if is_host(arg1) or hasattr(arg1, "__cuda_array_interface__") else \
            np.asarray(arg1, dtype=dt)
    except (TypeError, ValueError) as exc:
        raise MXNetTypeError(f"row_sparse_array does not accept {type(arg1).__name__}: pass "
                             f"(data, indices), a shape, or a dense array ({exc})") from None
    _check_shape(host.shape, shape)
    return dense_to_rsp(NDArray(to_device(host, ctx, dt), ctx))


def retain(data: NDArray, indices: Any = None, out: NDArray | None = None,
           **kwargs: Any) -> RowSparseNDArray:
    """The rows ``indices`` of ``data`` (row_sparse or dense), as a RowSparseNDArray.

    The result stores exactly the requested rows, sorted and unique; a row
    ``data`` does not store comes back as zeros (as MXNet's ``sparse_retain``).
    With ``out`` the result is copied into it. Unknown keyword arguments raise
    MXNetError, as MXNet's operator does.
    """
    if out is not None:
        return retain(data, indices, **kwargs).copyto(out)
    if kwargs:
        raise MXNetError(f"retain got unexpected arguments {sorted(kwargs)}; it takes "
                         "data and indices")
    if indices is None:
        raise MXNetError("retain needs indices (the row ids to keep)")
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"retain expects an NDArray, got {type(data).__name__}")
    ctx = data._ctx
    if isinstance(indices, NDArray):
        if indices.stype != "default":
            raise MXNetTypeError("retain: row ids must be a dense array")
        ids = indices._array  # any context: row ids are copied to data's device below
    elif is_host(indices) or hasattr(indices, "__cuda_array_interface__"):
        ids = indices
    else:
        ids = np.asarray(indices)
    xp = data._xp()
    shape = data.shape
    with device_scope(ctx):
        ids = local_operand(ids, data._data if isinstance(data, RowSparseNDArray)
                            else data._array)
        if ids.ndim != 1:
            raise MXNetValueError(f"retain: row ids must be 1-d, got shape {tuple(ids.shape)}")
        ids = xp.unique(ids.astype(np.int64))
        if ids.size:
            lo, hi = int(ids[0]), int(ids[-1])
            if lo < 0 or hi >= shape[0]:
                raise MXNetValueError(f"retain: row id {lo if lo < 0 else hi} is out of "
                                      f"range for shape {shape}")
        if not isinstance(data, RowSparseNDArray):
            return RowSparseNDArray(xp.ascontiguousarray(data._array[ids]), ids, shape, ctx)
        have = data._indices
        if not have.size:
            ids = ids[:0]  # as MXNet: an array with no rows retains none
        out = xp.zeros((ids.shape[0],) + shape[1:], dtype=data._data.dtype)
        if have.size and ids.size:
            pos = xp.searchsorted(have, ids)
            pos_c = xp.minimum(pos, have.shape[0] - 1)
            found = have[pos_c] == ids
            out[found] = data._data[pos_c[found]]
    return RowSparseNDArray(out, ids, shape, ctx)


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A sparse array copied from a sparse ``source_array`` (MXNet's
    ``mx.nd.sparse.array``), in its dtype unless ``dtype`` is given.

    A dense NDArray or a numpy array is refused (ValueError, as MXNet): use
    ``tostype`` or ``mx.nd.array``.
    """
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx if ctx is not None else
                                source_array.context,
                                dtype=dtype if dtype is not None else source_array.dtype)
    if isinstance(source_array, NDArray) and source_array.stype != "default":
        out = source_array.copyto(ctx if ctx is not None else source_array.context)
        return out if dtype is None else out.astype(dtype)
    if isinstance(source_array, NDArray):
        raise MXNetValueError("Please use `tostype` to create RowSparseNDArray or CSRNDArray "
                              "from an NDArray")
    if type(source_array).__module__.startswith("scipy.sparse"):
        csr = source_array.tocsr().sorted_indices()
        csr.sum_duplicates()
        from .csr import csr_matrix
        return csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape, ctx=ctx,
                          dtype=dtype if dtype is not None else csr.dtype)
    if isinstance(source_array, (np.ndarray, np.generic)):
        raise MXNetValueError("Please use mx.nd.array to create an NDArray with source_array "
                              f"of type {type(source_array)}")
    raise MXNetValueError(f"Unexpected source_array type: {type(source_array)}")


def zeros_like(data: NDArray, **kwargs: Any) -> NDArray:
    """Zeros of ``data``'s storage type, shape, dtype and context."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"zeros_like: argument data must have NDArray type, but got "
                             f"{type(data).__name__}")
    return zeros(data.stype, data.shape, ctx=data.context, dtype=data.dtype)


def __getattr__(name: str) -> Any:
    # the csr type and its operators (csr.py) are reached lazily
    if name in ("CSRNDArray", "csr_matrix", "dot"):
        from . import csr
        return getattr(csr, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
