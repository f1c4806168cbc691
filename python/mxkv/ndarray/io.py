"""``nd.save`` / ``nd.load``: our own documented binary format, and MXNet's.

mxkv writes the format below (documented in ``docs/ndarray.md``); ``load``
also reads MXNet 1.x ``.params``/``nd.save`` files (dense and row_sparse,
format V2/V3), told apart by their magic numbers. All integers are
little-endian.

::

    header   magic  b"MXKVND\\r\\n"  (8 bytes)
             u32    version (1)
             u32    kind: 0 = list, 1 = dict
             u64    count
    record   u32    name length, then the name in UTF-8 (length 0 in a list)
    (count)  u8     stype: 0 = default, 1 = row_sparse
             u8     dtype: MXNet's type flag (0 float32, 1 float64, 2 float16,
                    3 uint8, 4 int32, 5 int8, 6 int64, 7 bool)
             u16    ndim, then ndim x i64 dims
             row_sparse only: u64 nnz, then nnz x i64 row indices
             u64    nbytes, then the data bytes (C order; for row_sparse the
                    stored rows, shape (nnz,) + dims[1:])
    trailer  u32    CRC-32 (zlib) of every byte before it
"""
from __future__ import annotations

import os
import struct
import zlib
from typing import Any

import numpy as np

from ..base import MXNetIOError
from ..context import Context, cpu
from ._util import MXNetTypeError, is_host, to_device
from .ndarray import NDArray
from .sparse import RowSparseNDArray

__all__ = ["MAGIC", "VERSION", "load", "load_frombuffer", "save"]

MAGIC = b"MXKVND\r\n"
VERSION = 1
_TYPE_FLAGS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
               np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
               np.dtype(np.int64): 6, np.dtype(np.bool_): 7}
_FLAG_TYPES = {v: k for k, v in _TYPE_FLAGS.items()}
_STYPES = {"default": 0, "row_sparse": 1}

# MXNet's own file format (src/ndarray/ndarray.cc): list magic and per-array magics.
_MX_LIST_MAGIC = 0x112
_MX_V2_MAGIC = 0xF993FAC9
_MX_V3_MAGIC = 0xF993FACA


def _host_le(arr: Any) -> np.ndarray:
    """A little-endian C-contiguous host view (or copy, from a GPU) of ``arr``."""
    host = arr if is_host(arr) else arr.get()
    host = np.ascontiguousarray(host)
    if host.dtype.byteorder == ">":
        host = host.astype(host.dtype.newbyteorder("<"))
    return host


def _records(data: Any) -> tuple:
    if isinstance(data, NDArray):
        return 0, [("", data)]
    if isinstance(data, dict):
        if not all(isinstance(k, str) and isinstance(v, NDArray) for k, v in data.items()):
            raise MXNetTypeError("save only accept dict str->NDArray or list of NDArray")
        return 1, list(data.items())
    if isinstance(data, (list, tuple)):
        if not all(isinstance(v, NDArray) for v in data):
            raise MXNetTypeError("save only accept dict str->NDArray or list of NDArray")
        return 0, [("", v) for v in data]
    raise MXNetTypeError("save only accept dict str->NDArray or list of NDArray")


def _encode(kind: int, records: list) -> list[bytes]:
    chunks = [MAGIC, struct.pack("<IIQ", VERSION, kind, len(records))]
    for name, arr in records:
        raw_name = name.encode("utf-8")
        is_rsp = isinstance(arr, RowSparseNDArray)
        values = arr._data if is_rsp else arr._array
        shape = arr.shape
        chunks.append(struct.pack("<I", len(raw_name)) + raw_name)
        chunks.append(struct.pack("<BBH", 1 if is_rsp else 0, _TYPE_FLAGS[values.dtype],
                                  len(shape)))
        chunks.append(struct.pack(f"<{len(shape)}q", *shape))
        if is_rsp:
            idx = _host_le(arr._indices)
            chunks.append(struct.pack("<Q", idx.shape[0]))
            chunks.append(memoryview(idx).cast("B"))
        host = _host_le(values)
        chunks.append(struct.pack("<Q", host.nbytes))
        chunks.append(memoryview(host).cast("B") if host.nbytes else b"")
    return chunks


def save(fname: str | os.PathLike, data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray to ``fname``.

    Dense and row_sparse arrays of any supported dtype; contexts are not
    recorded. The file appears whole or not at all (written to a temporary
    name, then renamed).
    """
    kind, records = _records(data)
    chunks = _encode(kind, records)
    tmp = f"{os.fspath(fname)}.tmp-{os.getpid()}"
    crc = 0
    try:
        with open(tmp, "wb") as f:
            for c in chunks:
                crc = zlib.crc32(c, crc)
                f.write(c)
            f.write(struct.pack("<I", crc & 0xFFFFFFFF))
        os.replace(tmp, fname)
    except OSError as exc:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise MXNetIOError(f"cannot write NDArray file {os.fspath(fname)!r}: {exc}") from None


class _Reader:
    """Bounds-checked little-endian reads from a bytes-like buffer."""

    def __init__(self, buf: memoryview, where: str) -> None:
        self.buf, self.pos, self.where = buf, 0, where

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise MXNetIOError(f"{self.where}: file is truncated or corrupted "
                               f"(needs {n} bytes at offset {self.pos}, has "
                               f"{len(self.buf) - self.pos})")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def array(self, dtype: np.dtype, shape: tuple) -> np.ndarray:
        count = int(np.prod(shape)) if shape else 1
        raw = self.take(count * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _dtype_of(flag: int, where: str) -> np.dtype:
    if flag not in _FLAG_TYPES:
        raise MXNetIOError(f"{where}: unknown dtype code {flag} (corrupted file?)")
    return _FLAG_TYPES[flag]


def _place(arr: np.ndarray, ctx: Context) -> Any:
    return arr if not ctx.is_gpu else to_device(arr, ctx)


def _decode_mxkv(buf: memoryview, ctx: Context, where: str) -> list | dict:
    if len(buf) < len(MAGIC) + 16 + 4:
        raise MXNetIOError(f"{where}: file is truncated ({len(buf)} bytes)")
    (stored_crc,) = struct.unpack("<I", buf[-4:])
    if zlib.crc32(buf[:-4]) & 0xFFFFFFFF != stored_crc:
        raise MXNetIOError(f"{where}: checksum mismatch: the file is corrupted")
    r = _Reader(buf[:-4], where)
    r.take(len(MAGIC))
    version, kind, count = r.unpack("IIQ")
    if version != VERSION:
        raise MXNetIOError(f"{where}: format version {version} is not supported "
                           f"(this mxkv reads version {VERSION})")
    if kind not in (0, 1):
        raise MXNetIOError(f"{where}: unknown container kind {kind}")
    items = []
    for _ in range(count):
        (nlen,) = r.unpack("I")
        name = bytes(r.take(nlen)).decode("utf-8")
        stype, flag, ndim = r.unpack("BBH")
        dtype = _dtype_of(flag, where)
        shape = r.unpack(f"{ndim}q")
        if any(d < 0 for d in shape):
            raise MXNetIOError(f"{where}: negative dimension in shape {shape}")
        if stype == 1:
            if ndim < 1:
                raise MXNetIOError(f"{where}: row_sparse array with 0 dims")
            (nnz,) = r.unpack("Q")
            idx = r.array(np.dtype(np.int64), (nnz,))
            (nbytes,) = r.unpack("Q")
            data = r.array(dtype, (nnz,) + tuple(shape[1:]))
            if data.nbytes != nbytes:
                raise MXNetIOError(f"{where}: array '{name}' records {nbytes} bytes, its "
                                   f"shape needs {data.nbytes}")
            arr = RowSparseNDArray(_place(data, ctx), _place(idx, ctx), shape, ctx)
            arr.check_format()
        elif stype == 0:
            (nbytes,) = r.unpack("Q")
            expected = (int(np.prod(shape)) if shape else 1) * dtype.itemsize
            if nbytes != expected:
                raise MXNetIOError(f"{where}: array '{name}' records {nbytes} bytes, "
                                   f"shape {shape} of {dtype.name} needs {expected}")
            arr = NDArray(_place(r.array(dtype, tuple(shape)), ctx), ctx)
        else:
            raise MXNetIOError(f"{where}: unknown storage type code {stype}")
        items.append((name, arr))
    if r.pos != len(r.buf):
        raise MXNetIOError(f"{where}: {len(r.buf) - r.pos} unexpected bytes after the "
                           f"last array")
    return dict(items) if kind == 1 else [a for _, a in items]


def _mx_shape(r: _Reader, v3: bool) -> tuple | None:
    (ndim,) = r.unpack("i")
    if ndim < 0:
        return None
    return r.unpack(f"{ndim}q")


def _decode_mxnet(buf: memoryview, ctx: Context, where: str) -> list | dict:
    r = _Reader(buf, where)
    _magic, _reserved, count = r.unpack("QQQ")
    arrays = []
    for i in range(count):
        (magic,) = r.unpack("I")
        if magic not in (_MX_V2_MAGIC, _MX_V3_MAGIC):
            raise MXNetIOError(f"{where}: array {i} uses an MXNet NDArray format "
                               f"(magic {magic:#x}) that mxkv does not read")
        v3 = magic == _MX_V3_MAGIC
        (stype,) = r.unpack("i")
        if stype not in (0, 1):
            raise MXNetIOError(f"{where}: array {i} has storage type {stype} "
                               f"({'csr' if stype == 2 else 'unknown'}), not supported")
        storage_shape = _mx_shape(r, v3) if stype == 1 else None
        shape = _mx_shape(r, v3)
        if shape is None or (not v3 and len(shape) == 0):
            arrays.append(None)
            continue
        r.unpack("ii")  # the saved context; arrays load onto `ctx`
        (flag,) = r.unpack("i")
        dtype = _dtype_of(flag, where)
        if stype == 0:
            arrays.append(NDArray(_place(r.array(dtype, tuple(shape)), ctx), ctx))
            continue
        (aux_flag,) = r.unpack("i")
        aux_shape = _mx_shape(r, v3)
        data = r.array(dtype, tuple(storage_shape))
        idx = r.array(_dtype_of(aux_flag, where), tuple(aux_shape)).astype(np.int64)
        rsp = RowSparseNDArray(_place(np.ascontiguousarray(data), ctx),
                               _place(idx, ctx), shape, ctx)
        rsp.check_format()
        arrays.append(rsp)
    (nnames,) = r.unpack("Q")
    names = []
    for _ in range(nnames):
        (n,) = r.unpack("Q")
        names.append(bytes(r.take(n)).decode("utf-8"))
    if any(a is None for a in arrays):
        raise MXNetIOError(f"{where}: the file holds an array with no shape (unsupported)")
    if names:
        if len(names) != len(arrays):
            raise MXNetIOError(f"{where}: {len(names)} names for {len(arrays)} arrays")
        return dict(zip(names, arrays))
    return arrays


def load_frombuffer(buf: bytes | bytearray | memoryview,
                    ctx: Context | None = None) -> list[NDArray] | dict[str, NDArray]:
    """Load arrays saved by :func:`save` (or MXNet's ``nd.save``) from bytes."""
    return _decode(memoryview(buf).cast("B"), ctx or cpu(0), "NDArray buffer")


def _decode(buf: memoryview, ctx: Context, where: str) -> list | dict:
    if bytes(buf[:len(MAGIC)]) == MAGIC:
        return _decode_mxkv(buf, ctx, where)
    if len(buf) >= 8 and struct.unpack("<Q", buf[:8])[0] == _MX_LIST_MAGIC:
        return _decode_mxnet(buf, ctx, where)
    raise MXNetIOError(f"{where}: not an NDArray file (unknown magic "
                       f"{bytes(buf[:8])!r})")


def load(fname: str | os.PathLike,
         ctx: Context | None = None) -> list[NDArray] | dict[str, NDArray]:
    """Load the arrays in ``fname``: a list, or a dict when saved from a dict.

    Reads this module's format and MXNet 1.x's. Arrays land on ``ctx``
    (default ``cpu(0)``, as MXNet loads CPU-saved arrays).
    """
    path = os.fspath(fname)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise MXNetIOError(f"cannot open NDArray file {path!r}: {exc.strerror}") from None
    return _decode(memoryview(raw), ctx or cpu(0), f"NDArray file {path!r}")
