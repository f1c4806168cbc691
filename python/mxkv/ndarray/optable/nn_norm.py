"""Normalization layers (MXNet 1.9's ``nd.*``), forward.

BatchNorm, LayerNorm, GroupNorm, InstanceNorm, L2Normalization and LRN as
plain functions over an array module ``xp`` (numpy or cupy) and its arrays,
registered as operators in the operator table. Statistics are computed in
float32 (float64 for float64 data) and the result cast back, as MXNet's CPU
kernels accumulate.

BatchNorm's ``training`` is MXNet's ``is_train``: an imperative ``nd.BatchNorm``
outside ``autograd.record(train_mode=True)`` normalizes with the moving
statistics, and that is what mxkv's frontend computes (no autograd). With
``training=True`` the kernel normalizes with the batch's statistics and, as
MXNet's imperative call does, leaves ``moving_mean``/``moving_var`` unchanged.
``output_mean_var`` returns (out, mean, inverse std), MXNet's second and third
outputs (the inverse of sqrt(var + eps), not the variance).
"""
from __future__ import annotations

from typing import Any

from .._util import MXNetValueError
from ._layer import params, register_layer

__all__ = ["batch_norm", "group_norm", "instance_norm", "l2_normalization", "layer_norm", "lrn"]


def _work(xp: Any, data: Any) -> Any:
    return data.astype(xp.float64 if data.dtype == xp.float64 else xp.float32)


def _axis(op: str, data: Any, axis: int) -> int:
    ax = int(axis)
    if not -data.ndim <= ax < data.ndim:
        raise MXNetValueError(f"{op}: axis {ax} is out of range for data of shape "
                              f"{tuple(data.shape)}")
    return ax % data.ndim


def _check_vec(op: str, name: str, v: Any, n: int) -> None:
    if v is None or tuple(v.shape) != (n,):
        raise MXNetValueError(f"{op}: {name} must have shape ({n},), got "
                              f"{None if v is None else tuple(v.shape)}")


def batch_norm(xp: Any, data: Any, gamma: Any, beta: Any, moving_mean: Any, moving_var: Any, *,
               eps: float = 1e-3, momentum: float = 0.9, fix_gamma: bool = True,
               use_global_stats: bool = False, output_mean_var: bool = False, axis: int = 1,
               training: bool = False) -> Any:
    """Normalize over every axis but ``axis``, then scale by gamma (1 when
    ``fix_gamma``) and shift by beta."""
    ax = _axis("BatchNorm", data, axis)
    c = data.shape[ax]
    for name, v in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean),
                    ("moving_var", moving_var)):
        _check_vec("BatchNorm", name, v, c)
    x = _work(xp, data)
    bshape = tuple(c if i == ax else 1 for i in range(data.ndim))
    red = tuple(i for i in range(data.ndim) if i != ax)
    if training and not use_global_stats:
        mean = xp.mean(x, axis=red)
        var = xp.mean(xp.square(x - mean.reshape(bshape)), axis=red)
    else:
        mean, var = moving_mean.astype(x.dtype), moving_var.astype(x.dtype)
    inv = 1 / xp.sqrt(var + eps)
    g = xp.ones_like(inv) if fix_gamma else gamma.astype(x.dtype)
    scale = (g * inv).reshape(bshape)
    res = ((x - mean.reshape(bshape)) * scale + beta.astype(x.dtype).reshape(bshape))
    res = res.astype(data.dtype)
    if output_mean_var:
        return res, mean.astype(moving_mean.dtype), inv.astype(moving_var.dtype)
    return res


def layer_norm(xp: Any, data: Any, gamma: Any, beta: Any, *, axis: int = -1,
               eps: float = 1e-5, output_mean_var: bool = False) -> Any:
    """Normalize along ``axis``; ``output_mean_var`` adds the mean and the std
    (sqrt(var + eps)), with ``axis`` kept as size 1."""
    ax = _axis("LayerNorm", data, axis)
    c = data.shape[ax]
    _check_vec("LayerNorm", "gamma", gamma, c)
    _check_vec("LayerNorm", "beta", beta, c)
    x = _work(xp, data)
    mean = xp.mean(x, axis=ax, keepdims=True)
    std = xp.sqrt(xp.mean(xp.square(x - mean), axis=ax, keepdims=True) + eps)
    bshape = tuple(c if i == ax else 1 for i in range(data.ndim))
    res = ((x - mean) / std * gamma.astype(x.dtype).reshape(bshape)
           + beta.astype(x.dtype).reshape(bshape)).astype(data.dtype)
    if output_mean_var:
        return res, mean.astype(data.dtype), std.astype(data.dtype)
    return res


def group_norm(xp: Any, data: Any, gamma: Any, beta: Any, *, num_groups: int = 1,
               eps: float = 1e-5, output_mean_var: bool = False) -> Any:
    """Normalize each of ``num_groups`` channel groups of (N, C, ...) data;
    gamma and beta are per group (shape (num_groups,)), as MXNet 1.9's."""
    if data.ndim < 2:
        raise MXNetValueError(f"GroupNorm: data must have at least 2 dimensions, got shape "
                              f"{tuple(data.shape)}")
    n, c = data.shape[:2]
    g = int(num_groups)
    if g <= 0 or c % g:
        raise MXNetValueError(f"GroupNorm: num_groups {g} must divide the channels {c}")
    _check_vec("GroupNorm", "gamma", gamma, g)
    _check_vec("GroupNorm", "beta", beta, g)
    x = _work(xp, data).reshape(n, g, -1)
    mean = xp.mean(x, axis=2, keepdims=True)
    std = xp.sqrt(xp.mean(xp.square(x - mean), axis=2, keepdims=True) + eps)
    y = (x - mean) / std * gamma.astype(x.dtype).reshape(1, g, 1) \
        + beta.astype(x.dtype).reshape(1, g, 1)
    res = y.reshape(data.shape).astype(data.dtype)
    if output_mean_var:
        return res, mean.reshape(n, g).astype(data.dtype), std.reshape(n, g).astype(data.dtype)
    return res


def instance_norm(xp: Any, data: Any, gamma: Any, beta: Any, *, eps: float = 1e-3) -> Any:
    """Normalize each (sample, channel) over its spatial axes; gamma, beta per channel."""
    if data.ndim < 3:
        raise MXNetValueError(f"InstanceNorm: data must have at least 3 dimensions "
                              f"(N, C, spatial...), got shape {tuple(data.shape)}")
    c = data.shape[1]
    _check_vec("InstanceNorm", "gamma", gamma, c)
    _check_vec("InstanceNorm", "beta", beta, c)
    x = _work(xp, data)
    red = tuple(range(2, data.ndim))
    mean = xp.mean(x, axis=red, keepdims=True)
    var = xp.mean(xp.square(x - mean), axis=red, keepdims=True)
    bshape = (1, c) + (1,) * (data.ndim - 2)
    res = (x - mean) / xp.sqrt(var + eps) * gamma.astype(x.dtype).reshape(bshape) \
        + beta.astype(x.dtype).reshape(bshape)
    return res.astype(data.dtype)


def l2_normalization(xp: Any, data: Any, *, eps: float = 1e-10, mode: str = "instance") -> Any:
    """data / sqrt(sum(data**2) + eps) over all but axis 0 (``instance``), over
    axis 1 (``channel``) or over the spatial axes (``spatial``)."""
    if mode == "instance":
        red = tuple(range(1, data.ndim))
    elif mode == "channel":
        if data.ndim < 2:
            raise MXNetValueError(f"L2Normalization: mode 'channel' needs at least 2 "
                                  f"dimensions, got shape {tuple(data.shape)}")
        red = (1,)
    elif mode == "spatial":
        if data.ndim < 3:
            raise MXNetValueError(f"L2Normalization: mode 'spatial' needs at least 3 "
                                  f"dimensions, got shape {tuple(data.shape)}")
        red = tuple(range(2, data.ndim))
    else:
        raise MXNetValueError(f"L2Normalization: mode {mode!r} is not one of "
                              f"('channel', 'instance', 'spatial')")
    x = _work(xp, data)
    norm = xp.sqrt(xp.sum(xp.square(x), axis=red, keepdims=True) + eps)
    return (x / norm).astype(data.dtype)


def lrn(xp: Any, data: Any, *, alpha: float = 1e-4, beta: float = 0.75, knorm: float = 2,
        nsize: int) -> Any:
    """Local response normalization across channels (axis 1) of (N, C, ...) data:
    x / (knorm + alpha/nsize * sum of x**2 over the nsize channels around)**beta."""
    if data.ndim < 3:
        raise MXNetValueError(f"LRN: data must have at least 3 dimensions, got shape "
                              f"{tuple(data.shape)}")
    n = int(nsize)
    if n <= 0 or n % 2 == 0:
        raise MXNetValueError(f"LRN only supports odd values for local_size, got nsize={n}")
    x = _work(xp, data)
    sq = xp.square(x)
    half = n // 2
    padded = xp.pad(sq, [(0, 0), (half, half)] + [(0, 0)] * (data.ndim - 2))
    c = data.shape[1]
    acc = xp.zeros_like(x)
    for i in range(n):
        acc += padded[:, i:i + c]
    res = x * (knorm + (alpha / n) * acc) ** (-beta)
    return res.astype(data.dtype)


register_layer(
    "BatchNorm", ("data", "gamma", "beta", "moving_mean", "moving_var"), params(
        ("eps", "double", 0.0010000000474974513), ("momentum", "float", 0.899999976),
        ("fix_gamma", "boolean", True), ("use_global_stats", "boolean", False),
        ("output_mean_var", "boolean", False), ("axis", "int", 1),
        ("cudnn_off", "boolean", False), ("min_calib_range", "float or None", None),
        ("max_calib_range", "float or None", None)),
    batch_norm,
    doc="Batch normalization over every axis but axis, with the moving statistics "
        "(an imperative call outside a training scope); output_mean_var adds the mean "
        "and the inverse std.",
    differences="always the inference form (mxkv has no autograd training scope): "
                "the moving statistics normalize, and are never updated, as MXNet's "
                "imperative call outside autograd.record; gamma's shape is checked "
                "(MXNet 1.9.1 accepts any).")

register_layer(
    "LayerNorm", ("data", "gamma", "beta"), params(
        ("axis", "int", -1), ("eps", "float", 9.99999975e-06),
        ("output_mean_var", "boolean", False)),
    layer_norm,
    doc="Normalization along axis; output_mean_var adds the mean and the std.")

register_layer(
    "GroupNorm", ("data", "gamma", "beta"), params(
        ("num_groups", "int", 1), ("eps", "float", 9.99999975e-06),
        ("output_mean_var", "boolean", False)),
    group_norm,
    doc="Normalization of each channel group; gamma and beta per group.")

register_layer(
    "InstanceNorm", ("data", "gamma", "beta"), params(("eps", "float", 0.00100000005)),
    instance_norm,
    doc="Normalization of each (sample, channel) over the spatial axes.",
    differences="float64 is computed (MXNet's CPU kernel takes float32 only).")

register_layer(
    "L2Normalization", ("data",), params(
        ("eps", "float", 1.00000001e-10),
        ("mode", "{'channel', 'instance', 'spatial'}", "instance")),
    l2_normalization,
    doc="data / sqrt(sum(data**2) + eps) per instance, channel or spatial position.")

register_layer(
    "LRN", ("data",), params(
        ("alpha", "float", 9.99999975e-05), ("beta", "float", 0.75), ("knorm", "float", 2.0),
        ("nsize", "int (non-negative)")),
    lrn,
    doc="Local response normalization across nsize neighbouring channels.",
    differences="float64 is computed (MXNet's CPU kernel takes float32 only).")
