"""Reductions: ``sum``, ``mean``, ``prod``, ``nansum``, ``nanprod``, ``max``,
``min`` (``axis``, ``keepdims``, ``exclude``), ``norm``, ``argmax``,
``argmin``, ``argmax_channel``, ``moments``.

As MXNet 1.9.1: over every axis by default (the result then has shape
``(1,)``), ``axis=()`` too; the result has the input's dtype (``argmax``
gives positions as floats of that dtype); ``mean`` of float32 may differ in
the last bit (numpy sums pairwise, MXNet sequentially).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._util import MXNetValueError
from .registry import OpDef, Param, register

_AXIS = Param("axis", "Shape or None", None,
              doc="the axes to reduce; None or () reduces all")
_KEEPDIMS = Param("keepdims", "boolean", False, doc="keep reduced axes as size 1")
_EXCLUDE = Param("exclude", "boolean", False, doc="reduce over the axes not listed")


def axes_of(axis: Any, ndim: int, exclude: bool, opname: str) -> Any:
    """``axis`` (None, () or a tuple) as a tuple of non-negative axes, or None for all;
    an axis out of range is an MXNetValueError naming it."""
    if axis is None or axis == ():
        return None  # (every axis, exclude or not, as MXNet)
    out = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise MXNetValueError(f"{opname}: axis {a} is out of range for a {ndim}-d input")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise MXNetValueError(f"{opname}: axis {axis} repeats an axis")
    if exclude:
        return tuple(i for i in range(ndim) if i not in out)
    return tuple(out)


def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def impl(xp: Any, data: Any, axis: Any, keepdims: bool, exclude: bool) -> Any:
        if axis is None or axis == ():  # everything: MXNet's shape (1,), or 1s with keepdims
            res = fn(xp, data, None, True)
            res = res if keepdims else res.reshape(1)
        else:
            axes = axes_of(axis, data.ndim, exclude, name)
            if axes == ():
                return data.copy()
            res = fn(xp, data, axes, keepdims)
        return res if res.dtype == data.dtype else res.astype(data.dtype)
    return impl


def _acc(a: Any) -> Any:
    return np.float32 if a.dtype == _F16 else a.dtype


_F16 = np.dtype(np.float16)


def _empty_max(xp: Any, a: Any, ax: Any, kd: bool, fn: str) -> Any:
    if a.size == 0:
        raise MXNetValueError(f"{fn}: reduction over an empty array")
    return getattr(a, fn)(axis=ax, keepdims=kd)


def _sum(xp: Any, a: Any, ax: Any, kd: bool) -> Any:
    # (integers sum in int64 and are cast back: the same bits as MXNet's wrapping sum)
    return a.sum(axis=ax, keepdims=kd) if a.dtype != _F16 else \
        a.sum(axis=ax, keepdims=kd, dtype=np.float32)


_REDUCTIONS = {
    "sum": (("sum_axis",), _sum),
    "mean": ((), lambda xp, a, ax, kd: a.mean(axis=ax, keepdims=kd, dtype=_acc(a))),
    "prod": ((), lambda xp, a, ax, kd: a.prod(axis=ax, keepdims=kd, dtype=_acc(a))),
    "nansum": ((), lambda xp, a, ax, kd: xp.nansum(a, axis=ax, keepdims=kd, dtype=_acc(a))),
    "nanprod": ((), lambda xp, a, ax, kd: xp.nanprod(a, axis=ax, keepdims=kd, dtype=_acc(a))),
    "max": (("max_axis",), lambda xp, a, ax, kd: _empty_max(xp, a, ax, kd, "max")),
    "min": (("min_axis",), lambda xp, a, ax, kd: _empty_max(xp, a, ax, kd, "min")),
}
for _name, (_aliases, _fn) in _REDUCTIONS.items():
    register(OpDef(name=_name, inputs=("data",), params=(_AXIS, _KEEPDIMS, _EXCLUDE),
                   impl=_reduction(_name, _fn), aliases=_aliases, methods=(_name,),
                   differences="" if _name in ("max", "min") else
                   "reducing an axis of a zero-size array gives zeros or ones (MXNet 1.9.1 "
                   "fails); float32 sums may differ in the last bits (summation order)",
                   doc=f"The {_name} over ``axis`` (all axes by default; the result then has "
                       "shape (1,)), in the input's dtype.", family="reduce"))


def _norm(xp: Any, data: Any, ord: int, axis: Any, out_dtype: Any, keepdims: bool) -> Any:
    if ord not in (1, 2):
        raise MXNetValueError(f"norm: ord must be 1 or 2, got {ord}")
    axes = axes_of(axis, data.ndim, False, "norm")
    src = data
    if src.dtype.kind in "biu" or src.dtype == np.float16:
        src = src.astype(np.float32)
    if ord == 1:
        res = xp.sum(xp.abs(src), axis=axes, keepdims=keepdims)
    elif axes is None and not keepdims:
        flat = src.reshape(-1)
        res = xp.sqrt(xp.dot(flat, flat))
    else:
        res = xp.sqrt(xp.sum(xp.square(src), axis=axes, keepdims=keepdims))
    return xp.asarray(res).astype(out_dtype or data.dtype)


register(OpDef(
    name="norm", inputs=("data",),
    params=(Param("ord", "int", 2), Param("axis", "Shape or None", None),
            Param("out_dtype", "{None, 'float16', 'float32', 'float64', 'int32', 'int64', "
                  "'int8'}", None), Param("keepdims", "boolean", False)),
    impl=_norm, methods=("norm",), dtype="impl",
    differences="an out_dtype other than the input's gives that dtype (MXNet 1.9.1 fails)",
    doc="The L2 (or L1, ``ord=1``) norm over ``axis`` (all elements by default: shape "
        "(1,)); float16 and integer inputs are summed in float32; the result in ``out_dtype``"
        " (default: the input's).", family="reduce"))


def _arg(name: str) -> Callable[..., Any]:
    def impl(xp: Any, data: Any, axis: Any, keepdims: bool) -> Any:
        if axis is not None and not -data.ndim <= axis < data.ndim:
            raise MXNetValueError(f"{name}: axis {axis} is out of range for a "
                                  f"{data.ndim}-d input")
        if (data.shape[axis] if axis is not None else data.size) == 0:
            raise MXNetValueError(f"{name}: reduction over an empty axis")
        res = getattr(xp, name)(data, axis=axis, keepdims=keepdims and axis is not None)
        return xp.asarray(res).astype(data.dtype)
    return impl


for _name in ("argmax", "argmin"):
    register(OpDef(name=_name, inputs=("data",),
                   params=(Param("axis", "int or None", None), _KEEPDIMS),
                   impl=_arg(_name), methods=(_name,),
                   doc=f"The {_name[3:]} position along ``axis`` (of the flattened array by "
                       "default), in the input's dtype.", family="reduce"))

register(OpDef(name="argmax_channel", inputs=("data",), params=(),
               impl=lambda xp, data: _arg("argmax")(xp, data, 1, False),
               methods=("argmax_channel",),
               doc="``argmax`` along axis 1 (the channels).", family="reduce"))


def _moments(xp: Any, data: Any, axes: Any, keepdims: bool) -> Any:
    ax = axes_of(axes, data.ndim, False, "moments")
    src = data.astype(np.float32) if data.dtype == np.float16 else data
    mean = xp.mean(src, axis=ax, keepdims=True)
    var = xp.mean(xp.square(src - mean), axis=ax, keepdims=keepdims)
    if not keepdims:
        mean = mean.reshape(var.shape)
    return (mean.astype(data.dtype), var.astype(data.dtype))


register(OpDef(name="moments", inputs=("data",),
               params=(Param("axes", "Shape or None", None), _KEEPDIMS),
               impl=_moments, doc="The mean and variance over ``axes`` (two outputs).",
               family="reduce"))
