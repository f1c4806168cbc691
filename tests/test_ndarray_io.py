"""nd.save / nd.load: MXNet's file format both ways, round trips, corruption errors."""
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.ndarray import io

nd = mx.nd
DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"]

# Written by the real MXNet 1.9.1:
#   nd.save(f, {'w': nd.array([[1,2],[3,4]], dtype='float64'),
#               'i': nd.array([5,6], dtype='int32'),
#               'r': nd.sparse.row_sparse_array(([[1.5,2.5]],[2]), shape=(4,2))})
MXNET_DICT_FILE = bytes.fromhex(
    "120100000000000000000000000000000300000000000000c9fa93f90000000002000000020000000000"
    "00000200000000000000010000000000000001000000000000000000f03f000000000000004000000000"
    "000008400000000000001040c9fa93f9000000000100000002000000000000000100000000000000040000"
    "000500000006000000c9fa93f901000000020000000100000000000000020000000000000002000000040000"
    "00000000000200000000000000010000000000000000000000060000000100000001000000000000000000"
    "c03f000020400200000000000000030000000000000001000000000000007701000000000000006901000000"
    "0000000072")
#   nd.save(f, [nd.array([1,2], dtype='float16'), nd.array([7], dtype='uint8')])
MXNET_LIST_FILE = bytes.fromhex(
    "120100000000000000000000000000000200000000000000c9fa93f9000000000100000002000000000000"
    "00010000000000000002000000003c0040c9fa93f900000000010000000100000000000000010000000000"
    "000003000000070000000000000000")


def same(a, b):
    return a.stype == b.stype and a.dtype is b.dtype and a.shape == b.shape and \
        np.array_equal(a.asnumpy(), b.asnumpy())


def test_list_round_trip(tmp_path):
    f = str(tmp_path / "x.nd")
    arrs = [nd.array([[1, 2], [3, 4]]), nd.arange(5, dtype="int64")]
    nd.save(f, arrs)
    back = nd.load(f)
    assert isinstance(back, list) and len(back) == 2
    assert all(same(a, b) for a, b in zip(arrs, back))


def test_dict_round_trip_keeps_names_and_order(tmp_path):
    f = tmp_path / "d.nd"
    data = {"weight": nd.ones((2, 3)), "bias": nd.zeros((3,)), "ünï": nd.array([1])}
    nd.save(f, data)
    back = nd.load(f)
    assert list(back) == ["weight", "bias", "ünï"]
    assert all(same(data[k], back[k]) for k in data)


def test_single_ndarray_saves_as_a_list(tmp_path):
    f = str(tmp_path / "s.nd")
    nd.save(f, nd.array([1, 2]))
    back = nd.load(f)
    assert isinstance(back, list) and back[0].asnumpy().tolist() == [1, 2]


def test_empty_list_and_dict_load_as_empty_lists_as_in_mxnet(tmp_path):
    nd.save(str(tmp_path / "l"), [])
    nd.save(str(tmp_path / "d"), {})
    assert nd.load(str(tmp_path / "l")) == []
    assert nd.load(str(tmp_path / "d")) == []  # no names to tell a dict: MXNet says [] too


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_exactly(tmp_path, dtype):
    f = str(tmp_path / "t.nd")
    a = nd.array(np.array([[0, 1, 2], [3, 4, 5]]) % 2 if dtype == "bool"
                 else [[0, 1, 2], [3, 4, 127]], dtype=dtype)
    nd.save(f, [a])
    assert same(a, nd.load(f)[0])


def test_float_values_round_trip_bit_exactly(tmp_path):
    f = str(tmp_path / "t.nd")
    vals = np.array([np.pi, -0.0, 1e-30, np.inf, -np.inf], dtype=np.float64)
    nd.save(f, [nd.array(vals, dtype="float64")])
    assert nd.load(f)[0].asnumpy().tobytes() == vals.tobytes()


def test_zero_size_and_0d_arrays_round_trip(tmp_path):
    f = str(tmp_path / "z.nd")
    arrs = [nd.zeros((0, 3)), nd.array(2.5)]
    nd.save(f, arrs)
    back = nd.load(f)
    assert back[0].shape == (0, 3) and back[1].shape == () and back[1].asnumpy() == 2.5


def test_row_sparse_round_trip(tmp_path):
    f = str(tmp_path / "r.nd")
    r = nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2), dtype="float64")
    empty = nd.sparse.zeros("row_sparse", (3, 4), dtype="int32")
    nd.save(f, {"r": r, "e": empty, "d": nd.ones((2,))})
    back = nd.load(f)
    assert same(back["r"], r) and back["r"].indices.asnumpy().tolist() == [1, 3]
    assert same(back["e"], empty) and back["e"].indices.shape == (0,)
    assert back["d"].stype == "default"


def test_load_puts_arrays_on_cpu0_by_default_and_on_ctx_when_asked(tmp_path):
    f = str(tmp_path / "c.nd")
    nd.save(f, [nd.ones((2,), ctx=mx.cpu(3))])
    assert nd.load(f)[0].context == mx.cpu(0)
    assert nd.load(f, ctx=mx.cpu(2))[0].context == mx.cpu(2)


def test_loaded_arrays_are_independent_and_writable(tmp_path):
    f = str(tmp_path / "w.nd")
    nd.save(f, [nd.ones((2,)), nd.ones((2,))])
    a, b = nd.load(f)
    a += 1
    assert a.asnumpy().tolist() == [2, 2] and b.asnumpy().tolist() == [1, 1]


def test_file_is_mxnets_list_format_with_a_crc_trailer(tmp_path):
    f = str(tmp_path / "m.nd")
    nd.save(f, [nd.ones((1,))])
    raw = Path(f).read_bytes()
    assert struct.unpack("<QQQ", raw[:24]) == (0x112, 0, 1)
    assert struct.unpack("<I", raw[24:28]) == (0xF993FAC9,)
    assert raw[-12:-4] == b"MXKVCRC1"
    assert struct.unpack("<I", raw[-4:])[0] == zlib.crc32(raw[:-12]) & 0xFFFFFFFF


def test_save_writes_the_bytes_mxnet_writes(tmp_path):
    # The same arrays as MXNET_DICT_FILE, on cpu(0): byte for byte what MXNet wrote.
    f = str(tmp_path / "same.params")
    nd.save(f, {"w": nd.array([[1, 2], [3, 4]], dtype="float64"),
                "i": nd.array([5, 6], dtype="int32"),
                "r": nd.sparse.row_sparse_array(([[1.5, 2.5]], [2]), shape=(4, 2))})
    assert Path(f).read_bytes()[:-12] == MXNET_DICT_FILE


def test_save_leaves_no_temporary_file(tmp_path):
    nd.save(str(tmp_path / "a.nd"), [nd.ones((1,))])
    assert os.listdir(tmp_path) == ["a.nd"]


def test_load_frombuffer(tmp_path):
    f = str(tmp_path / "b.nd")
    nd.save(f, {"x": nd.array([3, 4])})
    back = io.load_frombuffer(Path(f).read_bytes())
    assert back["x"].asnumpy().tolist() == [3, 4]


@pytest.mark.parametrize("bad", [{1: nd.ones((1,))}, [1, 2], "text", [nd.ones((1,)), None]])
def test_save_rejects_what_mxnet_rejects(tmp_path, bad):
    with pytest.raises(TypeError, match="dict str->NDArray or list of NDArray"):
        nd.save(str(tmp_path / "x"), bad)
    assert not os.listdir(tmp_path)


def test_load_missing_file_raises_naming_it(tmp_path):
    with pytest.raises(MXNetError, match="nonexistent"):
        nd.load(str(tmp_path / "nonexistent"))


def test_load_garbage_raises_not_an_ndarray_file(tmp_path):
    f = tmp_path / "g"
    f.write_bytes(b"garbage bytes here")
    with pytest.raises(MXNetError, match="not an NDArray file"):
        nd.load(str(f))


def test_load_flipped_byte_raises_checksum_error(tmp_path):
    f = tmp_path / "c.nd"
    nd.save(str(f), [nd.arange(10)])
    raw = bytearray(f.read_bytes())
    raw[40] ^= 0xFF
    f.write_bytes(bytes(raw))
    with pytest.raises(MXNetError, match="corrupted"):
        nd.load(str(f))


def test_load_truncated_file_raises(tmp_path):
    f = tmp_path / "t.nd"
    nd.save(str(f), [nd.arange(10)])
    f.write_bytes(f.read_bytes()[:-9])
    with pytest.raises(MXNetError, match="corrupted|truncated"):
        nd.load(str(f))


def test_file_without_the_trailer_still_loads(tmp_path):
    f = tmp_path / "n.nd"
    nd.save(str(f), [nd.arange(4)])
    f.write_bytes(f.read_bytes()[:-12])
    assert nd.load(str(f))[0].asnumpy().tolist() == [0, 1, 2, 3]


def test_load_inconsistent_name_count_raises(tmp_path):
    raw = bytearray(MXNET_LIST_FILE)
    raw[-8:] = struct.pack("<Q", 1)  # one name for two arrays
    with pytest.raises(MXNetError, match="1 names for 2 arrays"):
        io.load_frombuffer(bytes(raw) + struct.pack("<Q", 1) + b"x")


def test_load_unknown_dtype_flag_raises():
    raw = bytearray(MXNET_LIST_FILE)
    raw[52:56] = struct.pack("<i", 42)  # the first array's dtype flag
    with pytest.raises(MXNetError, match="unknown dtype flag 42"):
        io.load_frombuffer(bytes(raw))


def test_load_trailing_garbage_raises():
    with pytest.raises(MXNetError, match="unexpected bytes"):
        io.load_frombuffer(MXNET_LIST_FILE + b"\x00\x01")


def test_load_unsorted_row_sparse_indices_raises():
    raw = bytearray(MXNET_DICT_FILE)
    at = raw.rfind(struct.pack("<q", 2))  # the 'r' array's one index, set out of range
    raw[at:at + 8] = struct.pack("<q", 9)
    with pytest.raises(MXNetError, match="out of range"):
        io.load_frombuffer(bytes(raw))


def test_load_reads_mxnet_dict_files(tmp_path):
    f = tmp_path / "mx.params"
    f.write_bytes(MXNET_DICT_FILE)
    d = nd.load(str(f))
    assert list(d) == ["w", "i", "r"]
    assert d["w"].dtype is np.float64 and d["w"].asnumpy().tolist() == [[1, 2], [3, 4]]
    assert d["i"].dtype is np.int32 and d["i"].asnumpy().tolist() == [5, 6]
    assert d["r"].stype == "row_sparse" and d["r"].indices.asnumpy().tolist() == [2]
    assert d["r"].asnumpy().tolist() == [[0, 0], [0, 0], [1.5, 2.5], [0, 0]]


def test_load_reads_mxnet_list_files():
    back = io.load_frombuffer(MXNET_LIST_FILE)
    assert [a.dtype for a in back] == [np.float16, np.uint8]
    assert [a.asnumpy().tolist() for a in back] == [[1, 2], [7]]


def test_load_truncated_mxnet_file_raises():
    with pytest.raises(MXNetError, match="truncated"):
        io.load_frombuffer(MXNET_LIST_FILE[:50])


@pytest.mark.requires_gpu
def test_gpu_arrays_save_and_load_onto_a_gpu(tmp_path):
    f = str(tmp_path / "g.nd")
    g = nd.array([[1, 2]], ctx=mx.gpu(0))
    r = nd.sparse.row_sparse_array(([[1, 2]], [1]), shape=(3, 2), ctx=mx.gpu(0))
    nd.save(f, {"g": g, "r": r})
    back = nd.load(f, ctx=mx.gpu(0))
    assert back["g"].context == mx.gpu(0) and back["g"].asnumpy().tolist() == [[1, 2]]
    assert back["r"].context == mx.gpu(0) and back["r"].asnumpy()[1].tolist() == [1, 2]
    assert nd.load(f)["g"].context == mx.gpu(0)  # as MXNet: saved on a GPU, loaded there
