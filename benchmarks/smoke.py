"""`make bench-smoke`: does every benchmark still run? A minute, not a measurement.

    .venv/bin/python benchmarks/smoke.py

The suite compares mxkv with MXNet 1.9.1, whose venv a clean clone lacks and
which takes minutes to build, and its distributed rows start Ray clusters and
JVMs: too much for CI on every change. So this runs, with mxkv alone, in the
project's .venv:

* every script under benchmarks/ (the studies/ and bridge/ ones too): those
  with a command line answer ``--help`` (their imports and arguments parse),
  the others are imported;
* every row of the suite (``workloads.REGISTRY``) through the suite's own
  worker (``worker.Worker``, as ``driver.py`` drives it): set up at its
  ``quick`` size, one step, its check, one timed repetition, its numpy
  floor where it has one, teardown; rows that need GPUs say why they
  skip;
* the first point of every sweep (``sweeps.SWEEPS``), the same way;
* the bandwidth floors (``floors.measure``) with one repetition.

Timings are printed, never judged. Exits non-zero when anything fails,
naming it. What it does not run: the MXNet side, the distributed jobs and
the Clojure bridge's timed loops (`make bench`, `make bench-dist`).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _scripts() -> List[Path]:
    return sorted(p for p in HERE.rglob("*.py")
                  if ".venv" not in p.parts and p.name != "smoke.py")


def check_scripts(failures: List[str]) -> None:
    """``--help`` of every script with a command line, an import of the rest."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE), os.environ.get("PYTHONPATH", "")]))
    for path in _scripts():
        text = path.read_text()
        if "__main__" in text and "argparse" in text:
            cmd = [sys.executable, str(path), "--help"]
        else:
            cmd = [sys.executable, "-c", f"import runpy; runpy.run_path({str(path)!r}, "
                                         f"run_name='smoke')"]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env,
                           cwd=str(path.parent), stdin=subprocess.DEVNULL)
        rel = path.relative_to(HERE)
        if r.returncode != 0:
            failures.append(f"{rel}: {' '.join(cmd[1:2] + cmd[2:3])} exited {r.returncode}\n"
                            f"{r.stderr[-2000:]}")
        print(f"  {rel}: {'ok' if r.returncode == 0 else 'FAILED'} "
              f"({time.monotonic() - t0:.1f} s)", flush=True)


def _attempt(what: str, fn: Callable[[], str], failures: List[str]) -> None:
    t0 = time.monotonic()
    try:
        note = fn()
    except Exception:  # noqa: BLE001 - report every failure, then go on
        failures.append(f"{what}:\n{traceback.format_exc()[-3000:]}")
        note = "FAILED"
    print(f"  {what}: {note} ({time.monotonic() - t0:.1f} s)", flush=True)


def check_rows(failures: List[str]) -> None:
    """Each row and the first point of each sweep: setup, one step and its
    check, one repetition (and its floor), teardown, in the suite's worker."""
    import sweeps
    import workloads
    from worker import Worker

    worker = Worker("mxkv")
    worker.hello()   # imports mxkv, as the driver's first command does
    points = [(name, wl) for name, wl in workloads.REGISTRY.items()]
    for sweep in sweeps.SWEEPS:
        wl = sweep.point(sweep.quick[0])
        points.append((wl.name, wl))

    def one(name: str, wl: workloads.Workload) -> Callable[[], str]:
        def run() -> str:
            params = wl.params_for("quick")
            r = worker.setup(name, params, 0)
            if "skipped" in r:
                return "skipped: " + r["skipped"]
            try:
                t = worker.rep(1)["t"]
                if wl.floor is not None:
                    sizes, k = wl.floor(params)
                    worker.floor_setup(sizes, k, 0)
                    worker.rep(1, "floor")
            finally:
                worker.teardown()
            return f"ok, one step {t * 1e3:.2f} ms"
        return run

    for name, wl in points:
        _attempt(name, one(name, wl), failures)
    _attempt("floors", lambda: "ok (numpy %s)" % worker.floors(16 << 20, 1)["numpy"], failures)


def main() -> int:
    t0 = time.monotonic()
    failures: List[str] = []
    print("bench-smoke: the scripts", flush=True)
    check_scripts(failures)
    print("bench-smoke: each row and sweep's first point, once, mxkv only", flush=True)
    check_rows(failures)
    took = time.monotonic() - t0
    if failures:
        print(f"bench-smoke: {len(failures)} failed ({took:.0f} s)\n\n" + "\n\n".join(failures),
              file=sys.stderr)
        return 1
    print(f"bench-smoke: everything ran ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
