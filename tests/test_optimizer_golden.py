"""Optimizers against numbers from the real MXNet 1.9.1 (tests/golden/optimizers.json).

Regenerate the file with ``tools/golden_optimizers.py`` (see its docstring).
"""
import json
import pathlib

import numpy as np
import pytest

import mxkv as mx

GOLDEN = json.loads((pathlib.Path(__file__).parent / "golden" / "optimizers.json").read_text())
CASES = GOLDEN["cases"]


def _states_flat(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _states_flat(s)]
    return [state.asnumpy()]


def _tolerance(dtype):
    return (2e-3, 2e-3) if dtype == "float16" else (1e-6, 1e-8)


CONTEXTS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("gpu", id="gpu", marks=pytest.mark.requires_gpu),
]


@pytest.mark.parametrize("device", CONTEXTS)
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_mxnet_1_9_1(case, device):
    ctx = mx.cpu() if device == "cpu" else mx.gpu(0)
    shape = tuple(GOLDEN["shape"])
    kwargs = dict(case["kwargs"])
    if "param_idx2name" in kwargs:
        kwargs["param_idx2name"] = {int(k): v for k, v in kwargs["param_idx2name"].items()}
    if case["lr_scheduler"]:
        sched = dict(case["lr_scheduler"])
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, sched.pop("type"))(**sched)
    updater = mx.optimizer.get_updater(mx.optimizer.create(case["optimizer"], **kwargs))
    dtype = case["dtype"]
    weight = mx.nd.array(np.array(case["weight"]), ctx=ctx, dtype=dtype)
    if case["weight_stype"] == "row_sparse":
        weight = weight.tostype("row_sparse")
    rtol, atol = _tolerance(dtype)
    for step, (g, want) in enumerate(zip(case["grads"], case["steps"])):
        g = np.array(g)
        if case["sparse_grad"]:
            rows = case["rows"][step]
            grad = mx.nd.sparse.row_sparse_array(
                (g[rows].astype(dtype), np.array(rows, dtype=np.int64)), shape=shape, ctx=ctx)
        else:
            grad = mx.nd.array(g, ctx=ctx, dtype=dtype)
        updater(case["index"], grad, weight)
        np.testing.assert_allclose(weight.asnumpy().astype(np.float64), np.array(want),
                                   rtol=rtol, atol=atol, err_msg=f"step {step + 1}")
    got_states = _states_flat(updater.states[case["index"]])
    assert len(got_states) == len(case["states"])
    for got, want in zip(got_states, case["states"]):
        np.testing.assert_allclose(got.astype(np.float64), np.array(want), rtol=rtol, atol=atol)
