"""Keyword parameters checked against the types their constructor declares.

``mx.optimizer.create('sgd', learning_rate='abc')`` would build an optimizer
whose every update then fails; MXNet accepts it. We refuse it where the
value is given, naming the parameter, what it must be and what it was.
Only the plain declared types are checked (``float``, ``int``, ``bool``,
``str``, ``dict``, ``list``, ``tuple``, ``None`` and unions of them); a
parameter declared otherwise (``Any``, a class) is left to the constructor.
A ``float`` must also be finite: a NaN learning rate would silently turn
every weight into NaN.
"""
from __future__ import annotations

import inspect
import math
import numbers
from typing import Any, Callable, Dict, Mapping

from .base import MXNetTypeError, MXNetValueError

__all__ = ["check_params"]


def _is_float(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool) or (type(v).__name__ == "bool_") or (_is_int(v) and v in (0, 1))


_CHECKS: Dict[str, Callable[[Any], bool]] = {
    "float": _is_float,
    "int": _is_int,
    "bool": _is_bool,
    "str": lambda v: isinstance(v, str),
    "dict": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "tuple": lambda v: isinstance(v, tuple),
    "None": lambda v: v is None,
}
_NAMES = {"float": "a number", "int": "an integer", "bool": "true or false", "str": "a string",
          "dict": "a dict", "list": "a list", "tuple": "a tuple", "None": "None"}


def _declared(klass: Any) -> Dict[str, str]:
    """Parameter name -> declared type (as written) over the constructors of
    ``klass`` and its bases, the most derived first."""
    out: Dict[str, str] = {}
    for cls in getattr(klass, "__mro__", (klass,)):
        init = cls.__dict__.get("__init__") if isinstance(cls, type) else cls
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters
        except (TypeError, ValueError):
            continue
        for name, p in params.items():
            if p.annotation is not inspect.Parameter.empty and name not in out:
                ann = p.annotation
                out[name] = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    return out


def _kinds(annotation: str):
    """The simple types of ``annotation`` ('float | None' -> ['float', 'None']),
    or None when it names anything else."""
    text = annotation.strip()
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional["):-1] + " | None"
    kinds = []
    for part in text.split("|"):
        base = part.strip().split("[", 1)[0].strip()
        if base == "NoneType":
            base = "None"
        if base not in _CHECKS:
            return None
        kinds.append(base)
    return kinds


def check_params(klass: Any, params: Mapping[str, Any], what: str) -> None:
    """Refuse a value in ``params`` that is not of the type ``klass``'s
    constructor declares for it (see the module docstring); ``what`` names
    the thing being built in the message (``"optimizer 'sgd'"``).

    Raises
    ------
    MXNetTypeError
        A value of the wrong type: ``optimizer 'sgd': learning_rate must be a
        number, got 'abc'``.
    MXNetValueError
        A float that is NaN or infinite.
    """
    declared = _declared(klass)
    for name, value in params.items():
        kinds = _kinds(declared[name]) if name in declared else None
        if kinds is None:
            continue
        if not any(_CHECKS[k](value) for k in kinds):
            expected = " or ".join(_NAMES[k] for k in kinds)
            raise MXNetTypeError(f"{what}: {name} must be {expected}, got {value!r}")
        if "float" in kinds and _is_float(value) and not math.isfinite(float(value)):
            raise MXNetValueError(f"{what}: {name} must be finite, got {value!r}")
