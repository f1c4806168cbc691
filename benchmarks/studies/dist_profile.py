"""Where a dist_sync iteration's time goes: push and pull phases, and py-spy
profiles of rank 0's worker and of every server shard, during the same steps.

    .venv/bin/pip install py-spy
    .venv/bin/python benchmarks/studies/dist_profile.py -n 2 -s 1 --iters 60
    MXKV_SHM=0 .venv/bin/python benchmarks/studies/dist_profile.py -n 2 -s 2   # object store only

Launches ``mxkv launch -n W -s S`` running this file as the worker (the
ResNet-50 set of ``dist_worker.py``: push all 161 keys, then pull them).
Rank 0 times the phases of every step, and samples itself and the shards
(their pids from ``stats()``) with py-spy while it runs; the report lists
each process's functions by share of samples (own and inclusive), idle
waits included, so "the event loop waits" shows as such.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from dist_jobs import launch_command, resnet50_store, run_job  # noqa: E402


def _aggregate(path: str, top: int) -> str:
    own: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            line = line.rstrip()
            if not line or " " not in line:
                continue
            stack, n = line.rsplit(" ", 1)
            n = int(n)
            total += n
            frames = stack.split(";")
            own[frames[-1]] += n
            for fr in set(frames):
                incl[fr] += n
    if not total:
        return "  (no samples)\n"
    out = [f"  {total} samples; own time:"]
    out += [f"  {100 * n / total:5.1f}% {fr[:150]}" for fr, n in own.most_common(top)]
    out.append("  inclusive:")
    out += [f"  {100 * n / total:5.1f}% {fr[:150]}" for fr, n in incl.most_common(top)]
    return "\n".join(out) + "\n"


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker(a: argparse.Namespace) -> int:
    """The job's worker: the steps; rank 0 times them, samples the processes
    with py-spy (its files beside ``--out``) and writes the phases to ``--out``."""
    import mxkv as mx

    kv, keys, grads, outs = resnet50_store(mx)
    scratch = os.path.dirname(os.path.abspath(a.out))
    for _ in range(a.warmup):
        kv.push(keys, grads)
        kv.pull(keys, out=outs)
    spies = []
    if kv.rank == 0 and a.spy:
        import ray
        pids = {f"shard{i}": ray.get(s.stats.remote())["pid"]
                for i, s in enumerate(kv._chan.shards)}
        pids["worker0"] = os.getpid()
        for name, pid in pids.items():
            out = os.path.join(scratch, f"{name}.txt")
            spies.append((name, out, subprocess.Popen(
                [a.spy, "record", "-p", str(pid), "-d", str(a.seconds), "-r", "200", "-f",
                 "raw", "-o", out, "--nonblocking"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)))
        time.sleep(1.0)   # py-spy attaches
    procs = {}
    if kv.rank == 0:
        import ray
        procs = {f"shard{i}": ray.get(s.stats.remote())["pid"]
                 for i, s in enumerate(kv._chan.shards)}
    cpu0 = {n: _cpu(pid) for n, pid in procs.items()}
    self0 = os.times()
    phases = {"push": [], "pull": [], "step": []}
    for _ in range(a.iters):
        t0 = time.perf_counter()
        kv.push(keys, grads)
        t1 = time.perf_counter()
        kv.pull(keys, out=outs)
        t2 = time.perf_counter()
        phases["push"].append(t1 - t0)
        phases["pull"].append(t2 - t1)
        phases["step"].append(t2 - t0)
    self1 = os.times()
    cpu = {n: (_cpu(pid) - cpu0[n]) / a.iters for n, pid in procs.items()}
    cpu["worker0"] = (self1.user + self1.system - self0.user - self0.system) / a.iters
    for _, _, p in spies:
        p.wait()
    kv._barrier()
    if kv.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"phases": phases, "cpu": cpu,
                       "spies": [(n, o) for n, o, _ in spies]}, f)
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=2)
    p.add_argument("-s", type=int, default=1)
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--seconds", type=int, default=6, help="py-spy's sampling time")
    p.add_argument("--no-spy", action="store_true", help="phases and CPU times only")
    p.add_argument("--top", type=int, default=14)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--spy", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    bindir = os.path.dirname(sys.executable)
    spy = "" if a.no_spy else (shutil.which("py-spy", path=bindir) or shutil.which("py-spy")
                               or "")
    if not spy and not a.no_spy:
        print("py-spy is missing (pip install py-spy): phases only", file=sys.stderr)
    cmd = launch_command("mxkv", a.n, a.s, sys.executable, os.path.abspath(__file__), [
        "--worker", "--iters", str(a.iters), "--warmup", str(a.warmup), "--seconds",
        str(a.seconds)] + (["--spy", spy] if spy else []))
    with run_job(cmd, "dist-profile") as job:
        _report(a, job.data)
    return 0


def _report(a: argparse.Namespace, got: dict) -> None:
    print(f"{a.n} workers x {a.s} servers, MXKV_SHM={os.environ.get('MXKV_SHM', '1')}, "
          f"{a.iters} steps (median ms): " + ", ".join(
              f"{k} {statistics.median(v) * 1e3:.1f}" for k, v in got["phases"].items()))
    print("CPU ms per step (user + system; robust to a loaded machine): " + ", ".join(
        f"{k} {v * 1e3:.1f}" for k, v in got["cpu"].items()))
    for name, out in got["spies"]:
        print(f"\n{name}:")
        print(_aggregate(out, a.top) if os.path.exists(out) else "  (py-spy wrote nothing)")


if __name__ == "__main__":
    sys.exit(main())
