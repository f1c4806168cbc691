"""Parity scenarios for NDArray details and files interchangeable with MXNet.

A file scenario saves arrays with ``mx.nd.save`` and returns the file's bytes
(hex; mxkv's CRC trailer, which MXNet ignores, taken off) and what loading
them gives. Equal bytes mean MXNet reads mxkv's files exactly as its own;
``tests/test_parity.py`` also loads the bytes MXNet wrote with mxkv.

Registered into ``scenarios.SCENARIOS`` when ``scenarios`` is imported.
"""
from __future__ import annotations

import os
import struct
import tempfile
import zlib

import numpy as np

from .scenarios import attempt, describe, scenario, values

TRAILER = b"MXKVCRC1"
DTYPES = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool")


def _without_trailer(raw: bytes) -> bytes:
    return raw[:-12] if raw[-12:-4] == TRAILER else raw


def _save_and_load(mx, data) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "x.params")
        mx.nd.save(f, data)
        with open(f, "rb") as fh:
            raw = fh.read()
        loaded = mx.nd.load(f)
    if isinstance(loaded, dict):
        back = {k: describe(v) for k, v in sorted(loaded.items())}
    else:
        back = [describe(v) for v in loaded]
    return {"bytes": _without_trailer(raw).hex(), "loaded": back}


def _arrays(mx):
    src = np.array([[0, 1, 2], [3, 4, 127]])
    return {d: mx.nd.array(src % 2 if d == "bool" else src, dtype=d) for d in DTYPES}


@scenario()
def scenario_file_every_dtype_as_a_list(mx):
    return _save_and_load(mx, list(_arrays(mx).values()))


@scenario()
def scenario_file_every_dtype_as_a_dict(mx):
    return _save_and_load(mx, _arrays(mx))


@scenario()
def scenario_file_row_sparse_every_float_dtype(mx):
    data = {}
    for d in ("float32", "float64", "float16"):
        data["r_" + d] = mx.nd.sparse.row_sparse_array(
            (np.array([[1.5, -2], [3, 4]], dtype=d), np.array([1, 3], dtype=np.int64)),
            shape=(5, 2), dtype=d)
    data["empty"] = mx.nd.sparse.zeros("row_sparse", (4, 3), dtype="int32")
    data["dense"] = mx.nd.ones((2,))
    return _save_and_load(mx, data)


@scenario()
def scenario_file_single_array_loads_as_a_list(mx):
    return _save_and_load(mx, mx.nd.arange(6).reshape((2, 3)))


@scenario()
def scenario_file_loads_ignoring_mxkvs_checksum_trailer(mx):
    """What mxkv appends after MXNet's layout: MXNet's reader stops before it."""
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "x.params")
        mx.nd.save(f, {"w": mx.nd.array([[1, 2], [3, 4]])})
        with open(f, "rb") as fh:
            body = _without_trailer(fh.read())
    raw = body + TRAILER + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
    return {k: describe(v) for k, v in mx.nd.load_frombuffer(raw).items()}


@scenario()
def scenario_file_truncated_buffer_raises(mx):
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "x.params")
        mx.nd.save(f, [mx.nd.arange(10)])
        with open(f, "rb") as fh:
            raw = _without_trailer(fh.read())
    return attempt(lambda: values(mx.nd.load_frombuffer(raw[:-10])[0]))


# --------------------------------------------------------------------------- NDArray details

@scenario()
def scenario_nd_one_element_value_into_one_element(mx):
    b = mx.nd.zeros((2, 3))
    b[0, 1] = mx.nd.array([7])
    c = mx.nd.zeros(1)
    c[0] = np.array([47.844944], dtype=np.float32)
    return {"b": values(b), "c": values(c)}


@scenario()
def scenario_nd_flatten_copies_unless_inplace(mx):
    t = (mx.nd.arange(30) + 1).reshape(2, 3, 5)
    copy, view = t.flatten(), t.flatten(inplace=True)
    t[0] = -1
    return {"copy": values(copy), "view": values(view)}


@scenario()
def scenario_nd_reshape_special_dims(mx):
    t = mx.nd.arange(30).reshape(2, 3, 5)
    specs = {"-2": ((-2,), {}), "-3,-1": ((-3, -1), {}), "0,-3": ((0, -3), {}),
             "-4,1,2,-2": ((-4, 1, 2, -2), {}), "-1,0": ((-1, 0), {}),
             "-1,0 reverse": ((-1, 0), {"reverse": True})}
    return {k: list(t.reshape(*a, **kw).shape) for k, (a, kw) in specs.items()}


@scenario()
def scenario_nd_row_sparse_array_shape_rules(mx):
    sp = mx.nd.sparse
    return {
        "dense_3x4_as_4x4": attempt(lambda: describe(
            sp.row_sparse_array(mx.nd.ones((3, 4)), shape=(4, 4)))),
        "shape_tuple_mismatch": attempt(lambda: describe(sp.row_sparse_array((2, 2),
                                                                             shape=(3, 2)))),
        "list_of_lists": describe(sp.row_sparse_array([[1, 2], [0, 0], [3, 4]])),
        "three_dim_shape": list(sp.row_sparse_array((2, 3, 4)).shape),
    }


@scenario()
def scenario_nd_row_sparse_assign_scalar(mx):
    r = mx.nd.sparse.zeros("row_sparse", (3, 2))
    r[:] = 2
    return describe(r)


@scenario()
def scenario_nd_retain_unknown_argument_raises(mx):
    return attempt(lambda: describe(mx.nd.sparse.retain(mx.nd.ones((2, 2)),
                                                        invalid_arg="garbage")))


@scenario()
def scenario_nd_row_sparse_scalar_ops_storage(mx):
    r = mx.nd.sparse.row_sparse_array(([[1.0, 2.0]], [1]), shape=(3, 2))
    return {name: describe(f(r)) for name, f in {
        "eq_1": lambda x: x == 1, "eq_0": lambda x: x == 0, "plus_0": lambda x: x + 0,
        "plus_1": lambda x: x + 1, "div_2": lambda x: x / 2, "mul_3": lambda x: x * 3}.items()}


@scenario()
def scenario_file_with_a_csr_array_loads_whole_and_saves_back(mx):
    csr = mx.nd.sparse.csr_matrix(([1.5, 2.0, -3.0], [0, 2, 1], [0, 2, 2, 3]), shape=(3, 4))
    out = _save_and_load(mx, {"dense": mx.nd.array([[1, 2], [3, 4]]), "sparse": csr})
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "again.params")
        back = mx.nd.load_frombuffer(bytes.fromhex(out["bytes"]))
        mx.nd.save(f, back)
        with open(f, "rb") as fh:
            out["saved_back_equal"] = _without_trailer(fh.read()).hex() == out["bytes"]
    c = back["sparse"]
    out["csr"] = {"stype": c.stype, "dense": values(c.tostype("default")),
                  "asnumpy": c.asnumpy().tolist(), "indptr": values(c.indptr),
                  "indices": values(c.indices), "data": values(c.data)}
    return out
