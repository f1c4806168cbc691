"""Shape operators: reshape (MXNet's special codes), transpose, expand_dims,
squeeze, flatten, stack, split, concat, tile, repeat, flip, swapaxes,
broadcast_to/like/axis, depth_to_space, space_to_depth, diag, cast,
zeros_like, ones_like, shape_array, size_array, add_n.

Results are new arrays (MXNet's operators copy; ``NDArray.reshape`` is the
view) of the input's dtype unless said.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...base import _Null
from .._reshape import infer_reshape
from .._util import MXNetTypeError, MXNetValueError
from ..ndarray import _provided
from .registry import OpDef, Param, register


def _axis(a: int, ndim: int, opname: str, extra: int = 0) -> int:
    if not -(ndim + extra) <= a < ndim + extra:
        raise MXNetValueError(f"{opname}: axis {a} is out of range for a {ndim}-d input")
    return a % (ndim + extra)


_RESHAPE_MSG = {k: "Reshape: " + v for k, v in {
    "zero_past_end": "dim {i} is 0 (copy) but the input has only {n} dims",
    "merge_past_end": "-3 needs two more input dims", "split_short": "-4 needs two dims after it",
    "split_past_end": "-4 needs an input dim", "split_both_infer": "split dims cannot both be -1",
    "split_mismatch": "split dims {d0}, {d1} do not divide input dim {whole}",
    "two_infer": "one and only one dim can be inferred",
    "invalid_dim": "{d} is not a valid dim", "cannot_infer": "the inferred dim does not divide "
    "the size", "size": "cannot reshape an array of shape {src} into shape {spec}"}.items()}


def _reshape(xp: Any, data: Any, shape: tuple, reverse: bool, target_shape: tuple,
             keep_highest: bool) -> Any:
    if not shape and target_shape:
        shape = target_shape if not keep_highest else (data.shape[0],) + tuple(target_shape[1:])
    dims = infer_reshape(tuple(data.shape), tuple(shape), reverse, _RESHAPE_MSG)
    return data.reshape(dims).copy()


register(OpDef(
    name="Reshape", inputs=("data",),
    params=(Param("shape", "Shape(tuple)", ()), Param("reverse", "boolean", False),
            Param("target_shape", "Shape(tuple)", ()), Param("keep_highest", "boolean", False)),
    impl=_reshape, aliases=("reshape",),
    differences="a shape holding another number of elements is refused (MXNet 1.9.1 returns "
                "memory past the array)",
    doc="``data`` with a new shape: 0 copies a dim, -1 infers one, -2 copies the rest, "
        "-3 merges two, -4 splits one; ``reverse`` matches from the right. A copy.",
    family="shape"))


def _reshape_like(xp: Any, lhs: Any, rhs: Any, lhs_begin: Any, lhs_end: Any, rhs_begin: Any,
                  rhs_end: Any) -> Any:
    def rng(b: Any, e: Any, n: int) -> tuple:
        b = 0 if b is None else b % n if n else 0
        e = n if e is None else e % n if e < 0 else e
        return b, e
    lb, le = rng(lhs_begin, lhs_end, lhs.ndim)
    rb, re = rng(rhs_begin, rhs_end, rhs.ndim)
    shape = lhs.shape[:lb] + rhs.shape[rb:re] + lhs.shape[le:]
    if int(np.prod(shape)) != lhs.size:
        raise MXNetValueError(f"reshape_like: cannot reshape lhs of shape {lhs.shape} to "
                              f"{shape}")
    return lhs.reshape(shape).copy()


register(OpDef(
    name="reshape_like", inputs=("lhs", "rhs"),
    params=tuple(Param(n, "int or None", None)
                 for n in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")),
    impl=_reshape_like, methods=("reshape_like",),
    doc="``lhs`` reshaped to (a range of) ``rhs``'s shape.", family="shape"))


def _transpose(xp: Any, data: Any, axes: tuple) -> Any:
    if axes and sorted(a % data.ndim for a in axes) != list(range(data.ndim)):
        raise MXNetValueError(f"transpose: axes {axes} are not a permutation of the "
                              f"{data.ndim} axes")
    return xp.ascontiguousarray(xp.transpose(data, axes or None))


register(OpDef(name="transpose", inputs=("data",), params=(Param("axes", "Shape(tuple)", ()),),
               impl=_transpose, methods=("transpose",),
               doc="``data`` with its axes permuted (reversed by default).", family="shape"))


def _expand_dims(xp: Any, data: Any, axis: int) -> Any:
    return xp.expand_dims(data, _axis(axis, data.ndim, "expand_dims", 1)).copy()


register(OpDef(name="expand_dims", inputs=("data",), params=(Param("axis", "int"),),
               impl=_expand_dims, methods=("expand_dims",),
               doc="``data`` with a new axis of size 1 at ``axis``.", family="shape"))


def _squeeze(xp: Any, data: Any, axis: Any) -> Any:
    if axis is None:
        res = xp.squeeze(data)
    else:
        axes = tuple(_axis(a, data.ndim, "squeeze") for a in axis)
        for a in axes:
            if data.shape[a] != 1:
                raise MXNetValueError(f"squeeze: axis {a} of shape {data.shape} is not 1")
        res = xp.squeeze(data, axis=axes)
    return (res.reshape(1) if res.ndim == 0 else res).copy()


register(OpDef(name="squeeze", inputs=("data",), params=(Param("axis", "Shape or None", None),),
               impl=_squeeze, methods=("squeeze",),
               doc="``data`` without its axes of size 1 (those in ``axis``).", family="shape"))


def _flatten(xp: Any, data: Any) -> Any:
    first = data.shape[0] if data.ndim else 1
    rest = int(np.prod(data.shape[1:])) if data.ndim > 1 else 1
    return data.reshape(first, rest).copy()


register(OpDef(name="Flatten", inputs=("data",), params=(), impl=_flatten, aliases=("flatten",),
               doc="``data`` as 2-d: (first dim, product of the others).", family="shape"))


def _cast(xp: Any, data: Any, dtype: str) -> Any:
    if dtype == "bfloat16":
        raise MXNetTypeError("cast: bfloat16 is not supported by mxkv")
    with np.errstate(all="ignore"):
        return data.astype(dtype)


_CAST_T = ("{'bfloat16', 'bool', 'float16', 'float32', 'float64', 'int32', 'int64', 'int8', "
           "'uint8'}")
register(OpDef(name="Cast", inputs=("data",), params=(Param("dtype", _CAST_T),), impl=_cast,
               aliases=("cast",), dtype="impl", doc="``data`` cast to ``dtype``.",
               differences="bfloat16 is refused.", family="shape"))
register(OpDef(name="amp_cast", inputs=("data",), params=(Param("dtype", _CAST_T.replace(
    "'bool', ", "")),), impl=_cast, dtype="impl", doc="``data`` cast to ``dtype``.",
    family="shape"))

def _sparse_like(opdef: OpDef, inputs: list, params: dict, out: Any) -> Any:
    res = _provided(opdef.name)(inputs[0])
    if out is not None:
        out[:] = res
        return out
    return res


register(OpDef(name="zeros_like", inputs=("data",), params=(),
               impl=lambda xp, data: xp.zeros_like(data), csr=_sparse_like,
               stypes=("csr", "row_sparse"),
               doc="Zeros of ``data``'s shape, dtype and storage type.", family="shape"))
register(OpDef(name="ones_like", inputs=("data",), params=(),
               impl=lambda xp, data: xp.ones_like(data), csr=_sparse_like,
               stypes=("csr", "row_sparse"),
               doc="Ones of ``data``'s shape and dtype (dense).", family="shape"))
register(OpDef(name="shape_array", inputs=("data",), params=(),
               impl=lambda xp, data: xp.asarray(data.shape, dtype=np.int64),
               methods=("shape_array",), dtype="impl",
               doc="``data``'s shape as an int64 array.", family="shape"))
register(OpDef(name="size_array", inputs=("data",), params=(),
               impl=lambda xp, data: xp.asarray([data.size], dtype=np.int64),
               methods=("size_array",), dtype="impl",
               doc="``data``'s element count as an int64 array of shape (1,).", family="shape"))


# ---------------------------------------------------------------- joining and splitting
def _concat(xp: Any, data: list, num_args: int, dim: int) -> Any:
    first = data[0]
    ax = _axis(dim, first.ndim, "concat")
    for i, a in enumerate(data):
        if a.dtype != first.dtype:
            raise MXNetTypeError(f"concat: array {i} has dtype {a.dtype.name}, array 0 has "
                                 f"dtype {first.dtype.name}")
        if a.ndim != first.ndim or a.shape[:ax] + a.shape[ax + 1:] != \
                first.shape[:ax] + first.shape[ax + 1:]:
            raise MXNetValueError(f"concat along dim {dim}: array {i} has shape "
                                  f"{tuple(a.shape)}, array 0 has shape {tuple(first.shape)}")
    return xp.concatenate(data, axis=ax)


def _csr_concat(opdef: OpDef, inputs: list, params: dict, out: Any) -> Any:
    dim = params.get("dim")
    return _provided("csr_concat")(inputs, 1 if dim is _Null else dim, out)


register(OpDef(name="Concat", inputs=("*data",),
               params=(Param("num_args", "int"), Param("dim", "int", 1)),
               impl=_concat, aliases=("concat",), csr=_csr_concat,
               doc="The arrays joined along ``dim`` (default 1); csr arrays along dim 0 give "
                   "a csr array.", family="shape"))


def _stack(xp: Any, data: list, axis: int, num_args: int) -> Any:
    first = data[0]
    for i, a in enumerate(data):
        if a.shape != first.shape:
            raise MXNetValueError(f"stack: array {i} has shape {tuple(a.shape)}, array 0 has "
                                  f"shape {tuple(first.shape)}")
    return xp.stack(data, axis=_axis(axis, first.ndim, "stack", 1))


register(OpDef(name="stack", inputs=("*data",),
               params=(Param("axis", "int", 0), Param("num_args", "int")),
               impl=_stack, same_dtype=True,
               differences="arrays of different shapes are refused (MXNet 1.9.1 stacks arrays "
                           "of one size and different shapes)",
               doc="The arrays (one shape) stacked along a new axis.", family="shape"))


def _add_n(xp: Any, args: list) -> Any:
    first = args[0]
    for i, a in enumerate(args[1:], 1):
        if a.shape != first.shape:
            raise MXNetValueError(f"add_n: input {i} has shape {tuple(a.shape)}, input 0 has "
                                  f"shape {tuple(first.shape)}")
    acc = first.copy()
    for a in args[1:]:
        acc += a
    return acc


register(OpDef(name="add_n", inputs=("*args",), params=(), impl=_add_n,
               aliases=("ElementWiseSum",), same_dtype=True,
               doc="The elementwise sum of arrays of one shape and dtype.", family="shape"))


def _split(xp: Any, data: Any, num_outputs: int, axis: int, squeeze_axis: bool) -> Any:
    ax = _axis(axis, data.ndim, "split")
    if num_outputs <= 0 or data.shape[ax] % num_outputs:
        raise MXNetValueError(f"split: axis {axis} of shape {tuple(data.shape)} does not split "
                              f"into {num_outputs} equal parts")
    if squeeze_axis and data.shape[ax] != num_outputs:
        raise MXNetValueError(f"split: squeeze_axis needs axis {axis} of size num_outputs "
                              f"({num_outputs}), got {data.shape[ax]}")
    parts = [p.copy() for p in xp.split(data, num_outputs, axis=ax)]
    if squeeze_axis:
        parts = [xp.squeeze(p, axis=ax) for p in parts]
    return parts[0] if num_outputs == 1 else parts


register(OpDef(name="SliceChannel", inputs=("data",),
               params=(Param("num_outputs", "int"), Param("axis", "int", 1),
                       Param("squeeze_axis", "boolean", False)),
               impl=_split, aliases=("split",), methods=("split",),
               doc="``data`` split into ``num_outputs`` equal parts along ``axis`` (a list).",
               family="shape"))


def _tile(xp: Any, data: Any, reps: tuple) -> Any:
    return xp.tile(data, reps)


register(OpDef(name="tile", inputs=("data",), params=(Param("reps", "Shape(tuple)"),),
               impl=_tile, methods=("tile",), doc="``data`` repeated ``reps`` times per axis.",
               family="shape"))


def _repeat(xp: Any, data: Any, repeats: int, axis: Any) -> Any:
    if repeats < 0:
        raise MXNetValueError(f"repeat: repeats must be >= 0, got {repeats}")
    if axis is not None:
        axis = _axis(axis, data.ndim, "repeat")
    return xp.repeat(data, repeats, axis=axis)


register(OpDef(name="repeat", inputs=("data",),
               params=(Param("repeats", "int"), Param("axis", "int or None", None)),
               impl=_repeat, methods=("repeat",),
               doc="Each element repeated ``repeats`` times (along ``axis``, or flattened).",
               family="shape"))


def _flip(xp: Any, data: Any, axis: tuple) -> Any:
    axes = tuple(_axis(a, data.ndim, "flip") for a in axis)
    return xp.ascontiguousarray(xp.flip(data, axis=axes))


register(OpDef(name="reverse", inputs=("data",), params=(Param("axis", "Shape(tuple)"),),
               impl=_flip, aliases=("flip",), methods=("flip",),
               doc="``data`` reversed along ``axis``.", family="shape"))


def _swapaxes(xp: Any, data: Any, dim1: int, dim2: int) -> Any:
    a, b = _axis(dim1, data.ndim, "swapaxes"), _axis(dim2, data.ndim, "swapaxes")
    return xp.ascontiguousarray(xp.swapaxes(data, a, b))


register(OpDef(name="SwapAxis", inputs=("data",),
               params=(Param("dim1", "int", 0), Param("dim2", "int", 0)),
               impl=_swapaxes, aliases=("swapaxes",), methods=("swapaxes",),
               doc="``data`` with axes ``dim1`` and ``dim2`` exchanged.", family="shape"))


def _broadcast_to(xp: Any, data: Any, shape: tuple) -> Any:
    if len(shape) != data.ndim:
        raise MXNetValueError(f"broadcast_to: shape {shape} and input shape "
                              f"{tuple(data.shape)} differ in length")
    target = tuple(d if s == 0 else s for s, d in zip(shape, data.shape))
    for s, d in zip(target, data.shape):
        if d != 1 and s != d:
            raise MXNetValueError(f"broadcast_to: cannot broadcast shape {tuple(data.shape)} "
                                  f"to {shape}")
    return xp.ascontiguousarray(xp.broadcast_to(data, target))


register(OpDef(name="broadcast_to", inputs=("data",), params=(Param("shape", "Shape(tuple)",
                                                                   ()),),
               impl=_broadcast_to, methods=("broadcast_to",),
               doc="``data`` broadcast to ``shape`` (0 keeps a dim).", family="shape"))


def _broadcast_like(xp: Any, lhs: Any, rhs: Any, lhs_axes: Any, rhs_axes: Any) -> Any:
    if lhs_axes is None and rhs_axes is None:
        return _broadcast_to(xp, lhs, tuple(rhs.shape))
    if lhs_axes is None or rhs_axes is None or len(lhs_axes) != len(rhs_axes):
        raise MXNetValueError("broadcast_like: lhs_axes and rhs_axes must be given together, "
                              "of one length")
    shape = list(lhs.shape)
    for la, ra in zip(lhs_axes, rhs_axes):
        shape[_axis(la, lhs.ndim, "broadcast_like")] = rhs.shape[_axis(ra, rhs.ndim,
                                                                       "broadcast_like")]
    return _broadcast_to(xp, lhs, tuple(shape))


register(OpDef(name="broadcast_like", inputs=("lhs", "rhs"),
               params=(Param("lhs_axes", "Shape or None", None),
                       Param("rhs_axes", "Shape or None", None)),
               impl=_broadcast_like, methods=("broadcast_like",),
               doc="``lhs`` broadcast to ``rhs``'s shape (on the given axes).", family="shape"))


def _broadcast_axis(xp: Any, data: Any, axis: tuple, size: tuple) -> Any:
    if len(axis) != len(size):
        raise MXNetValueError(f"broadcast_axis: axis {axis} and size {size} differ in length")
    shape = list(data.shape)
    for a, s in zip(axis, size):
        a = _axis(a, data.ndim, "broadcast_axis")
        if shape[a] != 1:
            raise MXNetValueError(f"broadcast_axis: axis {a} of shape {tuple(data.shape)} "
                                  "is not 1")
        shape[a] = s
    return xp.ascontiguousarray(xp.broadcast_to(data, tuple(shape)))


register(OpDef(name="broadcast_axis", inputs=("data",),
               params=(Param("axis", "Shape(tuple)", ()), Param("size", "Shape(tuple)", ())),
               impl=_broadcast_axis, aliases=("broadcast_axes",), methods=("broadcast_axes",),
               doc="``data`` broadcast along its axes of size 1 to ``size``.", family="shape"))


def _depth_to_space(xp: Any, data: Any, block_size: int) -> Any:
    n, c, h, w = _four_d(data, "depth_to_space")
    b = block_size
    if b <= 0 or c % (b * b):
        raise MXNetValueError(f"depth_to_space: channels {c} do not divide by block_size^2 "
                              f"({b * b})")
    x = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return xp.ascontiguousarray(x.reshape(n, c // (b * b), h * b, w * b))


def _space_to_depth(xp: Any, data: Any, block_size: int) -> Any:
    n, c, h, w = _four_d(data, "space_to_depth")
    b = block_size
    if b <= 0 or h % b or w % b:
        raise MXNetValueError(f"space_to_depth: height {h} and width {w} must divide by "
                              f"block_size {b}")
    x = data.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return xp.ascontiguousarray(x.reshape(n, c * b * b, h // b, w // b))


def _four_d(data: Any, opname: str) -> tuple:
    if data.ndim != 4:
        raise MXNetValueError(f"{opname}: needs a 4-d input (N, C, H, W), got shape "
                              f"{tuple(data.shape)}")
    return tuple(data.shape)


for _name, _fn in (("depth_to_space", _depth_to_space), ("space_to_depth", _space_to_depth)):
    register(OpDef(name=_name, inputs=("data",), params=(Param("block_size", "int"),),
                   impl=_fn, methods=(_name,),
                   doc=f"MXNet's ``{_name}`` of a 4-d (N, C, H, W) array.", family="shape"))


def _diag(xp: Any, data: Any, k: int, axis1: int, axis2: int) -> Any:
    if data.ndim == 1:
        return xp.diag(data, k)
    if data.ndim == 0:
        raise MXNetValueError("diag: needs an input of at least 1 dim")
    return xp.ascontiguousarray(xp.diagonal(data, k, _axis(axis1, data.ndim, "diag"),
                                            _axis(axis2, data.ndim, "diag")))


register(OpDef(name="diag", inputs=("data",),
               params=(Param("k", "int", 0), Param("axis1", "int", 0), Param("axis2", "int", 1)),
               impl=_diag, methods=("diag",),
               doc="The ``k``-th diagonal of a >=2-d array, or the matrix with a 1-d array on "
                   "it.", family="shape"))

