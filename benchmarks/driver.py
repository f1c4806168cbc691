"""Run the benchmark suite: MXNet and mxkv, the same workloads, one run.

    python driver.py --mode quick|full --mxnet-python PY --mxkv-python PY

One long-lived worker per implementation (``worker.py``), each in its own
interpreter and venv. For every workload both workers set up and warm up,
then the driver alternates single timed repetitions between them (A B, B A,
A B, ...) so that drift in the machine's state (frequency, page cache, a
noisy neighbour) lands on both sides alike. Only one side runs at a time.
Results go to ``.results/`` (``results/`` with ``--record``) as JSON, a
markdown table and a PNG chart; the exit status is 1 when a row errored or
missed its target.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bridge_rows  # noqa: E402
import report  # noqa: E402
from progress import Progress  # noqa: E402
from workloads import ORDER, REGISTRY, find, step_traffic  # noqa: E402

MODES: Dict[str, Dict[str, Any]] = {
    # reps: timed repetitions per side; stop early once a row has spent
    # row_budget_s (both sides together) and has at least min_reps.
    "quick": dict(warmup=2, reps=30, min_reps=8, row_budget_s=4.0, floor_reps=15,
                  py4j_calls=3000),
    "full": dict(warmup=5, reps=100, min_reps=20, row_budget_s=30.0, floor_reps=60,
                 py4j_calls=20000),
}
FLOOR_BYTES = 64 << 20
SETUP_TIMEOUT = 600.0
REP_TIMEOUT = 300.0


class WorkerError(RuntimeError):
    pass


class WorkerProc:
    """One ``worker.py`` process speaking JSON lines; restartable."""

    def __init__(self, role: str, python: str, module: str, log_dir: str,
                 log_name: Optional[str] = None) -> None:
        self.role, self.python, self.module = role, python, module
        self.log_path = os.path.join(log_dir, "%s.log" % (log_name or role))
        self.proc: Optional[subprocess.Popen] = None
        self.hello: Dict[str, Any] = {}
        self._log = open(self.log_path, "w")

    def start(self) -> Dict[str, Any]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([self.python, os.path.join(HERE, "worker.py"),
                                      "--module", self.module], cwd=HERE, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, bufsize=1)
        self._q: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, self._q), daemon=True).start()
        self.hello = self._read(SETUP_TIMEOUT)
        return self.hello

    @staticmethod
    def _pump(proc: subprocess.Popen, q: "queue.Queue[Optional[str]]") -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            q.put(line)
        q.put(None)

    def _read(self, timeout: float) -> Dict[str, Any]:
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise WorkerError("%s worker timed out after %.0f s"
                              % (self.role, timeout)) from None
        if line is None:
            code = self.proc.wait() if self.proc else None
            raise WorkerError("%s worker exited (code %s); see %s"
                              % (self.role, code, self.log_path))
        return json.loads(line)

    def call(self, timeout: float, **msg: Any) -> Dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self._log.write("\n### %s\n" % json.dumps(msg))
        self._log.flush()
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError) as e:
            raise WorkerError("%s worker is gone: %s" % (self.role, e)) from e
        return self._read(timeout)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                self.call(30, cmd="quit")
            except WorkerError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def _summary(times: List[float]) -> Dict[str, Any]:
    return {"times_s": times, "n": len(times), "min_s": min(times),
            "median_s": statistics.median(times), "mean_s": statistics.fmean(times)}


def run_row(name: str, mode: Dict[str, Any], mode_name: str, workers: Dict[str, WorkerProc],
            bar: Progress) -> Dict[str, Any]:
    wl = find(name)
    params = wl.params_for(mode_name)
    row: Dict[str, Any] = {"name": name, "title": wl.title, "size": wl.size, "params": params,
                           "op": "<=", "target": wl.target}
    sides: Dict[str, Dict[str, Any]] = {}
    live: List[str] = []
    for role, w in workers.items():
        bar.set_label("%s: %s setup + warm-up" % (name, role))
        try:
            r = w.call(SETUP_TIMEOUT, cmd="setup", workload=name, params=params,
                       warmup=mode["warmup"])
        except WorkerError as e:
            r = {"ok": False, "error": str(e)}
        if not r.get("ok"):
            sides[role] = {"error": r.get("error"), "traceback": r.get("traceback")}
            bar.note("  %s/%s: %s" % (name, role, r.get("error")))
        elif "skipped" in r:
            sides[role] = {"skipped": r["skipped"]}
        else:
            sides[role] = {"setup": {k: r[k] for k in ("setup_s", "first_s", "warmup_s")}}
            live.append(role)
        bar.advance(1)
    skipped = [s["skipped"] for s in sides.values() if "skipped" in s]
    if skipped:
        live = []
    # Lanes that take turns: each live side, plus the row's numpy floor (run by
    # the mxkv worker, beside the row, so that it sees the same machine state).
    lanes = [(role, workers[role], "main") for role in live]
    floor: Dict[str, Any] = {}
    if wl.floor and live and "mxkv" in workers:
        sizes, k = wl.floor(params)
        row["traffic_bytes"] = step_traffic(sizes, k)
        bar.set_label("%s: numpy floor setup" % name)
        try:
            r = workers["mxkv"].call(SETUP_TIMEOUT, cmd="floor_setup", sizes=sizes, k=k,
                                     warmup=mode["warmup"])
        except WorkerError as e:
            r = {"ok": False, "error": str(e)}
        if r.get("ok"):
            lanes.append(("floor", workers["mxkv"], "floor"))
        else:
            floor["error"] = r.get("error")
    times: Dict[str, List[float]] = {lane[0]: [] for lane in lanes}
    spent, done = 0.0, 0
    for i in range(mode["reps"] if lanes else 0):
        j = i % len(lanes)
        for role, w, slot in lanes[j:] + lanes[:j]:   # rotate who goes first
            bar.set_label("%s: %s rep %d/%d" % (name, role, i + 1, mode["reps"]))
            try:
                r = w.call(REP_TIMEOUT, cmd="rep", inner=1, slot=slot)
            except WorkerError as e:
                r = {"ok": False, "error": str(e)}
            if not r.get("ok"):
                err = {"error": r.get("error"), "traceback": r.get("traceback")}
                (floor if role == "floor" else sides[role]).update(err)
                bar.note("  %s/%s: %s" % (name, role, r.get("error")))
                lanes = [x for x in lanes if x[0] != role]
                continue
            times[role].append(r["t"])
            spent += r["t"]
        bar.advance(len(workers))
        done = i + 1
        if not lanes or (done >= mode["min_reps"] and spent > mode["row_budget_s"]):
            break
    bar.advance(len(workers) * (mode["reps"] - done))
    for role, w in workers.items():
        if times.get(role):
            sides[role].update(_summary(times[role]))
        try:
            w.call(SETUP_TIMEOUT, cmd="teardown")
        except WorkerError:
            pass
    if times.get("floor"):
        floor.update(_summary(times["floor"]))
    if floor:
        row["floor"] = floor
    row.update(sides)
    ref, cand = sides.get("mxnet", {}), sides.get("mxkv", {})
    if skipped:
        row.update(status="skipped", ratio=None, note=skipped[0])
    elif "median_s" in ref and "median_s" in cand:
        ratio = cand["median_s"] / ref["median_s"]
        row.update(ratio=ratio, ratio_min=cand["min_s"] / ref["min_s"],
                   status="pass" if ratio <= wl.target else "FAIL", note=None)
    else:
        err = cand.get("error") or ref.get("error") or "no timings"
        row.update(status="error", ratio=None, note=err.splitlines()[0][:200])
    return row


def bandwidth_rows(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for row in rows:
        traffic = row.get("traffic_bytes")
        fl = row.get("floor")
        if not traffic or not fl or "median_s" not in fl or row["status"] == "skipped":
            continue
        target = REGISTRY[row["name"]].floor_target
        b: Dict[str, Any] = {"name": row["name"], "title": row["title"],
                             "traffic_bytes": traffic, "floor_median_s": fl["median_s"],
                             "floor_gbps": traffic / fl["median_s"] / 1e9, "target": target}
        for role in ("mxnet", "mxkv"):
            med = row.get(role, {}).get("median_s")
            b[role + "_gbps"] = traffic / med / 1e9 if med else None
            b[role + "_of_floor"] = fl["median_s"] / med if med else None
        frac = b["mxkv_of_floor"]
        b["status"] = ("n/a" if frac is None else "info" if target is None
                       else "pass" if frac >= target else "FAIL")
        out.append(b)
    return out


def machine_info() -> Dict[str, Any]:
    info: Dict[str, Any] = {"platform": platform.platform(), "machine": platform.machine(),
                            "cpu_count": os.cpu_count()}
    try:
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "python"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        info["git"] = rev + ("+dirty(python/)" if dirty else "")
    except OSError:
        pass
    info["env"] = {k: v for k, v in os.environ.items()
                   if k.startswith(("MXNET_", "OMP_", "MKL_", "OPENBLAS_", "MXKV_"))}
    return info


def common_args(ap: argparse.ArgumentParser, modes: List[str], default_mode: str,
                only_help: str) -> None:
    """The options the rows (here) and the sweeps (sweeps.py) share."""
    ap.add_argument("--mode", choices=modes, default=default_mode)
    ap.add_argument("--mxnet-python", required=True)
    ap.add_argument("--mxkv-python", required=True)
    ap.add_argument("--mxkv-module", default="mxkv",
                    help="module for the mxkv side (mxnet: a stand-in, to test the harness)")
    ap.add_argument("--only", default="", help=only_help)
    ap.add_argument("--out", default=None,
                    help="results folder (default: benchmarks/.results, untracked; "
                         "benchmarks/results with --record)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_args(ap, sorted(MODES), "quick", "comma-separated workload names")
    ap.add_argument("--no-bridge", action="store_true",
                    help="skip the Clojure rows (the bridge's and start-up)")
    ap.add_argument("--bridge-python", default=None,
                    help="interpreter with py4j and mxkv for the bridge rows (default: mxkv's)")
    ap.add_argument("--record", action="store_true",
                    help="record the results for the docs: write benchmarks/results and "
                         "rewrite the results block of docs/benchmarks.md")
    args = ap.parse_args()
    if args.out is None:
        args.out = os.path.join(HERE, "results" if args.record else ".results")
    mode = MODES[args.mode]
    names = [n for n in ORDER if not args.only or n in args.only.split(",")]
    os.makedirs(args.out, exist_ok=True)
    log_dir = os.path.join(HERE, ".logs")
    os.makedirs(log_dir, exist_ok=True)

    t_start = time.time()
    # Units of progress: worker start 2, floors 4, per row 2 setups + 2 per rep, bridge 4,
    # start-up 2.
    bar = Progress(2 + 4 + len(names) * (2 + 2 * mode["reps"]) + (0 if args.no_bridge else 6))
    workers = {"mxnet": WorkerProc("mxnet", args.mxnet_python, "mxnet", log_dir),
               "mxkv": WorkerProc("mxkv", args.mxkv_python, args.mxkv_module, log_dir)}
    sides: Dict[str, Any] = {}
    try:
        for role, w in workers.items():
            bar.set_label("starting %s worker" % role)
            try:
                sides[role] = w.start()
            except WorkerError as e:
                sides[role] = {"ok": False, "error": str(e)}
            if not sides[role].get("ok"):
                bar.note("%s does not import: %s (rows will show the error; log: %s)"
                         % (role, sides[role].get("error"), w.log_path))
            bar.advance(1)

        bar.set_label("floors: numpy copy/add, reduce")
        try:
            fl = workers["mxkv"].call(SETUP_TIMEOUT, cmd="floors", big_bytes=FLOOR_BYTES,
                                      reps=mode["floor_reps"])
        except WorkerError as e:
            fl = {"ok": False, "error": str(e)}
        floors = fl if fl.get("ok") else {"error": fl.get("error")}
        bar.advance(4)

        rows = [run_row(n, mode, args.mode, workers, bar) for n in names]
    finally:
        for w in workers.values():
            w.close()

    bridge: Dict[str, Any] = {}
    startup: Dict[str, Any] = {}
    if not args.no_bridge:
        bar.set_label("bridge: Py4J round trip, Clojure rows")
        memcpy = (floors.get("copy") or {}).get("payload_gbps")
        bridge = bridge_rows.rows(args.mode, args.bridge_python or args.mxkv_python, memcpy,
                                  mode["py4j_calls"], timeout=SETUP_TIMEOUT)
        floors["py4j_noop_p50_us"] = bridge.get("noop_p50_us")
        floors["py4j_noop_source"] = bridge.get("noop_source")
        bar.advance(4)
        bar.set_label("start-up: Clojure programs against plain clojure.main")
        startup = bridge_rows.startup_rows(args.mode, args.bridge_python or args.mxkv_python,
                                           timeout=SETUP_TIMEOUT)
        bar.advance(2)
    bar.close()

    result = {
        "suite": "mxkv benchmarks", "mode": args.mode, "mode_settings": mode,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t_start)),
        "wall_s": time.time() - t_start, "machine": machine_info(), "sides": sides,
        "floors": floors, "rows": rows, "bandwidth": bandwidth_rows(rows),
        "bridge": bridge, "startup": startup,
    }
    paths = report.write_all(result, args.out, docs=args.record)
    finish(report.markdown(result, image=None), paths, failures(result),
           "row(s) errored or missed their target")


def finish(md: str, paths: List[str], bad: List[str], what: str) -> None:
    """Print a run's table and files; exit 1 when ``bad`` names anything."""
    sys.stderr.write("\n" + md + "\n")
    sys.stderr.write("wrote %s\n" % ", ".join(os.path.relpath(p, ROOT) for p in paths))
    if bad:
        sys.stderr.write("bench: %d %s: %s\n" % (len(bad), what, ", ".join(bad)))
        sys.exit(1)


def failures(result: Dict[str, Any]) -> List[str]:
    """Names of the rows that errored or missed their target (skipped rows are not failures)."""
    bad = ["%s (%s)" % (r["name"], r["status"]) for r in result["rows"]
           if r.get("status") in ("FAIL", "error")]
    bad += ["%s floor (%s)" % (b["name"], b["status"]) for b in result["bandwidth"]
            if b.get("status") == "FAIL"]
    for r in report.clojure_rows(result):
        if r.get("status") in ("FAIL", "error"):
            bad.append("%s (%s)" % (r.get("name", "bridge"), r["status"]))
    if (result.get("bridge") or {}).get("bridge_error"):
        bad.append("bridge (error: %s)" % result["bridge"]["bridge_error"].splitlines()[0][:120])
    if (result.get("startup") or {}).get("error"):
        bad.append("startup (error: %s)" % result["startup"]["error"].splitlines()[0][:120])
    return bad


if __name__ == "__main__":
    main()
