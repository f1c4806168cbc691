"""``nd.save`` / ``nd.load`` in Apache MXNet 1.x's own file format.

Files move both ways: what ``mx.nd.save`` writes here loads in MXNet 1.9
(``mx.nd.load``, ``gluon``'s ``load_parameters``...), and what MXNet
writes loads here. All integers are little-endian; the layout is MXNet's
``NDArray::Save`` list (``src/ndarray/ndarray.cc``)::

    u64  0x112 (list magic)           u64  0 (reserved)
    u64  count, then per array:
         u32  magic: 0xF993FAC9 (V2), or 0xF993FACA (V3, numpy shapes: 0-d arrays)
         i32  storage type: 0 default, 1 row_sparse
         row_sparse only: storage shape = (nnz,) + shape[1:]
         shape                     (a shape is i32 ndim, then ndim x i64)
         i32  device type (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared), i32 device id
         i32  dtype flag (0 float32, 1 float64, 2 float16, 3 uint8, 4 int32,
              5 int8, 6 int64, 7 bool)
         row_sparse only: i32 index dtype flag (6, int64), index shape (nnz,)
         the data, C order (row_sparse: the nnz stored rows)
         row_sparse only: the nnz row indices
    u64  name count (0 for a list), then per name: u64 length, UTF-8 bytes
    mxkv trailer (optional): b"MXKVCRC1", u32 CRC-32 (zlib) of every byte before it

MXNet stops reading after the names, so it loads files with mxkv's trailer;
mxkv checks the trailer when present. What ``load`` checks is listed in
``docs/ndarray.md``. ``io_legacy.py`` reads the older layouts (MXNet's v0/V1
arrays, and mxkv 0.1's own format); ``io_base.py`` holds what both read with.
"""
from __future__ import annotations

import os
import struct
from typing import Any, Iterable, List, Optional, Tuple

import numpy as np

from ..base import MXNetIOError
from ..context import Context, cpu
from ..fileio import TRAILER, Chunk, atomic_write, check_trailer, read_bytes, with_trailer
from ._util import MXNetTypeError, is_host, to_device
from .csr import CSRNDArray
from .io_base import (
    _DEV_TYPES,
    FLAG_TYPES,
    LIST_MAGIC,
    TYPE_FLAGS,
    V2_MAGIC,
    V3_MAGIC,
    Reader,
    dtype_of,
    place,
    saved_context,
)
from .io_legacy import MXKV1_MAGIC, decode_legacy_array, decode_mxkv1
from .ndarray import NDArray, provide
from .row_sparse import RowSparseNDArray

__all__ = ["LIST_MAGIC", "TRAILER", "load", "load_frombuffer", "save"]


# ---------------------------------------------------------------------- writing
def _host_le(arr: Any) -> np.ndarray:
    """A little-endian C-contiguous host view (or copy, from a GPU) of ``arr``."""
    host = arr if is_host(arr) else arr.get()
    host = np.ascontiguousarray(host)
    if host.dtype.byteorder == ">":
        host = host.astype(host.dtype.newbyteorder("<"))
    return host


def _shape(dims: Iterable[int]) -> bytes:
    dims = tuple(int(d) for d in dims)
    return struct.pack(f"<i{len(dims)}q", len(dims), *dims)


def encode_array(arr: NDArray, v3: bool = False) -> List[Chunk]:
    """One array as MXNet's ``NDArray::Save`` writes it (the bytes of a pickle too)."""
    ctx = arr.context
    if arr.stype == "csr":
        return _encode_csr(arr, v3)
    rsp = arr if isinstance(arr, RowSparseNDArray) else None
    values = rsp._data if rsp is not None else arr._array
    chunks: List[Chunk] = [struct.pack("<Ii", V3_MAGIC if v3 else V2_MAGIC,
                                       0 if rsp is None else 1)]
    if rsp is not None:
        chunks.append(_shape(values.shape))
    chunks.append(_shape(arr.shape))
    chunks.append(struct.pack("<iii", _DEV_TYPES.get(ctx.device_type, 1), ctx.device_id,
                              TYPE_FLAGS[np.dtype(values.dtype)]))
    if rsp is not None:
        chunks.append(struct.pack("<i", TYPE_FLAGS[np.dtype(np.int64)]))
        chunks.append(_shape(rsp._indices.shape))
    host = _host_le(values)
    chunks.append(host.data.cast("B") if host.nbytes else b"")
    if rsp is not None:
        idx = _host_le(rsp._indices)
        chunks.append(idx.data.cast("B") if idx.nbytes else b"")
    return chunks


def _encode_csr(arr: Any, v3: bool) -> List[Chunk]:
    """A csr array as ``NDArray::Save``: storage shape (nnz,), shape, context,
    dtype, then the aux arrays indptr and indices (int64), the values, indptr,
    indices."""
    data, indices, indptr = arr._csr
    ctx = arr.context
    chunks: List[Chunk] = [
        struct.pack("<Ii", V3_MAGIC if v3 else V2_MAGIC, 2), _shape(data.shape),
        _shape(arr.shape),
        struct.pack("<iii", _DEV_TYPES.get(ctx.device_type, 1), ctx.device_id,
                    TYPE_FLAGS[np.dtype(data.dtype)])]
    for aux in (indptr, indices):
        chunks.append(struct.pack("<i", TYPE_FLAGS[np.dtype(np.int64)]))
        chunks.append(_shape(aux.shape))
    for a in (data, indptr, indices):
        host = _host_le(a)
        chunks.append(host.data.cast("B") if host.nbytes else b"")
    return chunks


def _decode_csr(r: Any, i: int, shape: tuple, where: Any, dtype: np.dtype,
                storage: Optional[tuple]) -> Any:
    auxes = []
    for what in ("indptr", "indices"):
        (flag,) = r.unpack("i")
        aux_shape = r.shape(f"array {i}'s csr {what} shape")
        if flag not in (4, 6) or aux_shape is None or len(aux_shape) != 1:
            raise r.fail(f"array {i} has csr {what} of dtype flag {flag} and shape "
                         f"{aux_shape}: the file is corrupted")
        auxes.append((flag, aux_shape))
    if len(shape) != 2 or storage is None or len(storage) != 1 \
            or auxes[0][1][0] != shape[0] + 1:
        raise r.fail(f"array {i}: csr storage shape {storage} does not fit shape {shape}: "
                     "the file is corrupted")
    nnz = auxes[1][1][0]
    data = r.array(dtype, (nnz,))
    indptr = r.array(FLAG_TYPES[auxes[0][0]], auxes[0][1])
    indices = r.array(FLAG_TYPES[auxes[1][0]], (nnz,))
    try:
        return CSRNDArray(data, indices, indptr, shape, where)
    except ValueError as exc:
        raise r.fail(f"array {i}: {exc}: the file is corrupted") from None


def _records(data: Any) -> Tuple[List[str], List[NDArray]]:
    msg = "save only accept dict str->NDArray or list of NDArray"
    if isinstance(data, NDArray):
        return [], [data]
    if isinstance(data, dict):
        if not all(isinstance(k, str) and isinstance(v, NDArray) for k, v in data.items()):
            raise MXNetTypeError(msg)
        return list(data.keys()), list(data.values())
    if isinstance(data, (list, tuple)):
        if not all(isinstance(v, NDArray) for v in data):
            raise MXNetTypeError(msg)
        return [], list(data)
    raise MXNetTypeError(msg)


def encode(data: Any) -> List[Chunk]:
    """The chunks of a whole file (trailer excluded) for ``data``."""
    names, arrays = _records(data)
    # MXNet 1.x has no 0-d arrays outside numpy-shape mode: V3 records carry
    # them (MXNet then loads the file inside ``mx.np_shape(True)``).
    v3 = any(a.ndim == 0 for a in arrays)
    if v3 and any(isinstance(a, RowSparseNDArray) for a in arrays):
        raise MXNetTypeError("save: a file holding a 0-d array cannot also hold row_sparse "
                             "arrays (MXNet's numpy-shape format has no sparse storage)")
    chunks: List[Chunk] = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for a in arrays:
        chunks.extend(encode_array(a, v3))
    chunks.append(struct.pack("<Q", len(names)))
    for n in names:
        raw = n.encode("utf-8")
        chunks.append(struct.pack("<Q", len(raw)) + raw)
    return chunks


def save(fname: str | os.PathLike, data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray to ``fname``.

    The file is MXNet's format (dense and row_sparse, every dtype; see the
    module docstring) plus a CRC-32 trailer that MXNet ignores and
    :func:`load` checks. It appears whole or not at all, whatever happens
    (written to a temporary in the same directory, synced, then renamed:
    :func:`mxkv.fileio.atomic_write`), and threads saving to one path at once
    all succeed.

    >>> mx.nd.save('weights.params', {'w': mx.nd.ones((2,))})
    >>> mx.nd.load('weights.params')['w'].asnumpy()
    array([1., 1.], dtype=float32)
    """
    atomic_write(fname, with_trailer(encode(data)), "NDArray file")


# ---------------------------------------------------------------------- reading

def decode_array(r: Reader, i: int, ctx: Optional[Context],
                 keep_cpu: bool = False) -> Optional[NDArray]:
    """The next array record (V2 or V3; older ones via io_legacy); None for
    MXNet's 'none' array (no shape)."""
    (magic,) = r.unpack("I")
    if magic not in (V2_MAGIC, V3_MAGIC):
        return decode_legacy_array(r, magic, i, ctx)
    v3 = magic == V3_MAGIC
    (stype,) = r.unpack("i")
    if stype not in (0, 1, 2):
        raise r.fail(f"array {i} has storage type {stype} (unknown: corrupted file)")
    storage = r.shape(f"array {i}'s storage shape") if stype else None
    shape = r.shape(f"array {i}'s shape")
    if shape is None or (not v3 and len(shape) == 0):
        return None  # MXNet's 'none' NDArray: nothing else follows
    dev_type, dev_id, flag = r.unpack("iii")
    where = ctx or saved_context(dev_type, dev_id, r, keep_cpu)
    dtype = dtype_of(flag, r)
    if stype == 0:
        return NDArray(place(r.array(dtype, shape), where), where)
    if stype == 2:  # csr: kept in host memory (csr.py)
        return _decode_csr(r, i, shape, where if not where.uses_cupy else Context("cpu", 0),
                           dtype, storage)
    (aux_flag,) = r.unpack("i")
    aux_shape = r.shape(f"array {i}'s index shape")
    if aux_flag not in (4, 6) or aux_shape is None or len(aux_shape) != 1:
        raise r.fail(f"array {i} has row_sparse indices of dtype flag {aux_flag} and shape "
                     f"{aux_shape}: the file is corrupted")
    if not shape or storage is None or tuple(storage[1:]) != tuple(shape[1:]):
        raise r.fail(f"array {i}: row_sparse storage shape {storage} does not fit shape "
                     f"{shape}: the file is corrupted")
    nnz = aux_shape[0]
    if nnz > shape[0]:
        raise r.fail(f"array {i}: {nnz} stored rows for shape {shape}: the file is corrupted")
    # MXNet writes the storage shape before waiting for pending writes, so its
    # row count can be stale; the index count (and the data written) is not.
    data = r.array(dtype, (nnz,) + tuple(shape[1:]))
    idx = r.array(FLAG_TYPES[aux_flag], (nnz,)).astype(np.int64)
    out = RowSparseNDArray(place(data, where), place(idx, where), shape, where)
    try:
        out.check_format()
    except ValueError as exc:
        raise r.fail(f"array {i}: {exc}: the file is corrupted") from None
    return out


def _names(r: Reader, count: int) -> List[str]:
    (n,) = r.unpack("Q")
    if n not in (0, count):
        raise r.fail(f"{n} names for {count} arrays: the file is corrupted")
    names = []
    for _ in range(n):
        (length,) = r.unpack("Q")
        try:
            names.append(bytes(r.take(length)).decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail("a name is not valid UTF-8: the file is corrupted") from None
    return names


def decode(buf: memoryview, ctx: Optional[Context], where: str) -> list | dict:
    """Arrays from a whole file held in ``buf``."""
    if bytes(buf[:len(MXKV1_MAGIC)]) == MXKV1_MAGIC:
        return decode_mxkv1(buf, ctx or cpu(0), where)
    end = check_trailer(buf, where)
    r = Reader(buf, where, end)
    if end < 24:
        raise r.fail(f"not an NDArray file: {end} bytes is too short")
    magic, _reserved, count = r.unpack("QQQ")
    if magic != LIST_MAGIC:
        raise r.fail(f"not an NDArray file (magic {magic:#x}, expected {LIST_MAGIC:#x})")
    if count > end // 12:
        raise r.fail(f"the header announces {count} arrays: the file is corrupted")
    arrays = [decode_array(r, i, ctx) for i in range(count)]
    names = _names(r, count)
    if r.pos != end:
        raise r.fail(f"{end - r.pos} unexpected bytes after the last name: the file is "
                     "corrupted")
    if any(a is None for a in arrays):
        raise MXNetIOError(f"{where}: array {[a is None for a in arrays].index(True)} has no "
                           "shape (an empty MXNet NDArray), which mxkv does not represent")
    return dict(zip(names, arrays)) if names else arrays


def restore_state(raw: bytes) -> NDArray:
    """The array of one ``NDArray::Save`` record (a pickle's ``handle``), on
    its saved CPU context, or its GPU (``cpu(0)`` when that GPU is absent)."""
    r = Reader(memoryview(raw), "NDArray pickle")
    arr = decode_array(r, 0, None, keep_cpu=True)
    if arr is None or r.pos != r.end:
        raise r.fail("not a single NDArray record")
    return arr


def pickle_state(arr: NDArray) -> dict:
    """MXNet's pickle state of ``arr`` (``NDArray.__getstate__``): its
    ``NDArray::Save`` record as ``handle``."""
    return {"handle": bytearray(b"".join(bytes(c) for c in encode_array(arr)))}


def from_pickle_state(state: dict) -> NDArray:
    """The array a pickle's state holds (``NDArray.__setstate__``): MXNet's
    (``handle``: :func:`restore_state`) or mxkv 0.1's (``ctx`` with ``array``,
    or with ``data``, ``indices`` and ``shape`` for a row_sparse one)."""
    if "handle" in state:
        return restore_state(bytes(state["handle"]))
    ctx = Context(*state["ctx"])
    if "indices" in state:
        return RowSparseNDArray(to_device(state["data"], ctx), to_device(state["indices"], ctx),
                                state["shape"], ctx)
    arr = state["array"]
    return NDArray(arr if not ctx.uses_cupy else to_device(arr, ctx), ctx)


def load_frombuffer(buf: bytes | bytearray | memoryview,
                    ctx: Context | None = None) -> list[NDArray] | dict[str, NDArray]:
    """Load arrays saved by :func:`save` (or MXNet's ``nd.save``) from bytes.

    Raises MXNetError (an ``MXNetIOError``) when the bytes are truncated or
    corrupted.
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetTypeError(f"buf required to be bytes, got {type(buf).__name__}")
    return decode(memoryview(buf).cast("B"), ctx, "NDArray buffer")


def load(fname: str | os.PathLike,
         ctx: Context | None = None) -> list[NDArray] | dict[str, NDArray]:
    """Load the arrays in ``fname``: a list, or a dict when saved from a dict.

    Reads MXNet 1.x files (and mxkv's). Arrays land where MXNet puts them
    (``cpu(0)``; an array saved on a GPU on that GPU when there is one), or
    on ``ctx`` when given (mxkv's addition).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'pair.params')
    >>> mx.nd.save(path, [mx.nd.ones((2,)), mx.nd.zeros((1,), dtype='int32')])
    >>> [(a.shape, a.dtype.__name__) for a in mx.nd.load(path)]
    [((2,), 'float32'), ((1,), 'int32')]
    """
    raw = read_bytes(fname, "NDArray file")
    return decode(memoryview(raw), ctx, f"NDArray file {os.fspath(fname)!r}")


provide(pickle_state=pickle_state, from_pickle_state=from_pickle_state)
