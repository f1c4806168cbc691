"""ResNet-50's gradients across emulated hosts (tools/hosts.py), each host's
link limited to ``--rate`` (1 Gbit/s) both ways.

Rows (one interleaved run; the sides of a row alternate, their order
rotating every repetition):

* ``h2_w1``: 2 hosts, 1 worker per host, 2 shards/servers (one per host);
* ``h2_w2``: 2 hosts, 2 workers per host (4 workers), 2 shards/servers.

Sides: mxkv ``dist_sync`` (``mxkv launch --launcher ray --workers-per-host``
on host 0, against the bed's Ray cluster, token auth on); torch gloo
all_reduce of one 102 MB bucket (one rank per worker, ``torch_gloo.py``);
MXNet 1.9.1 ps-lite (scheduler on host 0, one server and the workers on each
host: ``mxnet_launch.role_environ``). The floor is the bytes one host's link
must carry each way per iteration over the rate: with H hosts and one
aggregation per host, a host sends its pushes' remote share
((H-1)/H of 102 MB) and the remote shards' answers to its pulls... in all
2 (H-1)/H x 102 MB each way (818 ms at 1 Gbit/s for H = 2), the bytes of a
ring all-reduce between hosts.

A sampler reads each host's link counters every 10 ms; the bytes inside a
job's timed loop (rank 0 writes its wall-clock bounds) per iteration, and
the share of that loop each link direction was busy (a 10 ms bin counts as
busy above half the rate) come out per side; for mxkv and MXNet (whose
workers record when each iteration starts) also how long per iteration
host 0's link ran one way only, both ways at once, or idle.

    make bench-multihost                     # one run, writes results/multihost.*
    python benchmarks/multihost_bench.py --iters 10 --warmup 12 --only h2_w1
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from dist_bench import torch_python  # noqa: E402
from dist_jobs import launch_command, run_job  # noqa: E402
from hosts import Bed  # noqa: E402
from mxnet_launch import role_environ  # noqa: E402
from resnet50 import RESNET50_PARAMS  # noqa: E402

RESULTS = os.path.join(HERE, "results")
GRAD_BYTES = RESNET50_PARAMS * 4
ROWS = [("h2_w1", 2, 1), ("h2_w2", 2, 2)]   # (name, hosts, workers per host)
SIDES = ["mxkv", "gloo", "mxnet"]
PORT = 29511


def _rate_bits(rate: str) -> float:
    units = {"k": 1e3, "m": 1e6, "g": 1e9}
    r = rate.lower().removesuffix("bit")
    return float(r[:-1]) * units[r[-1]] if r[-1] in units else float(r)


def floor_s(hosts: int, rate: str) -> Optional[float]:
    """Seconds one link needs per iteration, each way: 2 (H-1)/H of the
    gradients (None on an unshaped link)."""
    if rate.lower() == "none":
        return None
    return 2 * (hosts - 1) / hosts * GRAD_BYTES * 8 / _rate_bits(rate)


class Sampler:
    """Every host's link counters, every ``period`` seconds, in a thread."""

    def __init__(self, bed: Bed, period: float = 0.01) -> None:
        self.bed, self.period = bed, period
        self.samples: List[tuple] = []   # (wall time, [(tx, rx) per host])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.time()
            counts = [self.bed.link_bytes(i) for i in range(self.bed.n)]
            self.samples.append((t, [(c["tx"], c["rx"]) for c in counts]))
            self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def window(self, t0: float, t1: float, rate_bits: float) -> List[Dict]:
        """Per host: bytes sent and received in [t0, t1], and the share of
        that window each direction ran above half the rate."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2:
            return []
        out = []
        for h in range(self.bed.n):
            busy = {"tx": 0.0, "rx": 0.0}
            for (ta, ca), (tb, cb) in zip(inside, inside[1:]):
                for k, j in (("tx", 0), ("rx", 1)):
                    if (cb[h][j] - ca[h][j]) * 8 / (tb - ta) > rate_bits / 2:
                        busy[k] += tb - ta
            span = inside[-1][0] - inside[0][0]
            out.append({"tx": inside[-1][1][h][0] - inside[0][1][h][0],
                        "rx": inside[-1][1][h][1] - inside[0][1][h][1], "span_s": span,
                        "busy_tx": busy["tx"] / span, "busy_rx": busy["rx"] / span})
        return out


    def directions(self, starts: List[float], end: float, host: int,
                   rate_bits: float) -> Dict[str, float]:
        """Seconds per iteration (iterations begin at ``starts``, the last
        ends at ``end``) that ``host``'s link ran one way only, both ways,
        or neither (a 10 ms bin counts as busy one way above half the rate),
        as medians over the iterations."""
        bounds = list(starts) + [end]
        per_it: Dict[str, List[float]] = {"one_way": [], "both": [], "idle": []}
        for t0, t1 in zip(bounds, bounds[1:]):
            acc = {"one_way": 0.0, "both": 0.0, "idle": 0.0}
            for (ta, ca), (tb, cb) in zip(self.samples, self.samples[1:]):
                if t0 <= ta < t1:
                    busy = [(cb[host][j] - ca[host][j]) * 8 / (tb - ta) > rate_bits / 2
                            for j in (0, 1)]
                    acc["both" if all(busy) else "one_way" if any(busy) else "idle"] += tb - ta
            for k, v in acc.items():
                per_it[k].append(v)
        return {k: statistics.median(v) for k, v in per_it.items() if v}


def run_mxkv(bed: Bed, per_host: int, a) -> Dict:
    workers = bed.n * per_host
    cmd = launch_command("mxkv", workers, bed.n, bed.python,
                         os.path.join(HERE, "dist_worker.py"),
                         ["--module", "mxkv", "--groups", str(a.mxkv_groups)],
                         flags=["--launcher", "ray", "--workers-per-host", str(per_host)]
                         + [x for kv in a.mxkv_env for x in ("--env", kv)])
    cmd = bed.cmd(0, cmd + ["--iters", str(a.iters), "--warmup", str(a.warmup)], HERE)
    # the shards' checkpoints in a directory every host sees (the bed's; a
    # fresh one a job): a shard on host 1 must find the job's mxkv-job.json,
    # which the launcher writes on host 0. --mxkv-checkpoints host: mxkv's
    # default instead, each host's own, every log copied to another host
    env = {**os.environ, **bed.ray_env()}
    if a.mxkv_checkpoints == "shared":
        env["MXKV_CHECKPOINT_DIR"] = tempfile.mkdtemp(prefix="ckpt-", dir=bed.dir)
    with run_job(cmd, "multihost-mxkv", env=env,
                 timeout=900) as job:
        return {**job.data, "other_ranks": job.ranks}


def _ranks(bed: Bed, procs: List, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
            if rc != 0:
                raise RuntimeError(f"a process exited {rc}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_gloo(bed: Bed, per_host: int, a, torch_py: str) -> Dict:
    n = bed.n * per_host
    out = tempfile.mktemp(prefix="gloo-", suffix=".json", dir=bed.dir)
    procs = [bed.popen(r // per_host, [
        torch_py, os.path.join(HERE, "torch_gloo.py"), "-n", str(n), "--mode", "bucket",
        "--iters", str(a.iters), "--warmup", str(a.warmup), "--out", out, "--rank", str(r),
        "--port", str(PORT), "--master", bed.hosts[0].addr],
        env={"GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1"}, cwd=HERE)
        for r in range(n)]
    _ranks(bed, procs, 900)
    with open(out) as f:
        return json.load(f)


def run_mxnet(bed: Bed, per_host: int, a, mxnet_py: str) -> Dict:
    n = bed.n * per_host
    out = tempfile.mktemp(prefix="mxnet-", suffix=".json", dir=bed.dir)
    cmd = [mxnet_py, os.path.join(HERE, "dist_worker.py"), "--module", "mxnet", "--iters",
           str(a.iters), "--warmup", str(a.warmup), "--out", out]
    roles = [("scheduler", 0)] + [("server", h) for h in range(bed.n)] + \
        [("worker", r // per_host) for r in range(n)]
    procs = []
    for role, h in roles:
        env = role_environ(bed.hosts[0].addr, PORT + 1, bed.n, n, bed.hosts[h].addr, "eth0")
        env["DMLC_ROLE"] = role
        procs.append(bed.popen(h, cmd, env=env, cwd=HERE, stdout=subprocess.DEVNULL))
    _ranks(bed, procs, 900)
    with open(out) as f:
        return json.load(f)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rate", default="1gbit",
                   help="each host's link, tc notation; 'none': unshaped (the CPUs are the "
                   "limit: reported as gradient bytes per second per core, results in "
                   "multihost-unshaped.*)")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--iters", type=int, default=20)
    # (12: mxkv's workers keep about 5 rounds of push segments until a
    # checkpoint covers them, and their pools reach that over the first 10
    # or so rounds, faulting fresh pages; the warm-up rounds' times are
    # printed and kept in the results: docs/distributed.md)
    p.add_argument("--warmup", type=int, default=12)
    p.add_argument("--only", default="", help="rows and sides, e.g. h2_w1,mxkv")
    p.add_argument("--mxkv-groups", type=int, default=1,
                   help="mxkv's workers push key group k+1 before pulling group k "
                   "(dist_worker.py --groups): the overlap a chunked data path would give")
    p.add_argument("--mxkv-checkpoints", choices=["shared", "host"], default="shared",
                   help="the shards' checkpoint directory: one every host sees (default), "
                   "or mxkv's default, each host's own with a copy on another host")
    p.add_argument("--mxkv-env", action="append", default=[], metavar="NAME=VALUE",
                   help="a variable for mxkv's workers (mxkv launch --env), e.g. "
                   "MXKV_STREAM_CHUNK_BYTES=8388608; repeatable")
    p.add_argument("--mxnet-python", default=os.path.join(
        os.environ.get("MXNET_VENV", os.path.join(ROOT, ".venv-mxnet")), "bin", "python"))
    p.add_argument("--torch-python", default=None)
    a = p.parse_args()
    only = set(x for x in a.only.split(",") if x)
    rows = [r for r in ROWS if not (only & {n for n, *_ in ROWS}) or r[0] in only]
    sides = [s for s in SIDES if not (only & set(SIDES)) or s in only]
    torch_py = os.path.abspath(a.torch_python) if a.torch_python else \
        (torch_python() if "gloo" in sides else None)
    if torch_py is None:
        sides = [s for s in sides if s != "gloo"]
    unshaped = a.rate.lower() == "none"
    rate_bits = None if unshaped else _rate_bits(a.rate)
    stem = "multihost-unshaped" if unshaped else "multihost"
    results: Dict[str, Dict[str, List[Dict]]] = {r[0]: {s: [] for s in sides} for r in rows}
    loads = []
    with Bed(max(h for _, h, _ in rows), rate=None if unshaped else a.rate) as bed:
        tempfile.tempdir = bed.dir   # run_job's scratch: seen by every host
        sampler = Sampler(bed)
        try:
            for rep in range(a.reps):
                for name, _, per_host in rows:
                    k = rep % len(sides)
                    for side in sides[k:] + sides[:k]:
                        if side == "mxkv":
                            r = run_mxkv(bed, per_host, a)
                        elif side == "gloo":
                            r = run_gloo(bed, per_host, a, torch_py)
                        else:
                            r = run_mxnet(bed, per_host, a, a.mxnet_python)
                        r["median_s"] = statistics.median(r["times_s"])
                        r["mean_s"] = statistics.mean(r["times_s"])
                        if "push_s" in r:
                            print(f"  {side} phases: push returns after "
                                  f"{statistics.median(r['push_s']) * 1e3:.0f} ms, pull + "
                                  f"waitall {statistics.median(r['pull_s']) * 1e3:.0f} ms",
                                  flush=True)
                        if r.get("warmup_s"):
                            print(f"  {side} warm-up iterations (ms): "
                                  f"{', '.join(f'{x * 1e3:.0f}' for x in r['warmup_s'])}",
                                  flush=True)
                        if "minflt_per_it" in r:
                            faults = [r["minflt_per_it"]] + [
                                o["minflt_per_it"] for o in r.get("other_ranks", [])
                                if "minflt_per_it" in o]
                            print(f"  {side} page faults per iteration, by rank: "
                                  f"{', '.join(f'{x:.0f}' for x in faults)}", flush=True)
                        r["links"] = sampler.window(*r["loop_wall"], rate_bits or float("inf"))
                        r["timeline"] = [[round(s[0], 3), s[1]] for s in sampler.samples
                                         if r["loop_wall"][0] <= s[0] <= r["loop_wall"][1]]
                        if "start_wall" in r and rate_bits:   # mxkv's and MXNet's workers say when
                            r["directions"] = sampler.directions(
                                r["start_wall"], r["loop_wall"][1], 0, rate_bits)
                            print("  host 0's link per iteration (median s): " + ", ".join(
                                f"{k} {v:.3f}" for k, v in r["directions"].items()),
                                flush=True)
                        results[name][side].append(r)
                        loads.append(os.getloadavg()[0])
                        per_it = [(round(x["tx"] / a.iters / 1e6), round(x["rx"] / a.iters / 1e6))
                                  for x in r["links"]]
                        busy = [(round(x["busy_tx"], 2), round(x["busy_rx"], 2))
                                for x in r["links"]]
                        print(f"rep {rep + 1} {name} {side}: median {r['median_s'] * 1e3:.0f}"
                              f" ms/it, mean {r['mean_s'] * 1e3:.0f}; MB/it per host (tx, rx): "
                              f"{per_it}; busy {busy}",
                              flush=True)
        finally:
            sampler.stop()
            tempfile.tempdir = None
    table = []
    for name, hosts, per_host in rows:
        row = {"name": name, "hosts": hosts, "workers": hosts * per_host,
               "floor_s": floor_s(hosts, a.rate)}
        for side in sides:
            runs = results[name][side]
            row[f"{side}_s"] = statistics.median([r["median_s"] for r in runs])
            # the mean is the throughput: where iterations alternate long and
            # short (ranks or hosts taking turns to start first) it is above the median
            row[f"{side}_mean_s"] = statistics.median([r["mean_s"] for r in runs])
            # the gradient's bytes reduced per second, per core of the machine
            row[f"{side}_mb_s_per_core"] = GRAD_BYTES / row[f"{side}_s"] / os.cpu_count() / 1e6
            links = [x for r in runs for x in r["links"]]
            if links:
                row[f"{side}_mb_per_it"] = max(max(x["tx"], x["rx"]) for x in links) / \
                    a.iters / 1e6
                row[f"{side}_busy"] = statistics.mean(
                    (x["busy_tx"] + x["busy_rx"]) / 2 for x in links)
            dirs = [r["directions"] for r in runs if "directions" in r]
            if dirs:
                row[f"{side}_both_ways_s"] = statistics.median(d["both"] for d in dirs)
                row[f"{side}_one_way_s"] = statistics.median(d["one_way"] for d in dirs)
        table.append(row)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "rate": a.rate, "reps": a.reps, "iters": a.iters,
            "warmup": a.warmup, "load_avg_1min": [min(loads, default=0),
                                                  max(loads, default=0)],
            "damon": damon_state()}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{stem}.json"), "w") as f:
        json.dump({"meta": meta, "rows": table,
                   "raw": {k: {s: [{x: r[x] for x in ("times_s", "links", "push_s", "pull_s",
                                                "start_wall", "other_ranks", "directions",
                                                "minflt_per_it", "warmup_s")
                                    + (("timeline",) if s == "mxkv" else ())   # (the counters)
                                    if x in r} for r in v[s]]
                               for s in v} for k, v in results.items()}}, f)
    md = _markdown(meta, table, sides)
    with open(os.path.join(RESULTS, f"{stem}.md"), "w") as f:
        f.write(md)
    print(md)
    _plot(table, sides, a.mxnet_python, stem, a.rate)
    return 0


def damon_state() -> str:
    """This machine's DAMON schemes (the kernel reclaiming idle memory by
    itself): a reused buffer it finds idle is unmapped and faults again,
    which moves wall times by 15-25% here (docs/distributed.md)."""
    base = "/sys/kernel/mm/damon/admin/kdamonds"
    found = []
    for state in sorted(glob.glob(f"{base}/*/state")):
        kd = os.path.dirname(state)
        try:
            on = open(state).read().strip()
            actions = sorted({open(p).read().strip() for p in
                              glob.glob(f"{kd}/contexts/*/schemes/*/action")})
        except OSError:
            continue
        found.append(f"{os.path.basename(kd)}: {on}, {'/'.join(actions) or 'no scheme'}")
    return "; ".join(found) or "none"


def _markdown(meta: Dict, table: List[Dict], sides: List[str]) -> str:
    if meta["rate"].lower() == "none":
        return _markdown_unshaped(meta, table, sides)
    lo, hi = meta["load_avg_1min"]
    lines = [f"Across emulated hosts ({meta['date']}, {meta['cpus']} CPUs, {meta['rate']} per "
             f"host each way, 1-minute load average {lo:.2f}-{hi:.2f}; {meta['reps']} run(s) "
             f"a side, median of {meta['iters']} iterations after {meta['warmup']})", "",
             "| row | workers | floor ms | " + " | ".join(f"{s} ms" for s in sides) +
             " | " + " | ".join(f"{s}/floor" for s in sides) + " | mxkv/gloo | mxkv/MXNet | "
             + " | ".join(f"{s} MB/it/link" for s in sides) + " | "
             + " | ".join(f"{s} link busy" for s in sides) + " |",
             "|" + "---|" * (3 + 4 * len(sides) + 2)]
    for t in table:
        def get(k: str, fmt: str, scale: float = 1.0, t: Dict = t) -> str:
            v: Optional[float] = t.get(k)
            return "-" if v is None else fmt.format(v * scale)

        vs_gloo = t["mxkv_s"] / t["gloo_s"] if "mxkv_s" in t and "gloo_s" in t else None
        vs_mx = t["mxkv_s"] / t["mxnet_s"] if "mxkv_s" in t and "mxnet_s" in t else None
        cells = [f"`{t['name']}`", str(t["workers"]), f"{t['floor_s'] * 1e3:.0f}"]
        cells += [get(f"{s}_s", "{:.0f}", 1e3) for s in sides]
        cells += [get(f"{s}_s", "{:.2f}", 1 / t["floor_s"]) for s in sides]
        cells += ["-" if v is None else f"{v:.2f}" for v in (vs_gloo, vs_mx)]
        cells += [get(f"{s}_mb_per_it", "{:.0f}") for s in sides]
        cells += [get(f"{s}_busy", "{:.0%}") for s in sides]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for t in table:
        means = {s: t[f"{s}_mean_s"] for s in sides if f"{s}_mean_s" in t}
        if means:
            ratios = [f"{s}/floor {v / t['floor_s']:.2f}" for s, v in means.items()]
            ratios += [f"mxkv/{s} {means['mxkv'] / means[s]:.2f}" for s in ("gloo", "mxnet")
                       if "mxkv" in means and s in means]
            lines.append(f"`{t['name']}` mean ms per iteration (rank 0's timed loop over "
                         "its iterations): " + ", ".join(f"{s} {v * 1e3:.0f}" for s, v in
                                                     means.items()) + "; " + ", ".join(ratios))
    lines += ["", "MB/it/link: the most bytes one host's link carried one way per timed "
              "iteration (sampled counters); link busy: share of the timed loop a link "
              "direction ran above half the rate (mean over hosts and directions).", ""]
    for t in table:
        for s in sides:
            if f"{s}_one_way_s" in t:
                lines.append(f"`{t['name']}` {s}: host 0's link per iteration (medians) ran "
                             f"one way only {t[f'{s}_one_way_s'] * 1e3:.0f} ms, both ways "
                             f"{t[f'{s}_both_ways_s'] * 1e3:.0f} ms")
    return "\n".join(lines) + "\n"


def _markdown_unshaped(meta: Dict, table: List[Dict], sides: List[str]) -> str:
    """The table of a run on unshaped links: the CPUs are the limit."""
    lo, hi = meta["load_avg_1min"]
    lines = [f"Across emulated hosts, links unshaped ({meta['date']}, {meta['cpus']} CPUs, "
             f"1-minute load average {lo:.2f}-{hi:.2f}; {meta['reps']} run(s) a side, median "
             f"of {meta['iters']} iterations after {meta['warmup']})", "",
             "| row | workers | " + " | ".join(f"{s} ms" for s in sides) + " | "
             + " | ".join(f"{s} MB/s per core" for s in sides) + " | mxkv/gloo | mxkv/MXNet | "
             + " | ".join(f"{s} MB/it/link" for s in sides) + " |",
             "|" + "---|" * (4 + 3 * len(sides))]
    for t in table:
        def get(k: str, fmt: str, scale: float = 1.0, t: Dict = t) -> str:
            v: Optional[float] = t.get(k)
            return "-" if v is None else fmt.format(v * scale)
        ratios = [t["mxkv_s"] / t[f"{o}_s"] if "mxkv_s" in t and f"{o}_s" in t else None
                  for o in ("gloo", "mxnet")]
        cells = [f"`{t['name']}`", str(t["workers"])]
        cells += [get(f"{s}_s", "{:.0f}", 1e3) for s in sides]
        cells += [get(f"{s}_mb_s_per_core", "{:.0f}") for s in sides]
        cells += ["-" if v is None else f"{v:.2f}" for v in ratios]
        cells += [get(f"{s}_mb_per_it", "{:.0f}") for s in sides]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "MB/s per core: ResNet-50's 102 MB of gradients reduced per second, over "
              "the machine's cores (every host's processes share them)."]
    return "\n".join(lines) + "\n"


def _plot(table: List[Dict], sides: List[str], python: str, stem: str = "multihost",
          rate: str = "1gbit") -> None:
    """results/<stem>.png, drawn by an interpreter that has matplotlib
    (this one, else MXNet's venv's)."""
    data = json.dumps({"rows": table, "sides": sides,
                       "title": "2 emulated hosts, " + ("links unshaped" if rate == "none"
                                                        else f"{rate} each"),
                       "out": os.path.join(RESULTS, f"{stem}.png")})
    code = """
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = json.loads(sys.argv[1])
rows, sides = d["rows"], d["sides"] + ["floor"]
fig, ax = plt.subplots(figsize=(6.5, 4.2))
w = 0.8 / len(sides)
for j, s in enumerate(sides):
    ys = [r.get(s + "_s") or 0 for r in rows]   # (no floor unshaped: 0)
    ax.bar([i + j * w for i in range(len(rows))], [y * 1e3 for y in ys], w, label=s)
ax.set_xticks([i + 0.4 - w / 2 for i in range(len(rows))])
ax.set_xticklabels([f"{r['name']} ({r['workers']} workers)" for r in rows])
ax.set_ylabel("ms per iteration (push + pull, ResNet-50)")
ax.set_title(d["title"])
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(d["out"], dpi=110)
"""
    for py in (sys.executable, python):
        if subprocess.run([py, "-c", code, data], capture_output=True).returncode == 0:
            return
    print("no matplotlib: no plot", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
