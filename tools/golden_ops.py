"""Record real MXNet 1.9.1 results for the operator table's operators:
tests/golden/ops.json.gz.

Each case is one call: an ``mx.nd`` function (or an NDArray method, the
first argument being ``self``) with positional arguments (arrays given by
their values, shape and dtype; anything else as JSON) and keyword
arguments, and what MXNet returned: an array (shape, dtype, values), a list
of arrays, a scalar, or the first line of the error it raised. Inputs are
random (a fixed seed) over several shapes and dtypes: broadcasting,
``axis``/``keepdims``/``exclude`` variants, int and float16 inputs, shapes
MXNet refuses. Empty arrays are recorded inside ``mx.np_shape(True)``
(MXNet 1.x refuses zero-size shapes outside it; mxkv allows them), each in a
fresh interpreter (MXNet 1.9.1 corrupts its heap on some of them: a later
call then crashes), so a full run takes a few minutes.

Replayed by ``tests/test_ops_golden.py`` (one test per operator).

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_ops.py
"""
from __future__ import annotations

import gzip
import json
import os
import sys

import mxnet as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "ops.json.gz")

_RNG = np.random.RandomState(29)
CASES: list = []


def arr(shape, dtype="float32", lo=-3.0, hi=3.0, values=None):
    """An input array: random in [lo, hi) (integers for int dtypes), or ``values``."""
    if values is not None:
        a = np.asarray(values, dtype=dtype).reshape(shape)
    elif np.dtype(dtype).kind in "iu":
        a = _RNG.randint(int(lo), int(hi) + 1, size=shape).astype(dtype)
    elif dtype == "bool":
        a = _RNG.randint(0, 2, size=shape).astype(dtype)
    else:
        a = _RNG.uniform(lo, hi, size=shape).astype(dtype)
    return {"nd": a.ravel().tolist(), "shape": list(a.shape), "dtype": str(a.dtype)}


def case(op, *args, method=False, empty=False, tag="", **kwargs):
    """Add a call of ``mx.nd.<op>`` (``method``: of the first argument's method)."""
    CASES.append({"op": op, "args": list(args), "kwargs": kwargs, "method": method,
                  "np_shape": empty, "tag": tag})


def _to_mx(a):
    if isinstance(a, dict) and "nd" in a:
        return mx.nd.array(np.asarray(a["nd"], dtype=a["dtype"]).reshape(a["shape"]),
                           dtype=a["dtype"])
    if isinstance(a, list) and a and all(isinstance(x, dict) and "nd" in x for x in a):
        return [_to_mx(x) for x in a]
    return a


def _result(r):
    if isinstance(r, mx.nd.NDArray):
        v = r.asnumpy()
        return {"shape": list(v.shape), "dtype": str(v.dtype), "values": v.ravel().tolist()}
    if isinstance(r, (list, tuple)):
        return {"list": [_result(x) for x in r]}
    if isinstance(r, np.generic):
        return {"scalar": r.item()}
    return {"scalar": r}


def _function(op):
    fn = mx.nd
    for part in op.split("."):  # linalg.syevd: mx.nd.linalg.syevd
        fn = getattr(fn, part)
    return fn


def record(c):
    mx.nd.waitall()  # (an asynchronous error of an earlier case surfaces there, not here)
    args = [_to_mx(a) for a in c["args"]]
    kwargs = {k: _to_mx(v) for k, v in c["kwargs"].items()}
    try:
        if c["np_shape"]:
            with mx.util.np_shape(True):
                fn = getattr(args[0], c["op"]) if c["method"] else _function(c["op"])
                res = fn(*(args[1:] if c["method"] else args), **kwargs)
                out = _result(res)
        else:
            fn = getattr(args[0], c["op"]) if c["method"] else _function(c["op"])
            res = fn(*(args[1:] if c["method"] else args), **kwargs)
            out = _result(res)
        mx.nd.waitall()
    except Exception as exc:  # noqa: BLE001 (MXNet's error is the record)
        msg = str(exc).strip().splitlines()
        line = next((m for m in msg if "Check failed" in m or "Error" in m), msg[0] if msg
                    else type(exc).__name__)
        out = {"error": f"{type(exc).__name__}: {line[:300]}"}
    return out


def _record_alone(index):
    """Record case ``index`` in a fresh interpreter: MXNet 1.9.1 corrupts its heap on
    some zero-size arrays, and a later call then crashes, so each empty-array case
    runs alone (a crash is recorded as MXNet's error)."""
    import subprocess
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(index)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return {"error": f"MXNet crashed (exit {proc.returncode})"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(out_path):
    import golden_ops_cases  # noqa: F401 (fills CASES)
    for i, c in enumerate(CASES):
        c["mxnet"] = _record_alone(i) if c["np_shape"] else record(c)
    data = {"generator": "tools/golden_ops.py", "mxnet": mx.__version__, "cases": CASES}
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    with gzip.GzipFile(out_path, "wb", mtime=0) as f:
        f.write(raw)
    errors = sum("error" in c["mxnet"] for c in CASES)
    print(f"wrote {out_path}: {len(CASES)} cases of {len({c['op'] for c in CASES})} "
          f"operators ({errors} errors), {os.path.getsize(out_path)} bytes")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.modules.setdefault("golden_ops", sys.modules[__name__])
    if sys.argv[1:2] == ["--one"]:
        import golden_ops_cases  # noqa: F401
        print(json.dumps(record(CASES[int(sys.argv[2])])))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT)
