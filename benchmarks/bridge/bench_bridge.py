"""Bridge benchmark: what the Clojure API costs over Py4J and shared memory.

Measures, on this machine:

* the Py4J no-op round trip (Clojure -> ``Engine.call("noop")`` -> Clojure), p50;
* a small ``kvstore/push`` and ``kvstore/pull`` from Clojure (a 2x3 array),
  p50, against the target of at most 2x the no-op round trip each (the
  four kinds of calls are measured in interleaved batches);
* ``ndarray/->vec`` of a 64 MB float32 array in GB/s against numpy's memcpy
  (``np.copyto`` between two preallocated 64 MB arrays), target at least
  half. The two are measured alternately, a few repetitions at a time, so
  both see the same load on a shared machine. The results are dropped at
  once, so every few calls one runs a GC to reuse their regions: the p50
  leaves it out, the mean includes it;
* ``ndarray/array`` (the other direction) for reference.

Not a timed test: run it by hand or from the benchmark suite::

    .venv/bin/python benchmarks/bridge/bench_bridge.py [--json OUT] [--n 3000] [--mb 64]
        [--rounds 8] [--warm 0]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


class Jvm:
    """bench.clj in a JVM started by the ``mxkv`` launcher, driven line by line."""

    def __init__(self, mb: int) -> None:
        mxkv = Path(sys.executable).with_name("mxkv")
        cmd = [str(mxkv) if mxkv.exists() else "mxkv", "clj", str(HERE / "bench.clj"), str(mb)]
        env = {**os.environ, "MXKV_PYTHON": os.environ.get("MXKV_PYTHON", sys.executable)}
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        self.ready = self._line()

    def _line(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit(f"bench.clj exited with code {self.p.wait()}")
            if line.startswith(("{", "[")):
                return json.loads(line)

    def ask(self, cmd: str):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self._line()

    def close(self) -> None:
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=30)


def memcpy_s(src: np.ndarray, dst: np.ndarray, reps: int) -> list:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        np.copyto(dst, src)
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000, help="timed calls of each small kind")
    ap.add_argument("--mb", type=int, default=64, help="size of the ->vec array in MB")
    ap.add_argument("--rounds", type=int, default=8,
                    help="alternations of ->vec and memcpy (3 repetitions each)")
    ap.add_argument("--warm", type=int, default=0,
                    help="leave the first WARM timed ->vec calls out of the means")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()

    jvm = Jvm(args.mb)
    try:
        nbytes = jvm.ready["bytes"]
        small = jvm.ask(f"small {args.n}")
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        vec_us, mc_s = [], []
        for _ in range(args.rounds):
            vec_us += jvm.ask("vec 3")
            mc_s += memcpy_s(src, dst, 3)
        array_us = jvm.ask("array 5")
        info = jvm.ask("info")
    finally:
        jvm.close()

    p50 = statistics.median
    noop = p50(small["noop"])
    vec_mean_us = statistics.fmean(vec_us[args.warm:] or vec_us)
    mc_mean_s = statistics.fmean(mc_s[args.warm:] or mc_s)
    vec_s = p50(vec_us) * 1e-6
    res = {
        "noop_roundtrip_us_p50": noop,
        "push_us_p50": p50(small["push"]),
        "pull_us_p50": p50(small["pull"]),
        "push_plus_pull_us_p50": p50(small["push_pull"]),
        "to_vec_ms_p50": vec_s * 1e3,
        "to_vec_gbps": nbytes / vec_s / 1e9,
        "to_vec_best_gbps": nbytes / (min(vec_us) * 1e-6) / 1e9,
        "to_vec_mean_ms": vec_mean_us * 1e-3,
        "to_vec_mean_gbps": nbytes / (vec_mean_us * 1e-6) / 1e9,
        "numpy_memcpy_mean_gbps": nbytes / mc_mean_s / 1e9,
        "mean_skips": args.warm,
        "numpy_memcpy_gbps": nbytes / p50(mc_s) / 1e9,
        "array_gbps": nbytes / (p50(array_us) * 1e-6) / 1e9,
        "mb": nbytes / 2**20,
        "engine": info,
        "cpus": os.cpu_count(),
    }
    res["push_over_noop"] = res["push_us_p50"] / noop
    res["pull_over_noop"] = res["pull_us_p50"] / noop
    res["to_vec_over_memcpy"] = res["to_vec_gbps"] / res["numpy_memcpy_gbps"]
    res["to_vec_over_memcpy_mean"] = res["to_vec_mean_gbps"] / res["numpy_memcpy_mean_gbps"]
    ok_call = max(res["push_over_noop"], res["pull_over_noop"]) <= 2.0
    ok_vec = res["to_vec_over_memcpy"] >= 0.5
    mb = res["mb"]
    rows = [
        ("Py4J no-op round trip p50", f"{noop:8.1f} us"),
        ("kvstore/push (2x3) p50",
         f"{res['push_us_p50']:8.1f} us  ({res['push_over_noop']:.2f}x no-op)"),
        ("kvstore/pull (2x3) p50",
         f"{res['pull_us_p50']:8.1f} us  ({res['pull_over_noop']:.2f}x no-op)"),
        ("push+pull pair p50", f"{res['push_plus_pull_us_p50']:8.1f} us"),
        ("target: push, pull <= 2x no-op", "met" if ok_call else "NOT met"),
        (f"ndarray/->vec {mb:.0f} MB p50",
         f"{res['to_vec_ms_p50']:8.2f} ms  = {res['to_vec_gbps']:.2f} GB/s "
         f"(best {res['to_vec_best_gbps']:.2f})"),
        (f"numpy memcpy {mb:.0f} MB p50",
         f"{p50(mc_s) * 1e3:8.2f} ms  = {res['numpy_memcpy_gbps']:.2f} GB/s"),
        ("->vec / memcpy (p50s)",
         f"{res['to_vec_over_memcpy']:8.2f}     target >= 0.5: {'met' if ok_vec else 'NOT met'}"),
        (f"ndarray/->vec {mb:.0f} MB mean" + (f" (from call {args.warm + 1})" if args.warm else ""),
         f"{res['to_vec_mean_ms']:8.2f} ms  = {res['to_vec_mean_gbps']:.2f} GB/s "
         f"({res['to_vec_over_memcpy_mean']:.2f} of memcpy's mean; includes GCs)"),
        (f"ndarray/array {mb:.0f} MB p50", f"{res['array_gbps']:8.2f} GB/s"),
    ]
    for name, value in rows:
        print(f"{name:34s} {value}")
    try:
        print(f"{'load average':34s} {os.getloadavg()[0]:8.2f} on {os.cpu_count()} CPUs")
    except OSError:
        pass
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
