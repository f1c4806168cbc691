"""Every operator of the table against MXNet 1.9.1's recorded outputs
(tests/golden/ops.json.gz, written by tools/golden_ops.py): one test per
operator, replaying each of its cases through ``mx.nd`` (or the NDArray
method) and comparing shape, dtype and values: bit for bit, or within
float tolerance for the operators computed with transcendental functions,
BLAS/LAPACK or a different summation order (``TOLERANT``). A case where
MXNet raised must raise an MXNetError. Cases on empty arrays were recorded
in MXNet's numpy-shape mode (its 0-d results are our shape ``(1,)``).
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError

GOLDEN = Path(__file__).parent / "golden" / "ops.json.gz"
DATA = json.loads(gzip.decompress(GOLDEN.read_bytes()))
BY_OP = defaultdict(list)
for _c in DATA["cases"]:
    BY_OP[_c["op"]].append(_c)

#: Operators whose float results are compared within tolerance (transcendental
#: functions, sums in another order, BLAS/LAPACK); all others bit for bit.
TOLERANT = {
    "exp", "expm1", "log", "log10", "log2", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sqrt", "rsqrt", "cbrt",
    "rcbrt", "sigmoid", "softsign", "erf", "erfinv", "gamma", "gammaln", "degrees", "radians",
    "hard_sigmoid", "smooth_l1", "broadcast_power", "broadcast_hypot", "power", "reciprocal",
    "mean", "sum", "nansum", "prod", "nanprod", "norm", "moments", "sum_axis", "dot",
    "batch_dot", "khatri_rao", "cumsum", "add_n", "ElementWiseSum", "broadcast_div", "divide",
    "true_divide", "elemwise_div", "Correlation",
} | {n for n in BY_OP if n.startswith("linalg")}
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-10}

#: Cases where mxkv deliberately differs from MXNet 1.9.1 (docs/operators.md lists
#: them): ``"raises"`` where MXNet silently returns garbage and mxkv refuses;
#: ``"returns"`` where MXNet fails on a valid call (or gives an undefined value)
#: and mxkv computes the numpy-consistent result.
DEVIATIONS = {
    ("reshape", "(5, 5)"): ("raises", "MXNet reads past the array's 24 elements"),
    ("stack", "bad_shapes"): ("raises", "MXNet stacks a (2, 3) and a (3, 2) array"),
    ("cumsum", "dtype"): ("returns", "MXNet refuses a negative axis"),
    ("norm", "out_dtype"): ("returns", "MXNet fails on an out_dtype other than the input's"),
    ("erfinv", "int32"): ("returns", "NaN cast to int32 is undefined"),
    ("amp_multicast", ""): ("returns", "MXNet's CPU (MKLDNN) build fails on any dtype"),
    ("amp_multicast", "narrow"): ("returns", "MXNet's CPU (MKLDNN) build fails on any dtype"),
    **{(op, "empty"): ("returns", "MXNet fails reducing an empty axis")
       for op in ("sum", "mean", "prod", "nansum", "nanprod")},
}


def _input(a):
    if isinstance(a, dict) and "nd" in a:
        return mx.nd.array(np.asarray(a["nd"], dtype=a["dtype"]).reshape(a["shape"]),
                           dtype=a["dtype"])
    if isinstance(a, list) and a and all(isinstance(x, dict) and "nd" in x for x in a):
        return [_input(x) for x in a]
    return a


def _compare(op, got, want, where):
    if "list" in want:
        assert isinstance(got, (list, tuple)), f"{where}: want a list, got {type(got)}"
        assert len(got) == len(want["list"]), f"{where}: {len(got)} outputs"
        for i, (g, w) in enumerate(zip(got, want["list"])):
            _compare(op, g, w, f"{where}[{i}]")
        return
    if "scalar" in want:
        assert got == want["scalar"], f"{where}: {got!r} != {want['scalar']!r}"
        return
    assert isinstance(got, mx.nd.NDArray), f"{where}: got {type(got).__name__}"
    w = np.asarray(want["values"], dtype=want["dtype"]).reshape(want["shape"] or (1,))
    g = got.asnumpy()
    assert g.shape == w.shape, f"{where}: shape {g.shape}, MXNet {w.shape}"
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, MXNet {w.dtype}"
    if op in TOLERANT and w.dtype.kind == "f":
        rtol = RTOL[str(w.dtype)]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=where)
    else:
        assert np.array_equal(g, w, equal_nan=w.dtype.kind == "f"), \
            f"{where}: values differ\n mxkv {g.ravel()[:12]}\nMXNet {w.ravel()[:12]}"


def replay(c):
    """One case through mxkv: compare with MXNet's record (or its error)."""
    args = [_input(a) for a in c["args"]]
    kwargs = {k: _input(v) for k, v in c["kwargs"].items()}
    where = f"{c['op']}[{c['tag'] or 'default'}]{' method' if c['method'] else ''}"
    fn = mx.nd
    for part in ([] if c["method"] else c["op"].split(".")):
        fn = getattr(fn, part)
    fn = getattr(args[0], c["op"]) if c["method"] else fn
    call_args = args[1:] if c["method"] else args
    want = c["mxnet"]
    deviation = DEVIATIONS.get((c["op"], c["tag"]))
    if deviation and deviation[0] == "raises":
        with pytest.raises(MXNetError):
            fn(*call_args, **kwargs)
        return "deviation"
    if deviation:
        assert isinstance(fn(*call_args, **kwargs), (mx.nd.NDArray, list)), where
        return "deviation"
    if "error" in want:
        with pytest.raises(MXNetError):
            fn(*call_args, **kwargs)
        return "error"
    got = fn(*call_args, **kwargs)
    _compare(c["op"], got, want, where)
    return "tolerance" if c["op"] in TOLERANT else "exact"


@pytest.mark.parametrize("op", sorted(BY_OP))
def test_operator_matches_mxnet(op):
    failures = []
    for c in BY_OP[op]:
        try:
            replay(c)
        except (AssertionError, pytest.fail.Exception, Exception) as exc:  # noqa: BLE001
            failures.append(f"{c['tag'] or 'default'}: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''}")
    assert not failures, "\n".join(failures)


def test_the_golden_file_covers_every_operator_with_cases():
    assert DATA["mxnet"] == "1.9.1"
    assert len(DATA["cases"]) >= 700
    errors = sum("error" in c["mxnet"] for c in DATA["cases"])
    assert errors >= 30  # MXNet's errors for bad shapes are recorded too
    tags = {(c["op"], c["tag"]) for c in DATA["cases"]}
    assert set(DEVIATIONS) <= tags, sorted(set(DEVIATIONS) - tags)


def test_the_golden_counts():
    """The counts of the closing note: cases compared exactly, within tolerance,
    MXNet's errors reproduced, documented deviations (all must pass)."""
    counts: dict = defaultdict(int)
    for c in DATA["cases"]:
        counts[replay(c)] += 1
    print(dict(counts))
    assert counts["exact"] > counts["tolerance"] > 0
    assert counts["deviation"] == len(DEVIATIONS)
