"""Slicing operators: slice (crop), slice_axis, slice_like, the slice
assignments behind ``NDArray.slice_assign``, and amp_multicast (``Crop`` is
a layer operator: ``nn_*``).

Results are new arrays of the input's dtype.
"""
from __future__ import annotations

from typing import Any

from .._util import MXNetValueError
from .registry import OpDef, Param, register, shape_with_none
from .shape import _axis


def _slice(xp: Any, data: Any, begin: tuple, end: tuple, step: tuple) -> Any:
    if len(begin) != len(end) or len(begin) > data.ndim or (step and len(step) != len(begin)):
        raise MXNetValueError(f"slice: begin {begin}, end {end}, step {step} do not fit "
                              f"shape {tuple(data.shape)}")
    key = []
    for i, (b, e) in enumerate(zip(begin, end)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise MXNetValueError("slice: step 0 is not allowed")
        key.append(slice(b, e, s))
    res = data[tuple(key)]
    return xp.ascontiguousarray(res)


_OPT_SHAPE = "Shape(tuple)"
register(OpDef(name="slice", inputs=("data",),
               params=(Param("begin", _OPT_SHAPE, conv=shape_with_none),
                       Param("end", _OPT_SHAPE, conv=shape_with_none),
                       Param("step", _OPT_SHAPE, (), conv=shape_with_none)),
               impl=_slice, aliases=("crop",), methods=("slice",),
               doc="The region ``begin:end:step`` of ``data`` (None keeps an end).",
               family="slicing"))


def _slice_axis(xp: Any, data: Any, axis: int, begin: int, end: Any) -> Any:
    ax = _axis(axis, data.ndim, "slice_axis")
    n = data.shape[ax]
    b = begin + n if begin < 0 else begin
    e = n if end is None else (end + n if end < 0 else end)
    if not 0 <= b < e <= n:
        raise MXNetValueError(f"slice_axis: [{begin}, {end}) is not a range of axis {axis} "
                              f"of size {n}")
    key = [slice(None)] * data.ndim
    key[ax] = slice(b, e)
    return xp.ascontiguousarray(data[tuple(key)])


register(OpDef(name="slice_axis", inputs=("data",),
               params=(Param("axis", "int"), Param("begin", "int"),
                       Param("end", "int or None")),
               impl=_slice_axis, methods=("slice_axis",),
               doc="``data[begin:end]`` along ``axis``.", family="slicing"))


def _slice_like(xp: Any, data: Any, shape_like: Any, axes: tuple) -> Any:
    axes = tuple(range(min(data.ndim, shape_like.ndim))) if not axes else \
        tuple(_axis(a, data.ndim, "slice_like") for a in axes)
    key = [slice(None)] * data.ndim
    for a in axes:
        if a >= shape_like.ndim or shape_like.shape[a] > data.shape[a]:
            raise MXNetValueError(f"slice_like: shape_like {tuple(shape_like.shape)} does not "
                                  f"fit data {tuple(data.shape)} on axis {a}")
        key[a] = slice(0, shape_like.shape[a])
    return xp.ascontiguousarray(data[tuple(key)])


register(OpDef(name="slice_like", inputs=("data", "shape_like"),
               params=(Param("axes", "Shape(tuple)", ()),), impl=_slice_like,
               methods=("slice_like",), doc="``data`` cut to ``shape_like``'s shape.",
               family="slicing"))


def _slice_key(data: Any, begin: tuple, end: tuple, step: tuple, opname: str) -> tuple:
    if len(begin) != len(end) or len(begin) > data.ndim or (step and len(step) != len(begin)):
        raise MXNetValueError(f"{opname}: begin {begin}, end {end}, step {step} do not fit "
                              f"shape {tuple(data.shape)}")
    return tuple(slice(b, e, (step[i] if step and step[i] is not None else 1))
                 for i, (b, e) in enumerate(zip(begin, end)))


def _slice_assign(xp: Any, lhs: Any, rhs: Any, begin: tuple, end: tuple, step: tuple) -> Any:
    res = lhs.copy()
    key = _slice_key(lhs, begin, end, step, "_slice_assign")
    if res[key].shape != rhs.shape:
        raise MXNetValueError(f"_slice_assign: rhs has shape {tuple(rhs.shape)}, the region "
                              f"has {tuple(res[key].shape)}")
    res[key] = rhs
    return res


def _slice_assign_scalar(xp: Any, data: Any, scalar: float, begin: tuple, end: tuple,
                         step: tuple) -> Any:
    res = data.copy()
    res[_slice_key(data, begin, end, step, "_slice_assign_scalar")] = scalar
    return res


_SL = (Param("begin", "Shape(tuple)", conv=shape_with_none),
       Param("end", "Shape(tuple)", conv=shape_with_none),
       Param("step", "Shape(tuple)", (), conv=shape_with_none))
register(OpDef(name="_slice_assign", inputs=("lhs", "rhs"), params=_SL, impl=_slice_assign,
               aliases=("_crop_assign",), namespace="internal", same_dtype=True,
               doc="``lhs`` with the region ``begin:end:step`` replaced by ``rhs`` (the "
                   "method ``slice_assign`` writes into the array itself).", family="slicing"))
register(OpDef(name="_slice_assign_scalar", inputs=("data",),
               params=(Param("scalar", "double", 0.0),) + _SL, impl=_slice_assign_scalar,
               aliases=("_crop_assign_scalar",), namespace="internal",
               doc="``data`` with the region ``begin:end:step`` set to ``scalar`` (the "
                   "method ``slice_assign_scalar`` writes into the array itself).",
               family="slicing"))


def _amp_multicast(xp: Any, data: list, num_outputs: int, cast_narrow: bool) -> Any:
    if num_outputs != len(data):
        raise MXNetValueError(f"amp_multicast: num_outputs {num_outputs}, {len(data)} arrays")
    floats = [a.dtype for a in data if a.dtype.kind == "f"]
    if not floats:
        return list(data)
    target = min(floats, key=lambda d: d.itemsize) if cast_narrow else \
        max(floats, key=lambda d: d.itemsize)
    return [a.astype(target) if a.dtype.kind == "f" else a.copy() for a in data]


register(OpDef(name="amp_multicast", inputs=("*data",),
               params=(Param("num_outputs", "int"), Param("cast_narrow", "boolean", False)),
               impl=_amp_multicast, dtype="impl",
               doc="The float arrays cast to the widest (``cast_narrow``: narrowest) float "
                   "dtype among them.", family="slicing"))
