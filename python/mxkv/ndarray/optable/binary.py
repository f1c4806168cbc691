"""Binary operators: ``elemwise_*`` (one shape), ``broadcast_*`` (numpy
broadcasting), comparisons and logical operators, and MXNet's Python
wrappers ``mx.nd.add``, ``maximum``, ``equal``... that take arrays or scalars.

As MXNet 1.9.1: both inputs share a dtype, the result has it (comparisons
give 0/1 in that dtype), integer ``/`` truncates toward zero, ``x % 0`` is
0, integer ``**`` is computed in float64 and truncated.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import numpy as np

from .._util import MXNetTypeError, MXNetValueError, is_scalar
from ..ndarray import NDArray
from .frontend import finish, functions
from .registry import OpDef, get, register


def _div(xp: Any, a: Any, b: Any) -> Any:
    if a.dtype.kind in "biu":
        q = xp.true_divide(a, b)
        xp.trunc(q, out=q)
        return q
    return xp.true_divide(a, b)


def _mod(xp: Any, a: Any, b: Any) -> Any:
    return xp.where(xp.asarray(b) == 0, xp.zeros((), a.dtype), xp.mod(a, b))


def _power(xp: Any, a: Any, b: Any) -> Any:
    if a.dtype.kind in "biu":
        return xp.power(a.astype(np.float64), xp.asarray(b).astype(np.float64))
    return xp.power(a, b)


def _hypot(xp: Any, a: Any, b: Any) -> Any:
    if a.dtype.kind in "biu":
        return xp.hypot(a.astype(np.float64), b.astype(np.float64))
    return xp.hypot(a, b)


_KERNELS: dict = {
    "add": lambda xp, a, b: xp.add(a, b),
    "sub": lambda xp, a, b: xp.subtract(a, b),
    "mul": lambda xp, a, b: xp.multiply(a, b),
    "div": _div, "mod": _mod, "power": _power, "hypot": _hypot,
    "maximum": lambda xp, a, b: xp.maximum(a, b),
    "minimum": lambda xp, a, b: xp.minimum(a, b),
    "equal": lambda xp, a, b: xp.equal(a, b),
    "not_equal": lambda xp, a, b: xp.not_equal(a, b),
    "greater": lambda xp, a, b: xp.greater(a, b),
    "greater_equal": lambda xp, a, b: xp.greater_equal(a, b),
    "lesser": lambda xp, a, b: xp.less(a, b),
    "lesser_equal": lambda xp, a, b: xp.less_equal(a, b),
    "logical_and": lambda xp, a, b: xp.logical_and(a, b),
    "logical_or": lambda xp, a, b: xp.logical_or(a, b),
    "logical_xor": lambda xp, a, b: xp.logical_xor(a, b),
}


def _same_shape(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def impl(xp: Any, lhs: Any, rhs: Any) -> Any:
        if lhs.shape != rhs.shape:
            raise MXNetValueError(f"{name}: shapes {tuple(lhs.shape)} and {tuple(rhs.shape)} "
                                  "differ (elemwise operators do not broadcast; use "
                                  f"broadcast_{name.split('_', 1)[1]})")
        return fn(xp, lhs, rhs)
    return impl


def _broadcast(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def impl(xp: Any, lhs: Any, rhs: Any) -> Any:
        try:
            return fn(xp, lhs, rhs)
        except ValueError:
            raise MXNetValueError(f"{name}: shapes {tuple(lhs.shape)} and {tuple(rhs.shape)} "
                                  "cannot be broadcast together") from None
    return impl


_CSR_OPERATOR = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}


def _csr_elemwise(opdef: OpDef, inputs: list, params: dict, out: Any) -> Any:
    """``elemwise_*`` with a csr operand: the NDArray operator's csr rules."""
    lhs, rhs = inputs
    if not isinstance(lhs, NDArray) or not isinstance(rhs, NDArray):
        raise MXNetTypeError(f"{opdef.name}: inputs must be NDArrays")
    if lhs.shape != rhs.shape:
        raise MXNetValueError(f"{opdef.name}: shapes {lhs.shape} and {rhs.shape} differ")
    res = getattr(lhs, _CSR_OPERATOR[opdef.name.split("_", 1)[1]])(rhs)
    if out is None:
        return res
    out[:] = res
    return out


for _k, _aliases in (("add", ("_plus", "_add", "_grad_add")), ("sub", ("_minus", "_sub")),
                     ("mul", ("_mul",)), ("div", ("_div",))):
    register(OpDef(name=f"elemwise_{_k}", inputs=("lhs", "rhs"), params=(),
                   impl=_same_shape(_KERNELS[_k], f"elemwise_{_k}"), aliases=_aliases,
                   csr=_csr_elemwise,
                   same_dtype=True, doc=f"``lhs {_k} rhs`` for arrays of one shape.",
                   family="binary"))

_BROADCAST: Dict[str, Tuple[str, ...]] = {
    "add": ("broadcast_plus",), "sub": ("broadcast_minus",), "mul": (), "div": (),
    "mod": (), "power": (), "maximum": (), "minimum": (), "hypot": (),
    "equal": (), "not_equal": (), "greater": (), "greater_equal": (), "lesser": (),
    "lesser_equal": (), "logical_and": (), "logical_or": (), "logical_xor": (),
}
for _k, _bc_aliases in _BROADCAST.items():
    register(OpDef(name=f"broadcast_{_k}", inputs=("lhs", "rhs"), params=(),
                   impl=_broadcast(_KERNELS[_k], f"broadcast_{_k}"), aliases=_bc_aliases,
                   same_dtype=True,
                   doc=f"``{_k}`` of ``lhs`` and ``rhs`` with numpy broadcasting, in their "
                       "dtype" + (" (0 or 1)" if _k in ("equal", "not_equal", "greater",
                                                      "greater_equal", "lesser",
                                                      "lesser_equal") or
                                  _k.startswith("logical") else "") + ".",
                   family="binary"))

# The hidden elementwise operators MXNet's NDArray arithmetic calls (same shape).
for _k in ("mod", "power", "maximum", "minimum", "hypot", "equal", "not_equal", "greater",
           "greater_equal", "lesser", "lesser_equal", "logical_and", "logical_or",
           "logical_xor"):
    register(OpDef(name=f"_{_k}", inputs=("lhs", "rhs"), params=(),
                   impl=_same_shape(_KERNELS[_k], f"_{_k}"), same_dtype=True,
                   doc=f"``{_k}`` of two arrays of one shape.", namespace="internal",
                   family="binary"))


# ---------------------------------------------------------------- MXNet's Python wrappers
_SCALAR_PY: Dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "mod": lambda a, b: a % b, "power": lambda a, b: a ** b,
    "maximum": max, "minimum": min,
    "equal": lambda a, b: 1 if a == b else 0, "not_equal": lambda a, b: 1 if a != b else 0,
    "greater": lambda a, b: 1 if a > b else 0, "greater_equal": lambda a, b: 1 if a >= b else 0,
    "lesser": lambda a, b: 1 if a < b else 0, "lesser_equal": lambda a, b: 1 if a <= b else 0,
    "logical_and": lambda a, b: 1 if a and b else 0, "logical_or": lambda a, b: 1 if a or b else 0,
    "logical_xor": lambda a, b: 1 if bool(a) != bool(b) else 0,
}
_REVERSED = {"sub": "sub", "div": "div", "mod": "mod", "power": "power",
             "greater": "lesser", "greater_equal": "lesser_equal", "lesser": "greater",
             "lesser_equal": "greater_equal"}


def _scalar_operand(a: NDArray, s: Any) -> Any:
    dt = a._array.dtype
    return a._xp().asarray(int(s) if dt.kind in "biu" else s, dtype=dt)


def _apply(key: str, pyname: str, lhs: Any, rhs: Any, out: Any) -> Any:
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return functions()[f"broadcast_{key}"](lhs, rhs, out=out)
    if not isinstance(lhs, NDArray) and not isinstance(rhs, NDArray):
        if is_scalar(lhs) and is_scalar(rhs):
            return _SCALAR_PY[key](lhs, rhs)
        raise MXNetTypeError(f"{pyname}: type {type(lhs).__name__} and "
                             f"{type(rhs).__name__} not supported")
    arr, s, reverse = (lhs, rhs, False) if isinstance(lhs, NDArray) else (rhs, lhs, True)
    if not is_scalar(s):
        raise MXNetTypeError(f"{pyname}: type {type(s).__name__} not supported")
    if arr.stype != "default":
        arr = arr.tostype("default")
    a, b = arr._array, _scalar_operand(arr, s)
    x, y = (b, a) if reverse else (a, b)
    with np.errstate(all="ignore"):
        res = _KERNELS[key](arr._xp(), x, y)
    return finish(get(f"broadcast_{key}"), res, a, arr._ctx, out)


def _wrapper(key: str, pyname: str) -> Callable[..., Any]:
    fn: Callable[..., Any]
    if pyname == "power":
        def fn_power(base: Any, exp: Any, out: Any = None) -> Any:
            return _apply(key, pyname, base, exp, out)
        fn = fn_power
    else:
        def fn_binary(lhs: Any, rhs: Any, out: Any = None) -> Any:
            return _apply(key, pyname, lhs, rhs, out)
        fn = fn_binary
    fn.__name__ = fn.__qualname__ = pyname
    fn.__doc__ = (f"MXNet's ``mx.nd.{pyname}``: ``broadcast_{key}`` of two arrays, the scalar "
                  "operator of an array and a scalar, the Python value of two scalars. "
                  "``out=`` (an mxkv extension) receives an array result.")
    return fn


for _py, _k in (("add", "add"), ("subtract", "sub"), ("multiply", "mul"), ("divide", "div"),
                ("true_divide", "div"), ("modulo", "mod"), ("power", "power"),
                ("maximum", "maximum"), ("minimum", "minimum"), ("equal", "equal"),
                ("not_equal", "not_equal"), ("greater", "greater"),
                ("greater_equal", "greater_equal"), ("lesser", "lesser"),
                ("lesser_equal", "lesser_equal"), ("logical_and", "logical_and"),
                ("logical_or", "logical_or"), ("logical_xor", "logical_xor")):
    register(OpDef(name=_py, inputs=("lhs", "rhs"), params=(), impl=None,
                   frontend=_wrapper(_k, _py), dtype="same",
                   doc=f"``broadcast_{_k}`` of arrays; with a scalar, the scalar operator.",
                   namespace="python", family="binary"))
