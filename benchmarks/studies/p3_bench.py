"""P3 with and without its window: when is the first layer's value back?

A training step pushes gradients in backward order (last layer first) and
needs the first layer's weights first in the next forward pass. With P3
(``mxkv launch --p3``) every push carries ``priority=-layer`` and a worker
keeps at most ``MXKV_P3_WINDOW_BYTES`` of pushes in flight, so the first
layer's slices, pushed last, overtake the queued ones. Each iteration here
pushes ResNet-50's 161 gradients one key at a time in backward order, then
pulls the keys one at a time in forward order; it records when the pull of
layer 0 returned (``first``) and when the iteration ended (``iter``).

Sides (whole jobs launched in turn, ``--reps`` times, 2 workers x 1 server
by default): ``window`` (P3, the default window), ``nowindow`` (P3 with
``MXKV_P3_WINDOW_BYTES=0``: priority orders submission only, as before the
window), ``plain`` (no P3).

    .venv/bin/python benchmarks/studies/p3_bench.py --reps 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from dist_jobs import launch_command, resnet50_store, run_job, run_sides  # noqa: E402

SIDES = {"window": (True, None), "nowindow": (True, "0"), "plain": (False, None)}


def worker(a: argparse.Namespace) -> int:
    """The job's worker: the iterations; rank 0 writes their times."""
    import mxkv as mx

    kv, keys, grads, outs = resnet50_store(mx)
    first, iters = [], []
    for i in range(a.warmup + a.iters):
        kv._barrier()
        t = time.perf_counter()
        for k in reversed(keys):
            kv.push(k, grads[k], priority=-k)
        for k in keys:
            kv.pull(k, out=outs[k], priority=-k)
            if k == 0:
                t0 = time.perf_counter() - t
        dt = time.perf_counter() - t
        if i == 0 and not (outs[0].asnumpy() == kv.num_workers).all():
            raise SystemExit("wrong result")
        if i >= a.warmup:
            first.append(t0)
            iters.append(dt)
    kv._barrier()
    if kv.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"first_s": first, "iter_s": iters}, f)
    return 0


def run_side(side: str, a: argparse.Namespace) -> dict:
    """One job of ``side`` (a key of ``SIDES``): its row."""
    p3, window = SIDES[side]
    cmd = launch_command("mxkv", a.workers, a.servers, sys.executable, os.path.abspath(__file__),
                         ["--worker", "--iters", str(a.iters), "--warmup", str(a.warmup)],
                         flags=["--p3"] if p3 else [])
    env = dict(os.environ)
    env.pop("MXKV_P3_WINDOW_BYTES", None)
    if window is not None:
        env["MXKV_P3_WINDOW_BYTES"] = window
    with run_job(cmd, f"p3-{side}", env=env) as job:
        got = job.data
    return {"side": side, "first_ms": statistics.median(got["first_s"]) * 1e3,
            "iter_ms": statistics.median(got["iter_s"]) * 1e3}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--sides", default="window,nowindow,plain")
    p.add_argument("--out", default="")
    a = p.parse_args()
    if a.worker:
        return worker(a)
    return run_sides(a, run_side, lambda side, r: (
        f"{side:9s} layer 0 back after {r['first_ms']:7.1f} ms   iteration "
        f"{r['iter_ms']:7.1f} ms"))


if __name__ == "__main__":
    sys.exit(main())
