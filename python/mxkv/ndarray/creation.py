"""Creating NDArrays: ``array``, ``zeros``, ``ones``, ``empty``, ``full``,
``arange`` and the ``*_like`` helpers, with MXNet 1.9's dtype defaults."""
from __future__ import annotations

import ctypes
import operator
from typing import Any

import numpy as np

from ..base import MXNetError, MXNetMemoryError, numeric_types
from ..context import Context, empty_host, xp_for
from ._util import (
    MXNetTypeError,
    MXNetValueError,
    check_wrappable,
    device_scope,
    is_host,
    normalize_dtype,
    normalize_shape,
    to_device,
)
from .ndarray import NDArray, _ctx_arg, _provided, _scalar_for, provide
from .row_sparse import check_stype, empty_row_sparse

__all__ = ["arange", "array", "empty", "eye", "from_numpy", "from_xp", "full", "ones",
           "ones_like", "zeros", "zeros_like"]


def from_xp(array: Any, ctx: Context) -> NDArray:
    """Wrap a raw numpy/cupy array on ``ctx`` without copying (shares memory)."""
    return NDArray(array, ctx)


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A new array on ``ctx`` holding a copy of ``source_array``.

    The dtype is ``dtype`` if given, else the source's for an NDArray source
    and ``float32`` for anything else (as MXNet 1.9, even for numpy int arrays).

    >>> mx.nd.array([[1, 2]])
    <BLANKLINE>
    [[1. 2.]]
    <NDArray 1x2 @cpu(0)>
    """
    ctx = _ctx_arg(ctx)
    if isinstance(source_array, NDArray):
        if source_array.stype != "default":
            source_array = source_array.tostype("default")
        dt = normalize_dtype(dtype, default=source_array._array.dtype)
        return NDArray(to_device(source_array._array, ctx, dt), ctx)
    dt = normalize_dtype(dtype)
    if not is_host(source_array) and hasattr(source_array, "device") \
            and hasattr(source_array, "__cuda_array_interface__"):
        return NDArray(to_device(source_array, ctx, dt), ctx)
    try:
        host = np.array(source_array, dtype=dt, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise MXNetTypeError(f"source_array must be array like object, got "
                             f"{type(source_array).__name__}: {exc}") from None
    return NDArray(host if not ctx.uses_cupy else to_device(host, ctx), ctx)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True, array_cls: Any = None) -> NDArray:
    """An NDArray on ``cpu(0)`` backed by a numpy array, as MXNet's ``from_numpy``.

    With ``zero_copy`` (the default) the NDArray shares ``ndarray``'s memory
    and ``ndarray`` becomes read-only (as MXNet makes it), so only the NDArray
    writes it and the store's copy-on-write sees every write; the array must
    be C-contiguous (``ValueError`` otherwise). Without, it is copied, keeping
    its dtype.
    """
    if not isinstance(ndarray, np.ndarray):
        raise MXNetTypeError(f"from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise MXNetValueError("Only c-contiguous arrays are supported for zero-copy")
    ctx = _ctx_arg(None).__class__("cpu", 0)
    check_wrappable(ndarray, ctx)
    alias = _writable_alias(ndarray)
    ndarray.flags["WRITEABLE"] = False
    return NDArray(alias, ctx)


def _writable_alias(ndarray: np.ndarray) -> np.ndarray:
    """A writable array over ``ndarray``'s memory (which may already be read-only,
    from an earlier ``from_numpy``), keeping ``ndarray`` alive."""
    if ndarray.flags.writeable:
        return ndarray.view()  # made before the flag goes: it stays writable
    if not ndarray.size:
        return np.empty(ndarray.shape, ndarray.dtype)
    buf = (ctypes.c_char * ndarray.nbytes).from_address(ndarray.ctypes.data)
    buf._owner = ndarray
    return np.frombuffer(buf, dtype=ndarray.dtype).reshape(ndarray.shape)


def _filled(shape: Any, ctx: Any, dtype: Any, fill: Any) -> NDArray:
    shape = normalize_shape(shape)
    ctx = _ctx_arg(ctx)
    dt = normalize_dtype(dtype)
    xp = xp_for(ctx)
    try:
        with device_scope(ctx):
            if ctx.device_typeid == 3:  # cpu_pinned: page-locked where a GPU is
                arr = empty_host(ctx, shape, dt)
                if fill is not None:
                    arr.fill(_scalar_for(dt, fill) if dt.kind in "iu" else fill)
            elif fill is None:
                arr = xp.empty(shape, dtype=dt)
            elif fill == 0:
                arr = xp.zeros(shape, dtype=dt)
            else:
                arr = xp.full(shape, _scalar_for(dt, fill) if dt.kind in "iu" else fill,
                              dtype=dt)
    except (TypeError, ValueError) as exc:
        if "too big" in str(exc) or "maximum" in str(exc):
            raise _too_big(shape, dt, ctx) from None
        if fill is not None and not isinstance(fill, numeric_types):
            raise MXNetTypeError(f"full: the fill value must be a number, got "
                                 f"{type(fill).__name__} ({fill!r})") from None
        cls = MXNetTypeError if isinstance(exc, TypeError) else MXNetValueError
        raise cls(f"cannot make an array of shape {shape} and dtype {dt.name}: {exc}") \
            from None
    except MemoryError:
        raise _too_big(shape, dt, ctx) from None
    return NDArray(arr, ctx)


def _too_big(shape: tuple, dt: np.dtype, ctx: Any) -> MXNetMemoryError:
    nbytes = dt.itemsize
    for d in shape:
        nbytes *= d
    return MXNetMemoryError(f"cannot allocate an array of shape {shape} and dtype {dt.name} "
                            f"on {ctx}: {nbytes / 2 ** 30:.4g} GiB")


def zeros(shape: Any, ctx: Context | None = None, dtype: Any = None,
          stype: str | None = None, out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """An array of zeros; ``stype='row_sparse'`` (or ``'csr'``) gives an empty
    sparse array.
    With ``out``, zeros are written into it instead."""
    if out is not None:
        out[:] = 0
        return out
    if stype == "csr":
        return _provided("csr_zeros")(shape, ctx=ctx, dtype=dtype)
    if stype not in (None, "default"):
        check_stype(stype)
        return empty_row_sparse(shape, ctx=ctx, dtype=dtype)
    return _filled(shape, ctx, dtype, 0)


def ones(shape: Any, ctx: Context | None = None, dtype: Any = None,
         out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """An array of ones (written into ``out`` when given)."""
    if out is not None:
        out[:] = 1
        return out
    return _filled(shape, ctx, dtype, 1)


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None, dtype: Any = None,
        **kwargs: Any) -> NDArray:
    """A 2-D array with ones on diagonal ``k`` and zeros elsewhere (``M=0``: square)."""
    ctx = _ctx_arg(ctx)
    dims = _whole("eye", N=N, M=M, k=k)
    if dims["N"] < 0 or dims["M"] < 0:
        raise MXNetValueError(f"eye: N and M must not be negative, got N={N}, M={M}")
    host = np.eye(dims["N"], dims["M"] or None, dims["k"], dtype=normalize_dtype(dtype))
    return NDArray(host if ctx.device_typeid != 2 else to_device(host, ctx), ctx)


def empty(shape: Any, ctx: Context | None = None, dtype: Any = None,
          stype: str | None = None) -> NDArray:
    """An uninitialized array (an empty RowSparseNDArray for ``stype='row_sparse'``)."""
    if stype == "csr":
        return _provided("csr_zeros")(shape, ctx=ctx, dtype=dtype)
    if stype not in (None, "default"):
        check_stype(stype)
        return empty_row_sparse(shape, ctx=ctx, dtype=dtype)
    return _filled(shape, ctx, dtype, None)


def full(shape: Any, val: Any, ctx: Context | None = None, dtype: Any = None,
         out: NDArray | None = None) -> NDArray:
    """An array filled with ``val`` (written into ``out`` when given)."""
    if val is None or isinstance(val, (str, bytes)):
        raise MXNetTypeError(f"full: the fill value must be a number, got "
                             f"{type(val).__name__} ({val!r})")
    if out is not None:
        out[:] = val
        return out
    return _filled(shape, ctx, dtype, val)


def _whole(op: str, **args: Any) -> dict:
    out = {}
    for name, v in args.items():
        try:
            out[name] = int(v) if isinstance(v, (float, np.floating)) and float(v).is_integer() \
                else operator.index(v)
        except TypeError:
            raise MXNetTypeError(f"{op}: {name} must be an int, got {type(v).__name__} "
                                 f"({v!r})") from None
    return out


def _check_nd(op: str, data: Any) -> None:
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"{op}: argument data must have NDArray type, but got "
                             f"{type(data).__name__} ({data!r})")


def zeros_like(data: NDArray) -> NDArray:
    """Zeros of ``data``'s shape, dtype, context and storage type."""
    _check_nd("zeros_like", data)
    return zeros(data.shape, ctx=data.context, dtype=data.dtype, stype=data.stype)


def ones_like(data: NDArray) -> NDArray:
    """Ones of ``data``'s shape, dtype and context."""
    _check_nd("ones_like", data)
    return ones(data.shape, ctx=data.context, dtype=data.dtype)


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: Any = None, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times."""
    ctx = _ctx_arg(ctx)
    dt = normalize_dtype(dtype)
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not (isinstance(v, numeric_types) or (v is None and name == "stop")):
            raise MXNetError(f"arange: {name} must be a number, got {type(v).__name__} ({v!r})")
    if step == 0:
        raise MXNetValueError("arange: step must not be 0")
    host = np.arange(start, stop, step, dtype=np.float64).astype(dt)
    if repeat != 1:
        host = np.repeat(host, int(repeat))
    return NDArray(host if not ctx.uses_cupy else to_device(host, ctx), ctx)


provide(zeros_like=zeros_like, ones_like=ones_like)
