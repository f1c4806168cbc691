"""Dense layers and activations (MXNet 1.9's ``nd.*``), forward.

FullyConnected, Embedding, Activation, LeakyReLU, Dropout, the softmax family
and SoftmaxActivation as plain functions over an array module ``xp`` (numpy or
cupy) and its arrays, registered as operators in the operator table.

``training`` stands for MXNet's ``is_train`` flag, which an imperative
``nd.*`` call has only inside ``autograd.record(train_mode=True)``: mxkv has
no autograd, so the frontends pass ``False``, as MXNet's imperative calls
outside a recording scope compute (Dropout with ``mode='training'`` is then
the identity, rrelu uses the mean slope).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from .._util import MXNetValueError
from ._layer import params, register_layer
from .unary import _MATH

__all__ = ["ACT_TYPES", "LEAKY_TYPES", "activation", "dropout", "embedding",
           "fully_connected", "leaky_relu", "log_softmax", "softmax", "softmax_activation",
           "softmax_cross_entropy", "softmin"]

ACT_TYPES = ("relu", "sigmoid", "softrelu", "softsign", "tanh")
LEAKY_TYPES = ("elu", "gelu", "leaky", "prelu", "rrelu", "selu")
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def fully_connected(xp: Any, data: Any, weight: Any, bias: Any = None, *, num_hidden: int,
                    no_bias: bool = False, flatten: bool = True) -> Any:
    """``data @ weight.T + bias``; ``flatten`` folds all but the first axis of data
    into one, else the last axis is the input axis."""
    nh = int(num_hidden)
    if flatten:
        x = data.reshape(data.shape[0] if data.ndim else 1, -1)
    else:
        x = data
    k = x.shape[-1] if x.ndim else 1
    if tuple(weight.shape) != (nh, k):
        raise MXNetValueError(f"FullyConnected: weight has shape {tuple(weight.shape)}, "
                              f"expected ({nh}, {k}) for data {tuple(data.shape)} "
                              f"(num_hidden={nh}, flatten={bool(flatten)})")
    if not no_bias and (bias is None or tuple(bias.shape) != (nh,)):
        raise MXNetValueError(f"FullyConnected: bias must have shape ({nh},), got "
                              f"{None if bias is None else tuple(bias.shape)}")
    res = xp.matmul(x, weight.T)
    if not no_bias:
        res += bias
    return res


def embedding(xp: Any, data: Any, weight: Any, *, input_dim: int, output_dim: int,
              dtype: Any = "float32", sparse_grad: bool = False) -> Any:
    """Rows of ``weight`` (input_dim, output_dim) picked by ``data``'s indices,
    clipped to [0, input_dim) as MXNet's CPU kernel does: shape data.shape + (output_dim,)."""
    shape = (int(input_dim), int(output_dim))
    if tuple(weight.shape) != shape:
        raise MXNetValueError(f"Embedding: weight has shape {tuple(weight.shape)}, expected "
                              f"{shape} (input_dim, output_dim)")
    idx = xp.clip(data.astype("int64"), 0, shape[0] - 1)
    return xp.take(weight, idx, axis=0)


def _softrelu(xp: Any, x: Any) -> Any:
    # MXNet's softrelu: log(1 + exp(x)), x itself above 20 where exp would lose it.
    return xp.where(x > 20, x, xp.log1p(xp.exp(xp.minimum(x, 20))))


def activation(xp: Any, data: Any, *, act_type: str) -> Any:
    """relu / sigmoid / tanh / softrelu / softsign, elementwise, in data's dtype."""
    if act_type == "relu":
        return xp.maximum(data, 0)
    if act_type == "sigmoid":
        return (1 / (1 + xp.exp(-data))).astype(data.dtype)
    if act_type == "tanh":
        return xp.tanh(data)
    if act_type == "softrelu":  # (float16 through float32, as MXNet's math::exp)
        x = data.astype(xp.float32) if data.dtype == xp.float16 else data
        return _softrelu(xp, x).astype(data.dtype)
    if act_type == "softsign":
        return (data / (1 + xp.abs(data))).astype(data.dtype)
    raise MXNetValueError(f"Activation: act_type {act_type!r} is not one of {ACT_TYPES}")


def leaky_relu(xp: Any, data: Any, gamma: Any = None, *, act_type: str = "leaky",
               slope: float = 0.25, lower_bound: float = 0.125, upper_bound: float = 0.334,
               training: bool = False) -> Any:
    """MXNet's LeakyReLU family. ``prelu`` takes ``gamma`` per channel (axis 1);
    ``rrelu`` draws each slope from U[lower, upper) when ``training``, else uses
    their mean; it returns (result, slopes), the slopes 0 outside training, as
    MXNet's imperative call."""
    dt = data.dtype
    if act_type == "leaky":
        return xp.where(data > 0, data, data * dt.type(slope))
    if act_type == "elu":
        return xp.where(data > 0, data, dt.type(slope) * xp.expm1(data)).astype(dt)
    if act_type == "selu":
        neg = _SELU_ALPHA * xp.expm1(data)
        return (_SELU_LAMBDA * xp.where(data > 0, data, neg)).astype(dt)
    if act_type == "gelu":
        return (0.5 * data * (1 + _MATH["erf"](xp, data / math.sqrt(2.0)))).astype(dt)
    if act_type == "prelu":
        if gamma is None:
            raise MXNetValueError("LeakyReLU: act_type 'prelu' needs the gamma input")
        c = data.shape[1] if data.ndim > 1 else 1
        if gamma.size not in (1, c):
            raise MXNetValueError(f"LeakyReLU: prelu gamma has shape {tuple(gamma.shape)}, "
                                  f"expected ({c},) or (1,) for data {tuple(data.shape)}")
        g = gamma.reshape((1, -1) + (1,) * (data.ndim - 2)) if data.ndim > 1 else gamma
        return xp.where(data > 0, data, data * g).astype(dt)
    if act_type == "rrelu":  # (two outputs, as MXNet: the result and the drawn slopes)
        if training:
            s = xp.random.uniform(lower_bound, upper_bound, size=data.shape).astype(dt)
            return xp.where(data > 0, data, data * s).astype(dt), s
        s = dt.type((lower_bound + upper_bound) / 2)
        return xp.where(data > 0, data, data * s).astype(dt), xp.zeros_like(data)
    raise MXNetValueError(f"LeakyReLU: act_type {act_type!r} is not one of {LEAKY_TYPES}")


def dropout(xp: Any, data: Any, *, p: float = 0.5, mode: str = "training",
            axes: Sequence[int] = (), training: bool = False) -> Any:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p),
    in ``mode='always'`` or when ``training``; else the identity. ``axes`` share
    one mask value along those axes. The mask is drawn from ``xp.random`` (the
    generator ``mx.random.seed`` seeds), not MXNet's stream."""
    if mode not in ("always", "training"):
        raise MXNetValueError(f"Dropout: mode {mode!r} is not one of ('always', 'training')")
    if not 0 <= p <= 1:
        raise MXNetValueError(f"Dropout: p must be in [0, 1], got {p}")
    if not (mode == "always" or training) or p == 0:
        return data.copy()
    shape = list(data.shape)
    for a in axes:
        shape[int(a)] = 1
    if p >= 1:
        return xp.zeros_like(data)
    keep = (xp.random.uniform(0, 1, size=tuple(shape)) >= p).astype(data.dtype)
    return (data * keep * data.dtype.type(1.0 / (1.0 - p))).astype(data.dtype)


def _softmax_parts(xp: Any, op: str, data: Any, length: Any, axis: int, temperature: Any,
                   dtype: Any, use_length: Any, negate: bool = False) -> tuple:
    if data.dtype.kind != "f":
        raise MXNetValueError(f"{op}: data must be floating point, got {data.dtype}")
    ax = int(axis)
    if not -data.ndim <= ax < data.ndim:
        raise MXNetValueError(f"{op}: axis {ax} is out of range for data of shape "
                              f"{tuple(data.shape)}")
    ax %= data.ndim
    odt = xp.dtype(dtype) if dtype not in (None, "None") else data.dtype
    # MXNet computes in the input's dtype, then casts (float16 here in float32: closer).
    x = data.astype(xp.float32 if data.dtype == xp.float16 else data.dtype)
    if negate:
        x = -x
    t = 1.0 if temperature is None else float(temperature)
    if t != 1.0:
        x = x / t
    mask = None
    if use_length:
        if length is None:
            raise MXNetValueError(f"{op}: use_length needs the length input")
        want = tuple(data.shape[:ax] + data.shape[ax + 1:])
        if tuple(length.shape) != want:
            raise MXNetValueError(f"{op}: length has shape {tuple(length.shape)}, expected "
                                  f"{want} for data {tuple(data.shape)} and axis {ax}")
        pos = xp.arange(data.shape[ax]).reshape((-1,) + (1,) * (data.ndim - ax - 1))
        mask = pos < xp.expand_dims(length.astype("int64"), ax)
        x = xp.where(mask, x, -xp.inf)
    m = xp.max(x, axis=ax, keepdims=True) if x.size else x
    m = xp.where(xp.isfinite(m), m, 0) if mask is not None else m
    z = x - m
    return z, ax, odt, mask


def softmax(xp: Any, data: Any, length: Any = None, *, axis: int = -1, temperature: Any = None,
            dtype: Any = None, use_length: Any = False, _negate: bool = False) -> Any:
    """exp(x/T) normalized along ``axis``; with ``use_length`` only the first
    ``length`` entries along the axis count and the rest are 0."""
    op = "softmin" if _negate else "softmax"
    z, ax, odt, mask = _softmax_parts(xp, op, data, length, axis, temperature, dtype,
                                      use_length, _negate)
    e = xp.exp(z)
    s = xp.sum(e, axis=ax, keepdims=True)
    res = e / xp.where(s == 0, 1, s) if mask is not None else e / s
    return res.astype(odt)


def softmin(xp: Any, data: Any, length: Any = None, *, axis: int = -1, temperature: Any = None,
            dtype: Any = None, use_length: Any = False) -> Any:
    """softmax of ``-data``."""
    return softmax(xp, data, length, axis=axis, temperature=temperature, dtype=dtype,
                   use_length=use_length, _negate=True)


def log_softmax(xp: Any, data: Any, length: Any = None, *, axis: int = -1,
                temperature: Any = None, dtype: Any = None, use_length: Any = False) -> Any:
    """log of softmax, computed as (x - max) - log(sum(exp(x - max)))."""
    z, ax, odt, mask = _softmax_parts(xp, "log_softmax", data, length, axis, temperature,
                                      dtype, use_length)
    res = z - xp.log(xp.sum(xp.exp(z), axis=ax, keepdims=True))
    return res.astype(odt)


def softmax_cross_entropy(xp: Any, data: Any, label: Any) -> Any:
    """The summed cross-entropy of softmax(data) (N, K) against integer labels (N,):
    shape (1,)."""
    if data.ndim != 2 or label.shape != (data.shape[0],):
        raise MXNetValueError(f"softmax_cross_entropy: data must be (N, K) and label (N,), "
                              f"got {tuple(data.shape)} and {tuple(label.shape)}")
    logp = log_softmax(xp, data, axis=-1)
    idx = xp.clip(label.astype("int64"), 0, data.shape[1] - 1)
    picked = xp.take_along_axis(logp, idx.reshape(-1, 1), axis=1)
    return (-picked.sum(dtype=data.dtype)).reshape(1).astype(data.dtype)


def softmax_activation(xp: Any, data: Any, *, mode: str = "instance") -> Any:
    """Softmax over the last axis (``instance``: MXNet 1.9 computes it so for any
    rank, not over all but the first axis as its docs say) or axis 1 (``channel``)."""
    if mode == "instance":
        return softmax(xp, data, axis=-1)
    if mode == "channel":
        if data.ndim < 2:
            raise MXNetValueError(f"SoftmaxActivation: mode 'channel' needs at least 2 "
                                  f"dimensions, got shape {tuple(data.shape)}")
        return softmax(xp, data, axis=1)
    raise MXNetValueError(f"SoftmaxActivation: mode {mode!r} is not 'instance' or 'channel'")


register_layer(
    "FullyConnected", ("data", "weight", "bias"), params(
        ("num_hidden", "int"), ("no_bias", "boolean", False), ("flatten", "boolean", True)),
    fully_connected, optional=("bias",),
    doc="data @ weight.T + bias (data flattened to 2-D unless flatten=False).",
    differences="float16 is computed (MXNet's CPU kernel refuses it).")

register_layer(
    "Embedding", ("data", "weight"), params(
        ("input_dim", "int"), ("output_dim", "int"),
        ("dtype", "{'bfloat16', 'float16', 'float32', 'float64', 'int32', 'int64', 'int8', "
                  "'uint8'}", "float32"),
        ("sparse_grad", "boolean", False)),
    embedding,
    doc="Rows of weight picked by the indices in data (clipped to [0, input_dim)).")

register_layer(
    "Activation", ("data",), params(
        ("act_type", "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}")),
    activation, doc="Elementwise relu, sigmoid, tanh, softrelu or softsign.")

register_layer(
    "LeakyReLU", ("data", "gamma"), params(
        ("act_type", "{'elu', 'gelu', 'leaky', 'prelu', 'rrelu', 'selu'}", "leaky"),
        ("slope", "float", 0.25), ("lower_bound", "float", 0.125),
        ("upper_bound", "float", 0.333999991)),
    leaky_relu, optional=("gamma",),
    doc="Leaky ReLU and its kin: leaky, elu, selu, gelu, prelu (gamma per channel), rrelu.",
    differences="rrelu uses the mean slope (MXNet's imperative call outside a training "
                "scope; mxkv has no autograd); float64 is computed in float64 (MXNet "
                "rounds the slope and gelu to float32: results differ by ~1e-7).")

register_layer(
    "Dropout", ("data",), params(
        ("p", "float", 0.5), ("mode", "{'always', 'training'}", "training"),
        ("axes", "Shape(tuple)", ()), ("cudnn_off", "boolean or None", False)),
    dropout,
    doc="Zeroes elements with probability p and scales the rest by 1/(1-p) in "
        "mode='always'; mode='training' is the identity (no training scope).",
    differences="the mask comes from numpy's/CuPy's generator (mx.random.seed), not "
                "MXNet's stream: same distribution, other values.")

_SOFTMAX = (("axis", "int", -1), ("temperature", "double or None", None),
            ("dtype", "{None, 'float16', 'float32', 'float64'}", None),
            ("use_length", "boolean or None", False))

register_layer(
    "softmax", ("data", "length"), params(*_SOFTMAX), softmax, optional=("length",),
    methods=("softmax",),
    doc="exp(x/T) normalized along axis; with use_length only the first length entries.",
    differences="dtype=None given explicitly means the input's dtype (MXNet 1.9.1 then "
                "returns float64).")

register_layer(
    "log_softmax", ("data",), params(*_SOFTMAX), log_softmax, methods=("log_softmax",),
    doc="log(softmax(x/T)) along axis.")

register_layer(
    "softmin", ("data",), params(*_SOFTMAX), softmin, methods=("softmin",),
    doc="softmax of -x/T along axis.")

register_layer(
    "SoftmaxActivation", ("data",), params(("mode", "{'channel', 'instance'}", "instance")),
    softmax_activation,
    doc="Softmax over the last axis (instance) or axis 1 (channel).")

register_layer(
    "softmax_cross_entropy", ("data", "label"), params(), softmax_cross_entropy,
    doc="Sum over the batch of -log softmax(data)[label], shape (1,).")
