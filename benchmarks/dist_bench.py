"""Distributed rows: mxkv's dist_sync on Ray against MXNet 1.9.1's (ps-lite).

Each run launches a whole job: W worker processes pushing then pulling
ResNet-50's parameter set (161 keys, 25,557,032 float32) every iteration
(``dist_worker.py``), with MXNet's own ``dist_sync`` (``mxnet_launch.py``: a
scheduler, S servers, W workers on loopback) or mxkv's (``mxkv launch``: a
local Ray cluster, S shard actors, W workers). A run reports the median of
its timed iterations (after warm-up); runs of the two sides alternate
(A B A B, the first side rotating), and a row is the median over its runs.

    make bench-dist                                  # rows and the 1->2->4 scaling
    bash benchmarks/run.sh dist --reps 5 --iters 40
    bash benchmarks/run.sh dist --only w2_s1

``run.sh dist`` runs it with the MXNet venv's interpreter (numpy and
matplotlib for the plot) and passes both sides' interpreters; environment as
for ``run.sh``. Writes ``results/dist.{json,md,png}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")

ROWS = [  # (name, workers, servers, in the table?)
    ("w2_s1", 2, 1, True),
    ("w2_s2", 2, 2, True),
    ("w1_s2", 1, 2, False),
    ("w4_s2", 4, 2, False),
]
TARGET = 0.7


def _python(env_var: str, default: str) -> str:
    return os.environ.get(env_var) or default


def run_once(side: str, workers: int, servers: int, iters: int, warmup: int,
             mxnet_py: str, mxkv_py: str) -> Dict:
    out = tempfile.NamedTemporaryFile(prefix=f"dist-{side}-", suffix=".json", delete=False).name
    worker = os.path.join(HERE, "dist_worker.py")
    if side == "mxnet":
        cmd = [mxnet_py, os.path.join(HERE, "mxnet_launch.py"), "-n", str(workers), "-s",
               str(servers), "--", mxnet_py, worker, "--module", "mxnet"]
    else:
        mxkv = os.path.join(os.path.dirname(mxkv_py), "mxkv")
        cmd = [mxkv, "launch", "-n", str(workers), "-s", str(servers), "--",
               mxkv_py, worker, "--module", "mxkv"]
    cmd += ["--iters", str(iters), "--warmup", str(warmup), "--out", out]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=HERE)
    wall = time.perf_counter() - t
    try:
        with open(out) as f:
            data = json.load(f)
    except (OSError, ValueError):
        raise RuntimeError(f"{side} run failed (code {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}") from None
    finally:
        if os.path.exists(out):
            os.unlink(out)
    data["median_s"] = statistics.median(data["times_s"])
    data["wall_s"] = wall
    return data


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--only", default="")
    p.add_argument("--mxnet-python", default=None)
    p.add_argument("--mxkv-python", default=None)
    a = p.parse_args()
    mxnet_venv = os.environ.get("BENCH_MXNET_VENV", os.path.join(HERE, ".venv-mxnet"))
    mxnet_py = a.mxnet_python or os.path.join(mxnet_venv, "bin", "python")
    mxkv_py = a.mxkv_python or _python("BENCH_MXKV_PYTHON",
                                       os.path.join(ROOT, ".venv", "bin", "python"))
    rows = [r for r in ROWS if not a.only or r[0] in a.only.split(",")]
    results: Dict[str, Dict[str, List[Dict]]] = {r[0]: {"mxnet": [], "mxkv": []} for r in rows}
    sides = ["mxnet", "mxkv"]
    for rep in range(a.reps):
        for name, w, s, _ in rows:
            order = sides if rep % 2 == 0 else sides[::-1]
            for side in order:
                r = run_once(side, w, s, a.iters, a.warmup, mxnet_py, mxkv_py)
                results[name][side].append(r)
                print(f"rep {rep + 1}/{a.reps} {name} {side}: median "
                      f"{r['median_s'] * 1e3:.1f} ms/iteration (run {r['wall_s']:.1f} s)",
                      flush=True)
    table = []
    for name, w, s, main_row in rows:
        med = {side: statistics.median([r["median_s"] for r in results[name][side]])
               for side in sides}
        ratio = med["mxkv"] / med["mxnet"]
        table.append({"name": name, "workers": w, "servers": s, "main": main_row,
                      "mxnet_s": med["mxnet"], "mxkv_s": med["mxkv"], "ratio": ratio,
                      "target": TARGET if main_row else None,
                      "pass": (ratio <= TARGET) if main_row else None,
                      "runs": {side: [r["median_s"] for r in results[name][side]]
                               for side in sides}})
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "reps": a.reps, "iters": a.iters, "warmup": a.warmup,
            "workload": "ResNet-50 parameter set: 161 keys, 25,557,032 float32; "
                        "push all keys then pull all keys per iteration"}
    with open(os.path.join(RESULTS, "dist.json"), "w") as f:
        json.dump({"meta": meta, "rows": table,
                   "raw": {k: {s: [r["times_s"] for r in v[s]] for s in sides}
                           for k, v in results.items()}}, f, indent=1)
    lines = [f"Distributed rows ({meta['date']}, {meta['cpus']} CPUs, {a.reps} runs a side, "
             f"{a.iters} timed iterations after {a.warmup} warm-up each)", "",
             "| row | workers | servers | MXNet 1.9.1 ms/it | mxkv ms/it | mxkv/MXNet | "
             "target | result |", "|---|---|---|---|---|---|---|---|"]
    for t in table:
        res = "" if t["pass"] is None else ("pass" if t["pass"] else "FAIL")
        tgt = f"<= {t['target']}" if t["target"] else "(scaling)"
        lines.append(f"| `{t['name']}` | {t['workers']} | {t['servers']} | "
                     f"{t['mxnet_s'] * 1e3:.1f} | {t['mxkv_s'] * 1e3:.1f} | "
                     f"{t['ratio']:.2f} | {tgt} | {res} |")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(RESULTS, "dist.md"), "w") as f:
        f.write(md)
    print(md)
    _plot(table)
    return 0 if all(t["pass"] is not False for t in table) else 1


def _plot(table: List[Dict]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing: no plot", file=sys.stderr)
        return
    scal = sorted([t for t in table if t["servers"] == 2], key=lambda t: t["workers"])
    if len(scal) < 2:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ws = [t["workers"] for t in scal]
    ax.plot(ws, [t["mxnet_s"] * 1e3 for t in scal], "o-", label="MXNet 1.9.1 dist_sync")
    ax.plot(ws, [t["mxkv_s"] * 1e3 for t in scal], "s-", label="mxkv dist_sync on Ray")
    ax.set_xticks(ws)
    ax.set_xlabel("workers (2 servers)")
    ax.set_ylabel("ms per iteration (push + pull, ResNet-50)")
    ax.set_title("Time per iteration as workers grow")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "dist.png"), dpi=110)


if __name__ == "__main__":
    sys.exit(main())
