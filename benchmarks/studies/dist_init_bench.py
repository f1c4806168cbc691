"""One-at-a-time init of many keys: does a shard's cost follow the change?

Launches a whole job of each implementation (mxkv's ``mxkv launch``, MXNet
1.9.1's ps-lite through ``mxnet_launch.py``), one worker and one server by
default, whose worker initializes ``--keys`` keys of ``--mb`` MB (float32)
one call each and times every call. A store whose per-init cost grows with
what it already holds (a checkpoint copying the whole shard on every init)
shows a last-ten mean well above the first-ten mean.

    bash benchmarks/run.sh ...               # not part of run.sh; run directly:
    MXNET_PY=/work/venv-mxnet/bin/python .venv/bin/python benchmarks/studies/dist_init_bench.py

Prints one line per side (first ten, last ten, total) and, with ``--out``,
writes them as JSON. Targets (issue 18): last ten at most 1.2x the first
ten; total at most 2x MXNet's.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from dist_jobs import launch_command, run_job, run_sides  # noqa: E402


def worker(a: argparse.Namespace) -> int:
    """The job's worker: init keys one at a time, rank 0 writes the times."""
    mx = importlib.import_module(a.module)
    n = a.mb * 1024 * 1024 // 4
    kv = mx.kv.create("dist_sync")
    vals = [mx.nd.ones((n,)) * (i + 1) for i in range(4)]
    mx.nd.waitall()
    times = []
    start = time.perf_counter()
    for i in range(a.keys):
        t = time.perf_counter()
        kv.init(i, vals[i % 4])
        mx.nd.waitall()
        times.append(time.perf_counter() - t)
    # the total ends once the last value can be pulled (mxkv's rank 0 may
    # return from init before the value is on the server)
    out = mx.nd.zeros((n,))
    kv.pull(a.keys - 1, out=out)
    mx.nd.waitall()
    total = time.perf_counter() - start
    # the values must be there (a fast wrong answer fails the run)
    for i in (0, a.keys // 2, a.keys - 1):
        kv.pull(i, out=out)
        got = out.asnumpy()
        if not (got == (i % 4) + 1).all():
            raise SystemExit(f"key {i}: expected {(i % 4) + 1}, got {got[:4]}")
    kv._barrier()
    if kv.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"module": a.module, "times_s": times, "total_s": total}, f)
    return 0


def run_side(side: str, a: argparse.Namespace) -> dict:
    """One job of ``side`` (``mxkv`` or ``mxnet``): its row."""
    py = a.mxnet_py if side == "mxnet" else a.mxkv_py
    cmd = launch_command(side, 1, a.servers, py, os.path.abspath(__file__),
                         ["--worker", "--module", side, "--keys", str(a.keys), "--mb", str(a.mb)])
    with run_job(cmd, f"init-{side}", quiet=a.quiet) as job:
        times, wall, total = job.data["times_s"], job.wall_s, job.data["total_s"]
    first = sum(times[:10]) / 10
    last = sum(times[-10:]) / 10
    return {"side": side, "first10_ms": first * 1e3, "last10_ms": last * 1e3,
            "ratio": last / first, "total_s": total, "job_wall_s": wall}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--module", default="mxkv", help=argparse.SUPPRESS)
    p.add_argument("--keys", type=int, default=120)
    p.add_argument("--mb", type=int, default=4)
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--sides", default="mxkv,mxnet")
    p.add_argument("--mxnet-py", default=os.environ.get("MXNET_PY",
                                                        "/work/venv-mxnet/bin/python"))
    p.add_argument("--mxkv-py", default=sys.executable)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--out", default="")
    a = p.parse_args()
    if a.worker:
        return worker(a)
    return run_sides(a, run_side, lambda side, r: (
        f"{side:6s} first10 {r['first10_ms']:7.1f} ms  last10 {r['last10_ms']:7.1f} ms"
        f"  ratio {r['ratio']:.2f}  total {r['total_s']:.2f} s"))


if __name__ == "__main__":
    sys.exit(main())
