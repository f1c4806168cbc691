"""Device contexts, as MXNet 1.9's ``mxnet.context``.

A :class:`Context` names a device: ``cpu(i)``, ``gpu(i)``, ``cpu_pinned(i)``
or ``cpu_shared(i)``. Every CPU flavour keeps its arrays in numpy memory,
``gpu(i)`` in CuPy memory on device ``i``; :func:`xp_for` returns that array
module. Each ``cpu(i)`` is a device of its own: arrays on two contexts never
share memory, whatever the backing module.

>>> import mxkv as mx
>>> with mx.cpu(1):
...     mx.current_context()
cpu(1)
"""
from __future__ import annotations

import threading
import types
import warnings
from typing import ClassVar

import numpy as np

from .base import MXNetError

__all__ = [
    "Context",
    "cpu",
    "cpu_pinned",
    "cpu_shared",
    "cupy_or_none",
    "current_context",
    "gpu",
    "gpu_memory_info",
    "num_gpus",
    "xp_for",
]

_CUPY_HINT = "pip install cupy-cuda12x"


class _ContextMeta(type):
    """Gives ``Context.default_ctx`` a class-level getter and setter, as MXNet."""

    @property
    def default_ctx(cls) -> Context:
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "Context.current_context() instead.", DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, val: Context) -> None:
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "Context.current_context() instead.", DeprecationWarning, stacklevel=2)
        _default_stack()[-1] = Context(val)


class Context(metaclass=_ContextMeta):
    """A device: ``Context('gpu', 1)``, ``Context(other_ctx)``.

    Parameters
    ----------
    device_type : {'cpu', 'gpu', 'cpu_pinned', 'cpu_shared'} or Context
        The kind of device, or a context to copy.
    device_id : int, default 0
        The device's number within its kind.

    Used in a ``with`` block it becomes the default context of the block
    (per thread); blocks nest.
    """

    devtype2str: ClassVar[dict] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict] = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    __slots__ = ("device_id", "device_typeid")

    def __init__(self, device_type: str | Context, device_id: int = 0) -> None:
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
            return
        typeid = Context.devstr2type.get(device_type) if isinstance(device_type, str) else None
        if typeid is None:
            raise MXNetError(
                f"unknown device type {device_type!r}: expected one of "
                f"{sorted(Context.devstr2type)} or a Context")
        if isinstance(device_id, bool) or not isinstance(device_id, (int, np.integer)) \
                or device_id < 0:
            raise MXNetError(f"device id must be a non-negative integer, got {device_id!r}")
        self.device_typeid = typeid
        self.device_id = int(device_id)

    @property
    def device_type(self) -> str:
        """``'cpu'``, ``'gpu'``, ``'cpu_pinned'`` or ``'cpu_shared'``."""
        return Context.devtype2str[self.device_typeid]

    @property
    def is_gpu(self) -> bool:
        """True for ``gpu(i)``: arrays live in CuPy memory on device ``i``."""
        return self.device_typeid == 2

    def __hash__(self) -> int:
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __enter__(self) -> Context:
        _default_stack().append(self)
        return self

    def __exit__(self, ptype, value, trace) -> None:
        stack = _default_stack()
        if len(stack) > 1:
            stack.pop()

    def empty_cache(self) -> None:
        """Release the memory CuPy caches for this GPU (a no-op on CPU)."""
        if self.is_gpu:
            cp = xp_for(self)
            with cp.cuda.Device(self.device_id):
                cp.get_default_memory_pool().free_all_blocks()


_local = threading.local()


def _default_stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = [Context("cpu", 0)]
        _local.stack = stack
    return stack


def current_context() -> Context:
    """The default context: the innermost ``with ctx:`` block, else ``cpu(0)``."""
    return _default_stack()[-1]


Context.current_context = staticmethod(current_context)


def cpu(device_id: int = 0) -> Context:
    """The CPU context ``cpu(device_id)``; each id is a device of its own."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Page-locked CPU memory (plain numpy memory here)."""
    return Context("cpu_pinned", device_id)


def cpu_shared(device_id: int = 0) -> Context:
    """Shared CPU memory (plain numpy memory here)."""
    return Context("cpu_shared", device_id)


def gpu(device_id: int = 0) -> Context:
    """The GPU context ``gpu(device_id)``; creating one needs no GPU, using it does."""
    return Context("gpu", device_id)


# ---------------------------------------------------------------------------
# CuPy, imported only when a GPU context is used.

_cupy_state: dict = {}


def cupy_or_none() -> types.ModuleType | None:
    """CuPy when it imports and sees at least one GPU, else None (cached)."""
    if "module" not in _cupy_state:
        module, count = None, 0
        try:
            import cupy
            count = int(cupy.cuda.runtime.getDeviceCount())
            module = cupy if count > 0 else None
        except (ImportError, RuntimeError, OSError):  # absent, or no CUDA driver
            module, count = None, 0
        _cupy_state["module"] = module
        _cupy_state["count"] = count
    return _cupy_state["module"]


def num_gpus() -> int:
    """Number of GPUs CuPy sees; 0 when CuPy is absent or there is no GPU."""
    cupy_or_none()
    return _cupy_state["count"]


def gpu_memory_info(device_id: int = 0) -> tuple:
    """``(free, total)`` bytes of GPU ``device_id``."""
    cp = xp_for(gpu(device_id))
    with cp.cuda.Device(device_id):
        return tuple(int(v) for v in cp.cuda.runtime.memGetInfo())


def xp_for(ctx: Context) -> types.ModuleType:
    """The array module holding ``ctx``'s memory: numpy, or cupy for ``gpu(i)``.

    Raises
    ------
    MXNetError
        For a GPU context when CuPy is not installed, no GPU is visible, or
        the device id is beyond the visible GPUs.
    """
    if ctx.device_typeid != 2:
        return np
    cp = cupy_or_none()
    if cp is None:
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise MXNetError(f"context {ctx} needs CuPy, which is not installed: "
                             f"{_CUPY_HINT}") from None
        raise MXNetError(f"context {ctx} needs a GPU, but CuPy sees none "
                         f"(check the CUDA driver, or use a cpu context)")
    if ctx.device_id >= _cupy_state["count"]:
        raise MXNetError(f"context {ctx} is not available: only "
                         f"{_cupy_state['count']} GPU(s) are visible")
    return cp
