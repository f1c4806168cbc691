"""Random draws for ``random_*``, ``sample_*`` and ``mx.nd.random.*`` (MXNet 1.9).

Plain functions over an array module ``xp`` (numpy or cupy): they draw from
``xp.random``, the generator ``mx.random.seed`` seeds, so a seed reproduces
the draws, but the numbers are numpy's / CuPy's, not MXNet's (its per-device
mt19937/Philox streams): the distributions, shapes, dtypes and parameter
checks are MXNet's, the values are not. Parameters are scalars (``random_*``)
or arrays (``sample_*``: one distribution per element, the output shaped
``params.shape + shape``). Checks and their messages are MXNet's.
"""
from __future__ import annotations

from typing import Any, Callable

from ._util import MXNetValueError

__all__ = ["CHECKS", "DRAWS", "draw", "multinomial", "shuffle"]


def _gamma(xp: Any, alpha: Any, beta: Any, size: tuple) -> Any:
    return xp.random.gamma(alpha, beta, size=size)


def _neg_binomial(xp: Any, k: Any, p: Any, size: tuple) -> Any:
    # MXNet's: a Poisson with a Gamma(k, (1-p)/p) rate; 0 where that is degenerate.
    k = xp.broadcast_to(xp.asarray(k, dtype="float64"), size)
    p = xp.broadcast_to(xp.asarray(p, dtype="float64"), size)
    ok = (k > 0) & (p > 0) & (p < 1)
    rate = xp.random.gamma(xp.where(ok, k, 1), xp.where(ok, (1 - p) / xp.where(ok, p, 1), 1),
                           size=size)
    return xp.where(ok, xp.random.poisson(rate), 0)


def _gen_neg_binomial(xp: Any, mu: Any, alpha: Any, size: tuple) -> Any:
    # MXNet's: Poisson(mu) when alpha is 0, else Poisson(Gamma(1/alpha, alpha*mu)).
    mu = xp.broadcast_to(xp.asarray(mu, dtype="float64"), size)
    alpha = xp.broadcast_to(xp.asarray(alpha, dtype="float64"), size)
    pos = alpha > 0
    safe = xp.where(pos, alpha, 1)
    rate = xp.where(pos, xp.random.gamma(1 / safe, safe * mu, size=size), mu)
    return xp.random.poisson(rate)


# name -> (parameter names, draw(xp, *params, size)).
DRAWS: dict[str, tuple[tuple[str, ...], Callable]] = {
    "uniform": (("low", "high"), lambda xp, a, b, size: xp.random.uniform(a, b, size=size)),
    "normal": (("loc", "scale"), lambda xp, a, b, size: xp.random.normal(a, b, size=size)),
    "gamma": (("alpha", "beta"), _gamma),
    "exponential": (("lam",), lambda xp, lam, size: xp.random.exponential(1 / lam, size=size)),
    "poisson": (("lam",), lambda xp, lam, size: xp.random.poisson(lam, size=size)),
    "negative_binomial": (("k", "p"), _neg_binomial),
    "generalized_negative_binomial": (("mu", "alpha"), _gen_neg_binomial),
    "randint": (("low", "high"), lambda xp, a, b, size: xp.random.randint(a, b, size=size)),
}


def _positive(name: str, what: str) -> Callable:
    return lambda v: None if v > 0 else f"{name} parameter in {what} has to be positive"


def _non_negative(name: str, what: str) -> Callable:
    return lambda v: None if v >= 0 else f"{name} parameter in {what} has to be non-negative"


# (distribution, parameter) -> check of one value: None, or MXNet's message.
CHECKS: dict[tuple[str, str], Callable[[float], Any]] = {
    ("normal", "scale"): _positive("scale", "gaussian"),
    ("gamma", "alpha"): _positive("alpha", "gamma distribution"),
    ("gamma", "beta"): _positive("beta", "gamma distribution"),
    ("exponential", "lam"): _positive("lambda", "exponential distribution"),
    ("poisson", "lam"): _non_negative("lambda", "poisson distribution"),
    ("generalized_negative_binomial", "mu"):
        _non_negative("mu", "generalized negative binomial distribution"),
    ("generalized_negative_binomial", "alpha"):
        _non_negative("alpha", "generalized negative binomial distribution"),
}


def _lowest(xp: Any, v: Any) -> Any:
    """The smallest value of a parameter (a scalar or an array), None if empty."""
    if hasattr(v, "shape"):
        return float(xp.min(v)) if v.size else None
    return v


def _check(xp: Any, kind: str, names: tuple, params: tuple) -> None:
    for name, v in zip(names, params):
        check = CHECKS.get((kind, name))
        worst = _lowest(xp, v)
        msg = check(worst) if check is not None and worst is not None else None
        if msg:
            raise MXNetValueError(f"{kind}: {msg}, got {name}={worst}")
    if kind == "uniform" and bool(xp.any(xp.asarray(params[1]) < xp.asarray(params[0]))):
        raise MXNetValueError(f"uniform: low must be less or equal to high in uniform "
                              f"distribution (low={params[0]}, high={params[1]})")
    if kind == "randint" and params[1] <= params[0]:
        raise MXNetValueError(f"randint: low must be less than high (low={params[0]}, "
                              f"high={params[1]})")


def draw(xp: Any, kind: str, params: tuple, shape: tuple, dtype: Any) -> Any:
    """Draws of distribution ``kind``: scalar ``params`` give ``shape``; array
    params (all of one shape P) give P + ``shape``, one distribution per element."""
    names, fn = DRAWS[kind]
    if len(params) != len(names):
        raise MXNetValueError(f"{kind} takes {len(names)} parameters {names}, got "
                              f"{len(params)}")
    arrays = [p for p in params if hasattr(p, "shape")]
    if arrays:
        pshape = tuple(arrays[0].shape)
        for name, p in zip(names, params):
            if tuple(p.shape) != pshape:
                raise MXNetValueError(f"sample_{kind}: parameter {name} has shape "
                                      f"{tuple(p.shape)}, expected {pshape} as the first")
        params = tuple(p.astype("float64").reshape(pshape + (1,) * len(shape))
                       for p in params)
        size = pshape + tuple(shape)
    else:
        size = tuple(shape)
    _check(xp, kind, names, params)
    return xp.asarray(fn(xp, *params, size=size)).astype(dtype)


def multinomial(xp: Any, data: Any, shape: tuple = (), get_prob: bool = False,
                dtype: Any = "int32") -> Any:
    """Category indices drawn from the probabilities on ``data``'s last axis:
    data.shape[:-1] + shape; ``get_prob`` adds the log-probability of each draw."""
    if data.ndim < 1 or data.shape[-1] < 1:
        raise MXNetValueError(f"multinomial: data must have a non-empty last axis, got shape "
                              f"{tuple(data.shape)}")
    k = data.shape[-1]
    lead = tuple(data.shape[:-1])
    n = 1
    for d in shape:
        n *= int(d)
    probs = data.astype("float64").reshape(-1, k)
    cdf = xp.cumsum(probs, axis=1)
    u = xp.random.uniform(0, 1, size=(probs.shape[0], n)) * cdf[:, -1:]
    idx = xp.empty((probs.shape[0], n), dtype="int64")
    for r in range(probs.shape[0]):  # (one searchsorted per distribution)
        idx[r] = xp.searchsorted(cdf[r], u[r], side="right")
    idx = xp.minimum(idx, k - 1)
    out_shape = lead + tuple(shape)
    samples = idx.reshape(out_shape).astype(dtype)
    if not get_prob:
        return samples
    logp = xp.log(xp.take_along_axis(probs, idx, axis=1)).reshape(out_shape)
    return samples, logp.astype(data.dtype)


def shuffle(xp: Any, data: Any) -> Any:
    """A copy of ``data`` with its first axis permuted at random."""
    if data.ndim == 0:
        return data.copy()
    return data[xp.random.permutation(data.shape[0])]
