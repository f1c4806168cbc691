"""mxkv against mxkv: the benchmark rows on two source trees, paired.

For a change's cost (locking, say) the interesting ratio is mxkv after over
mxkv before, not over MXNet. This runs the workloads of ``workloads.py`` on
two trees of ``python/`` (the baseline, e.g. ``git archive main python``
unpacked somewhere, and this checkout), in separate processes that
alternate (base, new, new, base, ...) so that a noisy machine's drift hits
both, and reports per row the median step time of each and the median of
the per-round ratios new/base::

    git archive main python | (mkdir -p /tmp/mxkv-main && tar -x -C /tmp/mxkv-main)
    .venv/bin/python benchmarks/studies/ab_trees.py --base /tmp/mxkv-main/python --rounds 10

Every row runs its quick parameters; ``--rows`` picks rows (default: the
single-thread CPU rows).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # benchmarks/
ROOT = os.path.dirname(HERE)
ROWS = ["big_key_k1", "big_key_k4", "big_key_k8", "resnet50_batched", "resnet50_per_key",
        "resnet50_sgd", "small_keys_1000", "device_2bit_k4"]


def run_rows(rows: list, reps: int) -> dict:
    """In this process: median seconds per step of each row (after a check)."""
    sys.path.insert(0, HERE)
    import workloads

    import mxkv as mx

    out = {"file": mx.__file__}
    for name in rows:
        wl = workloads.REGISTRY[name]
        bench = wl.setup(mx, **wl.params_for("quick"))
        bench.step()
        bench.check()
        for _ in range(2):
            bench.step()
        times = []
        gc.disable()
        try:
            for _ in range(reps):
                t0 = time.perf_counter()
                bench.step()
                times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
        bench.teardown()
        out[name] = statistics.median(times)
        del bench
        gc.collect()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the baseline tree's python/ folder")
    ap.add_argument("--new", default=os.path.join(ROOT, "python"),
                    help="the tree to compare (default: this checkout's python/)")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=30, help="timed steps per row per process")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows = args.rows.split(",")
    if args.worker:
        print(json.dumps(run_rows(rows, args.reps)))
        return
    trees = {"base": os.path.abspath(args.base), "new": os.path.abspath(args.new)}
    results: dict = {"base": [], "new": []}
    for r in range(args.rounds):
        for side in (("base", "new") if r % 2 == 0 else ("new", "base")):
            env = dict(os.environ, PYTHONPATH=trees[side])
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                                   "--base", trees["base"], "--rows", args.rows,
                                   "--reps", str(args.reps)],
                                  env=env, capture_output=True, text=True)
            if proc.returncode:
                sys.exit(f"{side} failed:\n{proc.stderr[-3000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            if not got["file"].startswith(trees[side]):
                sys.exit(f"{side} imported mxkv from {got['file']}, not {trees[side]}")
            results[side].append(got)
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(
            f"{k} {results['new'][-1][k] / results['base'][-1][k]:.3f}" for k in rows),
            flush=True)
    print("\n| row | base (median ms) | new (median ms) | paired ratio new/base, median "
          "(min-max) |\n|---|--:|--:|--:|")
    for k in rows:
        base = [d[k] for d in results["base"]]
        new = [d[k] for d in results["new"]]
        ratios = [n / b for n, b in zip(new, base)]
        print(f"| {k} | {statistics.median(base) * 1e3:.3f} | {statistics.median(new) * 1e3:.3f}"
              f" | {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")


if __name__ == "__main__":
    main()
