"""One worker of the distributed benchmark: push + pull of ResNet-50's
parameter set per iteration, on MXNet's or mxkv's ``dist_sync``.

Started by a launcher (MXNet's ``tools/launch.py`` or ``mxkv launch``), W
times; rank 0 writes the per-iteration times to ``--out`` as JSON. The
first iteration is checked: every value must be the number of workers
(each pushes ones), so a fast wrong answer fails the run.

    python dist_worker.py --module mxkv --iters 20 --warmup 3 --out times.json
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet50 import resnet50_param_shapes  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--module", default="mxkv")
    p.add_argument("--kind", default="dist_sync")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    mx = importlib.import_module(a.module)
    shapes = [s for _, s in resnet50_param_shapes()]
    keys = list(range(len(shapes)))
    kv = mx.kv.create(a.kind)
    t0 = time.perf_counter()
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    grads = [mx.nd.ones(s) for s in shapes]
    outs = [mx.nd.zeros(s) for s in shapes]
    kv._barrier()
    setup = time.perf_counter() - t0

    def step():
        kv.push(keys, grads)
        kv.pull(keys, out=outs)
        mx.nd.waitall()

    times = []
    for i in range(a.warmup + a.iters):
        t = time.perf_counter()
        step()
        dt = time.perf_counter() - t
        if i == 0:
            for o in (outs[0], outs[-1], outs[len(outs) // 2]):
                got = o.asnumpy()
                if not (got == kv.num_workers).all():
                    raise SystemExit(f"wrong result: expected {kv.num_workers}, got "
                                     f"{got.ravel()[:4]}")
        if i >= a.warmup:
            times.append(dt)
    kv._barrier()
    if kv.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"module": a.module, "workers": kv.num_workers, "times_s": times,
                       "setup_s": setup}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
