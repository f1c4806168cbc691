"""Arrays of other libraries in store calls: any object with ``__dlpack__``
(numpy 1.22+, PyTorch, CuPy, JAX arrays) is taken where a store takes an
NDArray, as value or out (row ids stay NDArrays, as MXNet).

Each is wrapped with :func:`mxkv.nd.from_dlpack` when the call's arguments
are flattened, before anything is checked, so errors still name the key. A
C-contiguous array is wrapped without a copy (a pull into it writes its
memory); a value of another layout is copied, and an out of another layout
or read-only memory is refused. A store never keeps a foreign buffer by
reference (its one-device push copies it): the producer may write it behind
mxkv's back, where copy-on-write (``ndarray/cow.py``) cannot see.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from ..context import gpu, xp_for
from ..ndarray import NDArray
from ..ndarray.dlpack import from_dlpack

__all__ = ["is_foreign", "wrap"]

_CPU_KINDS = (1, 3)  # DLPack's kDLCPU, kDLCUDAHost
_CUDA = 2


def is_foreign(value: Any) -> bool:
    """Whether ``value`` is an NDArray wrapped here around another library's
    memory (a store copies it rather than keep it by reference)."""
    return getattr(value, "_foreign", False)


def wrap(key: str, value: Any, op: str, what: str) -> NDArray:
    """``value`` (an object with ``__dlpack__``) as an NDArray sharing its
    memory where the layout allows; ``key`` is the key's name for messages.

    Raises
    ------
    MXNetError
        The object cannot be read through DLPack, or it is an ``out`` whose
        memory cannot be written in place (read-only or not C-contiguous).
    """
    try:
        kind, dev = (int(x) for x in value.__dlpack_device__())
        if kind in _CPU_KINDS:
            arr = np.from_dlpack(value)
        elif kind == _CUDA:
            arr = xp_for(gpu(dev)).from_dlpack(value)
        else:
            raise MXNetError(f"device type {kind} (CPU and CUDA memory are supported)")
    except Exception as exc:  # noqa: BLE001 (any producer's failure, reported with the key)
        raise MXNetError(f"{op}: the {what} for key {key} ({type(value).__name__}) cannot be "
                         f"read through DLPack: {exc}") from None
    writable = getattr(getattr(arr, "flags", None), "writeable", True)
    if what == "out" and (not arr.flags.c_contiguous or not writable):
        raise MXNetError(f"{op}: the out for key {key} ({type(value).__name__}) is "
                         f"{'read-only' if not writable else 'not C-contiguous'}: a pull "
                         "writes into the memory of a C-contiguous writable array")
    if not arr.flags.c_contiguous:
        with_layout = xp_for(gpu(dev)) if kind == _CUDA else np
        arr = with_layout.ascontiguousarray(arr)  # (a copy: NDArrays are C-contiguous)
    out = from_dlpack(arr)
    out._foreign = True
    return out
