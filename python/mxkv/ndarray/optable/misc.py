"""Products and the rest: dot, batch_dot, khatri_rao, cumsum, all_finite,
multi_all_finite, and MXNet's Python functions moveaxis, split_v2,
onehot_encode, histogram.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._util import MXNetTypeError, MXNetValueError
from ..creation import array
from ..ndarray import NDArray
from .frontend import finish, functions
from .registry import OpDef, Param, get, register

_T = (Param("transpose_a", "boolean", False), Param("transpose_b", "boolean", False),
      Param("forward_stype", "{None, 'csr', 'default', 'row_sparse'}", None))


def _prod(dims: Any) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _dot(xp: Any, lhs: Any, rhs: Any, transpose_a: bool, transpose_b: bool,
         forward_stype: Any) -> Any:
    if lhs.ndim == 2 == rhs.ndim and not transpose_a and not transpose_b \
            and lhs.shape[1] == rhs.shape[0]:
        return xp.dot(lhs, rhs)  # (the common case, without the reshapes below)
    if lhs.ndim == 1 and rhs.ndim == 1:
        if lhs.shape != rhs.shape:
            raise MXNetValueError(f"dot: vectors of shapes {tuple(lhs.shape)} and "
                                  f"{tuple(rhs.shape)}")
        return xp.dot(lhs, rhs).reshape(1)
    ls, rs = tuple(lhs.shape), tuple(rhs.shape)
    if transpose_a:  # contract lhs's first axis
        a = lhs.reshape(ls[0], _prod(ls[1:])).T
        a_free = ls[1:]
    else:
        a = lhs.reshape(_prod(ls[:-1]), ls[-1])
        a_free = ls[:-1]
    if transpose_b:  # contract rhs's last axis
        b = rhs.reshape(_prod(rs[:-1]), rs[-1]).T
        b_free = rs[:-1]
    else:
        b = rhs.reshape(rs[0], _prod(rs[1:]))
        b_free = rs[1:]
    if a.shape[1] != b.shape[0]:
        raise MXNetValueError(f"dot: shapes {ls} and {rs} (transpose_a={transpose_a}, "
                              f"transpose_b={transpose_b}) do not match")
    res = xp.dot(a, b)
    shape = (a_free if lhs.ndim > 1 else ()) + (b_free if rhs.ndim > 1 else ())
    return res.reshape(shape or (1,))


register(OpDef(name="dot", inputs=("lhs", "rhs"), params=_T, impl=_dot, same_dtype=True,
               doc="The matrix product, lhs's last axis (first with ``transpose_a``) against "
                   "rhs's first (last with ``transpose_b``).", family="misc"))


def _batch_dot(xp: Any, lhs: Any, rhs: Any, transpose_a: bool, transpose_b: bool,
               forward_stype: Any) -> Any:
    if lhs.ndim < 3 or lhs.ndim != rhs.ndim or lhs.shape[:-2] != rhs.shape[:-2]:
        raise MXNetValueError(f"batch_dot: needs arrays of >= 3 dims with one batch shape, "
                              f"got {tuple(lhs.shape)} and {tuple(rhs.shape)}")
    a = xp.swapaxes(lhs, -1, -2) if transpose_a else lhs
    b = xp.swapaxes(rhs, -1, -2) if transpose_b else rhs
    if a.shape[-1] != b.shape[-2]:
        raise MXNetValueError(f"batch_dot: shapes {tuple(lhs.shape)} and {tuple(rhs.shape)} "
                              f"(transpose_a={transpose_a}, transpose_b={transpose_b}) do "
                              "not match")
    return xp.matmul(a, b)


register(OpDef(name="batch_dot", inputs=("lhs", "rhs"), params=_T, impl=_batch_dot,
               same_dtype=True, doc="The matrix product of each pair of matrices in a batch.",
               family="misc"))


def _khatri_rao(xp: Any, args: list) -> Any:
    n = args[0].shape[-1] if args[0].ndim == 2 else None
    for i, a in enumerate(args):
        if a.ndim != 2 or a.shape[1] != n:
            raise MXNetValueError(f"khatri_rao: matrix {i} has shape {tuple(a.shape)}; all "
                                  f"must be 2-d with {n} columns")
    res = args[0]
    for a in args[1:]:
        res = (res[:, None, :] * a[None, :, :]).reshape(-1, n)
    return res


register(OpDef(name="khatri_rao", inputs=("*args",), params=(), impl=_khatri_rao,
               same_dtype=True, doc="The column-wise Kronecker product of matrices.",
               family="misc"))


def _cumsum(xp: Any, a: Any, axis: Any, dtype: Any) -> Any:
    if axis is not None and not -a.ndim <= axis < max(a.ndim, 1):
        raise MXNetValueError(f"cumsum: axis {axis} is out of range for a {a.ndim}-d input")
    return xp.cumsum(a, axis=axis, dtype=dtype or a.dtype)


register(OpDef(name="cumsum", inputs=("a",),
               params=(Param("axis", "int or None", None),
                       Param("dtype", "{None, 'float16', 'float32', 'float64', 'int32', "
                             "'int64', 'int8'}", None)),
               impl=_cumsum, aliases=("_np_cumsum",), dtype="impl",
               differences="a negative axis counts from the end (MXNet 1.9.1 refuses it)",
               doc="Cumulative sums along ``axis`` (of the flattened array by default).",
               family="misc"))


def _all_finite(xp: Any, data: Any, init_output: bool) -> Any:
    ok = bool(xp.isfinite(data).all()) if data.dtype.kind == "f" else True
    return xp.asarray([1.0 if ok else 0.0], dtype=np.float32)


def _multi_all_finite(xp: Any, data: list, num_arrays: int, init_output: bool) -> Any:
    ok = all(bool(xp.isfinite(a).all()) for a in data if a.dtype.kind == "f")
    return xp.asarray([1.0 if ok else 0.0], dtype=np.float32)


register(OpDef(name="all_finite", inputs=("data",), params=(Param("init_output", "boolean",
                                                                  True),),
               impl=_all_finite, dtype="impl",
               doc="[1.] when every element of ``data`` is finite, else [0.] (float32).",
               family="misc"))
register(OpDef(name="multi_all_finite", inputs=("*data",),
               params=(Param("num_arrays", "int", 1), Param("init_output", "boolean", True)),
               impl=_multi_all_finite, dtype="impl",
               doc="[1.] when every element of every array is finite, else [0.] (float32).",
               family="misc"))


# ---------------------------------------------------------------- MXNet's Python functions
def moveaxis(tensor: NDArray, source: Any, destination: Any) -> NDArray:
    """``tensor`` with axis ``source`` moved to ``destination`` (a copy), MXNet's
    ``mx.nd.moveaxis``."""
    if not isinstance(tensor, NDArray):
        raise MXNetTypeError(f"moveaxis: tensor must be an NDArray, got {type(tensor).__name__}")
    nd = tensor.ndim
    src, dst = _axes(source, nd), _axes(destination, nd)
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise MXNetValueError(f"moveaxis: source {source} and destination {destination} must "
                              "be distinct axes, as many of each")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return functions()["transpose"](tensor, axes=tuple(perm))


def _axes(a: Any, nd: int) -> list:
    out = []
    for x in ((a,) if isinstance(a, (int, np.integer)) else a):
        if not -nd <= int(x) < nd:
            raise MXNetValueError(f"moveaxis: axis {x} is out of range for a {nd}-d array")
        out.append(int(x) % nd)
    return out


def split_v2(ary: NDArray, indices_or_sections: Any, axis: int = 0,
             squeeze_axis: bool = False) -> Any:
    """``ary`` split into equal sections (an int) or at the positions given (a tuple),
    MXNet's ``mx.nd.split_v2``; a list of arrays (one array for one section)."""
    if not isinstance(ary, NDArray):
        raise MXNetTypeError(f"split_v2: ary must be an NDArray, got {type(ary).__name__}")
    xp, a = ary._xp(), ary._array
    ax = int(axis) % max(a.ndim, 1)
    try:
        parts = xp.split(a, indices_or_sections if isinstance(indices_or_sections, int)
                         else list(indices_or_sections), axis=ax)
    except ValueError as exc:
        raise MXNetValueError(f"split_v2: {exc}") from None
    if squeeze_axis:
        parts = [xp.squeeze(p, axis=ax) for p in parts]
    res = finish(get("split_v2"), [xp.ascontiguousarray(p) for p in parts], a, ary._ctx, None)
    return res[0] if len(res) == 1 else res


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """One-hot rows of ``out``'s width for ``indices`` written into ``out``
    (MXNet's ``mx.nd.onehot_encode``)."""
    if not isinstance(indices, NDArray) or not isinstance(out, NDArray):
        raise MXNetTypeError("onehot_encode: indices and out must be NDArrays")
    if len(out.shape) != 2 or tuple(indices.shape) != (out.shape[0],):
        raise MXNetValueError(f"onehot_encode: indices of shape {tuple(indices.shape)} need an "
                              f"output of shape ({indices.shape[0]}, depth), got {out.shape}")
    idx = indices.asnumpy().astype(np.int64)
    depth = out.shape[1]
    if idx.size and (idx.min() < 0 or idx.max() >= depth):
        raise MXNetValueError(f"onehot_encode: indices must lie in [0, {depth}), got "
                              f"{idx.min()}..{idx.max()}")
    res = functions()["one_hot"](indices, depth=depth, dtype=np.dtype(out.dtype).name)
    out[:] = res
    return out


def histogram(a: NDArray, bins: Any = 10, range: Any = None) -> Any:  # noqa: A002
    """MXNet's ``mx.nd.histogram``: (counts as int64, bin edges as ``a``'s dtype)."""
    if not isinstance(a, NDArray):
        raise MXNetTypeError(f"histogram: a must be an NDArray, got {type(a).__name__}")
    if isinstance(bins, NDArray):
        bins = bins.asnumpy()
    elif range is None and isinstance(bins, int):
        raise MXNetValueError("histogram: range is required when bins is an int")
    counts, edges = np.histogram(a.asnumpy(), bins=bins, range=range)
    return finish(get("histogram"), [counts.astype(np.int64), edges.astype(a.dtype)],
                  None, a.context, None)


for _fn in (moveaxis, split_v2, onehot_encode, histogram):
    register(OpDef(name=_fn.__name__, inputs=(), params=(), impl=None, frontend=_fn,
                   dtype="impl", namespace="python", doc=(_fn.__doc__ or "").split("\n")[0],
                   family="misc"))


def reset_arrays(*data: NDArray, **kwargs: Any) -> None:
    """MXNet's ``reset_arrays(*data, num_arrays)``: write zeros into every array."""
    num = kwargs.pop("num_arrays", None)
    kwargs.pop("name", None)
    if kwargs:
        raise MXNetValueError(f"reset_arrays: unexpected argument(s) {sorted(kwargs)}")
    if num is None:
        raise MXNetValueError("reset_arrays: required parameter 'num_arrays' is missing")
    if int(num) != len(data) or not all(isinstance(a, NDArray) for a in data):
        raise MXNetValueError(f"reset_arrays: num_arrays is {num}, {len(data)} arrays given")
    for a in data:
        a[:] = 0


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Any = None,
             dtype: Any = np.float32) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (MXNet's ``mx.nd.linspace``)."""
    if int(num) < 0:
        raise MXNetValueError(f"linspace: num must be >= 0, got {num}")
    values = np.linspace(float(start), float(stop), int(num), endpoint=bool(endpoint))
    return array(values.astype(np.dtype(dtype)), ctx=ctx, dtype=dtype)


register(OpDef(name="reset_arrays", inputs=("*data",), params=(Param("num_arrays", "int"),),
               impl=None, frontend=reset_arrays, dtype="impl",
               doc="Write zeros into every array (returns nothing).", family="misc"))
register(OpDef(name="linspace", inputs=(), params=(), impl=None, frontend=linspace,
               dtype="impl", namespace="python", doc=(linspace.__doc__ or "").split("\n")[0],
               family="misc"))


def _slice_assign_method(self: NDArray, rhs: NDArray, begin: Any, end: Any,
                         step: Any) -> NDArray:
    """Write ``rhs`` into the region ``begin:end:step`` of this array; returns it."""
    return functions("internal")["_slice_assign"](self, rhs, begin=begin, end=end, step=step,
                                                  out=self)


def _slice_assign_scalar_method(self: NDArray, value: float, begin: Any, end: Any,
                                step: Any) -> NDArray:
    """Set the region ``begin:end:step`` of this array to ``value``; returns it."""
    return functions("internal")["_slice_assign_scalar"](self, value, begin=begin, end=end,
                                                         step=step, out=self)


def _split_v2_method(self: NDArray, indices_or_sections: Any, axis: int = 0,
                     squeeze_axis: bool = False) -> Any:
    """:func:`split_v2` of this array."""
    return split_v2(self, indices_or_sections, axis=axis, squeeze_axis=squeeze_axis)


# MXNet's NDArray methods that are not one operator's frontend
NDArray.slice_assign = _slice_assign_method  # type: ignore[attr-defined]
NDArray.slice_assign_scalar = _slice_assign_scalar_method  # type: ignore[attr-defined]
NDArray.split_v2 = _split_v2_method  # type: ignore[attr-defined]
