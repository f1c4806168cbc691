"""The randomized differential suite: record MXNet's results, or compare live.

Each seed's op sequence comes from ``tests/differential/generator.py`` and is
replayed by ``tests/differential/replay.py`` (see docs/parity.md)::

    # golden file for `make test` (run by `make golden`, with MXNet's interpreter)
    $MXNET_PY tools/differential.py golden [--seeds 50] [--ops 200]

    # thousands of seeds against the live MXNet (with mxkv's interpreter)
    .venv/bin/python tools/differential.py live --seeds 0:5000 [--jobs 2] [--ops 200]

``live`` replays every seed on mxkv here and on MXNet in worker processes
(MXNet's interpreter: ``$MXNET_VENV/bin/python``, else the one
``tools/mxnet-venv.sh`` provides), compares each op, prints every divergence
and a summary, and exits 1 if there was any. A seed whose MXNet worker
crashes is reported as such and the run goes on in a fresh worker.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from differential.compare import compare, digest  # noqa: E402
from differential.generator import FORMAT, generate  # noqa: E402
from differential.replay import replay  # noqa: E402

GOLDEN = ROOT / "tests" / "golden" / "differential.json.gz"
MARK = "@@DIFF@@"


def _quiet() -> None:
    warnings.simplefilter("ignore")
    os.environ.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")


def run_seed(mx, seed: int, n_ops: int) -> dict:
    ops = generate(seed, n_ops)
    return {"seed": seed, "digest": digest(ops), "records": replay(mx, ops)}


def cmd_worker(args) -> int:
    """Replay seeds with the library this interpreter imports as ``mxnet``."""
    _quiet()
    import mxnet as mx
    for seed in range(args.first, args.last):
        line = json.dumps(run_seed(mx, seed, args.ops), separators=(",", ":"))
        sys.stdout.write(MARK + line + "\n")
        sys.stdout.flush()
    return 0


def write_golden(doc: dict, path: Path) -> None:
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
            gz.write(raw)


def read_golden(path: Path = GOLDEN) -> dict:
    with gzip.open(path, "rb") as f:
        return json.loads(f.read())


def cmd_golden(args) -> int:
    _quiet()
    import mxnet as mx
    import numpy
    start = time.monotonic()
    seeds = {str(s): run_seed(mx, s, args.ops) for s in range(args.seeds)}
    for rec in seeds.values():
        del rec["seed"]
    doc = {"format": FORMAT, "ops": args.ops,
           "meta": {"mxnet": mx.__version__, "numpy": numpy.__version__,
                    "python": "{}.{}".format(*sys.version_info[:2]),
                    "generator": "tools/differential.py"},
           "seeds": seeds}
    write_golden(doc, args.out)
    print(f"wrote {args.seeds} seeds x {args.ops} ops to {args.out} "
          f"({args.out.stat().st_size // 1024} KiB) in {time.monotonic() - start:.1f}s",
          file=sys.stderr)
    return 0


def mxnet_python() -> str:
    venv = os.environ.get("MXNET_VENV")
    if venv and Path(venv, "bin", "python").exists():
        return str(Path(venv, "bin", "python"))
    out = subprocess.run(["bash", str(ROOT / "tools" / "mxnet-venv.sh")], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def _feed(py: str, seeds: list, n_ops: int, results: queue.Queue) -> None:
    """Run MXNet workers over ``seeds``; put (seed, record or None) on ``results``.
    A worker that dies loses its current seed (None: crashed) and is restarted."""
    todo = list(seeds)
    while todo:
        cmd = [py, str(Path(__file__).resolve()), "worker", str(todo[0]), str(todo[-1] + 1),
               "--ops", str(n_ops)]
        env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env, cwd=str(ROOT))
        for line in proc.stdout:
            if line.startswith(MARK):
                rec = json.loads(line[len(MARK):])
                todo.remove(rec["seed"])
                results.put((rec["seed"], rec))
        proc.wait()
        if todo:
            results.put((todo.pop(0), None))  # this seed took the worker down


def cmd_live(args) -> int:
    _quiet()
    import mxkv
    first, _, last = args.seeds.partition(":")
    seeds = list(range(int(first), int(last))) if last else list(range(int(first)))
    py = mxnet_python()
    results: queue.Queue = queue.Queue()
    step = -(-len(seeds) // args.jobs)
    chunks = [seeds[i:i + step] for i in range(0, len(seeds), step)]  # contiguous ranges
    threads = [threading.Thread(target=_feed, args=(py, c, args.ops, results), daemon=True)
               for c in chunks if c]
    for t in threads:
        t.start()
    start = time.monotonic()
    diverged, crashed, by_kind, shown = {}, [], {}, 0
    for done in range(1, len(seeds) + 1):
        seed, ref = results.get()
        if ref is None:
            crashed.append(seed)
            continue
        ops = generate(seed, args.ops)
        problems = compare(ops, ref["records"], replay(mxkv, ops))
        if problems:
            diverged[seed] = problems
            for p in problems:
                kind = p.split(":")[0].split("(", 1)[-1].rstrip(")")
                by_kind[kind] = by_kind.get(kind, 0) + 1
            if shown < args.show:
                shown += 1
                print(f"seed {seed}: {len(problems)} divergence(s)")
                for p in problems[:5]:
                    print(f"  {p}")
        if done % 500 == 0:
            print(f"... {done}/{len(seeds)} seeds, {len(diverged)} diverged "
                  f"({time.monotonic() - start:.0f}s)", file=sys.stderr)
    total = sum(len(p) for p in diverged.values())
    print(f"\n{len(seeds)} seeds x {args.ops} ops against MXNet "
          f"({len(seeds) * args.ops} calls) in {time.monotonic() - start:.0f}s: "
          f"{total} divergence(s) in {len(diverged)} seed(s); "
          f"{len(crashed)} seed(s) crashed MXNet{': ' + str(crashed[:20]) if crashed else ''}")
    for kind, n in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d}  {kind}")
    return 1 if diverged or crashed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden", help="record MXNet's results (MXNet's interpreter)")
    g.add_argument("--seeds", type=int, default=50)
    g.add_argument("--ops", type=int, default=200)
    g.add_argument("--out", type=Path, default=GOLDEN)
    lv = sub.add_parser("live", help="compare mxkv with the live MXNet, seed by seed")
    lv.add_argument("--seeds", default="0:1000", help="A:B (range) or N (0..N-1)")
    lv.add_argument("--ops", type=int, default=200)
    lv.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    lv.add_argument("--show", type=int, default=20, help="seeds to print in full")
    w = sub.add_parser("worker", help=argparse.SUPPRESS)
    w.add_argument("first", type=int)
    w.add_argument("last", type=int)
    w.add_argument("--ops", type=int, default=200)
    args = ap.parse_args(argv)
    return {"golden": cmd_golden, "live": cmd_live, "worker": cmd_worker}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
