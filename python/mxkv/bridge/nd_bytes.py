"""One NDArray as bytes, in MXNet's own layout (``ndarray/serialize``).

clojure-mxnet's ``serialize`` returned what MXNet's ``MXNDArraySaveRawBytes``
writes (also what MXNet's Python pickles inside an NDArray), and
``deserialize`` read it back onto the context it was saved from. The layout
(little-endian; format V2)::

    u32 magic 0xF993FAC9
    i32 storage type: 0 dense, 1 row_sparse
    row_sparse only: the storage shape (u32 ndim, ndim x i64)
    shape    u32 ndim, ndim x i64
    context  i32 device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared), i32 device id
    i32 type flag (0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool)
    row_sparse only: i32 index type flag, index shape (u32 ndim, ndim x i64)
    the data bytes (C order); row_sparse: then the row indices

Written here, read by the engine's ``nd.load_frombuffer`` (the layout is one
record of MXNet's array-list file), so it works for any engine backend.
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..base import MXNetValueError

__all__ = ["dumps", "loads"]

_MAGIC = 0xF993FAC9
_LIST_MAGIC = 0x112  # MXNet's array-list file
_FLAGS = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
          np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
          np.dtype(np.int64): 6, np.dtype(np.bool_): 7}
_DEVICES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}


def _shape(dims) -> bytes:
    return struct.pack(f"<I{len(dims)}q", len(dims), *dims)


def dumps(arr: Any) -> bytes:
    """The bytes of ``arr`` (dense or row_sparse) in MXNet's V2 layout."""
    ctx = arr.context
    head = [struct.pack("<I", _MAGIC)]
    dtype = np.dtype(arr.dtype)
    if getattr(arr, "stype", "default") == "row_sparse":
        data = np.ascontiguousarray(arr.data.asnumpy(), dtype=dtype.newbyteorder("<"))
        idx = np.ascontiguousarray(arr.indices.asnumpy(), dtype="<i8")
        head += [struct.pack("<i", 1), _shape(data.shape), _shape(arr.shape),
                 struct.pack("<iii", ctx.device_typeid, ctx.device_id, _FLAGS[dtype]),
                 struct.pack("<i", _FLAGS[np.dtype(np.int64)]), _shape(idx.shape),
                 data.tobytes(), idx.tobytes()]
        return b"".join(head)
    if getattr(arr, "stype", "default") != "default":
        raise MXNetValueError(f"serialize: storage type {arr.stype} is not supported")
    data = np.ascontiguousarray(arr.asnumpy(), dtype=dtype.newbyteorder("<"))
    head += [struct.pack("<i", 0), _shape(arr.shape),
             struct.pack("<iii", ctx.device_typeid, ctx.device_id, _FLAGS[dtype]),
             data.tobytes()]
    return b"".join(head)


def _saved_context(raw: bytes) -> tuple:
    """(device type, device id) recorded in ``raw``, after its shapes."""
    try:
        magic, stype = struct.unpack_from("<Ii", raw, 0)
        if magic != _MAGIC:
            raise MXNetValueError(f"deserialize: not a serialized NDArray (magic {magic:#x}, "
                                  f"expected {_MAGIC:#x})")
        pos = 8
        for _ in range(2 if stype == 1 else 1):  # storage shape (row_sparse), shape
            (ndim,) = struct.unpack_from("<I", raw, pos)
            pos += 4 + 8 * ndim
        dev_type, dev_id = struct.unpack_from("<ii", raw, pos)
    except struct.error:
        raise MXNetValueError(f"deserialize: {len(raw)} bytes are not a whole serialized "
                              "NDArray") from None
    if dev_type not in _DEVICES:
        raise MXNetValueError(f"deserialize: unknown device type {dev_type}")
    return _DEVICES[dev_type], dev_id


def loads(mx, raw: bytes):
    """The NDArray in ``raw`` (as written by :func:`dumps` or MXNet), on its
    saved context. Read by the engine's ``nd.load_frombuffer``: ``raw`` is
    the one record of an MXNet array-list file."""
    dev_type, dev_id = _saved_context(raw)
    listed = struct.pack("<QQQ", _LIST_MAGIC, 0, 1) + raw + struct.pack("<Q", 0)
    try:
        (arr,) = mx.nd.load_frombuffer(listed)
    except (OSError, RuntimeError, ValueError) as exc:
        raise MXNetValueError(f"deserialize: not a whole serialized NDArray: {exc}") from None
    ctx = mx.Context(dev_type, dev_id)
    return arr if arr.context == ctx else arr.as_in_context(ctx)
