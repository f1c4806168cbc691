"""Where does mxkv spend a workload's time? (cProfile or py-spy, mxkv side only)

    bash benchmarks/run.sh profile resnet50_batched                 # cProfile
    bash benchmarks/run.sh profile small_keys_1000 --tool py-spy    # sampled, per line
    python benchmarks/profile_mxkv.py big_key_k8 --steps 200 --top 25

Sets the workload up exactly as the suite does (``workloads.py``), warms it
up, then profiles ``--steps`` steps. cProfile reports per function (own time
and inclusive time, as % of the profiled wall time) but inflates the cost of
small Python calls; py-spy (``pip install py-spy``) samples without that
overhead and reports per source line, including time in native threads
(``--native``) when asked.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _bench(name: str, module: str):
    import importlib

    import workloads
    mx = importlib.import_module(module)
    wl = workloads.find(name)
    bench = wl.setup(mx, **wl.params_for("full"))
    for _ in range(3):
        bench.step()
    mx.nd.waitall()
    return mx, bench


def _short(path: str) -> str:
    for marker in ("/python/mxkv/", "/site-packages/", "/benchmarks/"):
        if marker in path:
            return path.split(marker, 1)[1] if marker != "/python/mxkv/" else \
                "mxkv/" + path.split(marker, 1)[1]
    return os.path.basename(path)


def run_cprofile(name: str, module: str, steps: int, top: int) -> None:
    mx, bench = _bench(name, module)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(steps):
        bench.step()
    mx.nd.waitall()
    prof.disable()
    wall = time.perf_counter() - t0
    st = pstats.Stats(prof)
    rows = []
    for (path, line, func), (_cc, nc, tt, ct, _) in st.stats.items():  # type: ignore[attr-defined]
        rows.append((tt, ct, nc, "%s:%d(%s)" % (_short(path), line, func)))
    print("%s on %s: %d steps, %.2f ms/step under cProfile (profiler overhead included)"
          % (name, module, steps, wall / steps * 1e3))
    for title, idx in (("own time", 0), ("inclusive time", 1)):
        print("\n  top %d by %s   [%% of profiled wall time, calls/step]" % (top, title))
        for r in sorted(rows, key=lambda r: -r[idx])[:top]:
            print("  %5.1f%%  %7.1f  %s" % (100 * r[idx] / wall, r[2] / steps, r[3]))


def run_pyspy(name: str, module: str, steps: int, top: int, native: bool, rate: int) -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(exe):
        sys.exit("py-spy is not installed next to %s: pip install py-spy" % sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "stacks.txt")
        # --idle: the main thread's waits (on reduce threads, say) count as wall time.
        cmd = [exe, "record", "-f", "raw", "-o", raw, "-r", str(rate), "--threads", "--idle"]
        if native:
            cmd.append("--native")
        cmd += ["--", sys.executable, os.path.abspath(__file__), name, "--module", module,
                "--steps", str(steps), "--tool", "none"]
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        stacks = open(raw).read().splitlines()
    own: Dict[str, int] = collections.Counter()
    incl: Dict[str, int] = collections.Counter()
    helpers: Dict[str, int] = collections.Counter()
    total = 0
    main_tid = None
    parsed = []
    for line in stacks:
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        tid = frames[0].split(")")[0] if frames[0].startswith("thread (") else "?"
        loop = [i for i, f in enumerate(frames) if f.startswith("run_steps ")]
        if loop:
            main_tid = tid
        parsed.append((tid, frames, loop, int(count)))
    for tid, frames, loop, n in parsed:
        if tid != main_tid:
            if not re.search(r"\((threading|queue|concurrent/futures/thread)\.py:", frames[-1]):
                helpers[_frame(frames[-1])] += n   # busy in another thread (idle waits dropped)
            continue
        if not loop:
            continue
        frames = frames[loop[0] + 1:]
        total += n
        leaf = _frame(frames[-1]) if frames else "run_steps (loop itself)"
        own[leaf] += n
        seen = set()
        for f in frames:
            fn = re.sub(r":\d+\)$", ")", _frame(f))  # inclusive: per function, not line
            if fn not in seen:
                incl[fn] += n
                seen.add(fn)
    print("%s on %s: %d steps, %d main-thread samples in the timed loop (py-spy, %d Hz, "
          "idle included)" % (name, module, steps, total, rate))
    tables = [("own time, per line", own), ("inclusive time, per function", incl)]
    if helpers:
        tables.append(("other threads' busy samples, per line (vs main-thread samples)",
                       helpers))
    for title, table in tables:
        print("\n  top %d by %s   [%% of samples]" % (top, title))
        for key, n in sorted(table.items(), key=lambda kv: -kv[1])[:top]:
            print("  %5.1f%%  %s" % (100 * n / max(total, 1), key))


def _frame(f: str) -> str:
    m = re.match(r"(.*) \((.*?):(\d+)\)$", f)
    if not m:
        return f
    return "%s (%s:%s)" % (m.group(1), _short(m.group(2)), m.group(3))


def run_steps(bench, mx, steps: int) -> None:  # the frame py-spy's report is cut at
    for _ in range(steps):
        bench.step()
    mx.nd.waitall()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--module", default="mxkv")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--tool", choices=("cprofile", "py-spy", "none"), default="cprofile")
    ap.add_argument("--native", action="store_true", help="py-spy: include native frames")
    ap.add_argument("--rate", type=int, default=1000, help="py-spy: samples per second")
    a = ap.parse_args()
    if a.tool == "cprofile":
        run_cprofile(a.workload, a.module, a.steps, a.top)
    elif a.tool == "py-spy":
        run_pyspy(a.workload, a.module, a.steps, a.top, a.native, a.rate)
    else:
        mx, bench = _bench(a.workload, a.module)
        t0 = time.perf_counter()
        run_steps(bench, mx, a.steps)
        print("%.3f ms/step" % ((time.perf_counter() - t0) / a.steps * 1e3), file=sys.stderr)


if __name__ == "__main__":
    main()
