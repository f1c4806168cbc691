"""The densities of the random family (``random_pdf_*``, MXNet 1.9.1): the
probability density (or mass) of each sample under its element's
distribution, or its log with ``is_log``.

The parameters have one shape P; ``sample`` has shape P (one sample each) or
P + (n,) (n samples each); the result has the sample's shape and dtype.
Dirichlet's ``alpha`` is P + (k,) and its samples P + (n, k), the result
P + (n,). As MXNet: ``random_pdf_gamma``'s ``beta`` is a *rate* (the
samplers' is a scale), and no support is checked (a uniform sample outside
[low, high) has density 1/(high-low)).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .._util import MXNetValueError
from .registry import OpDef, Param, register

__all__: list = []

_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)


def _lgamma(xp: Any, a: Any) -> Any:
    if xp is not np:  # cupy
        import cupyx.scipy.special as special
        return special.gammaln(a)
    return _LGAMMA(a).astype(np.float64) if a.size else a.astype(np.float64)


def _log_uniform(xp, x, low, high):
    return -xp.log(high - low) + 0 * x


def _log_normal(xp, x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - xp.log(sigma) - 0.5 * math.log(2 * math.pi)


def _log_gamma(xp, x, alpha, beta):  # (beta: the rate)
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - _lgamma(xp, alpha)


def _log_exponential(xp, x, lam):
    return xp.log(lam) - lam * x


def _log_poisson(xp, x, lam):
    return x * xp.log(lam) - lam - _lgamma(xp, x + 1)


def _log_nb(xp, x, k, p):
    return (_lgamma(xp, x + k) - _lgamma(xp, x + 1) - _lgamma(xp, k)
            + k * xp.log(p) + x * xp.log1p(-p))


def _log_gnb(xp, x, mu, alpha):
    k = 1 / alpha
    return _log_nb(xp, x, k, 1 / (1 + alpha * mu))


# name: (parameter names, log-density(xp, sample, *params))
_PDFS: dict[str, tuple[tuple[str, ...], Callable]] = {
    "uniform": (("low", "high"), _log_uniform),
    "normal": (("mu", "sigma"), _log_normal),
    "gamma": (("alpha", "beta"), _log_gamma),
    "exponential": (("lam",), _log_exponential),
    "poisson": (("lam",), _log_poisson),
    "negative_binomial": (("k", "p"), _log_nb),
    "generalized_negative_binomial": (("mu", "alpha"), _log_gnb),
}


def _pdf_impl(kind: str, names: tuple, logpdf: Callable) -> Callable:
    def impl(xp: Any, sample: Any, *args: Any) -> Any:
        params, is_log = args[:-1], args[-1]
        pshape = tuple(params[0].shape)
        for n, p in zip(names, params):
            if tuple(p.shape) != pshape:
                raise MXNetValueError(f"random_pdf_{kind}: parameter {n} has shape "
                                      f"{tuple(p.shape)}, expected {pshape} as {names[0]}")
        extra = sample.ndim - len(pshape)
        if extra not in (0, 1) or tuple(sample.shape[:len(pshape)]) != pshape:
            raise MXNetValueError(f"random_pdf_{kind}: sample has shape {tuple(sample.shape)}, "
                                  f"expected {pshape} or {pshape} + (n,) for parameters of "
                                  f"shape {pshape}")
        ps = [p.astype(np.float64).reshape(pshape + (1,) * extra) for p in params]
        with np.errstate(all="ignore"):
            lp = logpdf(xp, sample.astype(np.float64), *ps)
            return (lp if is_log else xp.exp(lp)).astype(sample.dtype)
    impl.__name__ = f"random_pdf_{kind}"
    return impl


for _kind, (_names, _fn) in _PDFS.items():
    register(OpDef(
        name=f"random_pdf_{_kind}", inputs=("sample",) + _names, family="random_pdf",
        params=(Param("is_log", "boolean", False),), impl=_pdf_impl(_kind, _names, _fn),
        dtype="impl",
        doc=f"The {_kind.replace('_', ' ')} density (or mass) of each sample under its "
            f"element's parameters (its log with is_log)."))


def _pdf_dirichlet(xp: Any, sample: Any, alpha: Any, is_log: bool) -> Any:
    """Dirichlet density: alpha P + (k,), samples P + (n, k) or P + (k,), result P + (n,)."""
    pshape, k = tuple(alpha.shape[:-1]), alpha.shape[-1]
    extra = sample.ndim - alpha.ndim
    if extra not in (0, 1) or tuple(sample.shape[:len(pshape)]) != pshape \
            or sample.shape[-1] != k:
        raise MXNetValueError(f"random_pdf_dirichlet: sample has shape {tuple(sample.shape)}, "
                              f"expected {pshape + (k,)} or {pshape} + (n, {k}) for alpha of "
                              f"shape {tuple(alpha.shape)}")
    a = alpha.astype(np.float64).reshape(pshape + (1,) * extra + (k,))
    with np.errstate(all="ignore"):
        lp = ((a - 1) * xp.log(sample.astype(np.float64))).sum(axis=-1) \
            + _lgamma(xp, a.sum(axis=-1)) - _lgamma(xp, a).sum(axis=-1)
        return (lp if is_log else xp.exp(lp)).astype(sample.dtype)


register(OpDef(
    name="random_pdf_dirichlet", inputs=("sample", "alpha"), family="random_pdf",
    params=(Param("is_log", "boolean", False),), impl=_pdf_dirichlet, dtype="impl",
    doc="The Dirichlet density of each sample (a probability vector on the last axis) "
        "under its element's alpha (its log with is_log)."))
