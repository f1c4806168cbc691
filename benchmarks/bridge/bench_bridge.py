"""Bridge benchmark: what the Clojure API costs over each transport.

Both transports run in the same run, their measurements interleaved so that
they share the machine's conditions: Py4J (a JVM process spawning the
engine; data through /dev/shm) and JPype (this Python's sibling process
hosting the JVM and the engine in one process; data through direct
buffers). For each, on this machine:

* the no-op round trip (Clojure -> ``Engine.call("noop")`` -> Clojure), p50;
* a small ``kvstore/push`` and ``kvstore/pull`` from Clojure (a 2x3 array),
  p50. Targets: over Py4J at most 2x its no-op round trip each; over JPype
  at most 10 us each. The four kinds of calls are measured in interleaved
  batches;
* ``ndarray/->vec`` of a 64 MB float32 array in GB/s against numpy's memcpy
  (``np.copyto`` between two preallocated 64 MB arrays, measured here, in
  turn with the two JVMs). Targets: over Py4J at least half of memcpy, over
  JPype at least 70%. The results are dropped at once, so every few calls
  one runs a GC to reuse their regions: the p50 leaves it out, the mean
  includes it;
* ``ndarray/array`` (the other direction) for reference.

Not a timed test: run it by hand or from the benchmark suite::

    .venv/bin/python benchmarks/bridge/bench_bridge.py [--json OUT] [--n 3000] [--mb 64]
        [--rounds 8] [--warm 0] [--transports py4j,jpype]

The JSON holds one object per transport (``{"py4j": {...}, "jpype": {...}}``).
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


#: Per transport: push and pull p50 at most this many times the no-op round
#: trip (py4j) or this many microseconds (jpype); ->vec at least this share
#: of numpy memcpy's GB/s.
TARGETS = {"py4j": {"call_over_noop": 2.0, "vec_over_memcpy": 0.5},
           "jpype": {"call_us": 10.0, "vec_over_memcpy": 0.7}}


class Jvm:
    """bench.clj in a JVM started by the ``mxkv`` launcher over ``transport``,
    driven line by line."""

    def __init__(self, mb: int, transport: str) -> None:
        mxkv = Path(sys.executable).with_name("mxkv")
        cmd = [str(mxkv) if mxkv.exists() else "mxkv", "clj", "--transport", transport,
               str(HERE / "bench.clj"), str(mb)]
        env = {**os.environ, "MXKV_PYTHON": os.environ.get("MXKV_PYTHON", sys.executable)}
        self.transport = transport
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)
        self.ready = self._line()

    def _line(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit(f"bench.clj over {self.transport} exited with code "
                                 f"{self.p.wait()}")
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
        self.p.wait(timeout=60)


def memcpy_s(src: np.ndarray, dst: np.ndarray, reps: int) -> list:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        np.copyto(dst, src)
        out.append(time.perf_counter() - t)
    return out


def summarize(transport: str, small: dict, vec_us: list, mc_s: list, array_us: list,
              info: dict, nbytes: int, warm: int) -> dict:
    """One transport's results (times in us, rates in GB/s) and its targets."""
    p50 = statistics.median
    noop = p50(small["noop"])
    vec_s = p50(vec_us) * 1e-6
    vec_mean_us = statistics.fmean(vec_us[warm:] or vec_us)
    mc_mean_s = statistics.fmean(mc_s[warm:] or mc_s)
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
        "numpy_memcpy_gbps": nbytes / p50(mc_s) / 1e9,
        "numpy_memcpy_mean_gbps": nbytes / mc_mean_s / 1e9,
        "mean_skips": warm,
        "array_gbps": nbytes / (p50(array_us) * 1e-6) / 1e9,
        "mb": nbytes / 2**20,
        "engine": info,
    }
    res["push_over_noop"] = res["push_us_p50"] / noop
    res["pull_over_noop"] = res["pull_us_p50"] / noop
    res["to_vec_over_memcpy"] = res["to_vec_gbps"] / res["numpy_memcpy_gbps"]
    res["to_vec_over_memcpy_mean"] = res["to_vec_mean_gbps"] / res["numpy_memcpy_mean_gbps"]
    t = TARGETS[transport]
    slower = max(res["push_us_p50"], res["pull_us_p50"])
    res["call_target_met"] = (slower <= t["call_us"] if "call_us" in t
                              else slower / noop <= t["call_over_noop"])
    res["vec_target_met"] = res["to_vec_over_memcpy"] >= t["vec_over_memcpy"]
    return res


def show(transport: str, res: dict, warm: int) -> None:
    t = TARGETS[transport]
    mb = res["mb"]
    call_target = (f"push, pull <= {t['call_us']:.0f} us" if "call_us" in t
                   else f"push, pull <= {t['call_over_noop']:.0f}x no-op")
    label = {"py4j": "Py4J", "jpype": "JPype"}[transport]
    rows = [
        (f"{label} no-op round trip p50", f"{res['noop_roundtrip_us_p50']:8.1f} us"),
        ("kvstore/push (2x3) p50",
         f"{res['push_us_p50']:8.1f} us  ({res['push_over_noop']:.2f}x no-op)"),
        ("kvstore/pull (2x3) p50",
         f"{res['pull_us_p50']:8.1f} us  ({res['pull_over_noop']:.2f}x no-op)"),
        ("push+pull pair p50", f"{res['push_plus_pull_us_p50']:8.1f} us"),
        (f"target: {call_target}", "met" if res["call_target_met"] else "NOT met"),
        (f"ndarray/->vec {mb:.0f} MB p50",
         f"{res['to_vec_ms_p50']:8.2f} ms  = {res['to_vec_gbps']:.2f} GB/s "
         f"(best {res['to_vec_best_gbps']:.2f})"),
        (f"numpy memcpy {mb:.0f} MB p50", f"{res['numpy_memcpy_gbps']:8.2f} GB/s"),
        ("->vec / memcpy (p50s)",
         f"{res['to_vec_over_memcpy']:8.2f}     target >= {t['vec_over_memcpy']}: "
         f"{'met' if res['vec_target_met'] else 'NOT met'}"),
        (f"ndarray/->vec {mb:.0f} MB mean" + (f" (from call {warm + 1})" if warm else ""),
         f"{res['to_vec_mean_ms']:8.2f} ms  = {res['to_vec_mean_gbps']:.2f} GB/s "
         f"({res['to_vec_over_memcpy_mean']:.2f} of memcpy's mean; includes GCs)"),
        (f"ndarray/array {mb:.0f} MB p50", f"{res['array_gbps']:8.2f} GB/s"),
    ]
    for name, value in rows:
        print(f"{name:34s} {value}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000, help="timed calls of each small kind")
    ap.add_argument("--mb", type=int, default=64, help="size of the ->vec array in MB")
    ap.add_argument("--rounds", type=int, default=8,
                    help="alternations of ->vec and memcpy (3 repetitions each)")
    ap.add_argument("--warm", type=int, default=0,
                    help="leave the first WARM timed ->vec calls out of the means")
    ap.add_argument("--transports", default="py4j,jpype",
                    help="comma-separated: py4j, jpype (default both, interleaved)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    transports = [t for t in args.transports.split(",") if t]
    unknown = set(transports) - set(TARGETS)
    if unknown:
        ap.error(f"unknown transports {sorted(unknown)}")

    jvms = {}
    try:
        for t in transports:
            jvms[t] = Jvm(args.mb, t)
        nbytes = jvms[transports[0]].ready["bytes"]
        small = {t: {} for t in transports}
        batches = 5
        for _ in range(batches):  # the transports take turns
            for t, jvm in jvms.items():
                for k, v in jvm.ask(f"small {max(10, args.n // batches)}").items():
                    small[t].setdefault(k, []).extend(v)
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        vec_us = {t: [] for t in transports}
        mc_s: list = []
        for _ in range(args.rounds):
            for t, jvm in jvms.items():
                vec_us[t] += jvm.ask("vec 3")
                mc_s += memcpy_s(src, dst, 3)
        array_us = {t: jvm.ask("array 5") for t, jvm in jvms.items()}
        info = {t: jvm.ask("info") for t, jvm in jvms.items()}
    finally:
        for jvm in jvms.values():
            jvm.close()

    out = {t: summarize(t, small[t], vec_us[t], mc_s, array_us[t], info[t], nbytes, args.warm)
           for t in transports}
    out["cpus"] = os.cpu_count()
    for t in transports:
        show(t, out[t], args.warm)
        print()
    try:
        print(f"{'load average':34s} {os.getloadavg()[0]:8.2f} on {os.cpu_count()} CPUs")
    except OSError:
        pass
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
