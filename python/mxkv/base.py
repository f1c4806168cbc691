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
        +-- ShardFailedError

It also carries the public helpers of ``mxnet.base`` that user code imports
(``integer_types``, ``string_types``, ``numeric_types``, ``py_str``,
``mx_real_t``, ``mx_uint``..., ``_Null``, ``classproperty``, ``data_dir``),
with MXNet's values, so ``from mxnet.base import ...`` lines work unchanged.

Every environment knob (MXNet's ``MXNET_*``/``DMLC_*`` and mxkv's own
``MXKV_*``) is read through :func:`env`, so a bad value always gives the
same clear error naming the variable.
"""
from __future__ import annotations

import ctypes
import os
import platform
from typing import Any, Callable, Optional, TypeVar

import numpy as np

__all__ = [
    "MXNetError", "MXNetValueError", "MXNetTypeError", "MXNetIndexError", "MXNetIOError",
    "MXNetMemoryError",
    "UnknownOptimizerError", "MissingDependencyError", "MXNetTimeoutError", "DeadNodeError",
    "ShardFailedError",
    "NotImplementedForSymbol", "NotSupportedForSparseNDArray",
    "integer_types", "numeric_types", "string_types", "py_str", "mx_real_t", "mx_int",
    "mx_uint", "mx_float", "mx_float_p", "classproperty", "with_metaclass", "data_dir",
    "data_dir_default", "register_error", "error_types", "env",
]

# MXNet's public helpers (mxnet.base), with MXNet's values.
integer_types = (int, np.int32, np.int64)
numeric_types = (float, int, np.generic)
string_types = (str,)
mx_real_t = np.float32
mx_int = ctypes.c_int
mx_uint = ctypes.c_uint
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
error_types: dict = {}


def py_str(x: bytes) -> str:
    """Decode bytes from the C side as UTF-8 (MXNet's ``py_str``)."""
    return x.decode("utf-8")


def data_dir_default() -> str:
    """The default data directory: ``%APPDATA%/mxnet`` on Windows, else ``~/.mxnet``."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """Where downloaded data lives: ``$MXNET_HOME``, else :func:`data_dir_default`."""
    return os.getenv("MXNET_HOME", data_dir_default())


class _NullType:
    """Placeholder for an argument not given (MXNet's ``_Null``)."""

    def __repr__(self) -> str:
        return "_Null"


_Null = _NullType()


class MXNetError(RuntimeError):
    """Error raised by mxkv, under the name (and base class) MXNet code catches.

    The message names what is at fault: the key, the shapes or types
    involved, and what was expected.
    """


def register_error(func_name: Any = None, cls: Any = None) -> Any:
    """Register an error class under a name (MXNet's ``register_error``); usable
    as a decorator, with or without the name."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls: Any) -> Any:
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


class _NotForKind(MXNetError):
    _what = ""

    def __init__(self, function: Callable, alias: Optional[str], *args: Any) -> None:
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = tuple(str(type(a)) for a in args)  # (BaseException.args is a tuple)

    def __str__(self) -> str:
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + self._what


class NotImplementedForSymbol(_NotForKind):
    """A function given a Symbol that only NDArrays support (MXNet's error)."""

    _what = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_NotForKind):
    """A function given a sparse array that only dense NDArrays support."""

    _what = " is not supported for SparseNDArray and only available in NDArray."


class _ClassPropertyDescriptor:
    def __init__(self, fget: Any, fset: Any = None) -> None:
        self.fget, self.fset = fget, fset

    def __get__(self, obj: Any, klass: Any = None) -> Any:
        return self.fget.__get__(obj, klass if klass is not None else type(obj))()

    def __set__(self, obj: Any, value: Any) -> Any:
        if not self.fset:
            raise MXNetError(f"cannot use the setter: {obj!r} to set attribute")
        klass, obj = (obj, None) if isinstance(obj, type) else (type(obj), obj)
        return self.fset.__get__(obj, klass)(value)

    def setter(self, func: Any) -> "_ClassPropertyDescriptor":
        self.fset = func if isinstance(func, (classmethod, staticmethod)) else classmethod(func)
        return self


def classproperty(func: Any) -> _ClassPropertyDescriptor:
    """A property on the class (MXNet's ``classproperty``)."""
    return _ClassPropertyDescriptor(
        func if isinstance(func, (classmethod, staticmethod)) else classmethod(func))


def with_metaclass(meta: type, *bases: type) -> type:
    """A base class with metaclass ``meta`` (six's ``with_metaclass``, as MXNet has it)."""
    class metaclass(type):
        def __new__(cls, name, this_bases, d):  # noqa: N804
            return meta(name, bases, d)

        @classmethod
        def __prepare__(cls, name, this_bases):
            return meta.__prepare__(name, bases)
    return type.__new__(metaclass, "temporary_class", (), {})


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


class ShardFailedError(DeadNodeError):
    """A server shard stopped for good: its storage failed (a corrupt or
    unreadable checkpoint, a checkpoint it cannot write, a refused
    directory). Every worker's calls fail with it.

    Attributes
    ----------
    shard : int
        The shard's index.
    host : str
        Where it ran.
    path : str
        The file or directory at fault.
    cause : str
        What went wrong there.
    """

    def __init__(self, shard: int, host: str, path: str, cause: str, job: str = "") -> None:
        self.shard, self.host, self.path, self.cause, self.job = shard, host, path, cause, job
        of = f" of job {job!r}" if job else ""
        where = "" if path in cause else f" (at {path})"
        super().__init__(f"server shard {shard}{of} on host {host} stopped: {cause}{where}")

    def __reduce__(self):
        return (ShardFailedError, (self.shard, self.host, self.path, self.cause, self.job))


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
