"""Distributed rows: mxkv's dist_sync on Ray against MXNet 1.9.1's (ps-lite)
and against torch.distributed's gloo all_reduce, with the numpy floor.

ResNet-50 rows: each run launches a whole job of W worker processes, every
iteration pushing then pulling ResNet-50's parameter set (161 keys,
25,557,032 float32; ``dist_worker.py``), with MXNet's own ``dist_sync``
(``mxnet_launch.py``: a scheduler, S servers, W workers on loopback) or
mxkv's (``mxkv launch``: a local Ray cluster, S shard actors, W workers);
or W torch processes all-reducing the same gradients with gloo
(``torch_gloo.py``: one 102 MB bucket, and per tensor). The floor is plain
numpy in this process: W copies in, the sum, W copies out, of one 102 MB
buffer. A run reports the median of its timed iterations (after warm-up);
the sides of a row alternate (their order rotating every repetition), and
a row is the median over its runs.

Also: one-at-a-time ``init`` of 120 keys of 4 MB on 1 worker x 1 server
(per-key time of the first and last ten, total), and one 512 MB key on 2 x
2 (init time, iteration time, peak resident memory of a worker).

    make bench-dist                                  # everything, one run
    bash benchmarks/run.sh dist --reps 5 --iters 40
    bash benchmarks/run.sh dist --only w2_s1,init120

``run.sh dist`` runs it with the MXNet venv's interpreter (numpy and
matplotlib for the plot) and passes both sides' interpreters; torch gets
its own venv, ``benchmarks/.venv-torch`` (``BENCH_TORCH_VENV``), made on
first use with ``pip install torch==2.13.0`` (a CPU build). Writes
``results/dist.{json,md,png}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional

from dist_jobs import launch_command, run_job

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
RESNET_FLOATS = 25_557_032

ROWS = [  # (name, workers, servers, in the table?)
    ("w2_s1", 2, 1, True),
    ("w2_s2", 2, 2, True),
    ("w1_s2", 1, 2, False),
    ("w4_s2", 4, 2, False),
]
EXTRA = ["init120", "bigkey"]
TARGET_GLOO = 1.0     # mxkv / torch gloo (one bucket)
TARGET_MXNET = 0.4    # mxkv / MXNet
SIDES = ["mxnet", "mxkv", "gloo_bucket", "gloo_tensor"]
TORCH = "torch==2.13.0"


def torch_python() -> Optional[str]:
    """The torch venv's interpreter, made on first use; None when it cannot be."""
    venv = os.environ.get("BENCH_TORCH_VENV", os.path.join(HERE, ".venv-torch"))
    py = os.path.join(venv, "bin", "python")
    check = [py, "-c", "import torch, numpy"]
    if os.path.exists(py) and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    print(f"dist: making {venv} ({TORCH}, a CPU build)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", TORCH, "numpy"], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"dist: no torch ({exc}): the gloo columns stay empty", file=sys.stderr)
        return None
    return py


def run_once(side: str, workers: int, servers: int, iters: int, warmup: int, pys: Dict,
             workload: str = "resnet50") -> Dict:
    if side in ("mxnet", "mxkv"):
        cmd = launch_command(side, workers, servers, pys[side],
                             os.path.join(HERE, "dist_worker.py"),
                             ["--module", side, "--workload", workload])
    else:
        cmd = [pys["torch"], os.path.join(HERE, "torch_gloo.py"), "-n", str(workers),
               "--mode", side.split("_")[1]]
    cmd += ["--iters", str(iters), "--warmup", str(warmup)]
    # (the result counts even when a launcher exits non-zero after rank 0 wrote it)
    with run_job(cmd, side, check=False, timeout=900, cwd=HERE) as job:
        data, ranks, wall = job.data, job.ranks, job.wall_s
    data["median_s"] = statistics.median(data["times_s"]) if data["times_s"] else None
    data["wall_s"] = wall
    if "peak_rss_bytes" in data:
        data["peak_rss_bytes"] = max([data["peak_rss_bytes"]] +
                                     [r["peak_rss_bytes"] for r in ranks])
    return data


def floor_once(workers: int, reps: int = 7) -> float:
    """W copies into a buffer, the sum, W copies out: plain numpy, one thread."""
    import numpy as np

    grads = [np.ones(RESNET_FLOATS, np.float32) for _ in range(workers)]
    outs = [np.empty(RESNET_FLOATS, np.float32) for _ in range(workers)]
    bufs = [np.empty(RESNET_FLOATS, np.float32) for _ in range(workers)]
    total = np.empty(RESNET_FLOATS, np.float32)
    times = []
    for i in range(reps + 2):
        t = time.perf_counter()
        for g, b in zip(grads, bufs):
            np.copyto(b, g)
        if workers == 1:
            np.copyto(total, bufs[0])
        else:
            np.add(bufs[0], bufs[1], out=total)
            for b in bufs[2:]:
                np.add(total, b, out=total)
        for o in outs:
            np.copyto(o, total)
        if i >= 2:
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def _med(xs: List[Optional[float]]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--extra-reps", type=int, default=2,
                   help="repetitions of the init120 and bigkey rows")
    p.add_argument("--only", default="")
    p.add_argument("--mxnet-python", default=None)
    p.add_argument("--mxkv-python", default=None)
    p.add_argument("--torch-python", default=None)
    a = p.parse_args()
    mxnet_venv = os.environ.get("BENCH_MXNET_VENV", os.path.join(HERE, ".venv-mxnet"))
    pys = {"mxnet": a.mxnet_python or os.path.join(mxnet_venv, "bin", "python"),
           "mxkv": a.mxkv_python or os.environ.get("BENCH_MXKV_PYTHON") or
           os.path.join(ROOT, ".venv", "bin", "python")}
    only = [x for x in a.only.split(",") if x]
    rows = [r for r in ROWS if not only or r[0] in only]
    extras = [x for x in EXTRA if not only or x in only]
    pys["torch"] = (a.torch_python or torch_python()) if rows else None
    sides = [s for s in SIDES if pys["torch"] or not s.startswith("gloo")]
    results: Dict[str, Dict[str, List[Dict]]] = {r[0]: {s: [] for s in sides} for r in rows}
    floors: Dict[str, List[float]] = {r[0]: [] for r in rows}
    loads = []
    for rep in range(a.reps if rows else 0):
        for name, w, s, _ in rows:
            k = rep % len(sides)
            for side in sides[k:] + sides[:k]:
                r = run_once(side, w, s, a.iters, a.warmup, pys)
                results[name][side].append(r)
                print(f"rep {rep + 1}/{a.reps} {name} {side}: median "
                      f"{r['median_s'] * 1e3:.1f} ms/iteration (run {r['wall_s']:.1f} s)",
                      flush=True)
            floors[name].append(floor_once(w))
            loads.append(os.getloadavg()[0])
    extra_runs: Dict[str, Dict[str, List[Dict]]] = {x: {"mxnet": [], "mxkv": []} for x in extras}
    for rep in range(a.extra_reps if extras else 0):
        for x in extras:
            for side in (["mxnet", "mxkv"] if rep % 2 == 0 else ["mxkv", "mxnet"]):
                w, s = (1, 1) if x == "init120" else (2, 2)
                it, wu = (0, 0) if x == "init120" else (4, 1)
                r = run_once(side, w, s, it, wu, pys, workload=x)
                extra_runs[x][side].append(r)
                print(f"rep {rep + 1}/{a.extra_reps} {x} {side}: {_extra_line(x, r)}",
                      flush=True)
            loads.append(os.getloadavg()[0])

    table = []
    for name, w, s, main_row in rows:
        med = {side: _med([r["median_s"] for r in results[name][side]]) for side in sides}
        med["floor"] = _med(floors[name])
        # (one process has nothing to all-reduce: no ratio against ~0)
        vs_gloo = med["mxkv"] / med["gloo_bucket"] if med.get("gloo_bucket") and w > 1 \
            else None
        vs_mxnet = med["mxkv"] / med["mxnet"]
        ok = None
        if main_row:
            ok = vs_mxnet <= TARGET_MXNET and (vs_gloo is None or vs_gloo <= TARGET_GLOO)
        table.append({"name": name, "workers": w, "servers": s, "main": main_row,
                      **{f"{k}_s": v for k, v in med.items()},
                      "vs_gloo": vs_gloo, "vs_mxnet": vs_mxnet, "pass": ok,
                      "runs": {side: [r["median_s"] for r in results[name][side]]
                               for side in sides}})
    extra_table = {}
    for x in extras:
        row = {}
        for side in ("mxnet", "mxkv"):
            runs = extra_runs[x][side]
            if x == "init120":
                row[side] = {"first10_ms": _med([statistics.mean(r["init_s"][:10]) * 1e3
                                                 for r in runs]),
                             "last10_ms": _med([statistics.mean(r["init_s"][-10:]) * 1e3
                                                for r in runs]),
                             "total_s": _med([r.get("total_s", sum(r["init_s"])) for r in runs])}
            else:
                row[side] = {"init_s": _med([r["init_s"] for r in runs]),
                             "iter_s": _med([r["median_s"] for r in runs]),
                             "peak_rss_gb": _med([r["peak_rss_bytes"] / 1e9 for r in runs])}
        extra_table[x] = row

    os.makedirs(RESULTS, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "reps": a.reps, "iters": a.iters, "warmup": a.warmup,
            "extra_reps": a.extra_reps, "torch": TORCH if pys.get("torch") else None,
            "load_avg_1min": {"min": min(loads, default=None), "max": max(loads, default=None),
                              "median": _med(loads)},
            "workload": "ResNet-50 parameter set: 161 keys, 25,557,032 float32; "
                        "push all keys then pull all keys per iteration"}
    with open(os.path.join(RESULTS, "dist.json"), "w") as f:
        json.dump({"meta": meta, "rows": table, "extra": extra_table,
                   "raw": {k: {s: [r["times_s"] for r in v[s]] for s in sides}
                           for k, v in results.items()},
                   "raw_extra": {k: {s: [r.get("init_s") for r in v[s]] for s in v}
                                 for k, v in extra_runs.items()}}, f, indent=1)
    md = _markdown(meta, table, extra_table, a)
    with open(os.path.join(RESULTS, "dist.md"), "w") as f:
        f.write(md)
    print(md)
    _plot(table)
    return 0 if all(t["pass"] is not False for t in table) else 1


def _extra_line(x: str, r: Dict) -> str:
    if x == "init120":
        s = r["init_s"]
        return (f"first ten {statistics.mean(s[:10]) * 1e3:.1f} ms/key, last ten "
                f"{statistics.mean(s[-10:]) * 1e3:.1f} ms/key, total "
                f"{r.get('total_s', sum(s)):.2f} s")
    return (f"init {r['init_s']:.2f} s, iteration {r['median_s']:.2f} s, peak worker RSS "
            f"{r['peak_rss_bytes'] / 1e9:.2f} GB")


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v * 1e3:.1f}"


def _ratio(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.2f}"


def _markdown(meta: Dict, table: List[Dict], extra: Dict, a) -> str:
    load = meta["load_avg_1min"]
    lines = [f"Distributed rows ({meta['date']}, {meta['cpus']} CPUs, 1-minute load average "
             f"{_ratio(load['min'])}-{_ratio(load['max'])} during the run; {a.reps} runs a "
             f"side, {a.iters} timed iterations after {a.warmup} warm-up each)", ""]
    if table:
        lines += ["| row | workers | servers | MXNet 1.9.1 ms/it | torch gloo, one bucket | "
                  "torch gloo, per tensor | numpy floor | mxkv ms/it | mxkv/gloo | "
                  "mxkv/MXNet | targets | result |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in table:
            res = "" if t["pass"] is None else ("pass" if t["pass"] else "FAIL")
            tgt = f"<= {TARGET_GLOO} gloo, <= {TARGET_MXNET} MXNet" if t["main"] \
                else "(scaling)"
            lines.append(f"| `{t['name']}` | {t['workers']} | {t['servers']} | "
                         f"{_ms(t['mxnet_s'])} | {_ms(t.get('gloo_bucket_s'))} | "
                         f"{_ms(t.get('gloo_tensor_s'))} | {_ms(t['floor_s'])} | "
                         f"**{_ms(t['mxkv_s'])}** | {_ratio(t['vs_gloo'])} | "
                         f"{_ratio(t['vs_mxnet'])} | {tgt} | {res} |")
        lines.append("")
    if "init120" in extra:
        e = extra["init120"]
        lines += ["One-at-a-time init of 120 keys of 4 MB, 1 worker x 1 server "
                  f"({a.extra_reps} runs a side, medians):", "",
                  "| side | first ten ms/key | last ten ms/key | last/first | total s |",
                  "|---|---|---|---|---|"]
        for side in ("mxnet", "mxkv"):
            v = e[side]
            lines.append(f"| {side} | {v['first10_ms']:.1f} | {v['last10_ms']:.1f} | "
                         f"{v['last10_ms'] / v['first10_ms']:.2f} | {v['total_s']:.2f} |")
        lines += [f"\nmxkv/MXNet total: {e['mxkv']['total_s'] / e['mxnet']['total_s']:.2f} "
                  "(targets: last/first <= 1.2, total <= 2x MXNet)", ""]
    if "bigkey" in extra:
        e = extra["bigkey"]
        lines += ["One 512 MB key, 2 workers x 2 servers "
                  f"({a.extra_reps} runs a side, medians; RSS: the larger worker's peak):", "",
                  "| side | init s | iteration s | peak worker RSS GB |", "|---|---|---|---|"]
        for side in ("mxnet", "mxkv"):
            v = e[side]
            lines.append(f"| {side} | {v['init_s']:.2f} | {v['iter_s']:.2f} | "
                         f"{v['peak_rss_gb']:.2f} |")
        m, k = e["mxnet"], e["mxkv"]
        lines += [f"\nmxkv/MXNet: init {k['init_s'] / m['init_s']:.2f} (target <= 1.5), "
                  f"iteration {k['iter_s'] / m['iter_s']:.2f} (<= 0.7), peak RSS "
                  f"{k['peak_rss_gb'] / m['peak_rss_gb']:.2f} (<= 1.3)", ""]
    return "\n".join(lines) + "\n"


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
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ws = [t["workers"] for t in scal]
    series = [("mxnet_s", "o-", "MXNet 1.9.1 dist_sync (2 servers)"),
              ("mxkv_s", "s-", "mxkv dist_sync on Ray (2 servers)"),
              ("gloo_bucket_s", "^-", "torch gloo all_reduce, one bucket"),
              ("gloo_tensor_s", "v--", "torch gloo all_reduce, per tensor"),
              ("floor_s", "k:", "numpy floor (copies + sum)")]
    for key, style, label in series:
        ys = [t.get(key) for t in scal]
        if all(y is not None for y in ys):
            ax.plot(ws, [y * 1e3 for y in ys], style, label=label)
    ax.set_xticks(ws)
    ax.set_xlabel("workers")
    ax.set_ylabel("ms per iteration (push + pull, ResNet-50)")
    ax.set_title("Time per iteration as workers grow")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "dist.png"), dpi=110)


if __name__ == "__main__":
    sys.exit(main())
