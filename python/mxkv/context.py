"""Device contexts, as MXNet 1.9's ``mxnet.context``.

A :class:`Context` names a device: ``cpu(i)``, ``gpu(i)``, ``cpu_pinned(i)``
or ``cpu_shared(i)``. Every CPU flavour keeps its arrays in numpy memory,
``gpu(i)`` in CuPy memory on device ``i``; :func:`xp_for` returns that array
module. Each ``cpu(i)`` is a device of its own: arrays on two contexts never
share memory, whatever the backing module.

Two knobs give GPUs where there are none (``docs/gpu.md``):

* ``MXKV_SIMULATE_GPUS=N``: ``gpu(0..N-1)`` are *simulated* GPUs, numpy
  memory, no CuPy needed; each is a device of its own (copies between them
  are real copies) with a synthetic link topology (``MXKV_SIMULATE_TOPOLOGY``).
* ``MXKV_VIRTUAL_GPUS=N``: ``gpu(0..N-1)`` are N logical devices on the one
  real GPU ``0``, CuPy memory: kernels, streams and device-to-device copies
  run for real with N "devices" (NCCL refuses them: one GPU, several ranks).

So "is a GPU context" (:attr:`Context.is_gpu`) and "keeps its arrays in CuPy
memory" (:attr:`Context.uses_cupy`) are different questions, and
:attr:`Context.cuda_id` names the physical CUDA device behind a context.

>>> import mxkv as mx
>>> with mx.cpu(1):
...     mx.current_context()
cpu(1)
"""
from __future__ import annotations

import os
import threading
import types
import warnings
import weakref
from typing import Callable, ClassVar

import numpy as np

from .base import MXNetError, MXNetValueError, env

__all__ = [
    "Context",
    "cpu",
    "cpu_pinned",
    "cpu_shared",
    "cuda_device_count",
    "empty_host",
    "free_pinned_blocks",
    "cupy_or_none",
    "current_context",
    "gpu",
    "gpu_memory_info",
    "gpu_mode",
    "num_gpus",
    "pinned_memory_available",
    "register_stream_owner",
    "synchronize_streams",
    "xp_for",
]

_CUPY_HINT = "pip install 'mxkv[gpu]' (cupy-cuda12x)"


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
    device_typeid: int
    device_id: int
    #: :func:`current_context` (set below, once it is defined)
    current_context: ClassVar[Callable[[], Context]]

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
        """True for ``gpu(i)``, real, virtual or simulated: a device of its own.

        Ask :attr:`uses_cupy` for where its arrays live.
        """
        return self.device_typeid == 2

    @property
    def uses_cupy(self) -> bool:
        """True when arrays on this context are CuPy arrays: ``gpu(i)`` on a
        real or virtual GPU. False for every CPU flavour and for simulated GPUs
        (numpy memory)."""
        return self.device_typeid == 2 and _mode() != "simulated"

    @property
    def cuda_id(self) -> int | None:
        """The CUDA device holding this context's memory: ``device_id`` on real
        GPUs, the one physical device under ``MXKV_VIRTUAL_GPUS``, None for
        CPU flavours and simulated GPUs."""
        if self.device_typeid != 2:
            return None
        mode = _mode()
        if mode == "cuda":
            return self.device_id
        return _VIRTUAL_DEVICE if mode == "virtual" else None

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
        if self.uses_cupy:
            cp = xp_for(self)
            with cp.cuda.Device(self.cuda_id):
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


def cuda_device(ctx: Context) -> int:
    """``ctx.cuda_id`` for a context whose arrays are CuPy's (:attr:`Context.uses_cupy`);
    MXNetError for a CPU or simulated GPU context, which has no CUDA device."""
    dev = ctx.cuda_id
    if dev is None:
        raise MXNetError(f"context {ctx} has no CUDA device (a CPU or simulated GPU context)")
    return dev


def cpu(device_id: int = 0) -> Context:
    """The CPU context ``cpu(device_id)``; each id is a device of its own."""
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """Page-locked CPU memory: numpy arrays over CuPy's pinned allocator when
    CuPy sees a GPU (so copies to and from GPUs are asynchronous DMA), plain
    numpy memory otherwise (:func:`empty_host`)."""
    return Context("cpu_pinned", device_id)


def cpu_shared(device_id: int = 0) -> Context:
    """Shared CPU memory (plain numpy memory here)."""
    return Context("cpu_shared", device_id)


def gpu(device_id: int = 0) -> Context:
    """The GPU context ``gpu(device_id)``; creating one needs no GPU, using it does."""
    return Context("gpu", device_id)


# ---------------------------------------------------------------------------
# What backs gpu(i): real CUDA devices, virtual ones on one GPU, or simulated
# ones in host memory. Decided from the knobs on first use; _reset_devices()
# re-reads them (tests switch between models).

#: The physical device that holds every virtual GPU.
_VIRTUAL_DEVICE = 0

_model: dict = {}


def _resolve_model() -> str:
    sim = env("MXKV_SIMULATE_GPUS", 0, int, minimum=0)
    virt = env("MXKV_VIRTUAL_GPUS", 0, int, minimum=0)
    if sim and virt:
        raise MXNetValueError(
            f"MXKV_SIMULATE_GPUS={sim} and MXKV_VIRTUAL_GPUS={virt} are both set: "
            "choose simulated GPUs (numpy, no CUDA) or virtual ones (one real GPU)")
    _model["count"] = sim or virt
    _model["mode"] = "simulated" if sim else ("virtual" if virt else "cuda")
    return _model["mode"]


def _mode() -> str:
    mode = _model.get("mode")
    return mode if mode is not None else _resolve_model()


def _reset_devices() -> None:
    """Forget the device model and CuPy probe; the next use re-reads the knobs."""
    _model.clear()
    _cupy_state.clear()


def gpu_mode() -> str:
    """What ``gpu(i)`` contexts are: ``'cuda'`` (real GPUs through CuPy),
    ``'virtual'`` (``MXKV_VIRTUAL_GPUS``) or ``'simulated'`` (``MXKV_SIMULATE_GPUS``)."""
    return _mode()


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


def cuda_device_count() -> int:
    """Real CUDA devices CuPy sees (0 without CuPy or a driver), whatever the mode."""
    cupy_or_none()
    return _cupy_state["count"]


def num_gpus() -> int:
    """Number of ``gpu(i)`` contexts: the GPUs CuPy sees; N under
    ``MXKV_SIMULATE_GPUS=N``; N under ``MXKV_VIRTUAL_GPUS=N`` when a real GPU
    is there (else 0); 0 when CuPy is absent or there is no GPU."""
    mode = _mode()
    if mode == "simulated":
        return _model["count"]
    if mode == "virtual":
        return _model["count"] if cuda_device_count() > 0 else 0
    return cuda_device_count()


def gpu_memory_info(device_id: int = 0) -> tuple:
    """``(free, total)`` bytes of GPU ``device_id`` (of the host, for a simulated GPU)."""
    ctx = gpu(device_id)
    cp = xp_for(ctx)
    if not ctx.uses_cupy:
        page = os.sysconf("SC_PAGE_SIZE")
        return (int(os.sysconf("SC_AVPHYS_PAGES") * page),
                int(os.sysconf("SC_PHYS_PAGES") * page))
    with cp.cuda.Device(ctx.cuda_id):
        return tuple(int(v) for v in cp.cuda.runtime.memGetInfo())


def xp_for(ctx: Context) -> types.ModuleType:
    """The array module holding ``ctx``'s memory: numpy, or cupy for ``gpu(i)``
    (numpy for a simulated GPU).

    Raises
    ------
    MXNetError
        For a GPU context when CuPy is not installed, no GPU is visible, or
        the device id is beyond the visible (or simulated, or virtual) GPUs.
    """
    if ctx.device_typeid != 2:
        return np
    mode = _mode()
    if mode == "simulated":
        if ctx.device_id >= _model["count"]:
            raise MXNetError(f"context {ctx} is not available: only {_model['count']} "
                             f"simulated GPU(s) (MXKV_SIMULATE_GPUS={_model['count']})")
        return np
    cp = cupy_or_none()
    if cp is None:
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise MXNetError(f"context {ctx} needs CuPy, which is not installed: "
                             f"{_CUPY_HINT}") from None
        extra = (f" (MXKV_VIRTUAL_GPUS={_model['count']} needs one real GPU)"
                 if mode == "virtual" else "")
        raise MXNetError(f"context {ctx} needs a GPU, but CuPy sees none{extra} "
                         f"(check the CUDA driver, or use a cpu context)")
    limit = _model["count"] if mode == "virtual" else _cupy_state["count"]
    if ctx.device_id >= limit:
        what = (f"virtual GPU(s) (MXKV_VIRTUAL_GPUS={limit})" if mode == "virtual"
                else "GPU(s) are visible")
        raise MXNetError(f"context {ctx} is not available: only {limit} {what}")
    return cp


# ---------------------------------------------------------------------------
# Pinned host memory for cpu_pinned.

def pinned_memory_available() -> bool:
    """Whether ``cpu_pinned`` arrays are page-locked: CuPy imports and sees a
    real GPU, and the GPUs are not simulated."""
    return _mode() != "simulated" and cupy_or_none() is not None


def empty_host(ctx: Context, shape: tuple, dtype) -> np.ndarray:
    """An uninitialized numpy array for host context ``ctx``.

    On ``cpu_pinned`` with :func:`pinned_memory_available`, a numpy array over
    a page-locked block from CuPy's pinned memory pool (``cupyx.empty_pinned``:
    the array keeps the block alive; the block returns to the pool when the
    last view goes).
    Plain ``np.empty`` for every other host context, and everywhere when no
    GPU is present.
    """
    dtype = np.dtype(dtype)
    if ctx.device_typeid != 3 or not pinned_memory_available():
        return np.empty(shape, dtype)
    import cupyx

    return cupyx.empty_pinned(shape, dtype)


def free_pinned_blocks() -> None:
    """Give CuPy's unused pinned blocks back to the system (a no-op without a GPU)."""
    if "module" in _cupy_state and _cupy_state["module"] is not None:
        _cupy_state["module"].get_default_pinned_memory_pool().free_all_blocks()


# ---------------------------------------------------------------------------
# Streams: objects that run GPU work on streams of their own (the comms)
# register here, so wait_to_read and waitall can wait for them without the
# array layer knowing about stores.

_stream_owners: "weakref.WeakSet" = weakref.WeakSet()


def register_stream_owner(owner) -> None:
    """Register ``owner`` (with a ``synchronize(ctx=None)`` method) until it is collected."""
    _stream_owners.add(owner)


def synchronize_streams(ctx: Context | None = None) -> None:
    """The host waits for every registered owner's streams on ``ctx``'s device
    (every device when None)."""
    for owner in list(_stream_owners):
        owner.synchronize(ctx)
