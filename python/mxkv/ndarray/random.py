"""Random arrays (``mx.random`` / ``mx.nd.random``), and the operators behind
them (``mx.nd.random_*`` with scalar parameters, ``mx.nd.sample_*`` with one
distribution per element of array parameters).

CPU contexts draw from ``numpy.random`` and GPUs from ``cupy.random``, so
``mx.random.seed(n)`` also fixes what the optimizers that add noise (SGLD)
and Dropout draw. The streams are numpy's and CuPy's, not MXNet's: the same
seed gives other numbers than MXNet does; the distributions, output shapes,
dtypes and parameter checks are MXNet 1.9.1's (kernels in ``sample_ops.py``).
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
from .sample_ops import draw as _kernel_draw
from .sample_ops import multinomial as _multinomial
from .sample_ops import shuffle as _shuffle

_FLOATS = ("float16", "float32", "float64")
_INTS = ("int32", "int64")

__all__ = ["exponential", "gamma", "generalized_negative_binomial", "multinomial",
           "negative_binomial", "normal", "poisson", "randint", "randn", "seed", "shuffle",
           "uniform"]


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


def _out_dtype(kind: str, dtype: Any) -> np.dtype:
    """MXNet's dtype rule: floats for the distributions (float32 when None),
    int32 or int64 for randint (int32 when None)."""
    allowed = _INTS if kind == "randint" else _FLOATS
    if dtype is None or (isinstance(dtype, str) and dtype == "None"):
        return np.dtype(allowed[0] if kind == "randint" else "float32")
    dt = normalize_dtype(dtype)
    if dt.name not in allowed:
        raise MXNetTypeError(f"random.{kind}: Invalid Input: '{dt.name}', valid values are: "
                             f"{{'None', {', '.join(repr(a) for a in allowed)}}}")
    return dt


def _finish(arr: Any, ctx: Context, out: Optional[NDArray]) -> NDArray:
    res = NDArray(arr, ctx)
    if out is not None:
        out[:] = res
        return out
    return res


def random_draw(kind: str, params: tuple, shape: Any = None, ctx: Any = None,
                dtype: Any = None, out: Optional[NDArray] = None) -> NDArray:
    """``mx.nd.random_<kind>``: scalar parameters, ``shape`` samples on ``ctx``."""
    if out is not None:  # (drawn in the kind's dtype, then cast into out's)
        shape, ctx = out.shape, out.context
    shape = normalize_shape(() if shape is None else shape)
    dt = _out_dtype(kind, dtype)
    ctx = _ctx_arg(ctx)
    xp = xp_for(ctx)  # numpy for every CPU context and simulated GPUs, else cupy
    with device_scope(ctx):
        arr = _kernel_draw(xp, kind, tuple(params), shape, dt)
    return _finish(arr, ctx, out)


def sample_draw(kind: str, params: tuple, shape: Any = None, dtype: Any = None,
                out: Optional[NDArray] = None) -> NDArray:
    """``mx.nd.sample_<kind>``: array parameters of one shape P, P + ``shape``
    samples, one distribution per element, on the parameters' context."""
    for p in params:
        if not isinstance(p, NDArray):
            raise MXNetTypeError(f"sample_{kind}: parameters must be NDArrays, got "
                                 f"{type(p).__name__}")
    ctx = params[0].context
    shape = normalize_shape(() if shape is None else shape)
    dt = _out_dtype(kind, dtype)
    xp = xp_for(ctx)
    with device_scope(ctx):
        arr = _kernel_draw(xp, kind, tuple(p._array for p in params), shape, dt)
    if out is not None and tuple(out.shape) != tuple(arr.shape):
        raise MXNetValueError(f"sample_{kind}: out has shape {out.shape}, the draw has shape "
                              f"{tuple(arr.shape)}")
    return _finish(arr, ctx, out)


def _helper(kind: str, params: list, shape: Any, dtype: Any, ctx: Any,
            out: Optional[NDArray]) -> NDArray:
    """MXNet's ``_random_helper``: NDArray parameters go to ``sample_<kind>``,
    numbers to ``random_<kind>`` (one sample when neither shape nor out is given)."""
    first = params[0]
    if isinstance(first, NDArray):
        for p in params[1:]:
            if not isinstance(p, NDArray):
                raise MXNetValueError(f"Distribution parameters must all have the same type, "
                                      f"but got both {type(first)} and {type(p)}.")
        return sample_draw(kind, tuple(params), shape, dtype, out)
    if isinstance(first, numeric_types):
        for p in params[1:]:
            if not isinstance(p, numeric_types):
                raise MXNetValueError(f"Distribution parameters must all have the same type, "
                                      f"but got both {type(first)} and {type(p)}.")
        if shape is None and out is None:
            shape = 1
        return random_draw(kind, tuple(params), shape, ctx, dtype, out)
    raise MXNetValueError(f"Distribution parameters must be either NDArray or numbers, "
                          f"but got {type(first)}.")


def uniform(low: Any = 0, high: Any = 1, shape: Any = None, dtype: Any = None,
            ctx: Optional[Context] = None, out: Optional[NDArray] = None,
            **kwargs: Any) -> NDArray:
    """Samples from U[low, high) (float32 by default)."""
    return _helper("uniform", [low, high], shape, dtype, ctx, out)


def normal(loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None,
           ctx: Optional[Context] = None, out: Optional[NDArray] = None,
           **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale**2) (float32 by default)."""
    return _helper("normal", [loc, scale], shape, dtype, ctx, out)


def randn(*shape: int, loc: Any = 0, scale: Any = 1, dtype: Any = None,
          ctx: Optional[Context] = None, out: Optional[NDArray] = None,
          **kwargs: Any) -> NDArray:
    """Samples from N(loc, scale**2) of the given shape (``randn(2, 3)``)."""
    return _helper("normal", [loc, scale], shape, dtype, ctx, out)


def gamma(alpha: Any = 1, beta: Any = 1, shape: Any = None, dtype: Any = None,
          ctx: Optional[Context] = None, out: Optional[NDArray] = None,
          **kwargs: Any) -> NDArray:
    """Samples from a gamma distribution of shape ``alpha`` and scale ``beta``."""
    return _helper("gamma", [alpha, beta], shape, dtype, ctx, out)


def exponential(scale: Any = 1, shape: Any = None, dtype: Any = None,
                ctx: Optional[Context] = None, out: Optional[NDArray] = None,
                **kwargs: Any) -> NDArray:
    """Samples from an exponential distribution of mean ``scale`` (rate 1/scale)."""
    if isinstance(scale, NDArray):
        lam = NDArray(1.0 / scale._array, scale.context)
    elif isinstance(scale, numeric_types):
        if scale == 0:
            raise MXNetValueError("exponential: scale must not be 0")
        lam = 1.0 / scale
    else:
        lam = scale
    return _helper("exponential", [lam], shape, dtype, ctx, out)


def poisson(lam: Any = 1, shape: Any = None, dtype: Any = None,
            ctx: Optional[Context] = None, out: Optional[NDArray] = None,
            **kwargs: Any) -> NDArray:
    """Samples from a Poisson distribution of rate ``lam``, as floats."""
    return _helper("poisson", [lam], shape, dtype, ctx, out)


def negative_binomial(k: Any = 1, p: Any = 1, shape: Any = None, dtype: Any = None,
                      ctx: Optional[Context] = None, out: Optional[NDArray] = None,
                      **kwargs: Any) -> NDArray:
    """Failures before the ``k``-th success of trials with success probability ``p``."""
    return _helper("negative_binomial", [k, p], shape, dtype, ctx, out)


def generalized_negative_binomial(mu: Any = 1, alpha: Any = 1, shape: Any = None,
                                  dtype: Any = None, ctx: Optional[Context] = None,
                                  out: Optional[NDArray] = None, **kwargs: Any) -> NDArray:
    """Samples of mean ``mu`` and dispersion ``alpha`` (variance mu + alpha * mu**2)."""
    return _helper("generalized_negative_binomial", [mu, alpha], shape, dtype, ctx, out)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None,
            ctx: Optional[Context] = None, out: Optional[NDArray] = None,
            **kwargs: Any) -> NDArray:
    """Integers drawn uniformly from [low, high) (int32 by default)."""
    if not isinstance(low, numeric_types) or not isinstance(high, numeric_types):
        raise MXNetValueError(f"randint: low and high must be numbers, got {type(low)} and "
                              f"{type(high)}")
    if shape is None and out is None:
        shape = 1
    return random_draw("randint", (low, high), shape, ctx, dtype, out)


def multinomial(data: NDArray, shape: Any = None, get_prob: bool = False,
                out: Optional[NDArray] = None, dtype: Any = "int32", **kwargs: Any) -> Any:
    """Category indices drawn from the probabilities on ``data``'s last axis:
    shape data.shape[:-1] + shape; ``get_prob`` also returns each draw's log-probability."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"multinomial: data must be an NDArray, got {type(data).__name__}")
    dt = normalize_dtype(dtype)
    if dt.name not in ("float16", "float32", "float64", "int32", "uint8"):
        raise MXNetTypeError(f"multinomial: Invalid Input: '{dt.name}', valid values are: "
                             f"{{'float16', 'float32', 'float64', 'int32', 'uint8'}}")
    shape = normalize_shape(() if shape is None else shape)
    xp = data._xp()
    with device_scope(data.context):
        res = _multinomial(xp, data._array, shape, get_prob, dt)
    if get_prob:
        return [_finish(res[0], data.context, out), NDArray(res[1], data.context)]
    return _finish(res, data.context, out)


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """A copy of ``data`` with its first axis in random order."""
    if not isinstance(data, NDArray):
        raise MXNetTypeError(f"shuffle: data must be an NDArray, got {type(data).__name__}")
    with device_scope(data.context):
        return _finish(_shuffle(data._xp(), data._array), data.context, kwargs.get("out"))
