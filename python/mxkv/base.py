"""Errors, type aliases and environment knobs shared by every layer of mxkv.

Every error mxkv raises is an :class:`MXNetError` (itself a ``RuntimeError``,
as MXNet's is). Where MXNet raises a builtin exception for the same fault,
the error is also that builtin, so code written for either catches it::

    MXNetError (RuntimeError)
    +-- MXNetValueError (ValueError)
    |   +-- UnknownOptimizerError
    +-- MXNetTypeError (TypeError)
    +-- MXNetIndexError (IndexError)
    +-- MXNetIOError (OSError)
    +-- MXNetMemoryError (MemoryError)
    +-- MissingDependencyError (ImportError)
    +-- MXNetTimeoutError (TimeoutError)
    +-- DeadNodeError

Every environment knob (MXNet's ``MXNET_*``/``DMLC_*`` and mxkv's own
``MXKV_*``) is read through :func:`env`, so a bad value always gives the
same clear error naming the variable.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Optional, TypeVar

import numpy as np

__all__ = [
    "MXNetError", "MXNetValueError", "MXNetTypeError", "MXNetIndexError", "MXNetIOError",
    "MXNetMemoryError",
    "UnknownOptimizerError", "MissingDependencyError", "MXNetTimeoutError", "DeadNodeError",
    "numeric_types", "env",
]

numeric_types = (float, int, np.generic)


class MXNetError(RuntimeError):
    """Error raised by mxkv, under the name (and base class) MXNet code catches.

    The message names what is at fault: the key, the shapes or types
    involved, and what was expected.
    """


class MXNetValueError(MXNetError, ValueError):
    """An MXNetError where MXNet itself raises ValueError."""


class MXNetTypeError(MXNetError, TypeError):
    """An MXNetError where MXNet itself raises TypeError."""


class MXNetIndexError(MXNetError, IndexError):
    """An MXNetError where MXNet itself raises IndexError."""


class MXNetIOError(MXNetError, OSError):
    """An MXNetError for a file that cannot be read or written."""


class MXNetMemoryError(MXNetError, MemoryError):
    """An array could not be allocated; the message names its shape, dtype and size."""


class UnknownOptimizerError(MXNetValueError):
    """No optimizer is registered under the name asked for (MXNet: ValueError)."""


class MissingDependencyError(MXNetError, ImportError):
    """An optional part (a JVM, Clojure, Py4J, JPype...) is not installed; the
    message names what to install."""


class MXNetTimeoutError(MXNetError, TimeoutError):
    """A distributed call waited past its timeout; the message names who it waited for."""


class DeadNodeError(MXNetError):
    """A node of a distributed job died; the message names its role and rank."""


T = TypeVar("T")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse_int(raw: str) -> int:
    # Accept MXNet-style forms such as "1e6"; refuse "1.5" rather than truncate.
    val = float(raw)
    if val != int(val):
        raise ValueError(f"{raw!r} is not a whole number")
    return int(val)


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"{raw!r} is not one of 0/1/true/false/yes/no/on/off")


_PARSERS: dict = {bool: _parse_bool, int: _parse_int, float: float, str: str}


def env(name: str, default: T, kind: Optional[Callable[[str], Any]] = None,
        minimum: Optional[float] = None) -> T:
    """Read the environment knob ``name``; ``default`` when unset or blank.

    ``kind`` is ``int`` (``"1e6"`` is accepted), ``float``, ``bool``
    (``0/1/true/false/yes/no/on/off``), ``str``, or any parser taking the
    raw string; by default the type of ``default``. ``minimum`` bounds
    numeric values from below. A value that does not parse raises
    :class:`MXNetValueError` naming the variable and the value.

    >>> env("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000)
    1000000
    """
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    if kind is None:
        kind = type(default) if default is not None else str
    parse = _PARSERS.get(kind, kind)
    try:
        value = parse(raw.strip() if parse is not str else raw)
    except (ValueError, TypeError, OverflowError) as exc:
        what = getattr(kind, "__name__", "value")
        raise MXNetValueError(
            f"environment variable {name}={raw!r} is not a valid {what} ({exc})") from None
    if minimum is not None and value < minimum:
        raise MXNetValueError(
            f"environment variable {name}={raw!r} must be at least {minimum}")
    return value
