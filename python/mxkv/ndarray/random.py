"""Random arrays (``mx.random`` / ``mx.nd.random``): seed, uniform, normal,
randn, randint, drawn from the array module's global generator.

CPU contexts draw from ``numpy.random`` and GPUs from ``cupy.random``, so
``mx.random.seed(n)`` also fixes what the optimizers that add noise (SGLD)
draw. The streams are numpy's and CuPy's, not MXNet's: the same seed gives
other numbers than MXNet does.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

import numpy as np

from ..base import numeric_types
from ..context import Context, cuda_device_count, cupy_or_none, gpu, xp_for
from ._util import (
    MXNetTypeError,
    MXNetValueError,
    device_scope,
    normalize_dtype,
    normalize_shape,
)
from .ndarray import NDArray, _ctx_arg

__all__ = ["gamma", "normal", "randint", "randn", "seed", "uniform"]


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Seed the generators the draws on ``ctx`` come from.

    ``ctx='all'`` seeds numpy's (every CPU context and simulated GPU) and, when
    CuPy is loaded, CuPy's on each CUDA device it sees: none when there is no
    GPU or no CUDA driver (CuPy then imports but fails every call), so a host
    without a GPU is seeded as if CuPy were absent. A CPU context or simulated
    GPU seeds numpy's, a CUDA-backed ``gpu(i)`` that device's CuPy generator
    (nothing where CuPy sees no GPU, as MXNet built without CUDA; an error
    naming the context for a device id beyond those it sees).
    """
    if not isinstance(seed_state, (int, np.integer)) or isinstance(seed_state, bool):
        raise MXNetValueError(f"seed_state must be an int, got {type(seed_state).__name__}")
    value = int(seed_state) % (2 ** 32)
    if isinstance(ctx, str) and ctx == "all":
        np.random.seed(value)
        if "cupy" in sys.modules:  # (CuPy is imported once a GPU context is used)
            for device in range(cuda_device_count()):  # 0 without a driver
                _seed_cupy(gpu(device), value)
        return
    ctx = _ctx_arg(ctx)
    if not ctx.uses_cupy:
        np.random.seed(value)
    elif cupy_or_none() is not None:  # (as MXNet built without CUDA: no GPU, nothing to seed)
        _seed_cupy(ctx, value)


def _seed_cupy(ctx: Context, value: int) -> None:
    with device_scope(ctx):  # (CuPy's generators are per device)
        xp_for(ctx).random.seed(value)


def _draw(kind: str, args: tuple, shape: Any, dtype: Any, ctx: Optional[Context],
          out: Optional[NDArray]) -> NDArray:
    if out is not None:
        shape, dtype, ctx = out.shape, out.dtype, out.context
    for a in args:
        if not isinstance(a, (numeric_types, NDArray)):
            raise MXNetValueError(f"random.{kind}: distribution parameters must be either "
                                  f"NDArray or numbers, but got {type(a)}")
    shape = normalize_shape(() if shape is None else shape)
    dt = normalize_dtype(dtype)
    if dt.kind != "f" and kind != "randint":
        raise MXNetTypeError(f"random.{kind} draws floats, not {dt.name}")
    ctx = _ctx_arg(ctx)
    xp = xp_for(ctx)  # numpy for every CPU context and simulated GPUs, else cupy
    with device_scope(ctx):
        arr = xp.asarray(getattr(xp.random, kind)(*args, size=shape)).astype(dt)
    res = NDArray(arr, ctx)
    if out is not None:
        out[:] = res
        return out
    return res


def uniform(low: float = 0, high: float = 1, shape: Any = None, dtype: Any = None,
            ctx: Optional[Context] = None, out: Optional[NDArray] = None,
            **kwargs: Any) -> NDArray:
    """Samples from U[low, high) (float32 by default)."""
    return _draw("uniform", (low, high), shape, dtype, ctx, out)


def normal(loc: float = 0, scale: float = 1, shape: Any = None, dtype: Any = None,
           ctx: Optional[Context] = None, out: Optional[NDArray] = None,
           **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale**2) (float32 by default)."""
    return _draw("normal", (loc, scale), shape, dtype, ctx, out)


def gamma(alpha: float = 1, beta: float = 1, shape: Any = None, dtype: Any = None,
          ctx: Optional[Context] = None, out: Optional[NDArray] = None,
          **kwargs: Any) -> NDArray:
    """Samples from a gamma distribution of shape ``alpha`` and scale ``beta``."""
    return _draw("gamma", (alpha, beta), shape, dtype, ctx, out)


def randn(*shape: int, loc: float = 0, scale: float = 1, dtype: Any = None,
          ctx: Optional[Context] = None, **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale**2) of the given shape (``randn(2, 3)``)."""
    return _draw("normal", (loc, scale), shape, dtype, ctx, None)


def randint(low: int, high: int, shape: Any = None, dtype: Any = "int32",
            ctx: Optional[Context] = None, out: Optional[NDArray] = None,
            **kwargs: Any) -> NDArray:
    """Integers drawn uniformly from [low, high) (int32 by default)."""
    if high <= low:
        raise MXNetValueError(f"randint: high ({high}) must be greater than low ({low})")
    return _draw("randint", (low, high), shape, dtype, ctx, out)

