"""DLPack both ways, as MXNet 1.9 (``to_dlpack_for_read``/``_for_write``,
``from_dlpack``) and as the array-API protocol (``__dlpack__``,
``__dlpack_device__``): arrays move between mxkv, numpy, PyTorch, CuPy and
JAX without a copy.

Exporting shares the NDArray's buffer (numpy's or CuPy's capsule for it);
``to_dlpack_for_write`` first tells a store sharing the buffer copy-on-write
(``cow.py``) that it is about to be written. Importing wraps the producer's
memory: ``from_dlpack(x)`` takes any object with ``__dlpack__`` (CPU memory
on ``cpu(0)``, CUDA memory on ``gpu(device_id)``) or a DLPack capsule
(MXNet's ``to_dlpack_for_*`` give one; a capsule carries no device, so it is
read as CPU memory unless ``ctx`` says a GPU). The producer may go on writing
the memory it shares; a KVStore copies what it keeps (``docs/ndarray.md``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..context import Context, gpu, xp_for
from ._util import MXNetTypeError, MXNetValueError, check_wrappable
from .cow import before_write
from .creation import _writable_alias
from .ndarray import NDArray, provide

__all__ = ["from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]

_CPU, _CUDA, _CUDA_HOST = 1, 2, 3


def _check(data: Any, what: str) -> NDArray:
    if not isinstance(data, NDArray) or data.stype != "default":
        raise MXNetTypeError(f"{what} expects a dense NDArray, got "
                             f"{getattr(data, 'stype', type(data).__name__)}")
    return data


def to_dlpack_for_read(data: NDArray) -> Any:
    """A DLPack capsule sharing ``data``'s memory, for reading."""
    return _check(data, "to_dlpack_for_read")._array.__dlpack__()


def to_dlpack_for_write(data: NDArray) -> Any:
    """A DLPack capsule sharing ``data``'s memory, for writing through it (a
    store sharing the buffer copy-on-write takes its own copy first)."""
    before_write(_check(data, "to_dlpack_for_write")._array)
    return data._array.__dlpack__()


class _Capsule:
    """A bare DLPack capsule presented through the protocol."""

    def __init__(self, capsule: Any, device: tuple) -> None:
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple:
        return self._device


def from_dlpack(dlpack: Any, ctx: Context | None = None) -> NDArray:
    """An NDArray sharing the memory of a DLPack producer (an object with
    ``__dlpack__``: a numpy, PyTorch, CuPy or JAX array, an mxkv NDArray) or
    of a DLPack capsule (MXNet's ``to_dlpack_for_read/write``)."""
    if type(dlpack).__name__ == "PyCapsule":
        dev = (_CUDA, ctx.device_id) if ctx is not None and ctx.is_gpu else (_CPU, 0)
        dlpack = _Capsule(dlpack, dev)
    if not hasattr(dlpack, "__dlpack__"):
        raise MXNetTypeError(f"from_dlpack expects a DLPack capsule or an object with "
                             f"__dlpack__, got {type(dlpack).__name__}")
    kind, dev_id = (int(x) for x in dlpack.__dlpack_device__())
    if kind in (_CPU, _CUDA_HOST):
        target = ctx if ctx is not None and not ctx.uses_cupy else Context("cpu", 0)
        arr = np.from_dlpack(dlpack)
    elif kind == _CUDA:
        target = gpu(dev_id)
        arr = xp_for(target).from_dlpack(dlpack)
    else:
        raise MXNetValueError(f"from_dlpack: device type {kind} is not supported (CPU and "
                              "CUDA memory are)")
    if not arr.flags.c_contiguous:
        raise MXNetValueError("from_dlpack: the array is not C-contiguous; an NDArray "
                              "shares only C-contiguous memory")
    if isinstance(arr, np.ndarray) and not arr.flags.writeable:
        arr = _writable_alias(arr)  # (DLPack 0.x has no read-only flag: numpy assumes one)
    check_wrappable(arr, target)
    return NDArray(arr, target)


provide(to_dlpack_for_read=to_dlpack_for_read, to_dlpack_for_write=to_dlpack_for_write)
