"""Compressed-sparse-row arrays (``mx.nd.sparse.CSRNDArray``, ``csr_matrix``,
``dot``), as MXNet 1.9.1 has them, in host memory.

A ``CSRNDArray`` holds its ``data``, ``indices`` and ``indptr`` as numpy
arrays on a CPU context (or a simulated GPU): row ``i`` holds
``data[indptr[i]:indptr[i+1]]`` at the columns ``indices[indptr[i]:indptr[i+1]]``.
What it does, each as MXNet does it (``tests/parity/scenarios_csr.py``
records MXNet's results):

* built by ``csr_matrix`` from ``(data, indices, indptr)`` (kept as given,
  ``check_format`` reports invalid ones), ``(M, N)``, a dense 2-D source
  (NDArray, numpy array or nested lists) or another CSRNDArray; by
  ``dense.tostype('csr')``, ``sparse.zeros('csr', shape)``;
* ``tostype('default')``, ``asnumpy``, ``copy``, ``copyto`` (a context, a
  dense NDArray of its shape and dtype, another csr array), ``as_in_context``,
  ``astype``, ``flatten`` (dense), ``data``/``indices``/``indptr`` (copies),
  row slices ``a[i]``, ``a[b:e]`` (a new array);
* arithmetic, comparisons, ``a[:] = value``, ``abs``/``sqrt``/``square``/
  ``sign``/``negative``/``clip`` and ``concat``: ``csr_ops.py``, csr results
  where MXNet keeps csr storage (``a * 2``, ``a + b``, ``a * dense``, ``a > 0``,
  ``abs(a)``...), dense ones where it falls back;
* :func:`dot` (``mx.nd.sparse.dot``): ``csr x dense`` is dense,
  ``csr.T x dense`` (``transpose_a=True``) row sparse;
* ``nd.save`` writes MXNet's layout, byte for byte as MXNet does.

No GPU memory and no csr in a KVStore: a CUDA context is refused, naming it.
"""
from __future__ import annotations

from typing import Any, cast, overload

import numpy as np

from ..base import MXNetError
from ..context import Context
from ._util import MXNetTypeError, MXNetValueError, normalize_dtype, normalize_shape
from .ndarray import NDArray, _ctx_arg, _provided, provide
from .row_sparse import RowSparseNDArray

__all__ = ["CSRNDArray", "cast_storage", "csr_matrix", "dot", "zeros"]


def _host_ctx(ctx: Any) -> Context:
    ctx = _ctx_arg(ctx)
    if ctx.uses_cupy:
        raise MXNetValueError(f"csr arrays live in host memory here: context {ctx} is a GPU's "
                              "(use a cpu context, or tostype('default') on the GPU)")
    return ctx


class CSRNDArray(NDArray):
    """A 2-D csr array: row ``i`` holds ``data[indptr[i]:indptr[i+1]]`` at the
    columns ``indices[indptr[i]:indptr[i+1]]`` (host memory)."""

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 shape: tuple, ctx: Context, full_check: bool = True) -> None:
        self._shape = tuple(int(d) for d in shape)
        self._ctx = ctx
        self._set(data, indices, indptr)
        self.check_format(full_check)

    def _set(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray) -> None:
        self._csr = (data, indices.astype(np.int64, copy=False),
                     indptr.astype(np.int64, copy=False))

    @property
    def _array(self) -> Any:
        # (dense operators read this: refused, rather than computing on the values alone)
        raise MXNetTypeError(f"this operation needs a dense array, and this one (shape "
                             f"{self._shape}) has csr storage: use tostype('default') first")

    @property
    def stype(self) -> str:
        return "csr"

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def size(self) -> int:
        return int(np.prod(self._shape))

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> Any:
        return self._csr[0].dtype.type

    @property
    def data(self) -> NDArray:
        """The stored values, as a dense NDArray (a copy)."""
        return NDArray(self._csr[0].copy(), self._ctx)

    @property
    def indices(self) -> NDArray:
        """The column of each stored value (int64, a copy)."""
        return NDArray(self._csr[1].copy(), self._ctx)

    @property
    def indptr(self) -> NDArray:
        """Where each row's values start (int64, rows + 1 entries, a copy)."""
        return NDArray(self._csr[2].copy(), self._ctx)

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError unless the three arrays describe a csr array of this
        shape: their lengths always; with ``full_check`` (MXNet's
        ``kCSRIdxErr``) also indptr starting at 0,
        non-decreasing and ending at the number of values, and each row's
        column indices ascending and in range."""
        data, indices, indptr = self._csr
        rows, cols = self._shape
        if not (data.ndim == 1 and indices.shape == data.shape and indptr.shape == (rows + 1,)):
            raise MXNetValueError(f"csr array of shape {self._shape}: data {data.shape}, "
                                  f"indices {indices.shape}, indptr {indptr.shape} do not "
                                  "describe it")
        if not full_check:
            return
        steps = np.diff(indptr)
        problem = None
        if int(indptr[0]) != 0 or int(indptr[-1]) != data.size or bool(np.any(steps < 0)):
            problem = (f"indptr {indptr.tolist()[:8]} does not run from 0 up to the "
                       f"{data.size} values")
        elif indices.size:
            row_of = np.repeat(np.arange(rows), steps)
            if int(indices.min()) < 0 or int(indices.max()) >= cols or \
                    bool(np.any((np.diff(indices) <= 0) & (row_of[1:] == row_of[:-1]))):
                problem = f"indices {indices.tolist()[:8]}"
        if problem is not None:  # (MXNet 1.9.1 reports every case as kCSRIdxErr)
            raise MXNetError("Check failed: err != kCSRIdxErr (3 vs. 3) : Indices of csr "
                             "NDArray should be non-negative, in ascending order per row  and "
                             f"less than the number of columns ({problem}, shape "
                             f"{self._shape})")

    def _rows_of_values(self) -> np.ndarray:
        return np.repeat(np.arange(self._shape[0]), np.diff(self._csr[2]))

    def asnumpy(self) -> np.ndarray:
        self.check_format()  # (an array built as given may not describe one)
        data, indices, _ = self._csr
        out = np.zeros(self._shape, data.dtype)
        out[self._rows_of_values(), indices] = data
        return out

    def tostype(self, stype: str) -> NDArray:
        return cast_storage(self, stype)

    @property
    def T(self) -> NDArray:
        """The transpose, dense (as MXNet's storage fallback)."""
        return self.tostype("default").T

    # ------------------------------------------------------------------ copies
    def copy(self) -> CSRNDArray:
        data, indices, indptr = self._csr
        return CSRNDArray(data.copy(), indices.copy(), indptr.copy(), self._shape, self._ctx,
                          full_check=False)

    @overload
    def copyto(self, other: Context) -> CSRNDArray: ...

    @overload
    def copyto(self, other: Any) -> NDArray: ...

    def copyto(self, other: Any) -> NDArray:
        """Copy onto a context (a new array) or into ``other``: a csr array of
        this shape (cast to its dtype) or a dense NDArray of this shape and dtype."""
        if isinstance(other, Context):
            data, indices, indptr = self._csr
            return CSRNDArray(data.copy(), indices.copy(), indptr.copy(), self._shape,
                              _host_ctx(other), full_check=False)
        if self._copy_is_noop(other):
            return self
        if isinstance(other, CSRNDArray):
            data, indices, indptr = self._csr
            other._set(data.astype(other._csr[0].dtype), indices.copy(), indptr.copy())
            return other
        if other.stype != "default":
            raise MXNetTypeError(f"copyto: a csr array copies into a csr or dense array, not "
                                 f"{other.stype}")
        if np.dtype(other.dtype) != self._csr[0].dtype:
            raise MXNetTypeError(f"copyto: a csr array of dtype {self._csr[0].dtype.name} into "
                                 f"a dense array of dtype {np.dtype(other.dtype).name}: cast "
                                 "one with astype first")
        other[:] = NDArray(self.asnumpy(), self._ctx)
        return other

    def as_in_context(self, context: Context) -> CSRNDArray:
        """Self when already on ``context``, else a copy there."""
        return self if self._ctx == context else self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> CSRNDArray:
        """The values cast to ``dtype`` (indices and indptr copied); ``copy=False``
        returns self when the dtype already matches."""
        dt = normalize_dtype(dtype)
        if not copy and dt == self._csr[0].dtype:
            return self
        data, indices, indptr = self._csr
        return CSRNDArray(data.astype(dt), indices.copy(), indptr.copy(), self._shape,
                          self._ctx, full_check=False)

    # ------------------------------------------------------------------ rows
    def __getitem__(self, key: Any) -> CSRNDArray:
        """``a[i]`` (one row, as a 1-row csr array), ``a[b:e]`` (rows ``b`` to
        ``e - 1``; a new array) or ``a[:]`` (self), with MXNet's rules:
        python ints and slices without a step only, ``-1`` the last row, a
        start or stop of 0 or None the array's start or end, a stop past the
        end clipped."""
        rows = self._shape[0]
        if isinstance(key, int) and not isinstance(key, bool):
            begin = rows - 1 if key == -1 else key
            return self._slice_rows(key, begin, begin + 1)
        if isinstance(key, slice):
            if key.step is not None:
                raise MXNetValueError(f"CSRNDArray only supports continuous slicing on axis 0, "
                                      f"got step {key.step!r}")
            if key.start is None and key.stop is None:
                return self
            return self._slice_rows(key, key.start or 0, key.stop or rows)
        if isinstance(key, tuple):
            raise MXNetValueError(f"Multi-dimension indexing is not supported: [{key!r}] of a "
                                  f"csr array of shape {self._shape}")
        raise MXNetValueError(f"Undefined behaviour for a csr array's [{key!r}] "
                              f"({type(key).__name__}; use a python int or a slice)")

    def _slice_rows(self, key: Any, begin: int, end: int) -> CSRNDArray:
        rows = self._shape[0]
        b = begin + rows if begin < 0 else begin
        e = min(end + rows if end < 0 else end, rows)
        if not 0 <= b < e:
            raise MXNetValueError(f"csr array of shape {self._shape}: [{key!r}] selects rows "
                                  f"{begin} up to {end}, not a non-empty range of its {rows} "
                                  "rows")
        data, indices, indptr = self._csr
        lo, hi = int(indptr[b]), int(indptr[e])
        return CSRNDArray(data[lo:hi].copy(), indices[lo:hi].copy(), indptr[b:e + 1] - lo,
                          (e - b, self._shape[1]), self._ctx, full_check=False)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a[:] = value``: a csr array (cast to this dtype), a dense NDArray of
        this shape and dtype, or a numpy array (as ``nd.array`` of it)."""
        _provided("csr_setitem")(self, key, value)

    def reshape(self, *args: Any, **kwargs: Any) -> NDArray:
        raise MXNetTypeError(f"reshape is not supported for a csr array (shape {self._shape}): "
                             "convert with tostype('default') first")

    def flatten(self, inplace: bool = False) -> NDArray:
        """A dense copy (MXNet's storage fallback: a 2-D array is already flat);
        ``inplace=True`` (a reshaped view) is refused, as ``reshape``."""
        if inplace:
            return self.reshape((self._shape[0], -1))
        return self.tostype("default")

    # ------------------------------------------------------------------ arithmetic
    def _binary(self, other: Any, name: str, reverse: bool = False,
                inplace: bool = False) -> NDArray:
        # (csr_ops.py: csr results where MXNet has a csr kernel, else dense)
        return _provided("csr_binary")(self, other, name, reverse, inplace)

    def __neg__(self) -> CSRNDArray:
        # (csr_ops.binary keeps csr storage for a csr array times a scalar)
        return cast(CSRNDArray, self._binary(-1, "multiply"))

    def __pos__(self) -> NDArray:
        raise MXNetTypeError("bad operand type for unary +: 'CSRNDArray' (as MXNet 1.9.1)")

    def __repr__(self) -> str:
        return f"\n<CSRNDArray {self._shape[0]}x{self._shape[1]} @{self._ctx}>"

    def __reduce__(self) -> Any:
        return NDArray.__reduce__(self)


# ---------------------------------------------------------------------- building
def _from_dense(arr: np.ndarray, ctx: Context) -> CSRNDArray:
    """The csr array of a 2-D host array: every element that is not 0 (NaN kept)."""
    if arr.ndim != 2:
        raise MXNetValueError("To convert to a CSR, the NDArray should be 2 Dimensional. "
                              f"Current shape is {tuple(arr.shape)}")
    stored = arr != 0
    indptr = np.zeros(arr.shape[0] + 1, np.int64)
    np.cumsum(stored.sum(axis=1), out=indptr[1:])
    return CSRNDArray(np.ascontiguousarray(arr[stored]), np.nonzero(stored)[1].astype(np.int64),
                      indptr, arr.shape, ctx, full_check=False)


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """``data`` (dense or csr) in storage ``stype`` ('default' or 'csr'), a copy."""
    if isinstance(data, CSRNDArray):
        if stype == "csr":
            return data.copy()
        if stype == "default":
            return NDArray(data.asnumpy(), data._ctx)
        raise MXNetValueError(f"cast_storage from csr to {stype} is not supported")
    if stype != "csr":
        raise MXNetValueError(f"cast_storage to {stype!r} is not the csr module's")
    if data.stype != "default":
        raise MXNetValueError(f"cast_storage from {data.stype} to csr is not supported")
    ctx = _host_ctx(data.context) if data.ndim == 2 else data.context
    return _from_dense(data.asnumpy(), ctx)


def zeros(shape: Any, ctx: Context | None = None, dtype: Any = None) -> CSRNDArray:
    """An all-zero csr array (no stored values) of a 2-D ``shape``."""
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise MXNetValueError(f"a csr array is 2-D, got shape {shape}")
    dt = normalize_dtype(dtype)
    return CSRNDArray(np.zeros(0, dt), np.zeros(0, np.int64), np.zeros(shape[0] + 1, np.int64),
                      shape, _host_ctx(ctx))


def _check_shape(got: tuple, shape: Any) -> None:
    if shape is not None and tuple(got) != normalize_shape(shape):
        raise MXNetValueError(f"Shape mismatch detected. {tuple(got)} v.s. "
                              f"{normalize_shape(shape)}")


def csr_matrix(arg1: Any, shape: Any = None, ctx: Context | None = None,
               dtype: Any = None) -> CSRNDArray:
    """A CSRNDArray (MXNet 1.9's ``mx.nd.sparse.csr_matrix``), always a copy.

    Parameters
    ----------
    arg1 : tuple, CSRNDArray or array_like
        ``(data, indices, indptr)``: the csr definition, kept as given when
        the lengths fit (``check_format`` reports invalid indices, as MXNet);
        without ``shape`` it is ``(len(indptr) - 1, max(indices) + 1)``.
        ``(M, N)``: an all-zero array. A CSRNDArray: a copy. A dense 2-D
        source (NDArray, numpy array, nested lists): its nonzero elements.
        The COO form ``(data, (row, col))`` needs scipy in MXNet and is
        refused here.
    shape : tuple of 2 ints, optional
        Must agree with the source's shape where it has one.
    ctx : Context, optional
        A CPU context (or simulated GPU); default: the current context (a
        CSRNDArray source: its own).
    dtype : str or numpy.dtype, optional
        Default: the source's for an NDArray, numpy array or CSRNDArray,
        else float32.
    """
    if isinstance(arg1, tuple):
        if len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
            raise MXNetTypeError("csr_matrix((data, (row, col))): the COO form needs scipy in "
                                 "MXNet and is not supported here; give (data, indices, "
                                 "indptr), or a dense source")
        if len(arg1) == 2:
            _check_shape(normalize_shape(arg1), shape)
            return zeros(arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _from_definition(*arg1, shape=shape, ctx=ctx, dtype=dtype)
        raise MXNetValueError(f"Unexpected length of input tuple: {len(arg1)} (csr_matrix "
                              "takes (M, N) or (data, indices, indptr))")
    if isinstance(arg1, CSRNDArray):
        _check_shape(arg1.shape, shape)
        out = arg1.copyto(arg1.context if ctx is None else ctx)
        return out if dtype is None else out.astype(dtype, copy=False)
    if isinstance(arg1, NDArray) and arg1.stype != "default":
        raise MXNetValueError(f"Unexpected input type: {type(arg1).__name__} (csr_matrix takes "
                              "a dense or csr source)")
    if isinstance(arg1, NDArray):
        src = arg1.asnumpy()
    else:
        try:
            src = np.asarray(arg1)
        except (TypeError, ValueError) as exc:
            raise MXNetTypeError(f"csr_matrix: {type(arg1).__name__} is not array-like: "
                                 f"{exc}") from None
    dt = normalize_dtype(dtype, default=src.dtype if isinstance(arg1, (NDArray, np.ndarray))
                         else np.dtype(np.float32))
    _check_shape(src.shape, shape)
    return _from_dense(src.astype(dt, copy=False), _host_ctx(ctx))


def _from_definition(data: Any, indices: Any, indptr: Any, shape: Any, ctx: Any,
                     dtype: Any) -> CSRNDArray:
    src = data
    data, indices, indptr = (a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)
                             for a in (data, indices, indptr))
    # as MXNet: the source's dtype for an NDArray or numpy source, else float32
    dt = normalize_dtype(dtype, default=data.dtype if isinstance(src, (NDArray, np.ndarray))
                         else np.dtype(np.float32))
    if shape is None:
        if indices.size == 0:
            raise MXNetValueError("csr_matrix((data, indices, indptr)) without shape: no "
                                  "indices to infer the number of columns from; give shape")
        shape = (indptr.size - 1, int(indices.max()) + 1)
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise MXNetValueError(f"a csr array is 2-D, got shape {shape}")
    return CSRNDArray(np.array(data, dt).reshape(-1), np.array(indices).reshape(-1),
                      np.array(indptr).reshape(-1), shape, _host_ctx(ctx), full_check=False)


# ---------------------------------------------------------------------- dot
def dot(lhs: Any, rhs: Any, transpose_a: bool = False, transpose_b: bool = False,
        out: NDArray | None = None) -> NDArray:
    """``lhs . rhs`` for a csr ``lhs`` and a 2-D dense or row-sparse ``rhs`` of
    the same float dtype (``mx.nd.sparse.dot``).

    ``transpose_a`` uses ``lhs.T``, ``transpose_b`` ``rhs.T``. The result is
    dense on ``lhs``'s context, except ``csr.T x dense`` (``transpose_a``
    alone), row sparse with a row for each column ``lhs`` stores a value in,
    as MXNet. Each output element sums its products in the order of ``lhs``'s
    stored values, as MXNet's CPU kernels. With ``out`` the result is copied
    there and ``out`` returned.
    """
    if not isinstance(lhs, CSRNDArray):
        raise MXNetTypeError(f"sparse.dot here takes a csr lhs, got "
                             f"{getattr(lhs, 'stype', type(lhs).__name__)}")
    if not isinstance(rhs, NDArray) or rhs.stype == "csr":
        raise MXNetTypeError(f"sparse.dot: rhs must be a dense or row_sparse NDArray, got "
                             f"{getattr(rhs, 'stype', type(rhs).__name__)}")
    dt = lhs._csr[0].dtype
    if np.dtype(rhs.dtype) != dt or dt.kind != "f":
        raise MXNetTypeError(f"sparse.dot: operands of dtypes {dt.name} and "
                             f"{np.dtype(rhs.dtype).name}; both must be the same float dtype")
    if rhs.ndim != 2:
        raise MXNetValueError(f"sparse.dot: rhs of shape {rhs.shape}: a csr lhs takes a 2-D rhs")
    rows, cols = lhs.shape
    left = (cols, rows) if transpose_a else (rows, cols)
    right = rhs.shape[::-1] if transpose_b else rhs.shape
    if left[1] != right[0]:
        raise MXNetValueError(f"sparse.dot: shapes {lhs.shape} (transpose_a={transpose_a}) and "
                              f"{rhs.shape} (transpose_b={transpose_b}) do not fit")
    lhs.check_format()
    r = rhs.asnumpy()
    r = r.T if transpose_b else r
    data, indices, _ = lhs._csr
    res = np.zeros((left[0], right[1]), dt)
    if transpose_a:
        np.add.at(res, indices, data[:, None] * r[lhs._rows_of_values()])
    else:
        np.add.at(res, lhs._rows_of_values(), data[:, None] * r[indices])
    if transpose_a and not transpose_b:
        stored = np.unique(indices)
        result: NDArray = RowSparseNDArray(res[stored], stored, res.shape, lhs.context)
    else:
        result = NDArray(res, lhs.context)
    if out is None:
        return result
    result.copyto(out)
    return out


provide(csr_cast_storage=cast_storage, csr_zeros=zeros)
