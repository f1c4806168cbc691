"""Regenerate tests/golden/optimizers.json from the real Apache MXNet 1.9.1.

Each case runs one optimizer through ``mx.optimizer.get_updater`` for three
updates of one key, as a KVStore does, and records the weight after every
update and the states at the end. ``tests/test_optimizer_golden.py`` replays
the same cases on mxkv and compares.

Run with an interpreter that has mxnet 1.9.1 (Python 3.11, numpy < 1.24)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_optimizers.py

or, where such an environment already exists::

    /tmp/mxref/bin/python tools/golden_optimizers.py

The inputs are generated here from a fixed seed and stored in the JSON, so
the test does not depend on any random generator.
"""
import json
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "optimizers.json")

SHAPE = (4, 3)
STEPS = 3
ROWS = [[0, 2], [1, 2], [3]]   # rows of the row-sparse gradient at each step


def _case(name, opt, kwargs, dtype="float32", sparse_grad=False, weight_stype="default",
          index=0, lr_scheduler=None):
    return {"name": name, "optimizer": opt, "kwargs": kwargs, "dtype": dtype,
            "sparse_grad": sparse_grad, "weight_stype": weight_stype, "index": index,
            "lr_scheduler": lr_scheduler}


CASES = [
    _case("sgd_plain", "sgd", {"learning_rate": 0.1}),
    _case("sgd_momentum_wd_clip_rescale", "sgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5,
           "clip_gradient": 0.3}),
    _case("sgd_lazy_rowsparse_momentum_wd", "sgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05}, sparse_grad=True),
    _case("sgd_std_rowsparse_momentum_wd", "sgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "lazy_update": False},
          sparse_grad=True),
    _case("sgd_lazy_rowsparse_nomomentum_wd", "sgd",
          {"learning_rate": 0.1, "wd": 0.05}, sparse_grad=True),
    _case("sgd_fp16_multi_precision", "sgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True},
          dtype="float16"),
    _case("sgd_factor_scheduler", "sgd", {"momentum": 0.5},
          lr_scheduler={"type": "FactorScheduler", "step": 1, "factor": 0.5, "base_lr": 0.2}),
    _case("sgd_idx2name_bias_gets_no_wd", "sgd",
          {"learning_rate": 0.1, "wd": 0.1, "param_idx2name": {"0": "fc_bias"}}),
    _case("nag_momentum_wd_clip", "nag",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.4,
           "rescale_grad": 0.8}),
    _case("nag_fp16_multi_precision", "nag",
          {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True}, dtype="float16"),
    _case("adam_wd_clip_rescale", "adam",
          {"learning_rate": 0.01, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.2}),
    _case("adam_lazy_rowsparse", "adam", {"learning_rate": 0.01, "wd": 0.01}, sparse_grad=True),
    _case("adam_std_rowsparse", "adam", {"learning_rate": 0.01, "wd": 0.01,
                                         "lazy_update": False}, sparse_grad=True),
    _case("adam_fp16_multi_precision", "adam",
          {"learning_rate": 0.01, "multi_precision": True}, dtype="float16"),
    _case("adagrad_wd_clip", "adagrad",
          {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.5, "rescale_grad": 2.0}),
    _case("adagrad_rowsparse", "adagrad", {"learning_rate": 0.1}, sparse_grad=True),
    _case("rmsprop_wd_clip", "rmsprop",
          {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.3, "rescale_grad": 0.9}),
    _case("rmsprop_centered_clip_weights", "rmsprop",
          {"learning_rate": 0.05, "centered": True, "clip_weights": 0.8, "wd": 0.01}),
    _case("adadelta_wd_clip", "adadelta",
          {"wd": 0.01, "clip_gradient": 0.5, "rescale_grad": 1.5}),
    _case("signum_momentum_wd_lh", "signum",
          {"learning_rate": 0.01, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.1}),
    _case("signsgd_wd", "signum", {"learning_rate": 0.01, "momentum": 0.0, "wd": 0.1}),
    _case("ftrl_dense_wd", "ftrl",
          {"learning_rate": 0.1, "lamda1": 0.01, "beta": 1.0, "wd": 0.01, "clip_gradient": 0.7}),
    _case("ftrl_rowsparse_weight_and_grad", "ftrl", {"learning_rate": 0.1, "lamda1": 0.01},
          sparse_grad=True, weight_stype="row_sparse"),
    _case("ftml_wd_clip", "ftml", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.5}),
    _case("adamax_wd", "adamax", {"learning_rate": 0.01, "wd": 0.01}),
    _case("nadam_wd", "nadam", {"learning_rate": 0.01, "wd": 0.01}),
    _case("dcasgd_nomomentum_wd", "dcasgd", {"learning_rate": 0.1, "wd": 0.01, "lamda": 0.5}),
    _case("lamb_wd_clip_bounds", "lamb",
          {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.4, "rescale_grad": 0.8,
           "lower_bound": 0.5, "upper_bound": 2.0}),
    _case("lamb_no_bias_correction", "lamb",
          {"learning_rate": 0.02, "wd": 0.03, "bias_correction": False}),
    _case("lamb_float64", "lamb", {"learning_rate": 0.01, "wd": 0.01}, dtype="float64"),
]


def _inputs(seed):
    rs = np.random.RandomState(seed)
    weight = rs.uniform(-1, 1, SHAPE).round(4)
    grads = [rs.uniform(-1, 1, SHAPE).round(4) for _ in range(STEPS)]
    return weight, grads


def _states_flat(state):
    """Every NDArray of a state, in order, as nested lists."""
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        out = []
        for s in state:
            out += _states_flat(s)
        return out
    return [state.asnumpy().astype(np.float64).tolist()]


def run_case(mx, case, seed):
    weight_np, grads_np = _inputs(seed)
    kwargs = dict(case["kwargs"])
    if "param_idx2name" in kwargs:
        kwargs["param_idx2name"] = {int(k): v for k, v in kwargs["param_idx2name"].items()}
    sched = case["lr_scheduler"]
    if sched:
        sched = dict(sched)
        klass = getattr(mx.lr_scheduler, sched.pop("type"))
        kwargs["lr_scheduler"] = klass(**sched)
    opt = mx.optimizer.create(case["optimizer"], **kwargs)
    updater = mx.optimizer.get_updater(opt)
    dtype = case["dtype"]
    weight = mx.nd.array(weight_np, dtype=dtype)
    if case["weight_stype"] == "row_sparse":
        weight = weight.tostype("row_sparse")
    steps = []
    for step, g in enumerate(grads_np):
        if case["sparse_grad"]:
            rows = ROWS[step]
            grad = mx.nd.sparse.row_sparse_array(
                (np.asarray(g[rows], dtype=dtype), np.asarray(rows, dtype=np.int64)),
                shape=SHAPE, dtype=dtype)
        else:
            grad = mx.nd.array(g, dtype=dtype)
        updater(case["index"], grad, weight)
        steps.append(weight.asnumpy().astype(np.float64).tolist())
    return {"seed": seed, "weight": weight_np.tolist(), "grads": [g.tolist() for g in grads_np],
            "rows": ROWS if case["sparse_grad"] else None, "steps": steps,
            "states": _states_flat(updater.states[case["index"]])}


def main():
    import mxnet as mx  # the reference, only here
    cases = []
    for seed, case in enumerate(CASES):
        out = dict(case)
        out.update(run_case(mx, case, seed))
        cases.append(out)
    doc = {"generator": "tools/golden_optimizers.py", "mxnet": mx.__version__,
           "shape": list(SHAPE), "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
