"""The operators a Clojure training step calls (``expand_dims``, ``argmax``,
``softmax``, ``slice_axis``, ``one_hot``, ``reshape``, ``cast``, ...) and
the random draws, through the engine without a JVM, against results
recorded from real MXNet 1.9.1 in tests/golden/clj_ops.json (see
tools/golden_clj_ops.py). The Clojure forms of the same cases are replayed
by clojure/test/org/apache/clojure_mxnet/ndarray_api_test.clj."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_bridge_facade import err, ok

import mxkv as mx
from mxkv.bridge import Arena, EngineFacade
from mxkv.ndarray._reshape import infer_reshape as _infer
from mxkv.ndarray.optable.shape import _RESHAPE_MSG


def infer_reshape(src, spec, reverse=False):
    """The table's reshape rule, with the reshape operator's wording."""
    return _infer(src, spec, reverse, _RESHAPE_MSG)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "clj_ops.json").read_text())


@pytest.fixture
def facade(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    yield f
    f.close()


def call(f, op, *args):
    return f.call(op, json.dumps(list(args)))


def test_the_golden_file_covers_every_new_operator():
    ops = {c["op"] for c in GOLDEN["operators"]}
    for name in ("expand_dims", "argmax", "softmax", "slice_axis", "one_hot", "reshape",
                 "cast", "flatten", "Activation", "broadcast_add", "log_softmax", "mean"):
        assert name in ops, name
    assert GOLDEN["mxnet"] == "1.9.1"


@pytest.mark.parametrize("case", GOLDEN["operators"], ids=lambda c: c["name"])
def test_operator_matches_mxnet(facade, case):
    hs = [facade.put(mx.nd.array(np.array(i["values"]).reshape(i["shape"]), dtype=i["dtype"]))
          for i in case["inputs"]]
    answer = call(facade, "nd.invoke", case["op"], hs, [], case["named"])
    want = case["mxnet"]
    if case["op"] == "SoftmaxOutput":
        # out of the table's scope (a loss layer, docs/ndarray.md): Clojure's
        # softmax-output composes the table's softmax, ndarray_api_test.clj checks it
        assert "unknown NDArray operator 'SoftmaxOutput'" in err(answer)["message"]
        return
    if "error" in want:
        assert err(answer)["type"] == "mxnet-error", answer
        return
    meta = ok(answer)
    assert meta[1] == want["shape"] and meta[2] == want["dtype"]
    np.testing.assert_allclose(facade.get(meta[0]).asnumpy().ravel().astype(np.float64),
                               want["values"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", GOLDEN["random"], ids=lambda c: c["name"])
def test_random_draw_has_mxnets_shape_dtype_and_range(facade, case):
    kind = case["op"][len("random_"):]
    meta = ok(call(facade, "nd.invoke", case["op"], [], [], case["named"]))
    want = case["mxnet"]
    assert meta[1] == want["shape"] and meta[2] == want["dtype"]
    v = facade.get(meta[0]).asnumpy()
    if "range" in want:
        lo, hi = want["range"]
        assert v.min() >= lo and v.max() < hi, kind
    assert len(np.unique(v)) > 1, "a draw of equal numbers"


def test_a_seed_repeats_the_draw_and_matches_mx_random(facade):
    ok(call(facade, "random.seed", 42))
    a = ok(call(facade, "random.draw", "uniform", [-1, 1], [3, 4], "cpu", 0, "float32", None))
    mx.random.seed(42)
    b = mx.random.uniform(-1, 1, shape=(3, 4))
    np.testing.assert_array_equal(facade.get(a[0]).asnumpy(), b.asnumpy())
    ok(call(facade, "random.seed", 42))
    c = ok(call(facade, "nd.invoke", "random_uniform", [], [-1, 1, "(3, 4)"], None))
    np.testing.assert_array_equal(facade.get(c[0]).asnumpy(), b.asnumpy())


def test_random_draw_writes_into_out(facade):
    out = facade.put(mx.nd.zeros((2, 5)))
    meta = ok(call(facade, "random.draw", "normal", [3, 0.1], [2, 5], "cpu", 0, "float32",
                   out))
    assert meta[0] == out
    v = facade.get(out).asnumpy()
    assert abs(v.mean() - 3) < 0.2 and v.std() > 0


def test_random_refuses_bad_parameters(facade):
    e = err(call(facade, "random.draw", "uniform", [2, 1], [2], "cpu", 0, "float32", None))
    assert "low (2) must not exceed high (1)" in e["message"]
    e = err(call(facade, "random.draw", "normal", [0, -1], [2], "cpu", 0, "float32", None))
    assert "scale must be positive, got -1" in e["message"]
    e = err(call(facade, "nd.invoke", "random_cauchy", [], [], None))
    assert "unknown NDArray operator 'random_cauchy'" in e["message"]
    e = err(call(facade, "nd.invoke", "random_uniform", [], [], {"lo": 1}))
    assert "random_uniform: unexpected argument(s) ['lo']" in e["message"]
    e = err(call(facade, "nd.invoke", "random_uniform", [], [0, 1, "(2,x)"], None))
    assert "shape" in e["message"] and "(2,x)" in e["message"]


def test_reshape_special_dimensions():
    assert infer_reshape((2, 3, 4), (-4, 1, 2, -2)) == (1, 2, 3, 4)
    assert infer_reshape((10, 5, 4), (-1, 0), reverse=True) == (50, 4)
    assert infer_reshape((2, 3, 4), (-3, -2)) == (6, 4)
    with pytest.raises(mx.MXNetError, match="the inferred dim does not divide the size"):
        infer_reshape((2, 3, 4), (5, -1))
    with pytest.raises(mx.MXNetError, match="one and only one dim can be inferred"):
        infer_reshape((2, 3, 4), (-1, -1))
    with pytest.raises(mx.MXNetError, match="split dims 3, 1 do not divide input dim 2"):
        infer_reshape((2, 3), (-4, 3, 1, 0))
    with pytest.raises(mx.MXNetError, match="split dims cannot both be -1"):
        infer_reshape((6,), (-4, -1, -1))  # (it gave (-6, -1), as MXNet refuses: both -1)


@pytest.mark.parametrize("src, spec, reverse", [
    ((2, 3, 4), (-4, 1, 2, -2), False), ((10, 5, 4), (-1, 0), True), ((2, 3, 4), (-3, -2), False),
    ((2, 3, 4), (0, -1), True), ((2, 3, 4), (-2, 1, 1), False), ((6,), (-4, -1, 2), False),
    ((2, 3, 4), (5, -1), False), ((2, 3), (-4, 3, 1, 0), False), ((2, 3), (1, -1, -1), False),
    ((2, 3), (0, 0, 0), False), ((2, 3), (-3, -3), False), ((2, 3), (-5,), False)])
def test_reshape_operator_and_ndarray_reshape_share_one_rule(src, spec, reverse):
    # one rule (ndarray/_reshape.py), each caller with its own wording
    from mxkv.ndarray import _reshape
    from mxkv.ndarray import ndarray as core
    assert set(_RESHAPE_MSG) == set(core._RESHAPE_ERRORS) == set(_reshape.PROBLEMS)
    try:
        expected = infer_reshape(src, spec, reverse)
    except mx.MXNetError as exc:
        with pytest.raises(type(exc)) as got:
            mx.nd.zeros(src).reshape(spec, reverse=reverse)
        assert str(got.value).startswith(("reshape (", "cannot reshape"))  # NDArray's words
    else:
        assert mx.nd.zeros(src).reshape(spec, reverse=reverse).shape == expected
