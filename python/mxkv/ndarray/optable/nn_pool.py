"""Pooling (MXNet 1.9's ``nd.Pooling``), forward: max, average, sum or Lp over
the spatial axes of NCW/NCHW/NCDHW data, one strided slice per window tap.

A plain function over an array module ``xp`` (numpy or cupy), registered in
the operator table.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

from .._util import MXNetValueError
from ._layer import params, register_layer
from .nn_conv import spatial_params

__all__ = ["pooling", "pooling_v1"]

_POOL_TYPES = ("avg", "lp", "max", "sum")
_CONVENTIONS = ("full", "same", "valid")


def _pool_out(size: int, k: int, s: int, p: int, convention: str) -> int:
    if convention == "valid":
        return (size + 2 * p - k) // s + 1
    if convention == "full":
        return -(-(size + 2 * p - k) // s) + 1
    return -(-size // s)  # 'same'


def pooling_v1(xp: Any, data: Any, **kw: Any) -> Any:
    """MXNet's first Pooling: as :func:`pooling`, but max pooling pads with 0."""
    return pooling(xp, data, _max_pad_zero=True, **kw)


def pooling(xp: Any, data: Any, *, kernel: Sequence[int] = (), pool_type: str = "max",
            global_pool: bool = False, pooling_convention: str = "valid",
            stride: Sequence[int] = (), pad: Sequence[int] = (), p_value: Any = None,
            count_include_pad: Any = None, _max_pad_zero: bool = False) -> Any:
    """Pooling forward over the spatial axes of NCW/NCHW/NCDHW data."""
    if pool_type not in _POOL_TYPES:
        raise MXNetValueError(f"Pooling: pool_type {pool_type!r} is not one of {_POOL_TYPES}")
    if pooling_convention not in _CONVENTIONS:
        raise MXNetValueError(f"Pooling: pooling_convention {pooling_convention!r} is not one "
                              f"of {_CONVENTIONS}")
    if data.ndim not in (3, 4, 5):
        raise MXNetValueError(f"Pooling: data must be 3-D, 4-D or 5-D (N, C, spatial...), got "
                              f"shape {tuple(data.shape)}")
    nd = data.ndim - 2
    ins = tuple(data.shape[2:])
    if global_pool:
        k, s, p = ins, (1,) * nd, (0,) * nd
    else:
        if not kernel:
            raise MXNetValueError("Pooling: kernel is required unless global_pool is set")
        k, s, _, p = spatial_params("Pooling", data.shape, kernel, stride, (), pad)
        if any(k[i] > ins[i] + 2 * p[i] for i in range(nd)):
            raise MXNetValueError(f"Pooling: kernel size {k} exceeds the padded input "
                                  f"{tuple(ins[i] + 2 * p[i] for i in range(nd))}")
    if pool_type == "lp" and p_value is None:
        raise MXNetValueError("Pooling: pool_type 'lp' needs p_value")
    if pooling_convention == "same" and not global_pool and any(p):
        raise MXNetValueError(f"Pooling: pooling_convention 'same' takes no pad, got {p}")
    conv = "valid" if global_pool else pooling_convention
    out = tuple(_pool_out(ins[i], k[i], s[i], p[i], conv) for i in range(nd))
    # Right padding so every window lies inside the buffer ('full'/'same' overhang).
    extra = tuple(max(0, (out[i] - 1) * s[i] + k[i] - (ins[i] + 2 * p[i])) for i in range(nd))
    fill = -xp.inf if pool_type == "max" and not _max_pad_zero else 0
    if fill and data.dtype.kind != "f":
        fill = xp.iinfo(data.dtype).min
    x = data
    if pool_type == "lp":
        pv = int(p_value)
        x = x ** pv if pv != 1 else x
    x = xp.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i] + extra[i]) for i in range(nd)],
               mode="constant", constant_values=fill)
    acc = None
    for idx in itertools.product(*map(range, k)):
        sl = tuple(slice(i, i + ss * (o - 1) + 1, ss) for i, ss, o in zip(idx, s, out))
        win = x[(slice(None), slice(None)) + sl]
        if acc is None:
            acc = win.copy()
        elif pool_type == "max":
            xp.maximum(acc, win, out=acc)
        else:
            acc += win
    if pool_type == "avg":
        include = True if count_include_pad is None else bool(count_include_pad)
        acc = acc / _window_counts(xp, ins, k, s, p, out, include).astype(acc.dtype)
        acc = acc.astype(data.dtype)
    elif pool_type == "lp":
        pv = int(p_value)
        if pv != 1:  # (MXNet's root keeps the sign: an odd p of a negative sum)
            acc = xp.sign(acc) * xp.abs(acc) ** (1.0 / pv)
        acc = acc.astype(data.dtype)
    return xp.ascontiguousarray(acc)


def _window_counts(xp: Any, ins: tuple, k: tuple, s: tuple, p: tuple, out: tuple,
                   include_pad: bool) -> Any:
    """Each output position's divisor for average pooling, as MXNet's CPU kernel:
    the window clipped to the padded input, or to the input without padding."""
    counts = None
    for i in range(len(k)):
        start = xp.arange(out[i]) * s[i] - p[i]
        end = xp.minimum(start + k[i], ins[i] + p[i])
        if not include_pad:
            start = xp.maximum(start, 0)
            end = xp.minimum(end, ins[i])
        c = xp.maximum(end - start, 1) if not include_pad else (end - start)
        c = c.reshape((-1,) + (1,) * (len(k) - 1 - i))
        counts = c if counts is None else counts * c
    return counts


register_layer(
    "Pooling", ("data",), params(
        ("kernel", "Shape(tuple)", ()),
        ("pool_type", "{'avg', 'lp', 'max', 'sum'}", "max"),
        ("global_pool", "boolean", False),
        ("cudnn_off", "boolean", False),
        ("pooling_convention", "{'full', 'same', 'valid'}", "valid"),
        ("stride", "Shape(tuple)", ()),
        ("pad", "Shape(tuple)", ()),
        ("p_value", "int or None", None),
        ("count_include_pad", "boolean or None", None),
        ("layout", "{None, 'NCDHW', 'NCHW', 'NCW', 'NDHWC', 'NHWC', 'NWC'}", None)),
    pooling,
    doc="Max, average, sum or Lp pooling over the spatial axes (1-D, 2-D, 3-D).",
    differences="pooling_convention 'same' computes ceil(size/stride) outputs for any "
                "rank (MXNet 1.9.1 fails on it); integer data is pooled (MXNet refuses).")

register_layer(
    "Pooling_v1", ("data",), params(
        ("kernel", "Shape(tuple)", ()),
        ("pool_type", "{'avg', 'max', 'sum'}", "max"),
        ("global_pool", "boolean", False),
        ("pooling_convention", "{'full', 'valid'}", "valid"),
        ("stride", "Shape(tuple)", ()),
        ("pad", "Shape(tuple)", ())),
    pooling_v1,
    doc="MXNet's deprecated first Pooling: max, average or sum pooling as Pooling.",
    differences="as MXNet's, max pooling pads with 0 (Pooling pads with -inf).")
