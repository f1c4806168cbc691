"""Elementwise unary operators: math, trigonometric, hyperbolic, rounding,
exp/log, activations (``relu``, ``sigmoid``, ``softsign``...).

As MXNet 1.9.1: the result has the input's dtype (an integer input is
computed in float64 and truncated back), float16 is computed in float32.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .._util import MXNetValueError
from ..ndarray import _provided
from .registry import OpDef, Param, register


def _float_src(xp: Any, a: Any) -> Any:
    """``a`` in the precision MXNet computes it (float32 for float16, float64 for ints)."""
    k = a.dtype.kind
    if k in "biu":
        return a.astype(np.float64)
    if a.dtype == np.float16:
        return a.astype(np.float32)
    return a


def _math(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def impl(xp: Any, data: Any) -> Any:
        return fn(xp, _float_src(xp, data))
    return impl


def _keep(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """An operator that computes in the input's own dtype (abs, sign, square...)."""
    def impl(xp: Any, data: Any) -> Any:
        return fn(xp, data)
    return impl


def _csr_unary(opdef: OpDef, inputs: list, params: dict, out: Any) -> Any:
    return _provided("csr_unary")(inputs[0], opdef.name, out)


def _vectorized(scalar_fn: Callable[[float], float], cupy_name: str) -> Callable[[Any, Any], Any]:
    ufunc = np.frompyfunc(scalar_fn, 1, 1)

    def fn(xp: Any, a: Any) -> Any:
        if xp is not np:  # cupy: cupyx.scipy.special
            import cupyx.scipy.special as special
            return getattr(special, cupy_name)(a)
        return ufunc(a).astype(a.dtype) if a.size else a.copy()
    return fn


def _erfinv_scalar(y: float) -> float:
    if y <= -1.0:
        return -math.inf if y == -1.0 else math.nan
    if y >= 1.0:
        return math.inf if y == 1.0 else math.nan
    # Giles' single-precision approximation, then two Newton steps on erf
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    x = p * y
    for _ in range(2):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def _gamma_scalar(x: float) -> float:
    try:
        return math.gamma(x)
    except (ValueError, OverflowError):
        return math.nan if x <= 0 and x == int(x) else math.inf


def _lgamma_scalar(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _round_half_away(xp: Any, a: Any) -> Any:
    return xp.where(a >= 0, xp.floor(a + 0.5), xp.ceil(a - 0.5)).astype(a.dtype)


def _rint(xp: Any, a: Any) -> Any:
    """MXNet's ``rint``: the nearer integer, the lower one on a tie (-2.5 -> -3)."""
    f, c = xp.floor(a), xp.ceil(a)
    return xp.where(a - f <= c - a, f, c)


def _sigmoid(xp: Any, a: Any) -> Any:
    return 1 / (1 + xp.exp(-a))


# name: (implementation, aliases, NDArray methods, csr kernel?)
_MATH = {
    "exp": (lambda xp, a: xp.exp(a)), "expm1": (lambda xp, a: xp.expm1(a)),
    "log": (lambda xp, a: xp.log(a)), "log10": (lambda xp, a: xp.log10(a)),
    "log2": (lambda xp, a: xp.log2(a)), "log1p": (lambda xp, a: xp.log1p(a)),
    "sin": (lambda xp, a: xp.sin(a)), "cos": (lambda xp, a: xp.cos(a)),
    "tan": (lambda xp, a: xp.tan(a)), "arcsin": (lambda xp, a: xp.arcsin(a)),
    "arccos": (lambda xp, a: xp.arccos(a)), "arctan": (lambda xp, a: xp.arctan(a)),
    "sinh": (lambda xp, a: xp.sinh(a)), "cosh": (lambda xp, a: xp.cosh(a)),
    "tanh": (lambda xp, a: xp.tanh(a)), "arcsinh": (lambda xp, a: xp.arcsinh(a)),
    "arccosh": (lambda xp, a: xp.arccosh(a)), "arctanh": (lambda xp, a: xp.arctanh(a)),
    # MXNet's constants are float32 ones, for float64 inputs too
    "degrees": (lambda xp, a: a * a.dtype.type(np.float32(180) / np.float32(np.pi))),
    "radians": (lambda xp, a: a * a.dtype.type(np.float32(np.pi / 180))),
    "sqrt": (lambda xp, a: xp.sqrt(a)), "rsqrt": (lambda xp, a: 1 / xp.sqrt(a)),
    "cbrt": (lambda xp, a: xp.cbrt(a)), "rcbrt": (lambda xp, a: 1 / xp.cbrt(a)),
    "reciprocal": (lambda xp, a: 1 / a), "sigmoid": _sigmoid,
    "softsign": (lambda xp, a: a / (1 + xp.abs(a))),
    "erf": _vectorized(math.erf, "erf"), "erfinv": _vectorized(_erfinv_scalar, "erfinv"),
    "gamma": _vectorized(_gamma_scalar, "gamma"), "gammaln": _vectorized(_lgamma_scalar, "gammaln"),
}
_KEEP = {
    "abs": (lambda xp, a: xp.abs(a)), "sign": (lambda xp, a: xp.sign(a)),
    "square": (lambda xp, a: xp.square(a)), "negative": (lambda xp, a: xp.negative(a)),
    "relu": (lambda xp, a: xp.maximum(a, 0)),
    "ceil": (lambda xp, a: xp.ceil(a) if a.dtype.kind == "f" else a.copy()),
    "floor": (lambda xp, a: xp.floor(a) if a.dtype.kind == "f" else a.copy()),
    "trunc": (lambda xp, a: xp.trunc(a) if a.dtype.kind == "f" else a.copy()),
    "fix": (lambda xp, a: xp.fix(a) if a.dtype.kind == "f" else a.copy()),
    "rint": (lambda xp, a: _rint(xp, a) if a.dtype.kind == "f" else a.copy()),
    "round": (lambda xp, a: _round_half_away(xp, a) if a.dtype.kind == "f" else a.copy()),
    "logical_not": (lambda xp, a: (a == 0).astype(a.dtype)),
}
_CSR = frozenset({"abs", "sign", "sqrt", "square", "negative"})
_NO_METHOD = frozenset({"negative", "logical_not", "softsign", "erf", "erfinv", "gamma",
                        "gammaln"})
_DIFF = {"erf": "computed with Python's math.erf on the CPU (slow on big arrays)",
         "erfinv": "an approximation refined by two Newton steps (float tolerance); on "
                   "integer inputs a NaN result is cast as numpy casts it (MXNet gives 0)",
         "gamma": "computed with Python's math.gamma on the CPU (slow on big arrays)",
         "gammaln": "computed with Python's math.lgamma on the CPU (slow on big arrays)"}

for _name, _fn in {**_MATH, **_KEEP}.items():
    register(OpDef(
        name=_name, inputs=("data",), params=(),
        impl=_math(_fn) if _name in _MATH else _keep(_fn),
        methods=() if _name in _NO_METHOD else (_name,),
        doc=f"Elementwise ``{_name}``, in the input's dtype.",
        csr=_csr_unary if _name in _CSR else None, differences=_DIFF.get(_name, ""),
        family="unary"))


def _identity(xp: Any, data: Any) -> Any:
    return data.copy()


register(OpDef(name="identity", inputs=("data",), params=(), impl=_identity,
               aliases=("_copy",), doc="A copy of ``data``.", family="unary"))
for _name, _aliases in (("BlockGrad", ("stop_gradient",)), ("make_loss", ())):
    register(OpDef(name=_name, inputs=("data",), params=(), impl=_identity, aliases=_aliases,
                   doc="Forward: a copy of ``data`` (gradients are out of scope).",
                   family="unary"))
register(OpDef(
    name="MakeLoss", inputs=("data",),
    params=(Param("grad_scale", "float", 1.0), Param("valid_thresh", "float", 0.0),
            Param("normalization", "{'batch', 'null', 'valid'}", "null")),
    impl=lambda xp, data, grad_scale, valid_thresh, normalization: data.copy(),
    doc="Forward: a copy of ``data`` (gradients are out of scope).", family="unary"))


def _hard_sigmoid(xp: Any, data: Any, alpha: float, beta: float) -> Any:
    a = _float_src(xp, data)
    return xp.clip(alpha * a + beta, 0, 1)


register(OpDef(name="hard_sigmoid", inputs=("data",),
               params=(Param("alpha", "float", 0.2), Param("beta", "float", 0.5)),
               impl=_hard_sigmoid, doc="``clip(alpha * data + beta, 0, 1)``.",
               family="unary"))


def _smooth_l1(xp: Any, data: Any, scalar: float) -> Any:
    a = _float_src(xp, data)
    s2 = scalar * scalar
    absa = xp.abs(a)
    return xp.where(absa < 1.0 / s2, 0.5 * s2 * a * a, absa - 0.5 / s2)


register(OpDef(name="smooth_l1", inputs=("data",), params=(Param("scalar", "float", 1.0),),
               impl=_smooth_l1, doc="The smooth L1 loss of ``data`` with ``sigma = scalar``.",
               family="unary"))


def _clip(xp: Any, data: Any, a_min: float, a_max: float) -> Any:
    if a_min > a_max:
        raise MXNetValueError(f"clip: a_min {a_min} is greater than a_max {a_max}")
    return xp.clip(data, a_min, a_max)


def _csr_clip(opdef: OpDef, inputs: list, params: dict, out: Any) -> Any:
    for k, v in params.items():
        opdef.param(k).convert(opdef.name, v)  # (checked; passed on as given)
    return _provided("csr_clip")(inputs[0], params["a_min"], params["a_max"], out)


register(OpDef(name="clip", inputs=("data",),
               params=(Param("a_min", "float"), Param("a_max", "float")),
               impl=_clip, methods=("clip",), csr=_csr_clip,
               doc="Values clipped into ``[a_min, a_max]``, in the input's dtype.",
               family="unary"))
