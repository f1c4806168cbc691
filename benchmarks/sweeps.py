"""How cost grows: sweeps of mxkv against MXNet 1.9.1, in one run.

    python sweeps.py --mode quick|full --mxnet-python PY --mxkv-python PY [--record]
    bash benchmarks/run.sh sweeps [--quick] [--record] [--only keys,size,devices]

Three sweeps, each point a workload of ``workloads.py`` run by the suite's own
harness (``driver.run_row``: one long-lived worker per implementation, set up,
checked after one step, warmed up, then single timed steps interleaved):

* ``keys``: batched push + pull of N keys of one float32, one device
  (N = 100 .. 100,000), reported per key;
* ``size``: one key of N float32 pushed from 4 ``cpu(i)`` devices and pulled
  to 4 outputs (N = 1K .. 16M);
* ``devices``: one 16 MB key (4,194,304 float32) from k devices (k = 1 .. 16).

Targets: every point mxkv / MXNet <= 1.0 (medians), and mxkv's cost per key
at 100,000 keys at most 1.3x its cost at 1,000. Results go to
``.results/<mode>_sweeps.{json,md,png}`` (``results/`` with ``--record``, which
also rewrites the sweep block of ``docs/benchmarks.md``); the exit status is 1
when a point errored or a target was missed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from workloads import BIG, Workload, big_key, small_keys  # noqa: E402

# The harness's settings for sweep points: fewer repetitions than a row (a
# sweep has 20 points), the same interleaving and statistics.
MODES: Dict[str, Dict[str, Any]] = {
    "quick": dict(warmup=1, reps=15, min_reps=5, row_budget_s=3.0),
    "full": dict(warmup=3, reps=60, min_reps=12, row_budget_s=12.0),
}
TARGET = 1.0          # every point: mxkv median / MXNet median
GROWTH_TARGET = 1.3   # mxkv per key at GROWTH_AT[1] keys / at GROWTH_AT[0]
GROWTH_AT = (1000, 100_000)


@dataclass
class Sweep:
    name: str
    title: str
    axis: str                        # the x axis, in words
    full: List[int]                  # the points of a full run
    quick: List[int]                 # of a quick one (a subset)
    point: Callable[[int], Workload]
    per_key: bool = False            # report time per key (x = number of keys)

    def values(self, mode: str) -> List[int]:
        return self.quick if mode == "quick" else self.full


def _keys_point(n: int) -> Workload:
    return Workload(name="sweep_keys_%d" % n, title="%s keys of 1 float32, batched push + pull"
                    % format(n, ","), size="%s x 1 float32, 1 device" % format(n, ","),
                    setup=small_keys, params=dict(nkeys=n), target=TARGET)


def _size_point(n: int) -> Workload:
    return Workload(name="sweep_size_%d" % n,
                    title="1 key of %s float32, push from 4 cpu devices + pull" % format(n, ","),
                    size="%s float32 x 4" % format(n, ","), setup=big_key,
                    params=dict(n=n, k=4), target=TARGET)


def _devices_point(k: int) -> Workload:
    return Workload(name="sweep_devices_%d" % k,
                    title="1 key of 16 MB, push from %d cpu device%s + pull" % (k, "s" * (k > 1)),
                    size="4,194,304 float32 x %d" % k, setup=big_key,
                    params=dict(n=BIG, k=k), target=TARGET)


SWEEPS = [
    Sweep("keys", "batched push + pull of N one-float keys, 1 device", "keys N",
          [100, 300, 1000, 3000, 10_000, 30_000, 100_000], [100, 1000, 10_000, 100_000],
          _keys_point, per_key=True),
    Sweep("size", "one key of N float32 from 4 devices, push + pull", "float32 per key N",
          [1 << e for e in range(10, 25, 2)], [1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 24],
          _size_point),
    Sweep("devices", "one 16 MB key from k devices, push + pull", "devices k",
          [1, 2, 4, 8, 16], [1, 4, 16], _devices_point),
]
# Every point of every sweep, by name (workloads.find looks here too).
POINTS: Dict[str, Workload] = {w.name: w for s in SWEEPS for w in map(s.point, s.full)}


# ---------------------------------------------------------------- the run

def run(args: argparse.Namespace) -> Dict[str, Any]:
    import driver
    from progress import Progress

    mode = MODES[args.mode]
    chosen = [s for s in SWEEPS if not args.only or s.name in args.only.split(",")]
    names = [(s, x, s.point(x).name) for s in chosen for x in s.values(args.mode)]
    log_dir = os.path.join(HERE, ".logs")
    os.makedirs(log_dir, exist_ok=True)
    t_start = time.time()
    bar = Progress(2 + len(names) * (2 + 2 * mode["reps"]))
    workers = {"mxnet": driver.WorkerProc("mxnet", args.mxnet_python, "mxnet", log_dir,
                                          "sweeps-mxnet"),
               "mxkv": driver.WorkerProc("mxkv", args.mxkv_python, args.mxkv_module, log_dir,
                                         "sweeps-mxkv")}
    sides: Dict[str, Any] = {}
    rows: Dict[str, List[Dict[str, Any]]] = {s.name: [] for s in chosen}
    try:
        for role, w in workers.items():
            bar.set_label("starting %s worker" % role)
            try:
                sides[role] = w.start()
            except driver.WorkerError as e:
                sides[role] = {"ok": False, "error": str(e)}
            if not sides[role].get("ok"):
                bar.note("%s does not import: %s (log: %s)"
                         % (role, sides[role].get("error"), w.log_path))
            bar.advance(1)
        for sweep, x, name in names:
            row = driver.run_row(name, mode, args.mode, workers, bar)
            row["x"] = x
            if sweep.per_key:
                for role in ("mxnet", "mxkv"):
                    if "median_s" in row.get(role, {}):
                        row[role]["per_key_s"] = row[role]["median_s"] / x
            rows[sweep.name].append(row)
    finally:
        for w in workers.values():
            w.close()
    bar.close()
    result = {
        "suite": "mxkv sweeps", "mode": args.mode, "mode_settings": mode,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t_start)),
        "wall_s": time.time() - t_start, "machine": driver.machine_info(), "sides": sides,
        "sweeps": [{"name": s.name, "title": s.title, "axis": s.axis, "per_key": s.per_key,
                    "points": rows[s.name]} for s in chosen],
    }
    result["targets"] = targets(result)
    return result


def _point(result: Dict[str, Any], sweep: str, x: int) -> Optional[Dict[str, Any]]:
    for s in result["sweeps"]:
        if s["name"] == sweep:
            return next((p for p in s["points"] if p["x"] == x), None)
    return None


def targets(result: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The run's targets: per-key growth (mxkv; MXNet's shown beside it) and
    the worst point's ratio."""
    out: List[Dict[str, Any]] = []
    lo, hi = (_point(result, "keys", n) for n in GROWTH_AT)
    if any(s["name"] == "keys" for s in result["sweeps"]):
        t: Dict[str, Any] = {"name": "keys_growth", "op": "<=", "target": GROWTH_TARGET,
                             "what": "mxkv's cost per key at %s keys / at %s keys"
                             % (format(GROWTH_AT[1], ","), format(GROWTH_AT[0], ","))}
        try:
            per = {role: (lo[role]["per_key_s"], hi[role]["per_key_s"])  # type: ignore[index]
                   for role in ("mxnet", "mxkv")}
        except (TypeError, KeyError):
            t.update(value=None, status="error", note="a point of the keys sweep has no timing")
        else:
            t.update(value=per["mxkv"][1] / per["mxkv"][0], per_key_s=per,
                     mxnet_value=per["mxnet"][1] / per["mxnet"][0])
            t["status"] = "pass" if t["value"] <= GROWTH_TARGET else "FAIL"
        out.append(t)
    points = [p for s in result["sweeps"] for p in s["points"]]
    timed = [p for p in points if p.get("ratio") is not None]
    worst = max(timed, key=lambda p: p["ratio"]) if timed else None
    bad = [p["name"] for p in points if p.get("status") in ("FAIL", "error")]
    out.append({"name": "every_point", "op": "<=", "target": TARGET,
                "what": "every point: mxkv / MXNet (the worst)",
                "value": worst["ratio"] if worst else None,
                "worst": worst["name"] if worst else None,
                "status": "pass" if points and not bad else ("error" if not timed else "FAIL"),
                "note": ", ".join(bad) or None})
    return out


def failures(result: Dict[str, Any]) -> List[str]:
    bad = ["%s (%s)" % (p["name"], p["status"]) for s in result["sweeps"] for p in s["points"]
           if p.get("status") in ("FAIL", "error")]
    bad += ["%s (%s)" % (t["name"], t["status"]) for t in result["targets"]
            if t["status"] in ("FAIL", "error") and t["name"] != "every_point"]
    return bad


# ---------------------------------------------------------------- the report

def _ms(d: Dict[str, Any]) -> str:
    import report
    return report._side(d)


def _per_key(d: Dict[str, Any]) -> str:
    return "%.2f us" % (d["per_key_s"] * 1e6) if "per_key_s" in d else "-"


def _ratio(p: Dict[str, Any]) -> str:
    if p.get("ratio") is None:
        return "-"
    return "**%.2f** (%.2f)" % (p["ratio"], p["ratio_min"])


def _status(p: Dict[str, Any]) -> str:
    import report
    s = report._result(p.get("status", "error"))
    return s + (" <sub>%s</sub>" % p["note"].replace("|", "/") if p.get("note") else "")


def markdown(r: Dict[str, Any], image: Optional[str]) -> str:
    import report
    reps = r["mode_settings"]
    out = report.run_header(r, "sweeps")
    out.append("Time of one step (push + pull, completion included): min / median of up to %d "
               "interleaved repetitions per side after %d warm-up step(s); ratio = mxkv median "
               "/ MXNet median (of minimums in brackets)." % (reps["reps"], reps["warmup"]))
    out.append("")
    for s in r["sweeps"]:
        out.append("**%s** (`%s`)" % (s["title"][0].upper() + s["title"][1:], s["name"]))
        out.append("")
        if s["per_key"]:
            out.append("| %s | MXNet | mxkv | MXNet per key | mxkv per key | mxkv / MXNet | "
                       "result |" % s["axis"])
            out.append("|--:|--:|--:|--:|--:|--:|:-:|")
        else:
            out.append("| %s | MXNet | mxkv | mxkv / MXNet | result |" % s["axis"])
            out.append("|--:|--:|--:|--:|:-:|")
        for p in s["points"]:
            mx_, kv = p.get("mxnet", {}), p.get("mxkv", {})
            cells = [format(p["x"], ","), _ms(mx_), _ms(kv)]
            if s["per_key"]:
                cells += [_per_key(mx_), _per_key(kv)]
            out.append("| %s |" % " | ".join(cells + [_ratio(p), _status(p)]))
        out.append("")
    out.append("**Targets**")
    out.append("")
    out.append("| target | value | aim | result |")
    out.append("|---|--:|--:|:-:|")
    for t in r["targets"]:
        value = "-" if t.get("value") is None else "**%.2f**" % t["value"]
        if t["name"] == "keys_growth" and "per_key_s" in t:
            (a, b), (c, d) = t["per_key_s"]["mxkv"], t["per_key_s"]["mxnet"]
            value += " <sub>%.2f -> %.2f us; MXNet %.2f -> %.2f us = %.2fx</sub>" % (
                a * 1e6, b * 1e6, c * 1e6, d * 1e6, t["mxnet_value"])
        elif t.get("worst"):
            value += " <sub>%s</sub>" % t["worst"]
        out.append("| %s | %s | %s %.1f | %s |" % (t["what"], value, t["op"], t["target"],
                                                  _status(t)))
    out.append("")
    if image:
        out.append("![mxkv and MXNet as keys, size and devices grow](%s)" % image)
        out.append("")
    return "\n".join(out)


def chart(r: Dict[str, Any], path: str) -> bool:
    import report
    plt = report.pyplot("sweeps")
    if plt is None:
        return False
    sweeps = r["sweeps"]
    fig, axes = plt.subplots(1, len(sweeps), figsize=(5.2 * len(sweeps), 4.4), squeeze=False)
    style = {"mxnet": ("MXNet 1.9.1", "#1565c0", "o"), "mxkv": ("mxkv", "#2e7d32", "s")}
    for ax, s in zip(axes[0], sweeps):
        for role, (label, color, marker) in style.items():
            pts = [(p["x"], p[role]["per_key_s" if s["per_key"] else "median_s"])
                   for p in s["points"] if "median_s" in p.get(role, {})]
            if not pts:
                continue
            xs, ys = zip(*pts)
            scale = 1e6 if s["per_key"] else 1e3
            ax.plot(xs, [y * scale for y in ys], marker=marker, color=color, label=label)
        if s["name"] == "devices":   # few points: label each
            from matplotlib.ticker import NullFormatter, ScalarFormatter
            ax.set_xscale("log", base=2)
            ax.set_xticks([p["x"] for p in s["points"]])
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(s["axis"], fontsize=9)
        ax.set_ylabel("us per key (median)" if s["per_key"] else "ms per step (median)",
                      fontsize=9)
        ax.set_title(s["title"], fontsize=9)
        ax.grid(True, which="both", color="#e0e0e0", lw=0.6)
        ax.legend(fontsize=8, frameon=False)
    kv = r["sides"].get("mxkv", {})
    fig.suptitle("How cost grows: mxkv vs MXNet, %s sweeps %s (%s)"
                 % (r["mode"], r["started"][:16], kv.get("module", "mxkv")), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


BEGIN, END = "<!-- BEGIN SWEEP RESULTS -->", "<!-- END SWEEP RESULTS -->"


def write_all(r: Dict[str, Any], out_dir: str, docs: bool = False) -> List[str]:
    """Write ``<mode>_sweeps.{json,md,png}``; with ``docs``, refresh the
    sweep block of docs/benchmarks.md."""
    import report
    base = os.path.join(out_dir, "%s_sweeps" % r["mode"])
    with open(base + ".json", "w") as f:
        json.dump(r, f, indent=1)
    has_png = chart(r, base + ".png")
    name = os.path.basename(base)
    with open(base + ".md", "w") as f:
        f.write(markdown(r, image=name + ".png" if has_png else None))
    paths = [base + ".json", base + ".md"] + ([base + ".png"] if has_png else [])
    if docs:
        rel = "../benchmarks/results/%s.png" % name
        if report.update_docs(markdown(r, image=rel if has_png else None), BEGIN, END):
            paths.append(report.DOCS)
    return paths


def main() -> None:
    import driver
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    driver.common_args(ap, sorted(MODES), "full", "comma-separated sweeps: keys, size, devices")
    ap.add_argument("--record", action="store_true",
                    help="write benchmarks/results and rewrite the sweep block of "
                         "docs/benchmarks.md")
    args = ap.parse_args()
    unknown = set(filter(None, args.only.split(","))) - {s.name for s in SWEEPS}
    if unknown:
        ap.error("no sweep named %s (there are: %s)" % (", ".join(sorted(unknown)),
                                                        ", ".join(s.name for s in SWEEPS)))
    if args.out is None:
        args.out = os.path.join(HERE, "results" if args.record else ".results")
    os.makedirs(args.out, exist_ok=True)
    result = run(args)
    paths = write_all(result, args.out, docs=args.record)
    driver.finish(markdown(result, image=None), paths, failures(result),
                  "sweep point(s) or target(s) errored or missed")


if __name__ == "__main__":
    main()
