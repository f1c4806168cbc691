"""MXNet 1.9's ``mxnet.nd.sparse``: building row-sparse arrays from user input
(:func:`row_sparse_array`, :func:`array`, :func:`zeros`...) and :func:`retain`.
The array type itself, its checks and conversions are ``row_sparse.py``'s,
re-exported here, as are ``csr.py``'s ``CSRNDArray``, ``csr_matrix`` and ``dot``.

As MXNet, :func:`row_sparse_array` builds the array it is given even when its
indices are unsorted, repeated or out of range;
:meth:`RowSparseNDArray.check_format` then raises MXNet's error. A store
refuses such a value (``kvstore.keys``).
"""
from __future__ import annotations

from typing import Any, overload

import numpy as np

from ..base import MXNetError
from ..context import Context
from ._util import (
    MXNetTypeError,
    MXNetValueError,
    device_scope,
    is_host,
    local_operand,
    normalize_dtype,
    normalize_shape,
    to_device,
)
from .creation import zeros as _dense_zeros
from .csr import CSRNDArray, csr_matrix, dot
from .csr import zeros as csr_zeros
from .ndarray import NDArray, _ctx_arg, provide
from .row_sparse import (
    _INT64,
    RowSparseNDArray,
    cast_storage,
    check_stype,
    dense_to_rsp,
    empty_row_sparse,
    from_xp,
)

__all__ = [
    "CSRNDArray",
    "RowSparseNDArray",
    "array",
    "cast_storage",
    "csr_matrix",
    "dense_to_rsp",
    "dot",
    "empty",
    "from_xp",
    "retain",
    "zeros_like",
    "row_sparse_array",
    "zeros",
]


def zeros(stype: str, shape: Any, ctx: Context | None = None, dtype: Any = None,
          **kwargs: Any) -> NDArray:
    """An all-zero array of storage ``stype`` (a row_sparse or csr one stores nothing)."""
    if stype == "csr":
        return csr_zeros(shape, ctx=ctx, dtype=dtype)
    check_stype(stype)
    if stype == "default":
        return _dense_zeros(shape, ctx=ctx, dtype=dtype)
    return empty_row_sparse(shape, ctx=ctx, dtype=dtype)


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
        if src.stype == "default":
            return src._array
        if isinstance(src, RowSparseNDArray):
            return src._densify()
        raise MXNetTypeError(f"expected a dense or row_sparse array, got a {src.stype} one "
                             f"of shape {src.shape} (use tostype('default') first)")
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

    ``arg1`` is ``(data, indices)`` (kept as given, as MXNet: unsorted,
    repeated or too large indices are reported by ``check_format``; a
    negative one raises MXNetError at once); a shape tuple (an empty array); a
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
            return empty_row_sparse(arg1, ctx=ctx, dtype=dtype)
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
        # as MXNet: unsorted, repeated or too large indices are kept as given
        # (check_format reports them); a negative one is refused now, with
        # check_format's error (MXNet 1.9.1 keeps it, and corrupts its heap
        # when the array is read)
        made = RowSparseNDArray(to_device(data, ctx, dt), to_device(idx, ctx, _INT64),
                                shape, ctx)
        if idx.size and bool((idx < 0).any()):
            made.check_format()   # (raises, naming the index)
        return made
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        out = arg1._copy_onto(ctx)
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


@overload
def retain(data: NDArray, indices: Any = ..., out: None = ...,
           **kwargs: Any) -> RowSparseNDArray: ...


@overload
def retain(data: NDArray, indices: Any = ..., out: NDArray = ..., **kwargs: Any) -> NDArray: ...


def retain(data: NDArray, indices: Any = None, out: NDArray | None = None,
           **kwargs: Any) -> NDArray:
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




provide(retain=retain)
