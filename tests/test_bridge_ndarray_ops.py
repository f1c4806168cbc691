"""The engine operations behind the Clojure API's NDArray and optimizer
functions, without a JVM: operators by MXNet's name (replayed against
results recorded from real MXNet 1.9.1 in tests/golden/bridge_ndarray.json,
see tools/golden_bridge_ndarray.py), serialized bytes in MXNet's layout,
in-place writes, and optimizers updated by hand as the store updates them."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from test_bridge_facade import err, ok

import mxkv as mx
from mxkv.bridge import Arena, EngineFacade, nd_bytes, nd_dispatch

GOLDEN = json.loads((Path(__file__).parent / "golden" / "bridge_ndarray.json").read_text())


@pytest.fixture
def facade(tmp_path):
    with_arena = EngineFacade(arena=Arena(str(tmp_path)))
    yield with_arena
    with_arena.close()


def call(f, op, *args):
    return f.call(op, json.dumps(list(args)))


def put(f, values, dtype="float32"):
    """An engine array holding ``values``; its handle."""
    return f.put(mx.nd.array(np.array(values, dtype=dtype), dtype=dtype))


def host(f, h):
    return f.get(h).asnumpy()


@pytest.mark.parametrize("case", GOLDEN["operators"], ids=lambda c: c["name"])
def test_operator_matches_mxnet(facade, case):
    hs = [put(facade, np.array(i["values"]).reshape(i["shape"]), i["dtype"])
          for i in case["inputs"]]
    answer = call(facade, "nd.invoke", case["op"], hs, case["positional"], case["named"])
    want = case["mxnet"]
    if "error" in want:
        e = err(answer)
        assert e["type"] == "mxnet-error"
        return
    meta = ok(answer)
    assert meta[1] == want["shape"] and meta[2] == want["dtype"]
    np.testing.assert_allclose(host(facade, meta[0]).ravel(), want["values"], rtol=1e-6)


def test_operator_parameters_are_checked(facade):
    h = put(facade, [1.0, 2.0])
    e = err(call(facade, "nd.invoke", "clip", [h], [1, 2, 3], None))
    assert "clip takes at most 2 parameters after its array(s) (a_min, a_max), got 3" \
        in e["message"]
    assert "sum: unexpected argument(s) ['depth']" in err(call(facade, "nd.invoke", "sum", [h],
                                                               [], {"depth": 1}))["message"]
    assert "given by position and by name" in err(
        call(facade, "nd.invoke", "clip", [h], [0], {"a_min": 1, "a_max": 2}))["message"]
    assert "dot takes 2 array(s) (lhs, rhs), got 1" in err(call(facade, "nd.invoke", "dot", [h], [],
                                                     None))["message"]
    unknown = err(call(facade, "nd.invoke", "fft", [h], [], None))
    assert "unknown NDArray operator 'fft'" in unknown["message"]
    assert unknown["python_class"] == "mxkv.base.MXNetValueError"


def test_the_dispatch_runs_the_tables_function_or_the_backends():
    # mxkv: the table's generated function (the one mx.nd.<name> is), so Python
    # and the JVM share one code path
    x = mx.nd.array([[1.0, 4.0], [9.0, 16.0]])
    got = nd_dispatch.invoke(mx, "sum", [x], [1], {"keepdims": True})
    assert got.asnumpy().tolist() == mx.nd.sum(x, axis=1, keepdims=True).asnumpy().tolist()
    assert nd_dispatch.invoke(mx, "broadcast_plus", [x, x]).asnumpy().tolist() == \
        (x + x).asnumpy().tolist()  # (an alias)
    # another backend (MXNet itself): its own mx.nd.<name>, the table giving the order
    seen = []

    class Engine:
        __name__ = "mxnet"

        class nd:  # noqa: N801 - stands for a module
            @staticmethod
            def clip(data, a_min=None, a_max=None, out=None):
                seen.append((a_min, a_max))
                return data

    assert nd_dispatch.invoke(Engine, "clip", [x], [0, 2]) is x
    assert seen == [(0.0, 2.0)]
    with pytest.raises(mx.MXNetError, match="takes 1 array"):
        nd_dispatch.invoke(mx, "sqrt", [x, x])


def test_comparisons_powers_and_reversed_operands(facade):
    a = put(facade, [[1, 2], [4, 5]])
    b = put(facade, [[1, 4], [3, 6]])
    expect = {
        ("==", True): [1, 0, 0, 0], ("!=", True): [0, 1, 1, 1], (">", True): [0, 0, 1, 0],
        (">=", True): [1, 0, 1, 0], ("<", True): [0, 1, 0, 1], ("<=", True): [1, 1, 0, 1],
        ("maximum", True): [1, 4, 4, 6], ("minimum", True): [1, 2, 3, 5],
        ("**", True): [1, 16, 64, 15625],
    }
    for (name, _), want in expect.items():
        out = ok(call(facade, "nd.binop", name, a, b, True))
        assert host(facade, out[0]).ravel().tolist() == want, name
        assert out[2] == "float32"
    # a number first: 2 ** a, 3 > a
    assert host(facade, ok(call(facade, "nd.binop", "**", a, 2, False, True))[0]).ravel() \
        .tolist() == [2, 4, 16, 32]
    assert host(facade, ok(call(facade, "nd.binop", ">", a, 3, False, True))[0]).ravel() \
        .tolist() == [1, 1, 0, 0]


def test_in_place_operators_write_into_the_first_array(facade):
    a = put(facade, [3.0, 5.0])
    assert ok(call(facade, "nd.binop", "**=", a, 2, False)) is None
    assert host(facade, a).tolist() == [9.0, 25.0]
    assert ok(call(facade, "nd.binop", "%=", a, 4, False)) is None
    assert host(facade, a).tolist() == [1.0, 1.0]
    b = put(facade, [2.0, 3.0])
    ok(call(facade, "nd.binop", "+=", a, b, True))
    assert host(facade, a).tolist() == [3.0, 4.0]


def test_set_fills_from_a_value_an_array_or_the_arena(facade):
    a = put(facade, np.zeros((2, 2)))
    ok(call(facade, "nd.set_value", a, 7))
    assert host(facade, a).ravel().tolist() == [7, 7, 7, 7]
    facade.arena.ensure(facade.arena.size)
    facade.arena.view_in("float32", (4,))[:] = [1, 2, 3, 4]
    ok(call(facade, "nd.set_from_arena", a, "float32", 4))
    assert host(facade, a).tolist() == [[1, 2], [3, 4]]
    e = err(call(facade, "nd.set_from_arena", a, "float32", 3))
    assert "set: 3 values for an array of 4 elements (shape (2, 2))" in e["message"]


def test_onehot_encode_writes_into_out(facade):
    idx = put(facade, [1, 0, 2])
    out = put(facade, np.full((3, 3), 9.0))
    assert ok(call(facade, "nd.onehot_encode", idx, out)) is None
    assert host(facade, out).tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1]]
    bad = put(facade, [3, 0, 0])
    assert "indices must lie in [0, 3)" in err(call(facade, "nd.onehot_encode", bad, out))[
        "message"]


def test_at_is_a_row_sharing_memory(facade):
    a = put(facade, [[1, 2], [3, 4], [5, 6]])
    row = ok(call(facade, "nd.at", a, 1))
    assert row[1] == [2] and host(facade, row[0]).tolist() == [3, 4]
    facade.get(row[0])[:] = 0
    assert host(facade, a).tolist() == [[1, 2], [0, 0], [5, 6]]
    assert ok(call(facade, "nd.at", put(facade, [7, 8]), 1))[1] == [1]
    e = err(call(facade, "nd.at", a, 3))
    assert e["python_class"] == "mxkv.base.MXNetIndexError" and "out of range" in e["message"]


def test_copyto_a_context_always_copies(facade):
    a = put(facade, [1.0, 2.0])
    same = ok(call(facade, "nd.copyto_ctx", a, "cpu", 0))
    other = ok(call(facade, "nd.copyto_ctx", a, "cpu", 1))
    assert same[0] != a and other[3:5] == ["cpu", 1]
    facade.get(same[0])[:] = 0
    assert host(facade, a).tolist() == [1.0, 2.0]


def test_equality_compares_shape_and_float32_elements(facade):
    a = put(facade, [1, 2, 3])
    assert ok(call(facade, "nd.equal", a, put(facade, [1, 2, 3])))
    assert ok(call(facade, "nd.equal", a, put(facade, [1, 2, 3], "int32")))
    assert not ok(call(facade, "nd.equal", a, put(facade, [[1, 2, 3]])))
    assert not ok(call(facade, "nd.equal", a, put(facade, [1, 2, 4])))
    nan = put(facade, [np.nan])
    assert not ok(call(facade, "nd.equal", nan, nan))


def test_int_reads_convert_as_the_jvm_does(facade):
    h = put(facade, [2.7, -2.7, np.nan, 1e20, -1e20], "float32")
    off, nbytes, _, _ = ok(call(facade, "nd.read", h, "int32", 0, None, False))
    got = facade.arena.view("int32", nbytes // 4, off).tolist()
    assert got == [2, -2, 0, 2**31 - 1, -2**31]


@pytest.mark.parametrize("case", GOLDEN["serialized"], ids=lambda c: c["name"])
def test_serialized_bytes_are_mxnets(case):
    raw = bytes.fromhex(case["hex"])
    arr = nd_bytes.loads(mx, raw)
    assert (arr.stype, list(arr.shape), np.dtype(arr.dtype).name) == \
        (case["stype"], case["shape"], case["dtype"])
    assert [arr.context.device_type, arr.context.device_id] == case["context"]
    dense = arr.tostype("default") if arr.stype != "default" else arr
    assert dense.asnumpy().ravel().tolist() == case["dense"]
    assert nd_bytes.dumps(arr) == raw


def test_serialize_round_trips_through_the_facade(facade):
    a = put(facade, [[1.5, -2], [3, 4]], "float64")
    text = ok(call(facade, "nd.serialize", a))
    b = ok(call(facade, "nd.deserialize", text))
    assert b[1:] == [[2, 2], "float64", "cpu", 0, "default"]
    assert host(facade, b[0]).tolist() == [[1.5, -2], [3, 4]]
    short = base64.b64encode(base64.b64decode(text)[:-3]).decode()
    assert "not a whole serialized NDArray" in err(call(facade, "nd.deserialize", short))[
        "message"]
    assert "not a serialized NDArray" in err(call(facade, "nd.deserialize", "AAAAAAAAAAA="))[
        "message"]


@pytest.mark.parametrize("name,params", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.05}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}),
    ("adagrad", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "lr_scheduler": {"type": "factor", "step": 1,
                                                     "factor": 0.5}}),
])
def test_optimizer_by_hand_updates_as_the_store_does(facade, name, params):
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32)
    grads = [np.array([[0.1, 0.2], [-0.3, 0.4]], dtype=np.float32) * (k + 1) for k in range(3)]
    # by hand: create_state once, then update per gradient
    opt = ok(call(facade, "opt.create", name, params))
    w = put(facade, w0)
    state = ok(call(facade, "opt.create_state", opt, 0, w))

    def ids(s):  # the state as the JVM sends it back: handles, not metas
        if s is None:
            return None
        if "list" in s:
            return {"list": [ids(x) for x in s["list"]]}
        return {"nd": s["nd"][0]}

    for g in grads:
        ok(call(facade, "opt.update", opt, 0, w, put(facade, g), ids(state)))
    # the store: the same optimizer set, the same gradients pushed
    kv = ok(call(facade, "kv.create", "local"))[0]
    ok(call(facade, "kv.init", kv, [0], [put(facade, w0)]))
    ok(call(facade, "kv.set_optimizer", kv, name, params))
    for g in grads:
        ok(call(facade, "kv.push", kv, [0], [put(facade, g)]))
    out = put(facade, np.zeros_like(w0))
    ok(call(facade, "kv.pull", kv, [0], [out]))
    np.testing.assert_array_equal(host(facade, w), host(facade, out))
    assert not np.array_equal(host(facade, w), w0)


def test_optimizer_handles_are_checked(facade):
    w = put(facade, [1.0])
    assert "not an optimizer" in err(call(facade, "opt.update", w, 0, w, w, None))["message"]
    opt = ok(call(facade, "opt.create", "sgd", {}))
    assert "not an optimizer state" in err(call(facade, "opt.update", opt, 0, w, w,
                                                {"x": 1}))["message"]
    e = err(call(facade, "opt.create", "nosuch", {}))
    assert e["python_class"] == "mxkv.base.UnknownOptimizerError"
