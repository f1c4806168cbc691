"""Arithmetic exactly as MXNet 1.9.1's CPU kernels do it, where numpy's own
would round differently: C's ``powf``, ``multi_sum_sq``'s sequential float32
sums of squares, and the Kahan-compensated sums of its reductions."""
from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import numpy as np

__all__ = ["kahan_mean_last_axis", "powf", "sum_sq"]


def _libm_powf() -> Any:
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = libm.powf
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    return fn


_POWF = _libm_powf()


def powf(base: Any, exp: Any) -> np.float32:
    """``base ** exp`` in float32 by the C library's ``powf``, as MXNet's kernels
    compute it (numpy's own float32 power rounds some results differently)."""
    if _POWF is None:
        return np.float32(float(np.float32(base)) ** float(exp))
    return np.float32(_POWF(float(base), float(exp)))


def sum_sq(a: Any) -> np.float32:
    """The sum of squares as MXNet's CPU ``multi_sum_sq`` computes it: each square
    in the array's dtype, added one after another into a float32."""
    flat = a.reshape(-1)
    if not flat.size:
        return np.float32(0)
    sq = flat * flat
    if not isinstance(sq, np.ndarray):  # (cupy: a parallel sum, not MXNet's order)
        return np.float32(float(sq.astype(np.float32).sum()))
    return np.add.accumulate(sq, dtype=np.float32)[-1]


def kahan_mean_last_axis(a: Any) -> Any:
    """``mean(a, axis=-1, keepdims=True)`` as MXNet's CPU reduction: a sequential
    Kahan-compensated sum along the axis in ``a``'s dtype, then divided by its
    length (vectorized over the other axes)."""
    xp = np if isinstance(a, np.ndarray) else __import__("cupy")
    n = a.shape[-1]
    total = xp.zeros(a.shape[:-1], a.dtype)
    residual = xp.zeros(a.shape[:-1], a.dtype)
    for j in range(n):
        y = a[..., j] - residual
        t = total + y
        residual = (t - total) - y
        total = t
    return (total / a.dtype.type(n))[..., None]
