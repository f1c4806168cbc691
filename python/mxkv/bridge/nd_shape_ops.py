"""Operators that move, pick or relabel elements, as MXNet 1.9 defines them:
``reshape`` (with its special dimensions 0, -1, -2, -3, -4), ``flatten``,
``expand_dims``, ``slice_axis``, ``SwapAxis``, ``concat``, ``cast``,
``one_hot``, ``Embedding``, ``argmax`` and ``argmin``.

Host (numpy) versions, merged into :data:`nd_operators.OPERATORS`; each
takes and returns numpy arrays. Results are copies, as MXNet's operator
outputs are. Where MXNet 1.9.1 silently reads past an array (a ``reshape``
to a shape of another size) these raise instead.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..base import MXNetValueError
from ..ndarray._reshape import infer_reshape as _infer_reshape
from .nd_op_base import Operator
from .nd_op_base import axes as _axes

__all__ = ["OPERATORS", "infer_reshape"]


# The bridge's wording of each reshape problem (ndarray/_reshape.py, PROBLEMS).
_RESHAPE_ERRORS = {
    "zero_past_end": "reshape: shape {spec} uses more dimensions than the array's {src}",
    "merge_past_end": "reshape: shape {spec} uses more dimensions than the array's {src}",
    "split_past_end": "reshape: shape {spec} uses more dimensions than the array's {src}",
    "split_short": "reshape: -4 in {spec} must be followed by two dimensions",
    "split_both_infer": "reshape: -4 in {spec} is followed by two -1s; one can be inferred",
    "split_mismatch": "reshape: -4 splits dimension {whole} into {d0} x {d1}",
    "two_infer": "reshape: shape {spec} has more than one -1",
    "invalid_dim": "reshape: invalid dimension {d} in shape {spec}",
    "cannot_infer": "reshape: cannot infer the -1 of {spec} for an array of shape {src} "
                    "({size} elements)",
    "size": "reshape: shape {spec} gives {out} ({got} elements) for an array of shape {src} "
            "({size} elements)",
}


def infer_reshape(src: Sequence[int], spec: Sequence[int], reverse: bool = False) -> tuple:
    """The shape ``reshape(shape=spec)`` gives an array of shape ``src``.

    0 copies a dimension, -1 is inferred, -2 copies all the remaining ones,
    -3 merges two, -4 splits one into the next two values (one may be -1);
    with ``reverse`` the special values are matched from the right. The rule
    is ``NDArray.reshape``'s (``ndarray/_reshape.py``), worded for the bridge.

    >>> infer_reshape((2, 3, 4), (-4, 1, 2, -2))
    (1, 2, 3, 4)
    """
    return _infer_reshape([int(d) for d in src], [int(d) for d in spec], reverse,
                          _RESHAPE_ERRORS)


def _reshape(x, shape=(), reverse=False, target_shape=(), keep_highest=False):
    if target_shape or keep_highest:
        raise MXNetValueError("reshape: target_shape and keep_highest (deprecated in MXNet) "
                              "are not supported; use shape")
    if not shape:
        raise MXNetValueError("reshape needs a shape")
    return x.reshape(infer_reshape(x.shape, shape, bool(reverse))).copy()


def _flatten(x):
    return x.reshape(x.shape[0] if x.ndim else 1, -1).copy()


def _expand_dims(x, axis):
    a = int(axis)
    if not -x.ndim - 1 <= a <= x.ndim:
        raise MXNetValueError(f"expand_dims: axis must be in the range [{-x.ndim - 1}, "
                              f"{x.ndim}] for a {x.ndim}-d array, got {a}")
    return np.expand_dims(x, a).copy()


def _slice_axis(x, axis, begin, end=None):
    ax = _axes(axis, x.ndim)[0]
    n = x.shape[ax]
    b = int(begin) + n if int(begin) < 0 else int(begin)
    e = n if end is None else (int(end) + n if int(end) < 0 else int(end))
    if not (0 <= b < e <= n):
        raise MXNetValueError(f"slice_axis: begin {begin}, end {end} select nothing valid "
                              f"along axis {axis} of length {n} (need begin < end, "
                              "both within the axis)")
    index = [slice(None)] * x.ndim
    index[ax] = slice(b, e)
    return x[tuple(index)].copy()


def _float_to_int(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    # MXNet truncates toward zero and keeps the low bits (300 -> uint8 44).
    with np.errstate(all="ignore"):
        return np.trunc(x).astype(np.int64).astype(dt)


def _cast(x, dtype):
    dt = np.dtype(dtype)
    if x.dtype.kind == "f" and dt.kind in "iu":
        return _float_to_int(x, dt)
    with np.errstate(all="ignore"):
        return x.astype(dt)


def _one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    depth = int(depth)
    if depth < 0:
        raise MXNetValueError(f"one_hot: depth must be non-negative, got {depth}")
    idx = np.trunc(indices).astype(np.int64)
    res = np.full(idx.shape + (depth,), off_value, dtype=np.float64)
    hit = (idx >= 0) & (idx < depth)
    res[hit, idx[hit]] = on_value
    return _cast(res, dtype)


def _arg(fn):
    def run(x, axis=None, keepdims=False):
        if axis is None:
            return np.asarray([fn(x)], dtype=np.float64)
        ax = _axes(axis, x.ndim)[0]
        res = fn(x, axis=ax)
        return np.expand_dims(res, ax) if keepdims else res
    return run


def _swap_axis(x, dim1=0, dim2=0):
    a, b = _axes([dim1, dim2], x.ndim)
    return np.swapaxes(x, a, b).copy()


def _concat(*arrays, dim=1, num_args=None):
    if num_args is not None and int(num_args) != len(arrays):
        raise MXNetValueError(f"concat: num_args is {num_args} but {len(arrays)} arrays were given")
    ax = _axes(dim, arrays[0].ndim)[0]
    shapes = [a.shape[:ax] + a.shape[ax + 1:] for a in arrays]
    if any(s != shapes[0] for s in shapes):
        raise MXNetValueError(f"concat: shapes {[a.shape for a in arrays]} differ off "
                              f"axis {dim}")
    return np.concatenate(arrays, axis=ax)


def _embedding(data, weight, input_dim, output_dim, dtype="float32", sparse_grad=False):
    if tuple(weight.shape) != (int(input_dim), int(output_dim)):
        raise MXNetValueError(f"Embedding: weight has shape {weight.shape}, expected "
                              f"({input_dim}, {output_dim})")
    idx = np.clip(np.trunc(data).astype(np.int64), 0, int(input_dim) - 1)
    return weight[idx]


def _named(key: str, default: Optional[str]):
    def pick(params: dict, dtype: np.dtype) -> np.dtype:
        value: Any = params.get(key) or default
        return np.dtype(value) if value else dtype
    return pick


#: operator name (MXNet's) -> Operator
OPERATORS = {
    "reshape": Operator(1, ("shape", "reverse", "target_shape", "keep_highest"), _reshape),
    "flatten": Operator(1, (), _flatten),
    "expand_dims": Operator(1, ("axis",), _expand_dims),
    "slice_axis": Operator(1, ("axis", "begin", "end"), _slice_axis),
    "cast": Operator(1, ("dtype",), _cast, _named("dtype", None)),
    "one_hot": Operator(1, ("depth", "on_value", "off_value", "dtype"), _one_hot,
                        _named("dtype", "float32")),
    "argmax": Operator(1, ("axis", "keepdims"), _arg(np.argmax)),
    "argmin": Operator(1, ("axis", "keepdims"), _arg(np.argmin)),
    "SwapAxis": Operator(1, ("dim1", "dim2"), _swap_axis),
    "concat": Operator(-1, ("dim", "num_args"), _concat),
    "Embedding": Operator(2, ("input_dim", "output_dim", "dtype", "sparse_grad"), _embedding,
                          _named("dtype", "float32")),
}
OPERATORS["swapaxes"] = OPERATORS["SwapAxis"]
OPERATORS["Flatten"] = OPERATORS["flatten"]
OPERATORS["Reshape"] = OPERATORS["reshape"]
OPERATORS["Cast"] = OPERATORS["cast"]
