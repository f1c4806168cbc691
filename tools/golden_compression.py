"""Record real MXNet 1.9.1 results for gradient compression: tests/golden/compression.json.

Runs compressed push/pull scenarios on a ``'device'`` kvstore over several
cpu contexts (MXNet's CommDevice quantizes each context's gradient with its
own residual, dequantizes on the merge context and sums), and records the
inputs, the value pulled after every push, the error messages of
``set_gradient_compression`` for bad parameters, and which kvstore types
accept compression. ``tests/test_compression.py`` replays the scenarios with
``mxkv.kvstore.compression`` and compares bit for bit.

Regenerate (needs the real MXNet, not mxkv)::

    /tmp/mxref/bin/python tools/golden_compression.py
    # or, with the project's own MXNet venv:
    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_compression.py

Optional argument: the output path (default tests/golden/compression.json).
The grads are drawn from a fixed seed and stored in the file, so the replay
needs no random generator to agree with this one.
"""
from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "compression.json")


def f32list(arr) -> list:
    """float32 values as JSON floats (float32 -> float64 is exact)."""
    return [float(v) for v in np.asarray(arr, np.float32).ravel()]


def run_scenario(name, params, shape, ndev, pushes, set_after_init=False, note=""):
    """Push each grads list in ``pushes`` from ``ndev`` cpu contexts; pull after each."""
    kv = mx.kv.create("device")
    if not set_after_init:
        kv.set_gradient_compression(params)
    key = 3
    kv.init(key, mx.nd.zeros(shape))
    if set_after_init:
        kv.set_gradient_compression(params)
    ctxs = [mx.cpu(i) for i in range(ndev)]
    pulled = []
    for grads in pushes:
        vals = [mx.nd.array(np.asarray(g, np.float32).reshape(shape), ctx=c)
                for g, c in zip(grads, ctxs)]
        kv.push(key, vals)
        outs = [mx.nd.zeros(shape, ctx=c) for c in ctxs]
        kv.pull(key, out=outs)
        got = [o.asnumpy() for o in outs]
        for other in got[1:]:
            if not np.array_equal(other, got[0]):
                raise SystemExit(f"{name}: pulled copies differ between contexts")
        pulled.append(f32list(got[0]))
    return {
        "name": name,
        "note": note,
        "params": params,
        "shape": list(shape),
        "devices": ndev,
        "set_after_init": set_after_init,
        "pushes": [[f32list(g) for g in grads] for grads in pushes],
        "pulled": pulled,
    }


def scenarios():
    rng = np.random.RandomState(20190901)
    out = []

    # one device still goes through quantize/dequantize; 37 values = 2 words + 5
    base = np.linspace(-1.0, 1.0, 37).astype(np.float32)
    edge = base.copy()
    edge[:6] = [0.5, -0.5, 0.49999997, -0.49999997, 0.0, -0.0]
    out.append(run_scenario(
        "2bit_one_device_padding", {"type": "2bit", "threshold": 0.5}, (37,), 1,
        [[edge], [np.full(37, 0.2, np.float32)], [np.full(37, 0.2, np.float32)],
         [np.full(37, 0.2, np.float32)], [base]],
        note="exact +-threshold, just inside it, signed zeros; then 0.2 three times "
             "(error feedback crosses 0.5 on the third)"))

    out.append(run_scenario(
        "2bit_four_devices_random", {"type": "2bit", "threshold": 0.5}, (5, 20), 4,
        [[rng.uniform(-1, 1, 100).astype(np.float32) for _ in range(4)] for _ in range(3)],
        note="4 cpu contexts, each with its own residual; 100 values (not a multiple of 16)"))

    t = np.float32(0.3)
    b = np.array([t, -t, np.nextafter(t, np.float32(0)), -np.nextafter(t, np.float32(0)),
                  np.nextafter(t, np.float32(1)), 0.1, 0.15, -0.15, 1.7, -2.9, 0.0],
                 np.float32)
    g1 = np.resize(b, 33).astype(np.float32)
    g2 = np.resize(b[::-1], 33).astype(np.float32)
    out.append(run_scenario(
        "2bit_string_threshold_two_devices", {"type": "2bit", "threshold": "0.3"}, (33,), 2,
        [[g1, g2], [g2, g1], [g1, g1]],
        note="threshold given as a string; values at float32(0.3) exactly and one ulp off"))

    out.append(run_scenario(
        "2bit_default_threshold_three_devices", {"type": "2bit"}, (16,), 3,
        [[rng.uniform(-0.4, 0.4, 16).astype(np.float32) for _ in range(3)] for _ in range(4)],
        note="no threshold given: MXNet's default 0.5; small grads, so feedback matters"))

    out.append(run_scenario(
        "2bit_set_after_init", {"type": "2bit", "threshold": 0.25}, (20,), 2,
        [[rng.uniform(-0.5, 0.5, 20).astype(np.float32) for _ in range(2)] for _ in range(2)],
        set_after_init=True,
        note="set_gradient_compression called after init: MXNet 1.9 still compresses"))
    return out


def errors():
    cases = [
        ("1bit", {"type": "1bit"}),
        ("2bit_threshold_0", {"type": "2bit", "threshold": 0}),
        ("2bit_threshold_negative", {"type": "2bit", "threshold": -0.5}),
        ("2bit_threshold_nan", {"type": "2bit", "threshold": float("nan")}),
        ("2bit_threshold_not_a_number", {"type": "2bit", "threshold": "abc"}),
        ("unknown_type", {"type": "foo"}),
        ("unknown_type_bad_threshold", {"type": "foo", "threshold": -1}),
        ("missing_type", {"threshold": 0.5}),
        ("not_a_dict", ["2bit"]),
    ]
    rec = {}
    for name, params in cases:
        kv = mx.kv.create("device")
        try:
            kv.set_gradient_compression(params)
        except Exception as exc:  # noqa: BLE001 - we record whatever MXNet raises
            msg = str(exc).strip().splitlines()[-1]
            prefix = type(exc).__name__ + ": "
            msg = msg.removeprefix(prefix)
            rec[name] = {"params": repr(params), "error": type(exc).__name__, "message": msg}
        else:
            rec[name] = {"params": repr(params), "error": None, "message": ""}
    return rec


def accepted_types():
    rec = {}
    for t in ["local", "device", "local_update_cpu", "local_allreduce_cpu",
              "local_allreduce_device"]:
        kv = mx.kv.create(t)
        try:
            kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
            rec[t] = "accepted"
        except Exception as exc:  # noqa: BLE001
            rec[t] = f"{type(exc).__name__}: {exc}"
    return rec


def main(argv):
    out_path = argv[1] if len(argv) > 1 else DEFAULT_OUT
    data = {
        "generated_by": "tools/golden_compression.py",
        "mxnet_version": mx.__version__,
        "scenarios": scenarios(),
        "errors": errors(),
        "kvstore_types": accepted_types(),
    }
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    print(f"wrote {out_path}: {len(data['scenarios'])} scenarios, "
          f"{len(data['errors'])} error cases")


if __name__ == "__main__":
    main(sys.argv)
