"""mxkv's ``mx.nd`` against MXNet 1.9.1's own list of functions, NDArray
methods and operator parameters (tests/golden/op_surface.json, recorded by
tools/golden_op_surface.py; counted by tools/op_coverage.py)."""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

import mxkv as mx
from mxkv.ndarray import optable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import op_coverage  # noqa: E402

SURFACE = op_coverage.surface()


def test_coverage_counts_against_mxnets_own_list():
    cov = op_coverage.coverage()
    print(json.dumps({k: v[:2] for k, v in cov.items()}))
    have, scope, _ = cov["functions"]
    assert scope >= 290 and have >= 220  # the floor reached on 2026-12-05; raise it
    have, scope, _ = cov["methods"]
    assert have >= 98
    assert cov["linalg"][0] == cov["linalg"][1] == 17


def test_every_table_operator_has_mxnets_parameters_in_mxnets_order():
    assert op_coverage.param_mismatches() == []


# (the table's generated functions; the optimizers' update operators are not in it)
GENERATED = sorted(n for n, r in SURFACE["nd"].items()
                   if r.get("registry") and getattr(getattr(mx.nd, n, None), "opdef", None))


@pytest.mark.parametrize("name", GENERATED)
def test_a_generated_function_has_mxnets_signature(name):
    assert str(inspect.signature(getattr(mx.nd, name))) == SURFACE["nd"][name]["signature"]


def test_the_table_walks_every_operator_once_with_its_param_specs():
    defs = list(optable.iter_ops())
    assert len({d.name for d in defs}) == len(defs)
    for d in defs:
        assert optable.get(d.name) is d
        for p in d.params:
            assert p.name and p.type and (p.required or p.default is not optable.REQUIRED)


def test_an_unknown_keyword_and_a_missing_parameter_are_named():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.base.MXNetError, match="unexpected argument.*'axes'"):
        mx.nd.sum(x, axes=1)
    with pytest.raises(mx.base.MXNetError, match="required parameter 'axis'"):
        mx.nd.expand_dims(x)
    with pytest.raises(mx.base.MXNetError, match="invalid parameter format for k"):
        mx.nd.topk(x, k="two")


def test_out_and_name_are_accepted_as_mxnet_does():
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    out = mx.nd.zeros((2, 2))
    assert mx.nd.exp(x, out=out, name="e") is out
    assert out.asnumpy().astype("float64").round(3).tolist() == [[2.718, 7.389], [20.086, 54.598]]
    parts = [mx.nd.zeros((2, 1)), mx.nd.zeros((2, 1))]
    assert mx.nd.split(x, num_outputs=2, out=parts) == parts
    assert parts[1].asnumpy().tolist() == [[2.0], [4.0]]
    with pytest.raises(mx.base.MXNetError, match="out has shape"):
        mx.nd.exp(x, out=mx.nd.zeros((3,)))
