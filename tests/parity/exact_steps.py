"""Long runs compared bit for bit with MXNet 1.9.1: optimizers through an
updater for 200 steps, and the ``nd.*_update`` operators.

Each case is plain data; :func:`run_optimizer` / :func:`run_operator` run it
on a library (``mxnet`` or ``mxkv``, read as ``mx``) and return the final
arrays as hex of their bytes. Inputs come from an integer hash (exact in
every numpy), not from a random generator.
"""
from __future__ import annotations

import numpy as np

SHAPE = (16, 8)
STEPS = 200


def values(seed: int, step: int, shape=SHAPE) -> np.ndarray:
    """Multiples of 1/1000 in [-1, 1], from integers only."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    return (((i * 7919 + seed * 104729 + step * 1299709) % 2001 - 1000) / 1000.0).reshape(shape)


def rows(step: int) -> list:
    """The rows a row-sparse gradient holds at ``step``."""
    return sorted({(step * 3 + j * 5) % SHAPE[0] for j in range(4)})


def _case(name, opt, kwargs, dtype="float32", sparse=False, scheduler=None, idx2name=None,
          gscale=1.0, reuse_grad=False):
    return {"name": name, "optimizer": opt, "kwargs": kwargs, "dtype": dtype,
            "sparse": sparse, "scheduler": scheduler, "idx2name": idx2name, "gscale": gscale,
            "reuse_grad": reuse_grad}


OPTIMIZER_CASES = [
    _case("sgd_momentum_wd", "sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 0.01}),
    _case("sgd_fp16_mp", "sgd", {"learning_rate": 0.05, "momentum": 0.9,
                                 "multi_precision": True}, dtype="float16"),
    _case("adam_wd_clip", "adam", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.5}),
    _case("lamb_wd", "lamb", {"learning_rate": 0.01, "wd": 0.01}),
    _case("lamb_bounds_clip_rescale", "lamb",
          {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.4, "rescale_grad": 0.8,
           "lower_bound": 0.5, "upper_bound": 2.0}),
    _case("lamb_no_bias_correction", "lamb",
          {"learning_rate": 0.02, "wd": 0.03, "bias_correction": False}),
    _case("lamb_fp16_mp", "lamb", {"learning_rate": 0.01, "wd": 0.01,
                                   "multi_precision": True}, dtype="float16"),
    _case("lars_momentum_wd", "lars", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01,
                                       "eta": 0.01}),
    # deviation D23 (docs/parity.md): per-layer norms in float64, so a few
    # weights end an ulp or so from MXNet's after 200 steps
    dict(_case("lars_row_sparse_gradient", "lars", {"learning_rate": 0.1, "momentum": 0.9,
                                                    "wd": 0.01}, sparse=True), ulps=4),
    _case("lars_clip_rescale", "lars", {"learning_rate": 0.1, "wd": 0.01, "eta": 0.01,
                                        "clip_gradient": 0.5, "rescale_grad": 0.7}),
    _case("lars_fp16_mp", "lars", {"learning_rate": 0.1, "momentum": 0.9, "eta": 0.01,
                                   "multi_precision": True}, dtype="float16"),
    _case("lars_scheduler_momentum_correction", "lars",
          {"momentum": 0.9, "wd": 0.01, "eta": 0.02},
          scheduler={"type": "FactorScheduler", "step": 20, "factor": 0.5, "base_lr": 0.1}),
    _case("lars_bias_keeps_lr", "lars", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
          idx2name={"0": "fc_bias"}),
    _case("lbsgd_linear_warmup_batch2", "lbsgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 2,
           "warmup_epochs": 2, "updates_per_epoch": 10}),
    _case("lbsgd_sqrt_batch3", "lbsgd", {"learning_rate": 0.05, "warmup_strategy": "sqrt",
                                         "batch_scale": 3, "updates_per_epoch": 7}),
    _case("lbsgd_lars", "lbsgd", {"learning_rate": 0.05, "warmup_strategy": "lars",
                                  "momentum": 0.5}),
    # deviation D23's LBSGD part: row-sparse gradients, accumulated over 3 updates
    _case("lbsgd_row_sparse_gradient", "lbsgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 3,
           "warmup_epochs": 1, "updates_per_epoch": 12}, sparse=True),
    _case("lbsgd_dense_gradient_batch3", "lbsgd",
          {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 3,
           "warmup_epochs": 1, "updates_per_epoch": 12}),
    _case("lbsgd_lars_row_sparse_gradient", "lbsgd",
          {"learning_rate": 0.05, "warmup_strategy": "lars", "momentum": 0.5,
           "batch_scale": 2}, sparse=True),
    # the same as lbsgd_dense_gradient_batch3, with one gradient array written
    # in place before each update, as a store does with its merge buffer:
    # MXNet accumulates the array it was handed first, so the next write
    # reaches its sum; mxkv copies it, and must end where MXNet does with
    # fresh arrays (deviation D23, tests/test_exact_steps.py)
    dict(_case("lbsgd_dense_gradient_batch3_one_array", "lbsgd",
               {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 3,
                "warmup_epochs": 1, "updates_per_epoch": 12}, reuse_grad=True),
         deviation_same_as="lbsgd_dense_gradient_batch3"),
    _case("groupadagrad", "groupadagrad", {"learning_rate": 0.1}),
    _case("groupadagrad_clip_rescale_eps", "groupadagrad",
          {"learning_rate": 0.1, "clip_gradient": 0.3, "rescale_grad": 2.0, "eps": 1e-3}),
    _case("groupadagrad_row_sparse", "groupadagrad", {"learning_rate": 0.1,
                                                      "clip_gradient": 0.3}, sparse=True),
]


def hexes(*arrays) -> list:
    return [a.asnumpy().tobytes().hex() for a in arrays if a is not None]


def _flat_states(state) -> list:
    if state is None:
        return []
    if isinstance(state, (list, tuple)):
        return [a for s in state for a in _flat_states(s)]
    return [state]


def run_optimizer(mx, case: dict, steps: int = STEPS) -> dict:
    """Run ``case`` through ``mx.optimizer.get_updater``; the final weight and
    states as hex of their bytes."""
    kwargs = dict(case["kwargs"])
    if case["scheduler"]:
        sched = dict(case["scheduler"])
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, sched.pop("type"))(**sched)
    if case["idx2name"]:
        kwargs["param_idx2name"] = {int(k): v for k, v in case["idx2name"].items()}
    updater = mx.optimizer.get_updater(mx.optimizer.create(case["optimizer"], **kwargs))
    dt = case["dtype"]
    weight = mx.nd.array(values(1, 0), dtype=dt)
    one_array = mx.nd.zeros(SHAPE, dtype=dt) if case.get("reuse_grad") else None
    for s in range(steps):
        g = values(2, s + 1) * case["gscale"]
        if one_array is not None:
            one_array[:] = mx.nd.array(g, dtype=dt)
            grad = one_array
        elif case["sparse"]:
            r = rows(s)
            grad = mx.nd.sparse.row_sparse_array((g[r].astype(dt), np.array(r, np.int64)),
                                                 shape=SHAPE, dtype=dt)
        else:
            grad = mx.nd.array(g, dtype=dt)
        updater(0, grad, weight)
    return {"weight": hexes(weight)[0], "states": hexes(*_flat_states(updater.states[0]))}


def _op(name, op, states, kwargs, dtype="float32", sparse=False, mp=False, out="weight",
        steps=20):
    return {"name": name, "op": op, "states": states, "kwargs": kwargs, "dtype": dtype,
            "sparse": sparse, "mp": mp, "out": out, "steps": steps}


OPERATOR_CASES = [
    _op("sgd_update", "sgd_update", [], {"lr": 0.1, "wd": 0.01}),
    _op("sgd_update_clip_rescale_new_array", "sgd_update", [],
        {"lr": 0.1, "wd": 0.01, "clip_gradient": 0.3, "rescale_grad": 0.5}, out="none"),
    _op("sgd_update_row_sparse_lazy", "sgd_update", [], {"lr": 0.1, "wd": 0.01}, sparse=True),
    _op("sgd_update_row_sparse_not_lazy", "sgd_update", [],
        {"lr": 0.1, "wd": 0.01, "lazy_update": False}, sparse=True),
    _op("sgd_mom_update", "sgd_mom_update", ["mom"], {"lr": 0.1, "momentum": 0.9, "wd": 0.01}),
    _op("sgd_mom_update_row_sparse_lazy", "sgd_mom_update", ["mom"],
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, sparse=True),
    _op("mp_sgd_update_fp16", "mp_sgd_update", [], {"lr": 0.1, "wd": 0.01}, dtype="float16",
        mp=True),
    _op("mp_sgd_mom_update_fp16", "mp_sgd_mom_update", ["mom"],
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, dtype="float16", mp=True),
    _op("nag_mom_update", "nag_mom_update", ["mom"], {"lr": 0.1, "momentum": 0.9, "wd": 0.01,
                                                      "clip_gradient": 0.4}),
    # into a new array: MXNet's momentum update reads the untouched weight
    _op("nag_mom_update_new_array", "nag_mom_update", ["mom"],
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, out="none"),
    _op("mp_nag_mom_update_fp16", "mp_nag_mom_update", ["mom"],
        {"lr": 0.1, "momentum": 0.9}, dtype="float16", mp=True),
    _op("adam_update", "adam_update", ["mean", "var"],
        {"lr": 0.01, "wd": 0.01, "clip_gradient": 0.5, "rescale_grad": 0.9}),
    _op("adam_update_row_sparse_lazy", "adam_update", ["mean", "var"],
        {"lr": 0.01, "wd": 0.01}, sparse=True),
    _op("signsgd_update", "signsgd_update", [], {"lr": 0.01, "wd": 0.1}),
    _op("signum_update", "signum_update", ["mom"],
        {"lr": 0.01, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.1}),
    _op("rmsprop_update", "rmsprop_update", ["n"],
        {"lr": 0.01, "gamma1": 0.9, "wd": 0.01, "clip_weights": 0.8}),
    _op("rmspropalex_update", "rmspropalex_update", ["n", "g", "delta"],
        {"lr": 0.01, "gamma1": 0.9, "gamma2": 0.8, "clip_gradient": 0.3}),
    _op("ftrl_update", "ftrl_update", ["z", "n"], {"lr": 0.1, "lamda1": 0.01, "wd": 0.01}),
    _op("ftrl_update_row_sparse", "ftrl_update", ["z", "n"], {"lr": 0.1, "lamda1": 0.01},
        sparse=True),
    _op("ftml_update", "ftml_update", ["d", "v", "z"], {"lr": 0.01, "wd": 0.01}),
    _op("lamb_update_phases", "lamb", ["mean", "var"],
        {"wd": 0.01, "lr": 0.01, "lower_bound": 0.5, "upper_bound": 3.0}),
    _op("lamb_update_phases_no_bias_correction", "lamb", ["mean", "var"],
        {"wd": 0.02, "lr": 0.01, "bias_correction": False, "clip_gradient": 0.4}),
    _op("mp_lamb_update_phases_fp16", "lamb", ["mean", "var"], {"wd": 0.01, "lr": 0.01},
        dtype="float16", mp=True),
]


def _grad(mx, dt, s, sparse):
    g = values(2, s + 1)
    if sparse:
        r = rows(s)
        return mx.nd.sparse.row_sparse_array((g[r].astype(dt), np.array(r, np.int64)),
                                             shape=SHAPE, dtype=dt)
    return mx.nd.array(g, dtype=dt)


def run_operator(mx, case: dict) -> dict:
    """Call ``mx.nd.<op>`` ``steps`` times (or LAMB's two phases, with fixed
    norms); the final weight, states and master copy as hex."""
    dt, kwargs = case["dtype"], dict(case["kwargs"])
    weight = mx.nd.array(values(1, 0), dtype=dt)
    sdt = "float32" if case["mp"] else dt
    states = [mx.nd.zeros(SHAPE, dtype=sdt) for _ in case["states"]]
    w32 = [weight.astype("float32")] if case["mp"] else []
    result = None
    for s in range(case["steps"]):
        grad = _grad(mx, dt, s, case["sparse"])
        if case["op"] == "lamb":
            lr, lo, hi = kwargs.pop("lr", 0.01), kwargs.pop("lower_bound", -1), \
                kwargs.pop("upper_bound", -1)
            phase1 = mx.nd.mp_lamb_update_phase1 if case["mp"] else mx.nd.lamb_update_phase1
            phase2 = mx.nd.mp_lamb_update_phase2 if case["mp"] else mx.nd.lamb_update_phase2
            g = phase1(weight, grad, *states, *w32, t=s + 1, **kwargs)
            r1 = mx.nd.array([1.0 + 0.125 * (s % 5)])
            r2 = mx.nd.array([2.0 + 0.25 * (s % 3)])
            phase2(weight, g, r1, r2, *w32, lr=lr, lower_bound=lo, upper_bound=hi, out=weight)
            kwargs.update(lr=lr, lower_bound=lo, upper_bound=hi)
            continue
        extra = {"t": s + 1} if case["op"] == "ftml_update" else {}
        op = getattr(mx.nd, case["op"])
        if case["out"] == "none":
            result = op(weight, grad, *states, *w32, **kwargs, **extra)
        else:
            op(weight, grad, *states, *w32, out=weight, **kwargs, **extra)
    return {"weight": hexes(weight)[0], "states": hexes(*states, *w32),
            "result": hexes(result)[0] if result is not None else None}
