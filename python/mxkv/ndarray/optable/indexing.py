"""Indexing operators: take, pick, where, one_hot, topk, sort, argsort,
gather_nd, scatter_nd, batch_take, boolean_mask, ravel/unravel_index.

As MXNet 1.9.1: index arrays may be of any dtype (floats are truncated);
``mode='clip'`` clips an index into range, ``'wrap'`` wraps it; positions
that come back as values (``argsort``, ``topk``'s indices) are in the
``dtype`` parameter.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._util import MXNetIndexError, MXNetValueError
from .registry import OpDef, Param, register

_MODE = "{'clip', 'wrap'}"
_POS_DTYPES = "{'float16', 'float32', 'float64', 'int32', 'int64', 'uint8'}"


def _axis(a: int, ndim: int, opname: str) -> int:
    if not -ndim <= a < ndim:
        raise MXNetValueError(f"{opname}: axis {a} is out of range for a {ndim}-d input")
    return a % ndim


def _index(xp: Any, idx: Any, n: int, mode: str, opname: str) -> Any:
    """``idx`` as int64 positions into a dim of size ``n`` under ``mode``."""
    i = idx.astype(np.int64)
    if mode == "wrap":
        return i % n if n else i
    if mode == "raise":
        if i.size and (int(i.min()) < 0 or int(i.max()) >= n):
            raise MXNetIndexError(f"{opname}: an index is out of range [0, {n})")
        return i
    return xp.clip(i, 0, max(n - 1, 0))


def _take(xp: Any, a: Any, indices: Any, axis: int, mode: str) -> Any:
    ax = _axis(axis, a.ndim, "take")
    idx = _index(xp, indices, a.shape[ax], mode, "take")
    return xp.take(a, idx, axis=ax)


register(OpDef(name="take", inputs=("a", "indices"),
               params=(Param("axis", "int", 0), Param("mode", "{'clip', 'raise', 'wrap'}",
                                                       "clip")),
               impl=_take, methods=("take",),
               doc="The slices of ``a`` at ``indices`` along ``axis``.", family="indexing"))


def _pick(xp: Any, data: Any, index: Any, axis: Any, keepdims: bool, mode: str) -> Any:
    if axis is None:
        data, axis = data.reshape(-1), 0
    ax = _axis(axis, data.ndim, "pick")
    idx = _index(xp, index, data.shape[ax], mode, "pick")
    want = data.shape[:ax] + data.shape[ax + 1:]
    if idx.size != int(np.prod(want)):
        raise MXNetValueError(f"pick: index of shape {tuple(index.shape)} does not fit data "
                              f"{tuple(data.shape)} without axis {axis}")
    res = xp.take_along_axis(data, xp.expand_dims(idx.reshape(want), ax), axis=ax)
    return res if keepdims else xp.squeeze(res, axis=ax)


register(OpDef(name="pick", inputs=("data", "index"),
               params=(Param("axis", "int or None", -1), Param("keepdims", "boolean", False),
                       Param("mode", _MODE, "clip")),
               impl=_pick, aliases=("choose_element_0index",), methods=("pick",),
               doc="One element of ``data`` along ``axis`` per position of ``index``.",
               family="indexing"))


def _where(xp: Any, condition: Any, x: Any, y: Any) -> Any:
    if x.shape != y.shape:
        raise MXNetValueError(f"where: x {tuple(x.shape)} and y {tuple(y.shape)} differ")
    if condition.shape != x.shape:
        if condition.ndim != 1 or condition.shape[0] != x.shape[0]:
            raise MXNetValueError(f"where: condition {tuple(condition.shape)} must have x's "
                                  f"shape {tuple(x.shape)} or be 1-d of its first dim")
        condition = condition.reshape((-1,) + (1,) * (x.ndim - 1))
    return xp.where(condition != 0, x, y)


register(OpDef(name="where", inputs=("condition", "x", "y"), params=(), impl=_where,
               doc="``x`` where ``condition`` is nonzero, else ``y``.", family="indexing"))


def _one_hot(xp: Any, indices: Any, depth: int, on_value: float, off_value: float,
             dtype: str) -> Any:
    i = indices.astype(np.int64)
    res = xp.full(tuple(indices.shape) + (depth,), off_value, dtype=dtype)
    ok = (i >= 0) & (i < depth)
    pos = xp.nonzero(ok)
    res[pos + (i[pos],)] = on_value
    return res


register(OpDef(name="one_hot", inputs=("indices",),
               params=(Param("depth", "int"), Param("on_value", "double", 1.0),
                       Param("off_value", "double", 0.0),
                       Param("dtype", "{'bfloat16', 'float16', 'float32', 'float64', 'int32', "
                             "'int64', 'int8', 'uint8'}", "float32")),
               impl=_one_hot, methods=("one_hot",), dtype="impl",
               doc="One-hot rows of length ``depth`` (all ``off_value`` for an index out of "
                   "range).", family="indexing"))


def _order(xp: Any, data: Any, axis: Any, ascend: bool, opname: str) -> tuple:
    """(data along the sort axis, positions sorted stably, the axis)."""
    if axis is None:
        data, axis = data.reshape(-1), 0
    ax = _axis(axis, data.ndim, opname)
    key = data if ascend else -data.astype(np.float64) if data.dtype.kind == "u" else -data
    return data, xp.argsort(key, axis=ax, kind="stable"), ax


def _sort(xp: Any, data: Any, axis: Any, is_ascend: bool) -> Any:
    data, pos, ax = _order(xp, data, axis, is_ascend, "sort")
    return xp.take_along_axis(data, pos, axis=ax)


def _argsort(xp: Any, data: Any, axis: Any, is_ascend: bool, dtype: str) -> Any:
    return _order(xp, data, axis, is_ascend, "argsort")[1].astype(dtype)


register(OpDef(name="sort", inputs=("data",),
               params=(Param("axis", "int or None", -1), Param("is_ascend", "boolean", True)),
               impl=_sort, methods=("sort",), doc="``data`` sorted along ``axis``.",
               family="indexing"))
register(OpDef(name="argsort", inputs=("data",),
               params=(Param("axis", "int or None", -1), Param("is_ascend", "boolean", True),
                       Param("dtype", _POS_DTYPES, "float32")),
               impl=_argsort, methods=("argsort",), dtype="impl",
               doc="The positions that sort ``data`` along ``axis``, in ``dtype``.",
               family="indexing"))


def _topk(xp: Any, data: Any, axis: Any, k: int, ret_typ: str, is_ascend: bool,
          dtype: str) -> Any:
    src, pos, ax = _order(xp, data, axis, is_ascend, "topk")
    n = src.shape[ax]
    if k < 1 or k > n:
        if not (k <= 0 and n > 0):
            raise MXNetValueError(f"topk: k {k} is out of range for axis {axis} of size {n}")
        k = n  # MXNet: k <= 0 takes the whole axis
    key = [slice(None)] * src.ndim
    key[ax] = slice(0, k)
    top = pos[tuple(key)]
    if ret_typ == "indices":
        return top.astype(dtype)
    values = xp.take_along_axis(src, top, axis=ax)
    if ret_typ == "value":
        return values
    if ret_typ == "both":
        return [values, top.astype(dtype)]
    mask = xp.zeros(src.shape, dtype=data.dtype)
    xp.put_along_axis(mask, top, 1, axis=ax)
    return mask.reshape(data.shape)


register(OpDef(name="topk", inputs=("data",),
               params=(Param("axis", "int or None", -1), Param("k", "int", 1),
                       Param("ret_typ", "{'both', 'indices', 'mask', 'value'}", "indices"),
                       Param("is_ascend", "boolean", False),
                       Param("dtype", _POS_DTYPES, "float32")),
               impl=_topk, methods=("topk",), dtype="impl",
               doc="The ``k`` largest (``is_ascend``: smallest) along ``axis``: positions, "
                   "values, both, or a 0/1 mask.", family="indexing"))


def _gather_nd(xp: Any, data: Any, indices: Any) -> Any:
    m = indices.shape[0] if indices.ndim else 0
    if indices.ndim == 0 or m > data.ndim:
        raise MXNetValueError(f"gather_nd: indices {tuple(indices.shape)} do not fit data "
                              f"{tuple(data.shape)}")
    idx = indices.astype(np.int64)
    idx = tuple(xp.where(idx[i] < 0, idx[i] + data.shape[i], idx[i]) for i in range(m))
    return data[idx]


register(OpDef(name="gather_nd", inputs=("data", "indices"), params=(), impl=_gather_nd,
               doc="``data`` at the positions whose coordinates are ``indices``' first axis.",
               family="indexing"))


def _scatter_nd(xp: Any, data: Any, indices: Any, shape: tuple) -> Any:
    m = indices.shape[0] if indices.ndim else 0
    if m == 0 or m > len(shape) or indices.shape[1:] != data.shape[:indices.ndim - 1]:
        raise MXNetValueError(f"scatter_nd: indices {tuple(indices.shape)} and data "
                              f"{tuple(data.shape)} do not fit shape {shape}")
    res = xp.zeros(shape, dtype=data.dtype)
    res[tuple(indices.astype(np.int64))] = data
    return res


register(OpDef(name="scatter_nd", inputs=("data", "indices"),
               params=(Param("shape", "Shape(tuple)"),), impl=_scatter_nd,
               doc="Zeros of ``shape`` with ``data`` written at ``indices``.",
               differences="with repeated indices the last value written stays (MXNet leaves "
                           "it undefined)", family="indexing"))


def _batch_take(xp: Any, a: Any, indices: Any) -> Any:
    if a.ndim != 2 or indices.shape != (a.shape[0],):
        raise MXNetValueError(f"batch_take: a must be 2-d and indices 1-d of its first dim, "
                              f"got {tuple(a.shape)} and {tuple(indices.shape)}")
    idx = _index(xp, indices, a.shape[1], "clip", "batch_take")
    return a[xp.arange(a.shape[0]), idx]


register(OpDef(name="batch_take", inputs=("a", "indices"), params=(), impl=_batch_take,
               doc="``a[i, indices[i]]`` for each row ``i``.", family="indexing"))


def _boolean_mask(xp: Any, data: Any, index: Any, axis: int) -> Any:
    ax = _axis(axis, data.ndim, "boolean_mask")
    if index.ndim != 1 or index.shape[0] != data.shape[ax]:
        raise MXNetValueError(f"boolean_mask: index {tuple(index.shape)} must be 1-d of "
                              f"data's axis {axis} ({data.shape[ax]})")
    return xp.compress(index != 0, data, axis=ax)


register(OpDef(name="_contrib_boolean_mask", inputs=("data", "index"),
               params=(Param("axis", "int", 0),), impl=_boolean_mask, namespace="contrib",
               doc="The slices of ``data`` along ``axis`` where ``index`` is nonzero.",
               family="indexing"))


def _ravel(xp: Any, data: Any, shape: tuple) -> Any:
    if data.shape[0] != len(shape):
        raise MXNetValueError(f"ravel_multi_index: data's first dim {data.shape[0]} must be "
                              f"the number of dims of shape {shape}")
    idx = data.astype(np.int64)
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    res = sum(idx[i] * int(strides[i]) for i in range(len(shape)))
    return xp.asarray(res).astype(data.dtype)


def _unravel(xp: Any, data: Any, shape: tuple) -> Any:
    idx = data.astype(np.int64)
    out = []
    for d in reversed(shape):
        out.append(idx % d)
        idx = idx // d
    return xp.stack(out[::-1]).astype(data.dtype)


register(OpDef(name="ravel_multi_index", inputs=("data",),
               params=(Param("shape", "Shape(tuple)", None),), impl=_ravel,
               aliases=("_ravel_multi_index",),
               doc="Flat positions in ``shape`` of the coordinates in ``data``'s columns.",
               family="indexing"))
register(OpDef(name="unravel_index", inputs=("data",),
               params=(Param("shape", "Shape(tuple)", None),), impl=_unravel,
               aliases=("_unravel_index",),
               doc="The coordinates in ``shape`` of the flat positions ``data``.",
               family="indexing"))


def _fill_element_0index(xp: Any, lhs: Any, mhs: Any, rhs: Any) -> Any:
    res = lhs.copy()
    idx = _index(xp, rhs, lhs.shape[1], "clip", "fill_element_0index")
    res[xp.arange(lhs.shape[0]), idx] = mhs
    return res


register(OpDef(name="fill_element_0index", inputs=("lhs", "mhs", "rhs"), params=(),
               impl=_fill_element_0index,
               doc="``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for each row.", family="indexing"))
