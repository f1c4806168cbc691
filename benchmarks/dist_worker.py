"""One worker of the distributed benchmark, on MXNet's or mxkv's ``dist_sync``.

Started by a launcher (MXNet's ``tools/launch.py`` or ``mxkv launch``), W
times. ``--workload``:

* ``resnet50`` (default): push + pull of ResNet-50's parameter set per
  iteration; rank 0 writes the per-iteration times to ``--out``.
* ``init120``: 120 keys of 4 MB (1,048,576 float32) initialized one at a
  time; rank 0 writes each ``init``'s time.
* ``bigkey``: one key of 512 MB (134,217,728 float32): the ``init`` time,
  then push + pull iterations; every rank writes its peak resident memory
  (``ru_maxrss``) to ``--out`` (rank 0) or ``--out.rank<R>``.

The first iteration is checked: every value must be the number of workers
(each pushes ones), so a fast wrong answer fails the run.

    python dist_worker.py --module mxkv --iters 20 --warmup 3 --out times.json
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet50 import resnet50_param_shapes  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--module", default="mxkv")
    p.add_argument("--kind", default="dist_sync")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--workload", choices=["resnet50", "init120", "bigkey"], default="resnet50")
    p.add_argument("--groups", type=int, default=1,
                   help="resnet50: push group k+1 before pulling group k (G groups of keys "
                   "of about equal bytes), so a pull's answer can come back while the next "
                   "push goes out")
    a = p.parse_args()
    mx = importlib.import_module(a.module)
    if a.workload == "init120":
        return init120(mx, a)
    if a.workload == "bigkey":
        return bigkey(mx, a)
    shapes = [s for _, s in resnet50_param_shapes()]
    keys = list(range(len(shapes)))
    kv = mx.kv.create(a.kind)
    t0 = time.perf_counter()
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    grads = [mx.nd.ones(s) for s in shapes]
    outs = [mx.nd.zeros(s) for s in shapes]
    kv._barrier()
    setup = time.perf_counter() - t0

    # push's return, then pull + waitall; each iteration's wall-clock start
    phases = {"push_s": [], "pull_s": [], "start_wall": []}

    groups = _groups([int(np.prod(s)) for s in shapes], a.groups)

    def step():
        phases["start_wall"].append(time.time())
        t = time.perf_counter()
        if len(groups) == 1:
            kv.push(keys, grads)
        else:   # push group k+1, then pull group k
            for k, (lo, hi) in enumerate(groups):
                kv.push(keys[lo:hi], grads[lo:hi])
                if k:
                    plo, phi = groups[k - 1]
                    kv.pull(keys[plo:phi], out=outs[plo:phi])
            lo, hi = groups[-1]
            keys_left, outs_left = keys[lo:hi], outs[lo:hi]
        phases["push_s"].append(time.perf_counter() - t)
        if len(groups) == 1:
            kv.pull(keys, out=outs)
        else:
            kv.pull(keys_left, out=outs_left)
        mx.nd.waitall()
        phases["pull_s"].append(time.perf_counter() - t - phases["push_s"][-1])

    times, warm = [], []
    for i in range(a.warmup + a.iters):
        if i == a.warmup:
            loop_start = time.time()
            faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = time.perf_counter()
        step()
        dt = time.perf_counter() - t
        if i == 0:
            for o in (outs[0], outs[-1], outs[len(outs) // 2]):
                got = o.asnumpy()
                if not (got == kv.num_workers).all():
                    raise SystemExit(f"wrong result: expected {kv.num_workers}, got "
                                     f"{got.ravel()[:4]}")
        (times if i >= a.warmup else warm).append(dt)
    loop_end = time.time()
    # page faults per timed iteration: a copy into reused memory should not
    # fault (where it does, the kernel unmapped it: multihost_bench.py's report)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / max(1, a.iters)
    kv._barrier()
    if kv.rank != 0:   # every rank's phases (multihost_bench.py reads their offsets)
        with open(f"{a.out}.rank{kv.rank}", "w") as f:
            json.dump({"rank": kv.rank, "minflt_per_it": faults,
                       **{k: v[a.warmup:] for k, v in phases.items()}}, f)
    if kv.rank == 0:   # (loop_wall: the timed loop's bounds, for link counters)
        with open(a.out, "w") as f:
            json.dump({"module": a.module, "workers": kv.num_workers, "times_s": times,
                       "warmup_s": warm, "setup_s": setup, "loop_wall": [loop_start, loop_end],
                       "minflt_per_it": faults,
                       **{k: v[a.warmup:] for k, v in phases.items()}}, f)
    return 0


def _groups(sizes, count):
    """``count`` contiguous ranges of the keys, of about equal total size."""
    total, out, lo, acc = sum(sizes), [], 0, 0
    for i, n in enumerate(sizes):
        acc += n
        if acc >= total * (len(out) + 1) / count and len(out) < count - 1:
            out.append((lo, i + 1))
            lo = i + 1
    out.append((lo, len(sizes)))
    return [g for g in out if g[0] < g[1]]


def init120(mx, a) -> int:
    kv = mx.kv.create(a.kind)
    times = []
    start = time.perf_counter()
    for k in range(120):
        v = mx.nd.zeros((1024 * 1024,))
        t = time.perf_counter()
        kv.init(k, v)
        mx.nd.waitall()
        times.append(time.perf_counter() - t)
    # the total ends once the last value can be pulled (an init may return
    # before its value is on the server, as mxkv's rank 0 does: a pull after
    # it waits for it); both sides pay this one pull
    out = mx.nd.zeros((1024 * 1024,))
    kv.pull(119, out=out)
    mx.nd.waitall()
    total = time.perf_counter() - start
    if out.asnumpy().any():
        raise SystemExit("key 119: expected zeros")
    kv._barrier()
    if kv.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"module": a.module, "init_s": times, "times_s": times,
                       "total_s": total}, f)
    return 0


def bigkey(mx, a) -> int:
    n = 128 * 1024 * 1024   # 512 MB of float32
    kv = mx.kv.create(a.kind)
    value = mx.nd.zeros((n,))
    mx.nd.waitall()
    t = time.perf_counter()
    kv.init(0, value)
    kv._barrier()
    init_s = time.perf_counter() - t
    del value
    grad, out = mx.nd.ones((n,)), mx.nd.zeros((n,))
    times = []
    for i in range(a.warmup + a.iters):
        t = time.perf_counter()
        kv.push(0, grad)
        kv.pull(0, out=out)
        mx.nd.waitall()
        dt = time.perf_counter() - t
        if i == 0:
            got = out.asnumpy()[:: n // 7]
            if not (got == kv.num_workers).all():
                raise SystemExit(f"wrong result: expected {kv.num_workers}, got {got[:4]}")
        if i >= a.warmup:
            times.append(dt)
    kv._barrier()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    path = a.out if kv.rank == 0 else f"{a.out}.rank{kv.rank}"
    with open(path, "w") as f:
        json.dump({"module": a.module, "init_s": init_s, "times_s": times,
                   "peak_rss_bytes": rss, "rank": kv.rank}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
