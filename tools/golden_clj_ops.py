"""Record real MXNet 1.9.1 results for the operators a Clojure training step
calls: tests/golden/clj_ops.json.

Each case is one MXNet call (operator, input arrays, parameters by name)
and the Clojure calls that must give the same array: the
``org.apache.clojure-mxnet.ndarray`` form (inputs, then parameters by
position in MXNet's order) and the ``ndarray-api`` / ``ndarray-random-api``
forms (required arguments by position, or one map). In a Clojure call,
``{"input": i}`` stands for the i-th input array and JSON objects are maps
with keyword keys. A random case records only what is fixed (shape, dtype,
the range): mxkv draws from numpy's streams, not MXNet's.

Replayed by ``tests/test_bridge_clj_ops.py`` (the engine, no JVM) and
``clojure/test/org/apache/clojure_mxnet/ndarray_api_test.clj`` (every
Clojure form, over each transport).

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_clj_ops.py

Optional argument: the output path (default tests/golden/clj_ops.json).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import mxnet as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "clj_ops.json")

F = "float32"
I0, I1 = {"input": 0}, {"input": 1}
M23 = [[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]
T234 = np.arange(24).reshape(2, 3, 4).tolist()
T2345 = np.arange(120).reshape(2, 3, 4, 5).tolist()
LOGITS = [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]
ACT = [[2.0, 1.0, 0.0, -1.0, -2.0]]


def api(fn, *args):
    return [f"ndarray-api/{fn}", list(args)]


def nd(fn, *args):
    return [f"ndarray/{fn}", list(args)]


def rnd(fn, *args):
    return [f"ndarray-random-api/{fn}", list(args)]


def reshape_case(name, data, shape, reverse=False):
    named = {"shape": shape, "reverse": True} if reverse else {"shape": shape}
    form = {"data": I0, "shape": shape, **({"reverse": True} if reverse else {})}
    return (name, "reshape", [(data, F)], named, [api("reshape", form)])


# name, MXNet operator, inputs [(values, dtype)], parameters by name, Clojure forms
CASES = [
    ("expand_dims_0", "expand_dims", [(M23, F)], {"axis": 0},
     [nd("expand-dims", I0, 0), api("expand-dims", I0, 0),
      api("expand-dims", {"data": I0, "axis": 0})]),
    ("expand_dims_last", "expand_dims", [(M23, F)], {"axis": -1},
     [nd("expand-dims", I0, -1), api("expand-dims", I0, -1)]),
    ("expand_dims_2", "expand_dims", [(M23, F)], {"axis": 2}, [nd("expand-dims", I0, 2)]),
    ("expand_dims_out_of_range_fails", "expand_dims", [(M23, F)], {"axis": 4},
     [nd("expand-dims", I0, 4)]),
    ("argmax_axis1", "argmax", [(M23, F)], {"axis": 1},
     [nd("argmax", I0, 1), api("argmax", {"data": I0, "axis": 1})]),
    ("argmax_axis0_keepdims", "argmax", [(M23, F)], {"axis": 0, "keepdims": True},
     [nd("argmax", I0, 0, True), api("argmax", {"data": I0, "axis": 0, "keepdims": True})]),
    ("argmax_all", "argmax", [(M23, F)], {}, [nd("argmax", I0), api("argmax", {"data": I0})]),
    ("argmax_ties_take_the_first", "argmax", [([[3, 1, 3], [0, 2, 2]], F)], {"axis": 1},
     [nd("argmax", I0, 1)]),
    ("argmax_int32", "argmax", [([[3, 1, 4], [0, 2, 1]], "int32")], {"axis": -1},
     [nd("argmax", I0, -1)]),
    ("argmax_float64", "argmax", [([[3, 1, 4], [0, 2, 1]], "float64")], {"axis": 1},
     [nd("argmax", I0, 1)]),
    ("argmin_int32_all", "argmin", [([[3, 1, 4], [0, 2, 1]], "int32")], {},
     [api("argmin", {"data": I0})]),
    ("softmax", "softmax", [(LOGITS, F)], {},
     [nd("softmax", I0), api("softmax", {"data": I0})]),
    ("softmax_axis0", "softmax", [(LOGITS, F)], {"axis": 0},
     [nd("softmax", I0, {"axis": 0}), api("softmax", {"data": I0, "axis": 0})]),
    ("softmax_temperature", "softmax", [(LOGITS, F)], {"temperature": 2.0},
     [nd("softmax", I0, {"temperature": 2.0}),
      api("softmax", {"data": I0, "temperature": 2.0})]),
    ("softmax_float64", "softmax", [(LOGITS, "float64")], {}, [nd("softmax", I0)]),
    ("softmax_3d_axis1", "softmax", [((np.arange(12).reshape(2, 3, 2) / 4).tolist(), F)],
     {"axis": 1}, [nd("softmax", I0, {"axis": 1})]),
    ("log_softmax", "log_softmax", [(LOGITS, F)], {},
     [nd("log-softmax", I0), api("log-softmax", {"data": I0})]),
    ("slice_axis", "slice_axis", [(M23, F)], {"axis": 1, "begin": 0, "end": 2},
     [nd("slice-axis", I0, 1, 0, 2), api("slice-axis", I0, 1, 0, 2),
      api("slice-axis", {"data": I0, "axis": 1, "begin": 0, "end": 2})]),
    ("slice_axis_negative_to_end", "slice_axis", [(T234, F)],
     {"axis": 2, "begin": -3, "end": None},
     [nd("slice-axis", I0, 2, -3, None),
      api("slice-axis", {"data": I0, "axis": 2, "begin": -3, "end": None})]),
    ("slice_axis_rows", "slice_axis", [(T234, F)], {"axis": 0, "begin": 1, "end": 2},
     [nd("slice-axis", I0, 0, 1, 2)]),
    ("slice_axis_empty_fails", "slice_axis", [(M23, F)], {"axis": 1, "begin": 2, "end": 1},
     [nd("slice-axis", I0, 1, 2, 1)]),
    ("slice_axis_bad_axis_fails", "slice_axis", [(M23, F)], {"axis": 2, "begin": 0, "end": 1},
     [nd("slice-axis", I0, 2, 0, 1)]),
    ("one_hot", "one_hot", [([1, 0, 3], F)], {"depth": 4},
     [nd("one-hot", I0, 4), api("one-hot", I0, 4),
      api("one-hot", {"indices": I0, "depth": 4})]),
    ("one_hot_values_dtype_out_of_range", "one_hot", [([2, -1, 5, 0], F)],
     {"depth": 3, "on_value": 8.0, "off_value": -1.0, "dtype": "int32"},
     [nd("one-hot", I0, 3, 8.0, -1.0, "int32"),
      api("one-hot", {"indices": I0, "depth": 3, "on-value": 8.0, "off-value": -1.0,
                      "dtype": "int32"})]),
    ("one_hot_2d_int_indices", "one_hot", [([[0, 1], [2, 2]], "int32")], {"depth": 3},
     [nd("one-hot", I0, 3)]),
    reshape_case("reshape_2x2", [0, 1, 2, 3], [2, 2]),
    reshape_case("reshape_copy_dim", T234, [4, 0, 2]),
    reshape_case("reshape_keep", T234, [2, 0, 0]),
    reshape_case("reshape_infer", T234, [6, 1, -1]),
    reshape_case("reshape_infer_middle", T234, [3, -1, 8]),
    reshape_case("reshape_flat", T234, [-1]),
    reshape_case("reshape_rest", T234, [-2]),
    reshape_case("reshape_first_then_rest", T234, [2, -2]),
    reshape_case("reshape_rest_then_ones", T234, [-2, 1, 1]),
    reshape_case("reshape_merge", T234, [-3, 4]),
    reshape_case("reshape_merge_twice", T2345, [-3, -3]),
    reshape_case("reshape_keep_merge", T234, [0, -3]),
    reshape_case("reshape_merge_rest", T234, [-3, -2]),
    reshape_case("reshape_split", T234, [-4, 1, 2, -2]),
    reshape_case("reshape_split_infer", T234, [2, -4, -1, 3, -2]),
    reshape_case("reshape_reverse", T234, [-1, 0], reverse=True),
    reshape_case("reshape_wrong_size", T234, [5, 5]),
    reshape_case("reshape_wrong_size_inferred", T234, [5, -1]),
    ("cast_int32", "cast", [([0.9, 1.3, -1.7], F)], {"dtype": "int32"},
     [api("cast", I0, "int32"), api("cast", {"data": I0, "dtype": "int32"})]),
    ("cast_uint8_wraps", "cast", [([300, 11.1, 10.9, 1, 3], F)], {"dtype": "uint8"},
     [api("cast", I0, "uint8")]),
    ("cast_float16", "cast", [([0.1, 1e5, -2.5], F)], {"dtype": "float16"},
     [api("cast", I0, "float16")]),
    ("cast_int_to_float64", "cast", [([1, -2, 3], "int32")], {"dtype": "float64"},
     [api("cast", I0, "float64")]),
    ("flatten_3d", "flatten", [(np.arange(18).reshape(2, 3, 3).tolist(), F)], {},
     [api("flatten", {"data": I0})]),
    ("flatten_1d", "flatten", [([1, 2, 3], F)], {}, [api("flatten", {"data": I0})]),
    ("activation_relu", "Activation", [(ACT, F)], {"act_type": "relu"},
     [api("activation", I0, "relu"), api("activation", {"data": I0, "act-type": "relu"})]),
    ("activation_sigmoid", "Activation", [(ACT, F)], {"act_type": "sigmoid"},
     [api("activation", I0, "sigmoid")]),
    ("activation_tanh", "Activation", [(ACT, F)], {"act_type": "tanh"},
     [api("activation", I0, "tanh")]),
    ("activation_softrelu", "Activation", [(ACT, F)], {"act_type": "softrelu"},
     [api("activation", I0, "softrelu")]),
    ("activation_softsign", "Activation", [(ACT, F)], {"act_type": "softsign"},
     [api("activation", I0, "softsign")]),
    ("relu", "relu", [(ACT, F)], {}, [api("relu", {"data": I0})]),
    ("sigmoid", "sigmoid", [(ACT, F)], {}, [api("sigmoid", {"data": I0})]),
    ("tanh", "tanh", [(ACT, F)], {}, [api("tanh", {"data": I0})]),
    ("broadcast_add", "broadcast_add", [(M23, F), ([[10, 20, 30]], F)], {},
     [api("broadcast-add", I0, I1), api("broadcast-add", {"lhs": I0, "rhs": I1})]),
    ("broadcast_sub_column", "broadcast_sub", [(M23, F), ([[1], [2]], F)], {},
     [api("broadcast-sub", I0, I1)]),
    ("broadcast_mul", "broadcast_mul", [(M23, F), ([[2, 0, -1]], F)], {},
     [api("broadcast-mul", I0, I1)]),
    ("broadcast_div", "broadcast_div", [(M23, F), ([[2], [4]], F)], {},
     [api("broadcast-div", I0, I1)]),
    ("broadcast_add_mismatch_fails", "broadcast_add", [(M23, F), ([[1, 2]], F)], {},
     [api("broadcast-add", I0, I1)]),
    ("mean_axis0", "mean", [(M23, F)], {"axis": 0},
     [api("mean", {"data": I0, "axis": 0})]),
    ("mean_all", "mean", [(M23, F)], {}, [api("mean", {"data": I0})]),
    ("sum_axis1_keepdims", "sum", [(M23, F)], {"axis": 1, "keepdims": True},
     [api("sum", {"data": I0, "axis": 1, "keepdims": True})]),
    ("dot_transpose_a", "dot", [(M23, F), ([[1, 0], [0, 1]], F)], {"transpose_a": True},
     [api("dot", {"lhs": I0, "rhs": I1, "transpose-a": True})]),
    ("dot", "dot", [(M23, F), ([[1], [0], [2]], F)], {},
     [api("dot", I0, I1), api("dot", {"lhs": I0, "rhs": I1})]),
    ("exp", "exp", [([0, 1, -1], F)], {}, [api("exp", {"data": I0})]),
    ("log", "log", [([1, 10, 0.5], F)], {}, [api("log", {"data": I0})]),
    ("square", "square", [([-3, 0.5, 2], F)], {}, [api("square", {"data": I0})]),
    ("sqrt", "sqrt", [([0, 1, 4, 9], F)], {}, [api("sqrt", {"data": I0})]),
    ("clip", "clip", [([1, 2, 3, 4, 5, 6], F)], {"a_min": 2, "a_max": 5},
     [api("clip", I0, 2, 5), api("clip", {"data": I0, "a-min": 2, "a-max": 5})]),
    ("transpose_axes", "transpose", [(T234, F)], {"axes": [0, 2, 1]},
     [api("transpose", {"data": I0, "axes": [0, 2, 1]})]),
    ("norm", "norm", [(M23, F)], {}, [api("norm", {"data": I0})]),
    ("argmax_channel", "argmax_channel", [(M23, F)], {}, [api("argmax-channel", {"data": I0})]),
    ("argmin_axis0", "argmin", [(M23, F)], {"axis": 0},
     [api("argmin", {"data": I0, "axis": 0})]),
    ("argmin_axis1_keepdims", "argmin", [(M23, F)], {"axis": 1, "keepdims": True},
     [api("argmin", {"data": I0, "axis": 1, "keepdims": True})]),
    ("arccos", "arccos", [([-1, 0, 0.5], F)], {}, [api("arccos", {"data": I0})]),
    ("arcsin", "arcsin", [([-1, 0, 0.5], F)], {}, [api("arcsin", {"data": I0})]),
    ("arctan", "arctan", [([-10, 0, 0.5], F)], {}, [api("arctan", {"data": I0})]),
    ("swap_axis", "SwapAxis", [(T234, F)], {"dim1": 0, "dim2": 2},
     [api("swap-axis", {"data": I0, "dim1": 0, "dim2": 2})]),
    ("concat_dim1", "concat", [(M23, F), ([[7], [8]], F)], {"dim": 1},
     [api("concat", [I0, I1], 2), api("concat", {"data": [I0, I1], "num-args": 2})]),
    ("concat_dim0", "concat", [(M23, F), ([[7, 8, 9]], F)], {"dim": 0},
     [api("concat", {"data": [I0, I1], "num-args": 2, "dim": 0})]),
    ("concat_mismatch_fails", "concat", [(M23, F), ([[7, 8]], F)], {"dim": 0},
     [api("concat", {"data": [I0, I1], "num-args": 2, "dim": 0})]),
    ("embedding", "Embedding", [([[1, 3], [0, 2]], F), (np.arange(20).reshape(4, 5).tolist(), F)],
     {"input_dim": 4, "output_dim": 5},
     [api("embedding", I0, I1, 4, 5),
      api("embedding", {"data": I0, "weight": I1, "input-dim": 4, "output-dim": 5})]),
    ("softmax_activation_instance", "SoftmaxActivation", [(LOGITS, F)], {"mode": "instance"},
     [api("softmax-activation", {"data": I0, "mode": "instance"})]),
    ("softmax_activation_channel", "SoftmaxActivation",
     [((np.arange(12).reshape(2, 3, 2) / 4).tolist(), F)], {"mode": "channel"},
     [api("softmax-activation", {"data": I0, "mode": "channel"})]),
    ("softmax_output", "SoftmaxOutput", [(LOGITS, F), ([2, 0], F)], {},
     [api("softmax-output", I0, I1), api("softmax-output", {"data": I0, "label": I1})]),
]

# name, MXNet operator, parameters by name, Clojure forms: shape, dtype and range only
RANDOM = [
    ("random_uniform", "random_uniform", {"low": -2.0, "high": 3.0, "shape": (3, 4)},
     [nd("random-uniform", -2.0, 3.0, "(3,4)"),
      rnd("uniform", {"low": -2.0, "high": 3.0, "shape": [3, 4]})]),
    ("random_uniform_float64", "random_uniform",
     {"low": 0.0, "high": 1.0, "shape": (5,), "dtype": "float64"},
     [nd("random-uniform", 0.0, 1.0, [5], None, "float64"),
      rnd("uniform", {"shape": [5], "dtype": "float64"})]),
    ("random_normal", "random_normal", {"loc": 1.0, "scale": 0.5, "shape": (2, 3)},
     [nd("random-normal", 1.0, 0.5, "(2, 3)"),
      rnd("normal", {"loc": 1.0, "scale": 0.5, "shape": [2, 3]})]),
    ("random_gamma", "random_gamma", {"alpha": 2.0, "beta": 1.5, "shape": (4,)},
     [rnd("gamma", {"alpha": 2.0, "beta": 1.5, "shape": [4]})]),
    ("random_randint", "random_randint", {"low": -3, "high": 7, "shape": (2, 5)},
     [rnd("randint", {"low": -3, "high": 7, "shape": [2, 5]})]),
]


# Where MXNet 1.9.1 silently corrupts, mxkv raises instead (docs/architecture.md,
# decision 1): the case records what MXNet did and that mxkv must refuse.
REFUSED = {
    "reshape_wrong_size": "MXNet returns 25 elements read from past the 24 of the array",
    "reshape_wrong_size_inferred": "MXNet infers -1 by integer division, drops 4 elements "
                                   "and corrupts its heap (glibc aborts the process at exit)",
}


def values(arr) -> list:
    return [float(v) for v in arr.asnumpy().ravel()]


def _error(exc) -> str:
    return [ln for ln in str(exc).splitlines() if ln.strip()][-1][:300]


def run_refused(name, op, inputs, named, clj):
    """A case where MXNet corrupts memory: run in a process of its own (in
    this one MXNet later aborts with 'corrupted size vs. prev_size')."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name],
                       capture_output=True, text=True)
    # the child may abort at exit (glibc finds the heap corrupted): its answer came first
    shape = json.loads(r.stdout.splitlines()[0])["mxnet"].get("shape")
    case = run_case(name, op, [], named, clj, call=False)
    case["inputs"] = run_case(name, op, inputs, named, clj, call=False)["inputs"]
    case["mxnet"] = {"error": f"mxkv refuses: {REFUSED[name]} (MXNet's shape {shape})"}
    return case


def run_case(name, op, inputs, named, clj, call=True):
    if not call:
        return {"name": name, "op": op, "named": named, "clojure": clj, "mxnet": {},
                "inputs": [{"values": np.array(v, dtype=np.float64).ravel().tolist(),
                            "dtype": dt, "shape": list(np.array(v).shape)} for v, dt in inputs]}
    arrays = [mx.nd.array(np.array(v, dtype=dt), dtype=dt) for v, dt in inputs]
    try:
        out = getattr(mx.nd, op)(*arrays, **named)
        out.wait_to_read()
        result = {"values": values(out), "dtype": np.dtype(out.dtype).name,
                  "shape": list(out.shape)}
    except mx.base.MXNetError as exc:
        result = {"error": _error(exc)}
    return {"name": name, "op": op,
            "inputs": [{"values": np.array(v, dtype=np.float64).ravel().tolist(), "dtype": dt,
                        "shape": list(np.array(v).shape)} for v, dt in inputs],
            "named": named, "clojure": clj, "mxnet": result}


def run_random(name, op, named, clj):
    kwargs = dict(named)
    out = getattr(mx.nd, op)(**kwargs)
    low = named.get("low")
    high = named.get("high")
    v = out.asnumpy()
    result = {"dtype": np.dtype(out.dtype).name, "shape": list(out.shape),
              "min": float(v.min()), "max": float(v.max())}
    if low is not None:
        result["range"] = [low, high]
    return {"name": name, "op": op, "named": {k: list(v) if isinstance(v, tuple) else v
                                              for k, v in named.items()},
            "clojure": clj, "mxnet": result}


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(run_case(*next(c for c in CASES if c[0] == sys.argv[2]))))
        return
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    mx.random.seed(0)  # the random cases' recorded extremes repeat
    doc = {"generator": "tools/golden_clj_ops.py", "mxnet": mx.__version__,
           "operators": [(run_refused if c[0] in REFUSED else run_case)(*c) for c in CASES],
           "random": [run_random(*c) for c in RANDOM]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    forms = sum(len(c["clojure"]) for c in doc["operators"] + doc["random"])
    print(f"wrote {len(doc['operators'])} operator cases, {len(doc['random'])} random cases "
          f"({forms} Clojure forms) to {out}")


if __name__ == "__main__":
    main()
