"""What ``io.py`` (MXNet's NDArray file layout) and ``io_legacy.py`` (the
older layouts ``nd.load`` still reads) share: the magic numbers, the dtype
flags, the bounds-checked :class:`Reader`, and where a saved array lands
(:func:`saved_context`)."""
from __future__ import annotations

import struct
from typing import Any, Dict, Optional

import numpy as np

from ..base import MXNetIOError
from ..context import Context, cpu, num_gpus
from ._util import to_device

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA
MAX_NDIM = 32  # beyond any real array: a larger ndim means a corrupted file

TYPE_FLAGS: Dict[np.dtype, int] = {
    np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
    np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
    np.dtype(np.int64): 6, np.dtype(np.bool_): 7}
FLAG_TYPES = {v: k for k, v in TYPE_FLAGS.items()}
_DEV_TYPES = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}


class Reader:
    """Bounds-checked little-endian reads from a bytes-like buffer; every
    failure is an MXNetIOError naming the source and the offset."""

    def __init__(self, buf: memoryview, where: str, end: Optional[int] = None) -> None:
        self.buf, self.pos, self.where = buf, 0, where
        self.end = len(buf) if end is None else end

    def fail(self, what: str) -> MXNetIOError:
        """The MXNetIOError to raise for ``what``, naming the source and the current offset."""
        return MXNetIOError(f"{self.where}: {what} (at byte {self.pos})")

    def take(self, n: int) -> memoryview:
        """The next ``n`` bytes (a view, not a copy); the offset moves past them.

        Raises
        ------
        MXNetIOError
            Fewer than ``n`` bytes left before the end.
        """
        if n < 0 or self.pos + n > self.end:
            raise self.fail(f"file is truncated or corrupted: needs {n} more bytes, "
                            f"{self.end - self.pos} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        """The values of the struct format ``fmt`` (little-endian) read from the next bytes, as a
        tuple.

        Raises
        ------
        MXNetIOError
            The buffer ends first.
        """
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def shape(self, what: str, ndim_fmt: str = "i", dim_fmt: str = "q") -> Optional[tuple]:
        """A shape; None for MXNet's 'unknown' (ndim -1)."""
        (ndim,) = self.unpack(ndim_fmt)
        if ndim == -1:
            return None
        if not 0 <= ndim <= MAX_NDIM:
            raise self.fail(f"{what} has {ndim} dimensions: the file is corrupted")
        dims = self.unpack(f"{ndim}{dim_fmt}")
        if any(d < 0 for d in dims):
            raise self.fail(f"{what} {dims} has a negative dimension: the file is corrupted")
        return tuple(int(d) for d in dims)

    def array(self, dtype: np.dtype, shape: tuple) -> np.ndarray:
        """A new numpy array of ``dtype`` and ``shape`` from the next bytes (little-endian in the
        buffer, native in the result).

        Raises
        ------
        MXNetIOError
            The buffer ends first.
        """
        count = 1
        for d in shape:
            count *= d
        raw = self.take(count * dtype.itemsize)
        out = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=True)
        return out.reshape(shape)


def dtype_of(flag: int, r: Reader) -> np.dtype:
    """The dtype of MXNet's dtype ``flag``; an MXNetIOError from ``r`` for an unknown one."""
    if flag not in FLAG_TYPES:
        raise r.fail(f"unknown dtype flag {flag} (a corrupted file, or a dtype mxkv does "
                     "not support)")
    return FLAG_TYPES[flag]


def saved_context(dev_type: int, dev_id: int, r: Reader, keep_cpu: bool = False) -> Context:
    """Where MXNet would load an array saved on ``(dev_type, dev_id)``: the
    same GPU when there is one, else ``cpu(0)`` (with ``keep_cpu``, the saved
    CPU context itself)."""
    if dev_type not in (1, 2, 3, 5) or dev_id < 0:
        raise r.fail(f"unknown device ({dev_type}, {dev_id}): the file is corrupted")
    if keep_cpu and dev_type != 2:
        names = {1: "cpu", 3: "cpu_pinned", 5: "cpu_shared"}
        return Context(names[dev_type], dev_id)
    if dev_type == 2:
        try:
            if dev_id < num_gpus():
                return Context("gpu", dev_id)
        except Exception:  # noqa: BLE001 - no CUDA at all: load on the CPU, as MXNet
            pass
    return cpu(0)


def place(arr: np.ndarray, ctx: Context) -> Any:
    """``arr`` (host memory) where ``ctx`` keeps its arrays: itself, or a copy on a GPU."""
    return arr if not ctx.uses_cupy else to_device(arr, ctx)
