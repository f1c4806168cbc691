"""The layer operators (Convolution, Pooling, BatchNorm, softmax, ...), the
random family's densities (``random_pdf_*``) and its draws' shapes, dtypes
and errors, through ``mx.nd``, against
results recorded from real MXNet 1.9.1 in tests/golden/nn_ops.json.gz (see
tools/golden_nn_ops.py; the inputs are rebuilt by tests/nn_golden_inputs.py).

Tolerances: float64 1e-6 (MXNet computes some float64 operators' constants or
gelu in float32), float32 1e-4 relative (other summation orders in the
convolutions' and norms' sums), 1e-2 where float16 is among the inputs or
outputs. A recorded MXNet error must be an mxkv error too.
"""
from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from nn_golden_inputs import make

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.ndarray.optable.nn_norm import batch_norm

GOLDEN = json.loads(gzip.open(Path(__file__).parent / "golden" / "nn_ops.json.gz").read())


def _decode(rec: dict) -> np.ndarray:
    raw = base64.b64decode(rec["b64"])
    return np.frombuffer(raw, dtype=np.dtype(rec["dtype"]).newbyteorder("<")).reshape(
        rec["shape"])


def _tolerance(dtypes: list) -> float:
    if "float16" in dtypes:
        return 1e-2
    if "float32" in dtypes:
        return 1e-4
    return 1e-6


def _arg(a):
    return mx.nd.array(a["nd"]) if isinstance(a, dict) else a


def _call_or_raise(fn, args: list, kwargs: dict, want: dict):
    """``fn``'s result, or None once it raised as MXNet's recorded error says it must."""
    if "error" in want:
        with pytest.raises(MXNetError):
            fn(*args, **kwargs)
        return None
    return fn(*args, **kwargs)


def test_the_golden_file_covers_every_layer_operator():
    ops = {c["op"] for c in GOLDEN["cases"]}
    assert ops >= {"FullyConnected", "Convolution", "Deconvolution", "Pooling", "BatchNorm",
                   "LayerNorm", "GroupNorm", "InstanceNorm", "Activation", "LeakyReLU",
                   "Dropout", "Embedding", "softmax", "log_softmax", "softmin",
                   "SoftmaxActivation", "UpSampling", "Pad", "SequenceMask", "SequenceLast",
                   "SequenceReverse", "L2Normalization", "LRN"}
    assert GOLDEN["mxnet"] == "1.9.1"
    # every operator has a recorded MXNet error for bad input
    failing = {c["op"] for c in GOLDEN["cases"] if "error" in c["mxnet"]}
    assert ops - failing <= {"Dropout", "UpSampling", "L2Normalization", "LRN",
                             "SoftmaxActivation"} | {o for o in ops if o.startswith("random_pdf")}
    assert {o for o in ops if o.startswith("random_pdf_")} == {
        f"random_pdf_{k}" for k in ("uniform", "normal", "gamma", "exponential", "poisson",
                                    "negative_binomial", "generalized_negative_binomial",
                                    "dirichlet")}


def _training_batch_norm(*arrays, **params):
    """BatchNorm's kernel in training mode (mx.nd has no autograd scope to ask for it)."""
    outs = batch_norm(np, *[a.asnumpy() for a in arrays], training=True, **params)
    return [mx.nd.array(o, dtype=o.dtype) for o in outs]


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["name"])
def test_layer_operator_matches_mxnet(case):
    inputs = [make(i) for i in case["inputs"]]
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    want = case["mxnet"]
    fn = _training_batch_norm if case["train"] else getattr(mx.nd, case["op"])
    got = _call_or_raise(fn, arrays, case["params"], want)
    if got is None:
        return
    assert isinstance(got, list) == want["list"]
    outs = got if isinstance(got, list) else [got]
    # (outputs MXNet leaves unwritten, rrelu's slopes outside training, are not compared)
    assert len(outs) == len(want["outputs"]) + want["unset_outputs"]
    for o, rec in zip(outs, want["outputs"]):
        w = _decode(rec)
        assert o.shape == w.shape and np.dtype(o.dtype) == w.dtype, (o.shape, o.dtype)
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(o.asnumpy(), w)
            continue
        tol = _tolerance([rec["dtype"]] + [a.dtype.name for a in inputs])
        np.testing.assert_allclose(o.asnumpy().astype(np.float64), w.astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("case", GOLDEN["random"], ids=lambda c: c["name"])
def test_random_call_has_mxnets_shape_dtype_or_error(case):
    fn = mx.nd
    for part in case["fn"].split("."):
        fn = getattr(fn, part)
    want = case["mxnet"]
    out = _call_or_raise(fn, [_arg(a) for a in case["args"]], case["kwargs"], want)
    if out is None:
        return
    assert list(out.shape) == want["shape"]
    assert np.dtype(out.dtype).name == want["dtype"]
