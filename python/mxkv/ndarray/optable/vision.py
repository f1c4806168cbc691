"""Vision operators that are neither layers nor samplers: ``ROIPooling``
(max pooling over regions of interest) and ``Correlation`` (FlowNet's
correlation of two feature maps), forward as MXNet 1.9.1's CPU kernels.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._util import MXNetValueError
from .registry import OpDef, Param, register


def _round_half_away(v: float) -> int:
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def _roi_pooling(xp: Any, data: Any, rois: Any, pooled_size: tuple,
                 spatial_scale: float) -> Any:
    if data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5 or len(pooled_size) != 2:
        raise MXNetValueError(f"ROIPooling: needs data (N, C, H, W), rois (R, 5) and a 2-d "
                              f"pooled_size, got {tuple(data.shape)}, {tuple(rois.shape)}, "
                              f"{pooled_size}")
    n, c, height, width = data.shape
    ph_n, pw_n = pooled_size
    host = np.asarray(rois.get() if hasattr(rois, "get") else rois, dtype=np.float64)
    out = xp.zeros((rois.shape[0], c, ph_n, pw_n), dtype=data.dtype)
    scale = float(np.float32(spatial_scale))
    for r, (b, x1, y1, x2, y2) in enumerate(host):
        b = int(b)
        if b < 0 or b >= n:
            continue
        sw, sh = _round_half_away(x1 * scale), _round_half_away(y1 * scale)
        ew, eh = _round_half_away(x2 * scale), _round_half_away(y2 * scale)
        bin_h = np.float32(max(eh - sh + 1, 1)) / np.float32(ph_n)
        bin_w = np.float32(max(ew - sw + 1, 1)) / np.float32(pw_n)
        for ph in range(ph_n):
            hs = min(max(int(math.floor(ph * bin_h)) + sh, 0), height)
            he = min(max(int(math.ceil((ph + 1) * bin_h)) + sh, 0), height)
            for pw in range(pw_n):
                ws = min(max(int(math.floor(pw * bin_w)) + sw, 0), width)
                we = min(max(int(math.ceil((pw + 1) * bin_w)) + sw, 0), width)
                if he > hs and we > ws:
                    out[r, :, ph, pw] = data[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


register(OpDef(name="ROIPooling", inputs=("data", "rois"),
               params=(Param("pooled_size", "Shape(tuple)"), Param("spatial_scale", "float")),
               impl=_roi_pooling, same_dtype=True,
               doc="Max pooling of each region ``rois[i] = (batch, x1, y1, x2, y2)`` (scaled "
                   "by ``spatial_scale``) into ``pooled_size`` bins.", family="vision"))


def _correlation(xp: Any, data1: Any, data2: Any, kernel_size: int, max_displacement: int,
                 stride1: int, stride2: int, pad_size: int, is_multiply: bool) -> Any:
    if data1.ndim != 4 or data1.shape != data2.shape:
        raise MXNetValueError(f"Correlation: needs two (N, C, H, W) inputs of one shape, got "
                              f"{tuple(data1.shape)} and {tuple(data2.shape)}")
    if kernel_size % 2 == 0 or stride1 < 1 or stride2 < 1:
        raise MXNetValueError("Correlation: kernel_size must be odd, strides positive")
    n, c, h, w = data1.shape
    radius = max_displacement // stride2
    grid = 2 * radius + 1
    border = max_displacement + (kernel_size - 1) // 2
    ph, pw = h + 2 * pad_size, w + 2 * pad_size
    top_h = int(math.ceil((ph - 2 * border) / stride1))
    top_w = int(math.ceil((pw - 2 * border) / stride1))
    if top_h < 1 or top_w < 1:
        raise MXNetValueError(f"Correlation: the input {h}x{w} with pad_size {pad_size} is too "
                              f"small for max_displacement {max_displacement}")
    pad = ((0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size))
    a, b = xp.pad(data1, pad), xp.pad(data2, pad)
    k = kernel_size
    out = xp.zeros((n, grid * grid, top_h, top_w), dtype=data1.dtype)
    ys = np.arange(top_h) * stride1 + max_displacement
    xs = np.arange(top_w) * stride1 + max_displacement
    for tc in range(grid * grid):
        dx = (tc % grid - radius) * stride2
        dy = (tc // grid - radius) * stride2
        acc = xp.zeros((n, top_h, top_w), dtype=np.float64 if data1.dtype == np.float64
                       else np.float32)
        for i in range(k):
            for j in range(k):
                p1 = a[:, :, ys[:, None] + i, xs[None, :] + j]
                p2 = b[:, :, ys[:, None] + i + dy, xs[None, :] + j + dx]
                acc += (p1 * p2 if is_multiply else xp.abs(p1 - p2)).sum(axis=1)
        out[:, tc] = acc / (k * k * c)
    return out


register(OpDef(name="Correlation", inputs=("data1", "data2"),
               params=(Param("kernel_size", "int (non-negative)", 1),
                       Param("max_displacement", "int (non-negative)", 1),
                       Param("stride1", "int (non-negative)", 1),
                       Param("stride2", "int (non-negative)", 1),
                       Param("pad_size", "int (non-negative)", 0),
                       Param("is_multiply", "boolean", True)),
               impl=_correlation, same_dtype=True,
               doc="FlowNet's correlation of two feature maps: for each displacement, the "
                   "mean over a kernel window and the channels of their products (or "
                   "absolute differences).",
               differences="sums in a different order than MXNet's loops (float tolerance)",
               family="vision"))
