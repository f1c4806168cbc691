"""The operator table's data model: :class:`Param`, :class:`OpDef`, :func:`register`.

One :class:`OpDef` per MXNet operator, keyed by its MXNet name, with its
aliases, inputs, parameters (MXNet's order, names, type strings and
defaults) and one implementation over an array module. ``frontend.py``
generates every Python frontend from these entries; :func:`iter_ops` walks
them for other generators (the docs page, the Clojure functions).
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ...base import MXNetError
from .._util import MXNetTypeError, MXNetValueError

__all__ = ["REQUIRED", "Param", "OpDef", "register", "op", "iter_ops", "get", "lookup",
           "clojure_name"]


def clojure_name(name: str) -> str:
    """clojure-mxnet's name for the operator ``name`` (its generator's ``clojure-case``):
    ``broadcast_add`` -> ``broadcast-add``, ``FullyConnected`` -> ``fully-connected``,
    ``L2Normalization`` -> ``l2-normalization``, ``_plus`` -> ``-plus``."""
    s = re.sub(r"(\s+)([A-Z][a-z]+)", r"\1-\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z]+)", r"\1-\2", s)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", s)
    return s.lower().replace("_", "-").replace("/", "div")


class _Required:
    """The default of a parameter the caller must give."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


# ---------------------------------------------------------------- parameter conversion
def _bool(v: Any) -> bool:
    if isinstance(v, str):
        if v.lower() in ("1", "true"):
            return True
        if v.lower() in ("0", "false"):
            return False
        raise ValueError(f"expected a boolean, got {v!r}")
    return bool(v)


def _int(v: Any) -> int:
    if isinstance(v, str):
        return int(v)
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"expected an int, got {v!r}")
        return int(v)
    return operator.index(v)


def _shape(v: Any) -> tuple:
    if type(v) is tuple and all(type(x) is int for x in v):  # (the common case, as is)
        return v
    if isinstance(v, str):
        v = v.strip("()[] ")
        return tuple(int(x) for x in v.split(",") if x.strip() not in ("", "None"))
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(_int(x) for x in v)


def shape_with_none(v: Any) -> tuple:
    """A ``Shape(tuple)`` whose entries may be None (``slice``'s ``begin``/``end``)."""
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    if isinstance(v, str):
        v = [x.strip() for x in v.strip("()[] ").split(",") if x.strip()]
    return tuple(None if x is None or x == "None" else _int(x) for x in v)


def _float(v: Any) -> float:
    return float(v)


def _str(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


def _dtype_name(v: Any) -> str:
    if v is None or isinstance(v, str):
        return v
    return np.dtype(v).name


def _float_tuple(v: Any) -> tuple:
    if isinstance(v, (int, float, np.generic)):
        return (float(v),)
    return tuple(float(x) for x in v)


def _optional(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v == "None"):
            return None
        return conv(v)
    return convert


def _choices(values: tuple, optional: bool) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        if v is None and optional:
            return None
        s = _dtype_name(v) if not isinstance(v, str) else v
        if s not in values:
            raise ValueError(f"expected one of {', '.join(repr(c) for c in values)}, got {v!r}")
        return s
    return convert


def converter(type_str: str) -> Callable[[Any], Any]:
    """The function turning a caller's value into a parameter of MXNet type ``type_str``
    (``'int'``, ``'int or None'``, ``'float'``, ``'boolean'``, ``'Shape(tuple)'``,
    ``'Shape or None'``, ``"{'a', 'b'}"``, ``"{None, 'a'}"``, ``'string'``,
    ``'tuple of <float>'``, ``'any'``)."""
    t = type_str.strip()
    if t.startswith("{"):
        names = tuple(c.strip().strip("'\"") for c in t.strip("{}").split(","))
        optional = "None" in names
        return _choices(tuple(n for n in names if n != "None"), optional)
    optional = t.endswith(" or None")
    base = t[:-len(" or None")] if optional else t
    conv = {"int": _int, "long": _int, "int (non-negative)": _int,
            "long (non-negative)": _int, "float": _float,
            "double": _float, "boolean": _bool, "Shape(tuple)": _shape, "Shape": _shape,
            "string": _str, "tuple of <float>": _float_tuple, "tuple of <double>": _float_tuple,
            "any": lambda v: v}.get(base)
    if conv is None:
        raise ValueError(f"unknown parameter type {type_str!r}")
    return _optional(conv) if optional else conv


@dataclass(frozen=True)
class Param:
    """One operator parameter: MXNet's name, type string and default
    (:data:`REQUIRED` when the caller must give it). ``conv`` turns a given
    value into what the implementation receives (derived from ``type``)."""

    name: str
    type: str
    default: Any = REQUIRED
    doc: str = ""
    conv: Callable[[Any], Any] = field(default=None, compare=False, repr=False)  # type: ignore

    def __post_init__(self) -> None:
        if self.conv is None:
            object.__setattr__(self, "conv", converter(self.type))

    @property
    def required(self) -> bool:
        """Whether the caller must give this parameter."""
        return self.default is REQUIRED

    def convert(self, opname: str, value: Any) -> Any:
        """``value`` converted, or an MXNetError naming the operator and the parameter."""
        try:
            return self.conv(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise MXNetValueError(f"{opname}: invalid parameter format for {self.name}: "
                                  f"expected {self.type}, got {value!r} ({exc})") from None


@dataclass
class OpDef:
    """One operator.

    name:      MXNet's registered name (``broadcast_add``).
    inputs:    the array inputs' names in order; ``('*data',)`` for a variable
               count (then ``num_args``, if a parameter, is checked or filled in).
    params:    :class:`Param` s in MXNet's order.
    impl:      ``impl(xp, *arrays, *params)``: arrays are numpy/cupy arrays of
               the first input's device (``xp`` is their module), params in the
               order above, converted; returns an array, a Python scalar, or a
               tuple/list of arrays (several outputs).
    aliases:   other names of the same operator (``broadcast_plus``).
    methods:   the NDArray method names it serves (``self`` is the first input).
    dtype:     the output dtype rule: ``'same'`` (cast to the first input's dtype),
               or ``'impl'`` (as the implementation returns, documented in ``doc``).
    same_dtype: inputs must share one dtype (MXNet's ``ElemwiseType``).
    namespace: ``'nd'``; ``'linalg'`` (also as ``mx.nd.linalg.<name without
               linalg_>``); ``'random'`` (nn); ``'contrib'``.
    csr:       optional ``csr(op, inputs, params, out)`` for an input whose
               storage type is in ``stypes`` (default csr); other sparse inputs
               compute on dense copies, MXNet's storage fallback.
    frontend:  optional hand-written ``mx.nd`` function replacing the generated
               one (a Python wrapper in MXNet too); the table still documents it.
    differences: documented differences from MXNet (docs/operators.md).
    optional:  the inputs a caller may leave out (None reaches the impl):
               ``bias`` with ``no_bias``, ``softmax``'s ``length``...
    """

    name: str
    inputs: tuple
    params: tuple
    impl: Callable[..., Any] | None
    aliases: tuple = ()
    methods: tuple = ()
    dtype: str = "same"
    same_dtype: bool = False
    namespace: str = "nd"
    doc: str = ""
    csr: Callable[..., Any] | None = None
    stypes: tuple = ("csr",)
    frontend: Callable[..., Any] | None = None
    differences: str = ""
    family: str = ""
    optional: tuple = ()

    @property
    def variadic(self) -> bool:
        """Whether the operator takes a variable number of arrays (``*data``)."""
        return len(self.inputs) == 1 and self.inputs[0].startswith("*")

    @property
    def names(self) -> tuple:
        """The operator's name and aliases."""
        return (self.name,) + tuple(self.aliases)

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


_TABLE: dict = {}  # every name and alias -> OpDef
_ORDER: list = []  # OpDefs in registration order


def register(opdef: OpDef) -> OpDef:
    """Add ``opdef`` to the table; a name or alias already taken is an error."""
    for n in opdef.names:
        if n in _TABLE:
            raise MXNetError(f"operator {n!r} is registered twice")
    if not opdef.family:
        opdef.family = getattr(opdef.impl, "__module__", "").rsplit(".", 1)[-1]
    if opdef.dtype not in ("same", "impl"):
        raise MXNetTypeError(f"operator {opdef.name}: dtype rule {opdef.dtype!r} is not "
                             "'same' or 'impl'")
    for n in opdef.names:
        _TABLE[n] = opdef
    _ORDER.append(opdef)
    return opdef


def op(name: str, inputs: Any = ("data",), params: Any = (), **kw: Any) -> Callable:
    """Decorator form of :func:`register`: ``@op('exp', methods=('exp',))`` over
    ``def exp(xp, data): ...``. ``params`` may be Params or tuples
    ``(name, type, default)``."""
    if isinstance(inputs, str):
        inputs = (inputs,)
    ps = tuple(p if isinstance(p, Param) else Param(*p) for p in params)

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(OpDef(name=name, inputs=tuple(inputs), params=ps, impl=fn,
                       doc=kw.pop("doc", None) or (fn.__doc__ or "").strip(), **kw))
        return fn
    return deco


def iter_ops(namespace: str | None = None) -> Iterator[OpDef]:
    """Every OpDef once, in registration order (only ``namespace``'s when given)."""
    for d in _ORDER:
        if namespace is None or d.namespace == namespace:
            yield d


def get(name: str) -> OpDef:
    """The OpDef registered under ``name`` (an MXNet name or alias)."""
    try:
        return _TABLE[name]
    except KeyError:
        raise MXNetError(f"no operator named {name!r} in the table") from None


def lookup(name: str) -> OpDef | None:
    """The OpDef registered under ``name``, or None."""
    return _TABLE.get(name)
