"""The operators of a training step's arithmetic, as MXNet 1.9 defines them:
``softmax``, ``log_softmax``, ``SoftmaxActivation``, ``SoftmaxOutput``
(its forward pass), ``Activation`` (and ``relu``, ``sigmoid``,
``tanh``), ``mean``, and the ``broadcast_*`` family.

Host (numpy) versions, merged into :data:`nd_operators.OPERATORS`; each
computes in float64 and the caller casts back to the input's dtype (or the
``dtype`` parameter where the operator has one).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..base import MXNetValueError
from .nd_op_base import Operator
from .nd_op_base import axes as _axes
from .nd_op_base import reduction as _reduction

__all__ = ["OPERATORS"]


def _softmax(x, axis=-1, temperature=None, dtype=None, use_length=False, log=False):
    if use_length:
        raise MXNetValueError("softmax: use_length (a length input) is not supported")
    ax = _axes(axis, x.ndim)[0]
    z = x.astype(np.float64) / (1.0 if temperature is None else float(temperature))
    z = z - np.max(z, axis=ax, keepdims=True)
    if log:
        return z - np.log(np.sum(np.exp(z), axis=ax, keepdims=True))
    e = np.exp(z)
    return e / np.sum(e, axis=ax, keepdims=True)


def _log_softmax(x, axis=-1, temperature=None, dtype=None, use_length=False):
    return _softmax(x, axis, temperature, dtype, use_length, log=True)


def _softmax_activation(x, mode="instance"):
    if mode == "channel":
        return _softmax(x, axis=1)
    if mode != "instance":
        raise MXNetValueError(f"SoftmaxActivation: mode must be instance or channel, got {mode!r}")
    return _softmax(x.reshape(x.shape[0], -1), axis=1).reshape(x.shape)


def _softmax_output(data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                    use_ignore=False, preserve_shape=False, normalization="null",
                    out_grad=False, smooth_alpha=0.0):
    # The forward pass: the label and the gradient options only shape the backward one.
    if multi_output:
        return _softmax(data, axis=1)
    if preserve_shape:
        return _softmax(data, axis=-1)
    return _softmax(data.reshape(data.shape[0], -1), axis=1).reshape(data.shape)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": _sigmoid,
    "tanh": lambda x: np.tanh(x.astype(np.float64)),
    "softrelu": lambda x: np.logaddexp(0.0, x.astype(np.float64)),
    "softsign": lambda x: x / (1.0 + np.abs(x.astype(np.float64))),
}


def _activation(x, act_type):
    fn = _ACTIVATIONS.get(str(act_type))
    if fn is None:
        raise MXNetValueError(f"Activation: act_type must be one of "
                              f"{', '.join(sorted(_ACTIVATIONS))}, got {act_type!r}")
    return fn(x)


def _broadcast(fn: Callable, name: str) -> Callable:
    def run(lhs, rhs):
        if lhs.ndim == rhs.ndim and any(a != b and a != 1 and b != 1
                                        for a, b in zip(lhs.shape, rhs.shape)):
            raise MXNetValueError(f"{name}: operands could not be broadcast together with "
                                  f"shapes {lhs.shape} and {rhs.shape}")
        try:
            return fn(lhs.astype(np.float64), rhs.astype(np.float64))
        except ValueError as exc:
            raise MXNetValueError(f"{name}: operands could not be broadcast together with "
                                  f"shapes {lhs.shape} and {rhs.shape}") from exc
    return run


def _out_dtype(params: dict, dtype: np.dtype) -> np.dtype:
    value: Optional[Any] = params.get("dtype")
    return np.dtype(value) if value else dtype


_SOFTMAX = ("axis", "temperature", "dtype", "use_length")

#: operator name (MXNet's) -> Operator
OPERATORS = {
    "softmax": Operator(1, _SOFTMAX, _softmax, _out_dtype),
    "log_softmax": Operator(1, _SOFTMAX, _log_softmax, _out_dtype),
    "SoftmaxActivation": Operator(1, ("mode",), _softmax_activation),
    "SoftmaxOutput": Operator(2, ("grad_scale", "ignore_label", "multi_output", "use_ignore",
                                  "preserve_shape", "normalization", "out_grad",
                                  "smooth_alpha"), _softmax_output),
    "Activation": Operator(1, ("act_type",), _activation),
    "relu": Operator(1, (), _ACTIVATIONS["relu"]),
    "sigmoid": Operator(1, (), _sigmoid),
    "tanh": Operator(1, (), _ACTIVATIONS["tanh"]),
    "mean": Operator(1, ("axis", "keepdims", "exclude"), _reduction(np.mean)),
    "broadcast_add": Operator(2, (), _broadcast(np.add, "broadcast_add")),
    "broadcast_sub": Operator(2, (), _broadcast(np.subtract, "broadcast_sub")),
    "broadcast_mul": Operator(2, (), _broadcast(np.multiply, "broadcast_mul")),
    "broadcast_div": Operator(2, (), _broadcast(np.divide, "broadcast_div")),
}
