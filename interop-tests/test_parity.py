"""Parity: seeded random sequences of store calls give the same arrays and
the same errors through the Python API directly, through Clojure over Py4J
and through Clojure over JPype.

A sequence is plain data (see :func:`sequence`): init / push / pull /
pushpull / row-sparse-pull / set-optimizer steps on one local store (dense
and row-sparse keys), valid ones and invalid ones (a duplicate init, an
unknown key, a wrong shape, an unknown optimizer). Each step's outcome is the arrays it produced (as
float64 lists of the float32 values) or the error's Python class and
message. The Clojure side is ``interop.driver/parity``; the Python side is
:func:`run_python`, written as a Python user of mxkv would write it.
"""
from __future__ import annotations

import random
from typing import Any, Dict, List

import numpy as np
import pytest

import mxkv as mx

SEEDS = (11, 23, 37)
SHAPES = {0: [2, 3], 1: [4], 2: [3, 2], 3: [5]}


def _values(rng: random.Random, shape, n: int) -> List[Dict[str, Any]]:
    size = int(np.prod(shape))
    # quarters in [-4, 4]: exact in float32, so sums are exact too
    return [{"shape": list(shape), "data": [rng.randint(-16, 16) / 4 for _ in range(size)]}
            for _ in range(n)]


def sequence(seed: int, steps: int = 40) -> List[Dict[str, Any]]:
    """A random, reproducible sequence of store calls (some of them invalid)."""
    rng = random.Random(seed)
    as_key = str if rng.random() < 0.5 else int
    inited: set = set()
    out: List[Dict[str, Any]] = []
    for i in range(steps):
        k = rng.choice(list(SHAPES))
        shape = SHAPES[k]
        key = as_key(k)
        r = rng.random()
        if i < 3 or r < 0.15:
            fresh = [j for j in SHAPES if j not in inited]
            if fresh and rng.random() < 0.8:  # mostly a new key; else a duplicate init
                k = rng.choice(fresh)
                shape, key = SHAPES[k], as_key(k)
            stype = "row_sparse" if k in (2, 3) and rng.random() < 0.7 else "default"
            out.append({"op": "init", "keys": [key], "values": _values(rng, shape, 1),
                        "stype": stype})
            inited.add(k)
        elif r < 0.40:
            n = rng.choice([1, 1, 2, 3])
            bad = rng.random() < 0.15
            vshape = [shape[0] + 1] + shape[1:] if bad else shape
            out.append({"op": "push", "keys": [key] * n, "values": _values(rng, vshape, n)})
        elif r < 0.60:
            n = rng.choice([1, 2])
            out.append({"op": "pull", "keys": [key] * n, "shapes": [shape] * n})
        elif r < 0.72:
            out.append({"op": "pushpull", "keys": [key], "values": _values(rng, shape, 1),
                        "shapes": [shape]})
        elif r < 0.84:
            rows = sorted(rng.sample(range(shape[0]), rng.randint(1, shape[0])))
            out.append({"op": "row_sparse_pull", "keys": [key], "shape": shape,
                        "row_ids": rows})
        elif r < 0.94:
            out.append({"op": "set_optimizer", "name": "sgd",
                        "params": {"learning_rate": rng.choice([0.1, 0.5]),
                                   "momentum": rng.choice([0.0, 0.9]), "wd": 0.0,
                                   "rescale_grad": 1.0}})
        else:
            out.append({"op": "set_optimizer", "name": "no-such-optimizer", "params": {}})
    return out


def _error(exc: BaseException) -> Dict[str, Any]:
    cls = type(exc)
    return {"ok": False, "class": f"{cls.__module__}.{cls.__qualname__}", "message": str(exc)}


def _nd(v) -> mx.nd.NDArray:
    return mx.nd.array(np.array(v["data"], dtype=np.float32).reshape(v["shape"]))


def _grouped(keys, vals):
    """MXNet's form for a key given once per device: key -> [values]."""
    if len(set(keys)) == 1:
        return keys[0], (vals[0] if len(vals) == 1 else vals)
    raise ValueError("a step uses one key")


def run_python(steps: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The steps through mxkv's Python API, as a Python user writes them."""
    kv = mx.kv.create("local")
    results = []
    for s in steps:
        try:
            arrays: list = []
            op = s["op"]
            if op == "init":
                kv.init(s["keys"][0], _nd(s["values"][0]).tostype(s["stype"]))
            elif op == "push":
                kv.push(*_grouped(s["keys"], [_nd(v) for v in s["values"]]))
            elif op == "pull":
                outs = [mx.nd.zeros(tuple(sh)) for sh in s["shapes"]]
                kv.pull(*_grouped(s["keys"], outs))
                arrays = outs
            elif op == "pushpull":
                outs = [mx.nd.zeros(tuple(sh)) for sh in s["shapes"]]
                kv.pushpull(s["keys"][0], _nd(s["values"][0]), out=outs[0])
                arrays = outs
            elif op == "row_sparse_pull":
                out = mx.nd.sparse.zeros("row_sparse", tuple(s["shape"]))
                ids = mx.nd.array(np.array(s["row_ids"], dtype=np.float32))
                kv.row_sparse_pull(s["keys"][0], out=out, row_ids=ids)
                arrays = [out.tostype("default")]
            elif op == "set_optimizer":
                kv.set_optimizer(mx.optimizer.create(s["name"], **s["params"]))
            results.append({"ok": True, "arrays": [a.asnumpy().astype(np.float64).ravel().tolist()
                                                   for a in arrays]})
        except Exception as exc:  # the outcome is the error itself
            results.append(_error(exc))
    return results


def _check_the_sequences() -> None:
    """The generator is reproducible and its sequences mix every kind of step,
    valid calls that produce arrays and invalid ones."""
    assert sequence(SEEDS[0]) == sequence(SEEDS[0])
    ops = {s["op"] for seed in SEEDS for s in sequence(seed)}
    assert ops == {"init", "push", "pull", "pushpull", "row_sparse_pull", "set_optimizer"}
    outcomes = [o for seed in SEEDS for o in run_python(sequence(seed))]
    assert any(not o["ok"] for o in outcomes), "the sequences include invalid calls"
    assert any(o["ok"] and o["arrays"] for o in outcomes), "and calls that produce arrays"


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_clojure_matches_the_python_api(driver, seed):
    _check_the_sequences()
    steps = sequence(seed)
    want = run_python(steps)
    got = driver.call("parity", steps)
    assert len(got) == len(want)
    for i, (s, w, g) in enumerate(zip(steps, want, got)):
        assert g == w, f"step {i} {s['op']} over {driver.transport}: {g} != python {w}"
