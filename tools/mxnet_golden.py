"""Run every parity scenario with the real Apache MXNet and write tests/golden/parity.json.

Run it with an interpreter that has ``mxnet==1.9.1`` (``bash tools/mxnet-golden.sh``,
or ``make golden``, sets one up). Every scenario makes its own kvstore and
waits for MXNet's engine to drain before the next one starts.

Scenarios run in a few worker processes, each importing MXNet once; a
scenario that fails or crashes its worker is rerun alone in a fresh process,
and only a failure there counts. The output is diff-stable: sorted keys, no
timestamp, floats as Python's shortest round-trip repr. Regenerating with the
same MXNet gives the same file.

Usage::

    python tools/mxnet_golden.py [--out PATH] [--jobs N] [--only NAME ...]
    python tools/mxnet_golden.py --run NAME ...  # internal: run these here, print JSON
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "golden" / "parity.json"
MARK = "@@PARITY-RESULT@@"
LOST = "worker ended"
FORMAT = 1


def load_scenarios() -> dict:
    """The scenario registry, tests/parity/scenarios.py (imported as pytest does)."""
    tests_dir = str(ROOT / "tests")
    if tests_dir not in sys.path:
        sys.path.insert(0, tests_dir)
    from parity.scenarios import SCENARIOS

    return SCENARIOS


def run_here(names: list[str]) -> None:
    """Run scenarios in this process; print one MARK line per scenario."""
    import mxnet as mx

    registry = load_scenarios()
    for name in names:
        try:
            result = registry[name].run(mx)
            mx.nd.waitall()
            line = json.dumps({"name": name, "result": result}, sort_keys=True, allow_nan=False)
        except Exception as exc:  # noqa: BLE001 - reported, then rerun alone
            line = json.dumps({"name": name, "error": f"{type(exc).__name__}: {exc}"[-2000:]})
        sys.stdout.write(MARK + line + "\n")
        sys.stdout.flush()


def run_batch(names: list[str], timeout: float) -> tuple[dict, dict]:
    """Run scenarios in one child process: ({name: result}, {name: error text})."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run", *names]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env,
                              cwd=str(ROOT), timeout=timeout * len(names))
        out, rc, errtext = proc.stdout, proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        rc, errtext = None, "timed out"
    results, errors = {}, {}
    for line in out.splitlines():
        if line.startswith(MARK):
            rec = json.loads(line[len(MARK):])
            if "error" in rec:
                errors[rec["name"]] = rec["error"]
            else:
                results[rec["name"]] = rec["result"]
    tail = "\n".join((out + errtext).strip().splitlines()[-15:])
    for name in names:
        if name not in results and name not in errors:
            errors[name] = f"{LOST} (exit status {rc}) before reporting\n{tail}"
    return results, errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per scenario")
    ap.add_argument("--only", nargs="*", help="run these scenarios and print, do not write")
    ap.add_argument("--run", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.run:
        run_here(args.run)
        return 0

    import mxnet
    import numpy

    registry = load_scenarios()
    names = args.only if args.only else sorted(registry)
    unknown = [n for n in names if n not in registry]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    skipped = {n: registry[n].mxnet_skip for n in names if registry[n].mxnet_skip}
    todo = [n for n in names if n not in skipped]

    start = time.monotonic()
    jobs = max(1, min(args.jobs, len(todo)))
    chunks = [todo[i::jobs] for i in range(jobs)]
    results: dict = {}
    retry: list[str] = []
    raised_in_batch: list[str] = []  # not merely lost when a worker died
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for ok, errors in pool.map(lambda c: run_batch(c, args.timeout), chunks):
            results.update(ok)
            retry += sorted(errors)
            raised_in_batch += [n for n, e in errors.items() if not e.startswith(LOST)]
    failed = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for ok, errors in pool.map(lambda n: run_batch([n], args.timeout), retry):
            results.update(ok)
            failed.update(errors)
    for name, err in sorted(failed.items()):
        print(f"FAILED {name}: {err}", file=sys.stderr)
    if failed:
        print(f"{len(failed)} scenario(s) failed under MXNet; {args.out} left unchanged",
              file=sys.stderr)
        return 1
    if raised_in_batch:
        print(f"note: passed only when run alone: {', '.join(sorted(raised_in_batch))}",
              file=sys.stderr)
    if args.only:
        print(json.dumps(results, sort_keys=True, indent=1))
        return 0

    golden = {
        "format": FORMAT,
        "meta": {
            "mxnet": mxnet.__version__,
            "numpy": numpy.__version__,
            "python": "{}.{}".format(*sys.version_info[:2]),
            "generator": "tools/mxnet_golden.py",
        },
        "skipped_on_mxnet": skipped,
        "scenarios": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(golden, sort_keys=True, indent=1, allow_nan=False) + "\n"
    args.out.write_text(text)
    print(f"wrote {len(results)} scenarios ({len(skipped)} skipped on MXNet) to "
          f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
