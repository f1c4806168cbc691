"""The NDArray operators the Clojure API calls by name (``nd.invoke``).

clojure-mxnet's ``ndarray/sqrt``, ``ndarray/sum``, ``ndarray/dot`` ... were
generated from MXNet's operator registry: NDArray inputs first, then the
operator's parameters by position, in the registry's order (``clip``'s
``a_min``, ``a_max``). This table is that registry for the operators the
Clojure API exposes: for each, the number of NDArray inputs and the
parameter names in MXNet's order.

Each operator runs through the engine's own function (``mx.nd.<name>``)
when the engine has one that accepts the call, so results are the engine's;
otherwise on a host (numpy) copy of the inputs, written to follow MXNet
1.9's semantics: the result keeps the first input's dtype (computed in
float64 and cast back, so an int32 ``sqrt`` truncates as MXNet's does), and a
reduction over every axis has shape ``(1,)``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from ..base import MXNetValueError
from . import nd_nn_ops, nd_shape_ops, random_ops  # noqa: F401 (random_ops registers random.*)
from .nd_op_base import Operator
from .nd_op_base import axes as _axes
from .nd_op_base import params as _params
from .nd_op_base import reduction as _reduction

__all__ = ["OPERATORS", "Operator", "invoke", "onehot_encode"]


def _round(x):
    # MXNet rounds half away from zero (numpy's round is half to even).
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _norm(x, ord=2, axis=None, out_dtype=None, keepdims=False):
    if int(ord) not in (1, 2):
        raise MXNetValueError(f"norm: ord must be 1 or 2, got {ord}")
    axes = _axes(axis, x.ndim)
    x = x.astype(np.float64)
    if int(ord) == 1:
        res = np.sum(np.abs(x), axis=axes, keepdims=bool(keepdims))
    else:
        res = np.sqrt(np.sum(x * x, axis=axes, keepdims=bool(keepdims)))
    return res if out_dtype is None else np.asarray(res).astype(out_dtype)


def _dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None):
    a = lhs.T if transpose_a else lhs
    b = rhs.T if transpose_b else rhs
    if a.shape[-1] != b.shape[0]:
        raise MXNetValueError(f"dot: shapes {lhs.shape} and {rhs.shape} do not match "
                              f"(the last axis of lhs{'.T' if transpose_a else ''} must "
                              f"equal the first axis of rhs{'.T' if transpose_b else ''})")
    return np.tensordot(a, b, axes=1)


def _transpose(x, axes=()):
    axes = tuple(axes) if axes else None
    if axes is not None and sorted(a % x.ndim for a in axes) != list(range(x.ndim)):
        raise MXNetValueError(f"transpose: axes {axes} are not a permutation of the "
                              f"{x.ndim} axes of shape {x.shape}")
    return np.transpose(x, axes)


def _argmax_channel(x):
    if x.ndim < 2:
        raise MXNetValueError(f"argmax_channel needs an array of 2 or more dimensions "
                              f"(one row per item, channels along axis 1), got shape {x.shape}")
    return np.argmax(x, axis=1)


def _pick(data, index, axis=-1, keepdims=False, mode="clip"):
    ax = _axes(axis, data.ndim)[0]
    n = data.shape[ax]
    want = data.shape[:ax] + data.shape[ax + 1:]
    if index.shape != want:
        raise MXNetValueError(f"choose_element_0index: index has shape {index.shape}, "
                              f"expected {want} (the data's shape {data.shape} without "
                              f"axis {ax})")
    idx = index.astype(np.int64)
    idx = np.mod(idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)
    res = np.take_along_axis(data, np.expand_dims(idx, ax), axis=ax)
    return res if keepdims else np.squeeze(res, axis=ax)


def _unary(fn: Callable) -> Operator:
    return Operator(1, (), fn)


_REDUCE = ("axis", "keepdims", "exclude")

#: operator name (MXNet's) -> Operator
OPERATORS: Dict[str, Operator] = {
    "sqrt": _unary(np.sqrt),
    "rsqrt": _unary(lambda x: 1.0 / np.sqrt(x)),
    "square": _unary(np.square),
    "abs": _unary(np.abs),
    "sign": _unary(np.sign),
    "round": _unary(_round),
    "ceil": _unary(np.ceil),
    "floor": _unary(np.floor),
    "exp": _unary(np.exp),
    "log": _unary(np.log),
    "cos": _unary(np.cos),
    "sin": _unary(np.sin),
    "arccos": _unary(np.arccos),
    "arcsin": _unary(np.arcsin),
    "arctan": _unary(np.arctan),
    "clip": Operator(1, ("a_min", "a_max"), np.clip),
    "sum": Operator(1, _REDUCE, _reduction(np.sum)),
    "max": Operator(1, _REDUCE, _reduction(np.max)),
    "min": Operator(1, _REDUCE, _reduction(np.min)),
    "norm": Operator(1, ("ord", "axis", "out_dtype", "keepdims"), _norm),
    "transpose": Operator(1, ("axes",), _transpose),
    "argmax_channel": _unary(_argmax_channel),
    "dot": Operator(2, ("transpose_a", "transpose_b", "forward_stype"), _dot),
    "choose_element_0index": Operator(2, ("axis", "keepdims", "mode"), _pick),
}


def _engine_fn(mx, name: str, inputs: List[Any], params: dict):
    fn = getattr(mx.nd, name, None)
    if fn is None:
        return None
    try:
        inspect.signature(fn).bind(*inputs, **params)
    except (TypeError, ValueError):
        return None
    return fn


def _on_host(mx, name: str, op: Operator, inputs: List[Any], params: dict):
    first = inputs[0]
    dtype = np.dtype(first.dtype)
    out_dtype = params.get("out_dtype") if name == "norm" else None
    if op.dtype is not None:
        dtype = op.dtype(params, dtype)
    elif out_dtype:
        dtype = np.dtype(out_dtype)
    hosts = [a.asnumpy() if getattr(a, "stype", "default") == "default"
             else a.tostype("default").asnumpy() for a in inputs]
    with np.errstate(all="ignore"):
        res = np.asarray(op.host(*hosts, **params))
    if res.dtype != dtype:
        res = (nd_shape_ops._cast(res, dtype) if res.dtype.kind == "f" and dtype.kind in "iu"
               else res.astype(dtype))
    if res.ndim == 0:
        res = res.reshape(1)
    return mx.nd.array(res, ctx=first.context, dtype=res.dtype)


def invoke(mx, name: str, inputs: List[Any], positional: Sequence[Any] = (),
           kwargs: Dict[str, Any] | None = None):
    """Run operator ``name`` on NDArrays ``inputs`` with parameters given by
    position (MXNet's order) and by name; return a new NDArray."""
    op = OPERATORS.get(name)
    if op is None:
        raise MXNetValueError(f"unknown NDArray operator {name!r}; known: "
                              f"{', '.join(sorted(OPERATORS))}")
    if len(inputs) != op.inputs and not (op.inputs < 0 and inputs):
        raise MXNetValueError(f"{name} takes {op.inputs if op.inputs >= 0 else 'one or more'} "
                              f"array(s), got {len(inputs)}")
    params = _params(name, op, positional, kwargs or {})
    fn = _engine_fn(mx, name, inputs, params)
    if fn is not None:
        return fn(*inputs, **params)
    return _on_host(mx, name, op, inputs, params)


def onehot_encode(mx, indices, out):
    """Write the one-hot rows of ``indices`` into ``out`` (shape (n, depth)); return out."""
    fn = getattr(mx.nd, "onehot_encode", None)
    if fn is not None:
        return fn(indices, out)
    if len(out.shape) != 2 or tuple(indices.shape) != (out.shape[0],):
        raise MXNetValueError(f"onehot_encode: indices of shape {tuple(indices.shape)} need an "
                              f"output of shape ({tuple(indices.shape)[0]}, depth), got "
                              f"{tuple(out.shape)}")
    idx = indices.asnumpy().astype(np.int64)
    depth = out.shape[1]
    if idx.size and (idx.min() < 0 or idx.max() >= depth):
        raise MXNetValueError(f"onehot_encode: indices must lie in [0, {depth}), got "
                              f"{idx.min()}..{idx.max()}")
    res = np.zeros(out.shape, dtype=np.dtype(out.dtype))
    res[np.arange(idx.size), idx] = 1
    out[:] = mx.nd.array(res, ctx=out.context, dtype=res.dtype)
    return out


# The operators a training step needs live beside this table, one concept a file.
OPERATORS.update(nd_shape_ops.OPERATORS)
OPERATORS.update(nd_nn_ops.OPERATORS)
