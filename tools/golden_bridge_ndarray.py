"""Record real MXNet 1.9.1 results for the bridge's NDArray operators:
tests/golden/bridge_ndarray.json.

The Clojure API calls operators by MXNet's name with positional parameters
in MXNet's order (``mxkv/bridge/nd_dispatch.py``) and serializes arrays in
MXNet's raw-bytes layout (``mxkv/bridge/nd_bytes.py``). This records, for a
set of cases, what MXNet itself returns: each operator's output values,
dtype and shape (or that it raised), and the bytes MXNet's
``MXNDArraySaveRawBytes`` writes for a few arrays.
``tests/test_bridge_ndarray_ops.py`` replays the cases through the bridge.

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_bridge_ndarray.py

Optional argument: the output path (default tests/golden/bridge_ndarray.json).
"""
from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "bridge_ndarray.json")

F = "float32"
M23 = [[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]
# name, operator, inputs [(values, dtype)], positional params, named params
CASES = [
    ("sqrt", "sqrt", [([0, 1, 4, 9], F)], [], {}),
    ("sqrt_int32_truncates", "sqrt", [([1, 2, 3, 4], "int32")], [], {}),
    ("rsqrt", "rsqrt", [([1, 4, 0.25], F)], [], {}),
    ("square", "square", [([-3, 0.5, 2], F)], [], {}),
    ("abs", "abs", [([-1, -2.5, 3], F)], [], {}),
    ("sign", "sign", [([-2, 0, 3], F)], [], {}),
    ("round_half_away_from_zero", "round", [([1.5, 2.5, -1.5, -2.5, 0.5, -0.5, 2.4], F)], [], {}),
    ("ceil", "ceil", [([1.5, 2.1, 3.7, -1.5], F)], [], {}),
    ("floor", "floor", [([1.5, 2.1, 3.7, -1.5], F)], [], {}),
    ("exp", "exp", [([0, 1, -1], F)], [], {}),
    ("log", "log", [([1, 10, 0.5], F)], [], {}),
    ("cos", "cos", [([0, 12, -1], F)], [], {}),
    ("sin", "sin", [([0, 12, -1], F)], [], {}),
    ("exp_float64", "exp", [([0.5, 2], "float64")], [], {}),
    ("clip", "clip", [([1, 2, 3, 4, 5, 6], F)], [2, 5], {}),
    ("clip_named", "clip", [([1, 2, 3, 4, 5, 6], F)], [], {"a_min": 0, "a_max": 3.5}),
    ("sum_all", "sum", [(M23, F)], [], {}),
    ("sum_axis0", "sum", [(M23, F)], [0], {}),
    ("sum_axis1_keepdims", "sum", [(M23, F)], [1, True], {}),
    ("sum_exclude", "sum", [(M23, F)], [], {"axis": 1, "exclude": True}),
    ("sum_int32", "sum", [([[1, 2], [3, 4]], "int32")], [], {}),
    ("max_all", "max", [(M23, F)], [], {}),
    ("max_axis0", "max", [(M23, F)], [0], {}),
    ("min_all", "min", [(M23, F)], [], {}),
    ("min_axis1", "min", [(M23, F)], [1], {}),
    ("norm", "norm", [([1, 2, 3], F)], [], {}),
    ("norm_ord1", "norm", [(M23, F)], [1], {}),
    ("norm_axis1", "norm", [(M23, F)], [2, 1], {}),
    ("norm_int32", "norm", [([1, 2, 3], "int32")], [], {}),
    ("transpose_2d", "transpose", [(M23, F)], [], {}),
    ("transpose_3d_axes", "transpose", [(np.arange(24).reshape(2, 3, 4).tolist(), F)],
     [[0, 2, 1]], {}),
    ("argmax_channel", "argmax_channel", [([[1, 2], [4, 3]], F)], [], {}),
    ("argmax_channel_3d", "argmax_channel", [((np.arange(24).reshape(2, 3, 4) % 5).tolist(), F)],
     [], {}),
    ("argmax_channel_1d_fails", "argmax_channel", [([1, 5, 2], F)], [], {}),
    ("dot_row_col", "dot", [([[1, 2]], F), ([[3], [4]], F)], [], {}),
    ("dot_vectors", "dot", [([1, 2], F), ([3, 4], F)], [], {}),
    ("dot_matrices", "dot", [([[1, 2], [3, 4]], F), ([[5, 6], [7, 8]], F)], [], {}),
    ("dot_transpose_a", "dot", [([[1, 2], [3, 4]], F), ([[5, 6], [7, 8]], F)], [True], {}),
    ("dot_transpose_b", "dot", [([[1, 2], [3, 4]], F), ([[5, 6], [7, 8]], F)], [],
     {"transpose_b": True}),
    ("dot_3d_2d", "dot", [(np.arange(12).reshape(2, 3, 2).tolist(), F),
                          ([[1, 0, 2], [0, 1, 3]], F)], [], {}),
    ("dot_shape_mismatch_fails", "dot", [([[1, 2, 3]], F), ([[1], [2]], F)], [], {}),
    ("choose_element_0index", "choose_element_0index",
     [([[1, 2, 3], [4, 6, 5]], F), ([0, 1], F)], [], {}),
    ("choose_element_0index_clips", "choose_element_0index",
     [([[1, 2, 3], [4, 6, 5]], F), ([-1, 7], F)], [], {}),
    ("choose_element_0index_wrap", "choose_element_0index",
     [([[1, 2, 3], [4, 6, 5]], F), ([-1, 7], F)], [], {"mode": "wrap"}),
    ("choose_element_0index_axis0_keepdims", "choose_element_0index",
     [([[1, 2, 3], [4, 6, 5]], F), ([1, 0, 1], F)], [0, True], {}),
]

SERIALIZED = [
    ("dense_float32", lambda: mx.nd.array([[1, 2], [3, 4]]) * 3),
    ("int32_on_cpu1", lambda: mx.nd.array([1, 2], ctx=mx.cpu(1), dtype="int32")),
    ("float16", lambda: mx.nd.array([0.5, -2], dtype="float16")),
    ("uint8", lambda: mx.nd.array([200, 3, 255], dtype="uint8")),
    ("float64_3d", lambda: mx.nd.arange(0, 8, dtype="float64").reshape((2, 2, 2))),
    ("row_sparse", lambda: mx.nd.sparse.row_sparse_array(([[1, 2]], [1]), shape=(3, 2))),
]


def values(arr) -> list:
    return [float(v) for v in arr.asnumpy().ravel()]


def run_case(name, op, inputs, positional, named):
    arrays = [mx.nd.array(np.array(v, dtype=dt), dtype=dt) for v, dt in inputs]
    params = dict(named)
    try:
        out = getattr(mx.nd, op)(*arrays, *positional, **params)
        out.wait_to_read()
        result = {"values": values(out), "dtype": np.dtype(out.dtype).name,
                  "shape": list(out.shape)}
    except mx.base.MXNetError as exc:
        result = {"error": [ln for ln in str(exc).splitlines() if ln.strip()][-1][:300]}
    return {"name": name, "op": op,
            "inputs": [{"values": np.array(v, dtype=np.float64).ravel().tolist(), "dtype": dt,
                        "shape": list(np.array(v).shape)} for v, dt in inputs],
            "positional": positional, "named": named, "mxnet": result}


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    cases = [run_case(*c) for c in CASES]
    serialized = []
    for name, make in SERIALIZED:
        arr = make()
        serialized.append({"name": name, "hex": arr.__getstate__()["handle"].hex(),
                           "dense": values(arr.tostype("default")),
                           "dtype": np.dtype(arr.dtype).name, "shape": list(arr.shape),
                           "stype": arr.stype,
                           "context": [arr.context.device_type, arr.context.device_id]})
    doc = {"generator": "tools/golden_bridge_ndarray.py", "mxnet": mx.__version__,
           "operators": cases, "serialized": serialized}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(cases)} operator cases and {len(serialized)} serialized arrays to {out}")


if __name__ == "__main__":
    main()
