"""The small set of NDArray operators a KVStore user and the optimizers need.

Each takes dense NDArrays and returns a new NDArray on the first input's
context (or writes into ``out`` when given). A csr input goes to
``csr_ops.py`` where MXNet keeps csr storage (``abs``, ``sign``, ``sqrt``,
``square``, ``negative``, ``clip``, ``concat``); the others compute on a dense
copy, as MXNet's storage fallback. Results keep the input dtype,
as in MXNet (``sqrt`` of an int32 array is int32). Full reductions return
shape ``(1,)``, as MXNet 1.9 does outside numpy-shape mode.
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError, numeric_types
from ..context import cupy_or_none, synchronize_streams
from ._util import MXNetTypeError, MXNetValueError, copy_into, device_scope
from .ndarray import NDArray, _provided, peer_array, provide

__all__ = [
    "ElementWiseSum",
    "abs",
    "add_n",
    "broadcast_add",
    "clip",
    "concat",
    "concatenate",
    "elemwise_add",
    "maximum",
    "minimum",
    "negative",
    "norm",
    "power",
    "sign",
    "sqrt",
    "square",
    "sum",
    "waitall",
]


def waitall() -> None:
    """Block until all pending work on every device is done (the comms'
    streams included)."""
    synchronize_streams()
    cp = cupy_or_none() if _cupy_loaded() else None
    if cp is not None:
        for dev in builtins.range(cp.cuda.runtime.getDeviceCount()):
            cp.cuda.Device(dev).synchronize()


def _cupy_loaded() -> bool:
    import sys
    return "cupy" in sys.modules


def _dense(x: Any, what: str) -> NDArray:
    if not isinstance(x, NDArray):
        raise MXNetTypeError(f"{what} expects NDArray inputs, got {type(x).__name__}")
    return x if x.stype == "default" else x.tostype("default")


def _finish(res: Any, like: NDArray, out: NDArray | None) -> NDArray:
    if res.dtype != like._array.dtype:
        res = res.astype(like._array.dtype)
    if out is not None and out.stype == "csr":  # (the values cast into its storage)
        out[:] = NDArray(res, like._ctx)
        return out
    if out is not None:
        if tuple(out.shape) != tuple(res.shape):
            raise MXNetValueError(f"out has shape {out.shape}, the result has shape "
                                  f"{tuple(res.shape)}")
        copy_into(out._array, res)
        return out
    return NDArray(res if res.flags.c_contiguous else like._xp().ascontiguousarray(res),
                   like._ctx)


def _is_csr(x: Any) -> bool:
    return isinstance(x, NDArray) and x.stype == "csr"


def _unary(data: NDArray, fname: str, out: NDArray | None = None) -> NDArray:
    if _is_csr(data):
        return _provided("csr_unary")(data, fname, out)
    data = _dense(data, fname)
    xp = data._xp()
    with device_scope(data._ctx), np.errstate(all="ignore"):
        src = data._array
        if fname == "sqrt" and src.dtype.kind in "biu":
            src = src.astype(np.float64)
        return _finish(getattr(xp, fname)(src), data, out)


def sqrt(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Elementwise square root."""
    return _unary(data, "sqrt", out)


def square(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Elementwise square."""
    return _unary(data, "square", out)


def abs(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Elementwise absolute value."""
    return _unary(data, "abs", out)


def sign(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Elementwise sign: -1, 0 or 1."""
    return _unary(data, "sign", out)


def negative(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Elementwise negation."""
    if _is_csr(data):
        return _provided("csr_unary")(data, "negative", out)
    res = -_dense(data, "negative")
    return res if out is None else _finish(res._array, res, out)


def clip(data: NDArray, a_min: float, a_max: float, out: NDArray | None = None) -> NDArray:
    """Clip values into ``[a_min, a_max]``."""
    for name, v in (("a_min", a_min), ("a_max", a_max)):
        if not isinstance(v, numeric_types):
            raise MXNetError(f"clip: invalid parameter format for {name}: expected a float, "
                             f"got {type(v).__name__} ({v!r})")
    if a_min > a_max:
        raise MXNetValueError(f"clip: a_min {a_min} is greater than a_max {a_max}")
    if _is_csr(data):
        return _provided("csr_clip")(data, a_min, a_max, out)
    data = _dense(data, "clip")
    xp = data._xp()
    with device_scope(data._ctx):
        return _finish(xp.clip(data._array, a_min, a_max), data, out)


def _binary_fn(lhs: Any, rhs: Any, fname: str, out: NDArray | None) -> Any:
    if not isinstance(lhs, NDArray) and not isinstance(rhs, NDArray):
        return getattr(builtins, "max" if fname == "maximum" else "min")(lhs, rhs)
    data = lhs if isinstance(lhs, NDArray) else rhs
    data = _dense(data, fname)
    other = rhs if data is lhs or isinstance(lhs, NDArray) else lhs
    a = data._array
    if isinstance(other, NDArray):
        b = peer_array(_dense(other, fname), data._ctx, fname)
        if b.dtype != a.dtype:
            raise MXNetTypeError(f"{fname}: operands have dtypes {a.dtype.name} and "
                                 f"{b.dtype.name}")
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise MXNetValueError(f"{fname}: shapes {tuple(a.shape)} and {tuple(b.shape)} "
                                  f"cannot be broadcast together") from None
    elif isinstance(other, numeric_types):
        b = other
    else:
        raise MXNetTypeError(f"{fname}: type {type(other)} not supported")
    xp = data._xp()
    with device_scope(data._ctx):
        return _finish(getattr(xp, fname)(a, b), data, out)


def maximum(lhs: Any, rhs: Any, out: NDArray | None = None) -> Any:
    """Elementwise maximum of arrays and/or scalars (broadcasting)."""
    return _binary_fn(lhs, rhs, "maximum", out)


def minimum(lhs: Any, rhs: Any, out: NDArray | None = None) -> Any:
    """Elementwise minimum of arrays and/or scalars (broadcasting)."""
    return _binary_fn(lhs, rhs, "minimum", out)


def power(base: Any, exp: Any, out: NDArray | None = None) -> Any:
    """``base ** exp`` elementwise (arrays and/or scalars; two scalars give a scalar)."""
    if not isinstance(base, NDArray) and not isinstance(exp, NDArray):
        return base ** exp
    res = base ** exp
    return res if out is None else _finish(res._array, res, out)


def elemwise_add(lhs: NDArray, rhs: NDArray, out: NDArray | None = None) -> NDArray:
    """``lhs + rhs`` for arrays of one shape."""
    if lhs.shape != rhs.shape:
        raise MXNetValueError(f"elemwise_add: shapes {lhs.shape} and {rhs.shape} differ")
    res = lhs + rhs
    return res if out is None else _finish(res._array, res, out)


def broadcast_add(lhs: NDArray, rhs: NDArray, out: NDArray | None = None) -> NDArray:
    """``lhs + rhs`` with numpy broadcasting (dense, for csr operands too)."""
    res = _dense(lhs, "broadcast_add") + _dense(rhs, "broadcast_add")
    return res if out is None else _finish(res._array, res, out)


def _reduced(res: Any) -> Any:
    return res.reshape(1) if res.ndim == 0 else res


def sum(data: NDArray, axis: Any = None, keepdims: bool = False,
        out: NDArray | None = None) -> NDArray:
    """Sum over ``axis`` (all axes by default; the result then has shape (1,))."""
    data = _dense(data, "sum")
    xp = data._xp()
    axis = tuple(axis) if isinstance(axis, list) else axis
    with device_scope(data._ctx):
        try:
            res = xp.sum(data._array, axis=axis, keepdims=keepdims)
        except (ValueError, np.exceptions.AxisError) as exc:
            raise MXNetValueError(f"sum over axis {axis} of shape {data.shape}: {exc}") from None
        return _finish(_reduced(xp.asarray(res)), data, out)


def norm(data: NDArray, ord: int = 2, axis: Any = None, keepdims: bool = False,
         out: NDArray | None = None) -> NDArray:
    """The L2 (or L1, ``ord=1``) norm; over all elements by default, shape (1,)."""
    data = _dense(data, "norm")
    if ord not in (1, 2):
        raise MXNetValueError(f"norm: ord must be 1 or 2, got {ord}")
    xp = data._xp()
    src = data._array
    if src.dtype.kind in "biu" or src.dtype == np.float16:
        src = src.astype(np.float32)
    with device_scope(data._ctx):
        if ord == 1:
            res = xp.sum(xp.abs(src), axis=axis, keepdims=keepdims)
        elif axis is None and not keepdims:
            flat = src.reshape(-1)
            res = xp.sqrt(xp.dot(flat, flat))
        else:
            res = xp.sqrt(xp.sum(xp.square(src), axis=axis, keepdims=keepdims))
        return _finish(_reduced(xp.asarray(res)), data, out)


def add_n(*args: NDArray, out: NDArray | None = None) -> NDArray:
    """The elementwise sum of arrays of one shape and dtype (MXNet's ``add_n``)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    if not args:
        raise MXNetError("add_n needs at least one array")
    first = _dense(args[0], "add_n")
    for i, x in enumerate(args[1:], 1):
        x = _dense(x, "add_n")
        if x.shape != first.shape:
            raise MXNetValueError(f"add_n: input {i} has shape {x.shape}, input 0 has "
                                  f"shape {first.shape}")
        if x.dtype != first.dtype:
            raise MXNetTypeError(f"add_n: input {i} has dtype {np.dtype(x.dtype).name}, "
                                 f"input 0 has dtype {np.dtype(first.dtype).name}")
    acc = first.copy()
    for x in args[1:]:
        acc += _dense(x, "add_n")
    return acc if out is None else _finish(acc._array, acc, out)


ElementWiseSum = add_n


def concat(*data: NDArray, dim: int = 1, out: NDArray | None = None) -> NDArray:
    """Join arrays along axis ``dim`` (default 1, as MXNet's ``concat``); csr
    arrays along ``dim=0`` give a csr array."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if builtins.any(_is_csr(x) for x in data):
        return _provided("csr_concat")(list(data), dim, out)
    return concatenate(list(data), axis=dim, out=out)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True,
                out: NDArray | None = None) -> NDArray:
    """Join arrays along ``axis`` (default 0). The result is on the first array's
    context. A csr array is refused along ``axis=0`` (MXNet 1.9.1 assigns it to
    rows of a dense array, which it refuses; ``concat(..., dim=0)`` joins csr
    arrays)."""
    if not arrays:
        raise MXNetError("concatenate needs at least one array")
    if axis == 0 and builtins.any(_is_csr(a) for a in arrays):
        raise MXNetTypeError("concatenate along axis 0 does not take csr arrays (as MXNet "
                             "1.9.1): use concat(..., dim=0), which keeps csr storage")
    arrays = [_dense(a, "concatenate") for a in arrays]
    first = arrays[0]
    if not always_copy and len(arrays) == 1 and out is None:
        return first
    ndim = first.ndim
    if not -ndim <= axis < max(ndim, 1):
        raise MXNetValueError(f"concatenate: axis {axis} is out of range for {ndim}-d arrays")
    ax = axis % ndim
    parts = []
    for i, a in enumerate(arrays):
        if a.dtype != first.dtype:
            raise MXNetTypeError(f"concatenate: array {i} has dtype {np.dtype(a.dtype).name}, "
                                 f"array 0 has dtype {np.dtype(first.dtype).name}")
        if a.ndim != ndim or a.shape[:ax] + a.shape[ax + 1:] != \
                first.shape[:ax] + first.shape[ax + 1:]:
            raise MXNetValueError(f"concatenate along axis {axis}: array {i} has shape "
                                  f"{a.shape}, array 0 has shape {first.shape}")
        parts.append(peer_array(a, first._ctx, "concatenate"))
    xp = first._xp()
    with device_scope(first._ctx):
        return _finish(xp.concatenate(parts, axis=ax), first, out)


provide(abs=abs, clip=clip, norm=norm, sign=sign, sqrt=sqrt, square=square, sum=sum)
