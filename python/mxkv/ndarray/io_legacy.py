"""Reading the older NDArray layouts ``nd.load`` still accepts.

* MXNet's arrays before storage types: V1 (magic 0xF993FAC8, then a shape
  as i32 ndim + i64 dims) and v0 (no magic: the first u32 is ndim, then
  u32 dims); both dense, followed by the device and the dtype flag.
* mxkv 0.1's own format (magic ``b"MXKVND\\r\\n"``), which mxkv wrote before
  it wrote MXNet's format; it ends with a CRC-32 of all that precedes it::

      magic, u32 version (1), u32 kind (0 list, 1 dict), u64 count, then per
      array: u32 name length + UTF-8 name, u8 stype, u8 dtype flag, u16 ndim,
      ndim x i64 dims, [row_sparse: u64 nnz, nnz x i64 indices], u64 nbytes,
      the data; then u32 CRC-32.
"""
from __future__ import annotations

import struct
import zlib
from typing import Optional

import numpy as np

from ..base import MXNetIOError
from ..context import Context
from .io_base import V1_MAGIC, Reader, dtype_of, place, saved_context
from .ndarray import NDArray
from .row_sparse import RowSparseNDArray

__all__ = ["MXKV1_MAGIC", "decode_legacy_array", "decode_mxkv1"]

MXKV1_MAGIC = b"MXKVND\r\n"


def decode_legacy_array(r: Reader, magic: int, i: int, ctx: Optional[Context]
                        ) -> Optional[NDArray]:
    """A dense array in MXNet's V1 or v0 layout, whose first u32 was ``magic``."""
    if magic == V1_MAGIC:
        shape = r.shape(f"array {i}'s shape")
    elif magic <= 32:  # v0: the magic is the number of dimensions, then u32 dims
        r.pos -= 4
        shape = r.shape(f"array {i}'s shape", ndim_fmt="I", dim_fmt="I")
    else:
        raise r.fail(f"array {i} starts with {magic:#x}, which is no NDArray magic: the "
                     "file is corrupted")
    if not shape:
        return None
    dev_type, dev_id, flag = r.unpack("iii")
    where = ctx or saved_context(dev_type, dev_id, r)
    return NDArray(place(r.array(dtype_of(flag, r), shape), where), where)


def decode_mxkv1(buf: memoryview, ctx: Context, where: str) -> list | dict:
    """Arrays from a file in mxkv 0.1's own format."""
    if len(buf) < len(MXKV1_MAGIC) + 20:
        raise MXNetIOError(f"{where}: file is truncated ({len(buf)} bytes)")
    (stored,) = struct.unpack("<I", buf[-4:])
    if zlib.crc32(buf[:-4]) & 0xFFFFFFFF != stored:
        raise MXNetIOError(f"{where}: checksum mismatch: the file is corrupted")
    r = Reader(buf, where, len(buf) - 4)
    r.take(len(MXKV1_MAGIC))
    version, kind, count = r.unpack("IIQ")
    if version != 1 or kind not in (0, 1):
        raise r.fail(f"mxkv format version {version}, kind {kind}: not supported")
    items = []
    for _ in range(count):
        (nlen,) = r.unpack("I")
        name = bytes(r.take(nlen)).decode("utf-8")
        stype, flag, ndim = r.unpack("BBH")
        dtype = dtype_of(flag, r)
        shape = tuple(r.unpack(f"{ndim}q"))
        if any(d < 0 for d in shape) or stype not in (0, 1) or (stype == 1 and not shape):
            raise r.fail(f"array {name!r}: storage {stype}, shape {shape}: corrupted")
        idx = None
        rows = shape
        if stype == 1:
            (nnz,) = r.unpack("Q")
            idx = r.array(np.dtype(np.int64), (nnz,))
            rows = (nnz,) + shape[1:]
        (nbytes,) = r.unpack("Q")
        data = r.array(dtype, rows)
        if data.nbytes != nbytes:
            raise r.fail(f"array {name!r} records {nbytes} bytes, its shape needs "
                         f"{data.nbytes}")
        if idx is None:
            arr = NDArray(place(data, ctx), ctx)
        else:
            arr = RowSparseNDArray(place(data, ctx), place(idx, ctx), shape, ctx)
            arr.check_format()
        items.append((name, arr))
    if r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} unexpected bytes after the last array")
    return dict(items) if kind == 1 else [a for _, a in items]
