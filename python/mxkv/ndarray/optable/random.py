"""The random operators: ``random_*`` (scalar parameters, a shape and a
context) and ``sample_*`` (one distribution per element of array
parameters), declared with MXNet 1.9.1's parameters.

Their frontends are MXNet's call forms written once in ``ndarray/random.py``
(``random_draw``, ``sample_draw``, ``multinomial``, ``shuffle``), which
``mx.nd.random.*`` uses too; the draws are ``sample_ops.py``'s. Values come
from numpy's / CuPy's generators seeded by ``mx.random.seed``, not MXNet's
streams: distributions, shapes, dtypes and parameter checks are MXNet's.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ...base import _Null
from .. import random as _random
from .._util import MXNetValueError
from .registry import OpDef, Param, register

__all__: list = []

_FLOAT_DTYPE = ("dtype", "{'None', 'float16', 'float32', 'float64'}", "None")
_DIFF = ("values from numpy's/CuPy's generator (mx.random.seed), not MXNet's stream: "
         "the same distribution, other numbers")

# kind: its scalar parameters (MXNet's names, types, defaults) for random_<kind>
_RANDOM = {
    "uniform": (("low", "float", 0.0), ("high", "float", 1.0)),
    "normal": (("loc", "float", 0.0), ("scale", "float", 1.0)),
    "gamma": (("alpha", "float", 1.0), ("beta", "float", 1.0)),
    "exponential": (("lam", "float", 1.0),),
    "poisson": (("lam", "float", 1.0),),
    "negative_binomial": (("k", "int", 1), ("p", "float", 1.0)),
    "generalized_negative_binomial": (("mu", "float", 1.0), ("alpha", "float", 1.0)),
    "randint": (("low", "long"), ("high", "long")),
}
# kind: its array parameters for sample_<kind> (MXNet's input names)
_SAMPLE = {
    "uniform": ("low", "high"), "normal": ("mu", "sigma"), "gamma": ("alpha", "beta"),
    "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha"),
}


def _signature(names: list) -> inspect.Signature:
    P = inspect.Parameter
    ps = [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in names]
    ps += [P("out", P.POSITIONAL_OR_KEYWORD, default=None),
           P("name", P.POSITIONAL_OR_KEYWORD, default=None), P("kwargs", P.VAR_KEYWORD)]
    return inspect.Signature(ps)


def _value(v: Any, default: Any) -> Any:
    return default if v is _Null else v


def _random_frontend(kind: str, specs: tuple) -> Callable[..., Any]:
    names = [s[0] for s in specs]
    defaults = [s[2] if len(s) > 2 else None for s in specs]

    def fn(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(names + ["shape", "ctx", "dtype", "out"], args))
        bound.update(kwargs)
        bound.pop("name", None)
        vals = []
        for n, d in zip(names, defaults):
            v = _value(bound.pop(n, _Null), d)
            if v is None:
                raise MXNetValueError(f"random_{kind}: required parameter {n!r} "
                                              f"is missing")
            vals.append(v)
        shape = _value(bound.pop("shape", _Null), None)
        ctx = _value(bound.pop("ctx", _Null), None) or None
        dtype = _value(bound.pop("dtype", _Null), None)
        out = bound.pop("out", None)
        if bound:
            raise MXNetValueError(f"random_{kind}: unexpected argument(s) "
                                          f"{sorted(bound)}")
        return _random.random_draw(kind, tuple(vals), shape, ctx, dtype, out)
    fn.__name__ = fn.__qualname__ = f"random_{kind}"
    fn.__signature__ = _signature([(n, _Null) for n in names + ["shape", "ctx", "dtype"]])
    return fn


def _sample_frontend(kind: str, inputs: tuple) -> Callable[..., Any]:
    def fn(*args: Any, **kwargs: Any) -> Any:
        bound = dict(zip(list(inputs) + ["shape", "dtype", "out"], args))
        bound.update(kwargs)
        bound.pop("name", None)
        arrays = [bound.pop(n, None) for n in inputs]
        shape = _value(bound.pop("shape", _Null), None)
        dtype = _value(bound.pop("dtype", _Null), None)
        out = bound.pop("out", None)
        if bound:
            raise MXNetValueError(f"sample_{kind}: unexpected argument(s) "
                                          f"{sorted(bound)}")
        return _random.sample_draw(kind, tuple(arrays), shape, dtype, out)
    fn.__name__ = fn.__qualname__ = f"sample_{kind}"
    fn.__signature__ = _signature([(n, None) for n in inputs]
                                  + [("shape", _Null), ("dtype", _Null)])
    return fn


for _kind, _specs in _RANDOM.items():
    _dt = (("dtype", "{'None', 'int32', 'int64'}", "None") if _kind == "randint"
           else _FLOAT_DTYPE)
    register(OpDef(
        name=f"random_{_kind}", inputs=(), impl=None, dtype="impl", family="random",
        aliases=(_kind,) if _kind in ("uniform", "normal") else (),  # (MXNet's old names)
        params=tuple(Param(*s) for s in _specs) + (
            Param("shape", "Shape(tuple)", None), Param("ctx", "string", ""), Param(*_dt)),
        frontend=_random_frontend(_kind, _specs), differences=_DIFF,
        doc=f"Samples of the {_kind.replace('_', ' ')} distribution of the given "
            f"parameters, of the given shape, on ctx."))

for _kind, _inputs in _SAMPLE.items():
    register(OpDef(
        name=f"sample_{_kind}", inputs=_inputs, impl=None, dtype="impl", family="random",
        params=(Param("shape", "Shape(tuple)", ()), Param(*_FLOAT_DTYPE)),
        frontend=_sample_frontend(_kind, _inputs), differences=_DIFF,
        doc=f"Samples of the {_kind.replace('_', ' ')} distribution for each element of "
            f"the parameter arrays: shape params.shape + shape."))


def _sample_multinomial(data: Any = None, shape: Any = _Null, get_prob: Any = _Null,
                        dtype: Any = _Null, out: Any = None, name: Any = None,
                        **kwargs: Any) -> Any:
    if kwargs:
        raise MXNetValueError(f"sample_multinomial: unexpected argument(s) "
                                      f"{sorted(kwargs)}")
    return _random.multinomial(data, _value(shape, None), bool(_value(get_prob, False)),
                               out, _value(dtype, "int32"))


def _shuffle(data: Any = None, out: Any = None, name: Any = None, **kwargs: Any) -> Any:
    if kwargs:
        raise MXNetValueError(f"shuffle: unexpected argument(s) {sorted(kwargs)}")
    return _random.shuffle(data, out=out)


register(OpDef(
    name="sample_multinomial", inputs=("data",), impl=None, dtype="impl", family="random",
    params=(Param("shape", "Shape(tuple)", ()), Param("get_prob", "boolean", False),
            Param("dtype", "{'float16', 'float32', 'float64', 'int32', 'uint8'}", "int32")),
    frontend=_sample_multinomial, differences=_DIFF,
    doc="Category indices drawn from the probabilities on data's last axis (and their "
        "log-probabilities with get_prob)."))

register(OpDef(
    name="shuffle", inputs=("data",), impl=None, dtype="impl", family="random",
    params=(), frontend=_shuffle, differences=_DIFF,
    doc="A copy of data with its first axis in random order."))
