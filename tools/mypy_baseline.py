"""mypy over python/mxkv, against a baseline of known errors that may only shrink.

``make lint`` runs ``python tools/mypy_baseline.py``: it runs
``mypy --ignore-missing-imports python/mxkv`` and compares its errors with
``tools/mypy_baseline.txt`` (one ``path: error: message  [code]`` a line,
without line numbers, so that edits elsewhere in a file do not count as
new errors; a message that occurs n times in a file is listed n times).

* An error not in the baseline (or one more of a kind than it lists) fails,
  printed with its line.
* Baseline errors that are gone print a hint: run
  ``python tools/mypy_baseline.py --update`` to shrink the baseline, and
  commit it. ``--update`` never adds an error: it refuses while there are
  new ones (without a baseline file it writes today's errors).
"""
from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path
from typing import Counter, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy_baseline.txt"
_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?:\d+:)? error: (?P<msg>.*)$")


def run_mypy(root: Path = ROOT, target: str = "python/mxkv") -> List[Tuple[str, str]]:
    """(``path: error: message``, the line as mypy printed it) for each error
    of ``target`` (relative to ``root``)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports",
                           "--no-error-summary", "--hide-error-context", target],
                          cwd=root, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not proc.stdout.strip()):
        raise SystemExit(f"mypy did not run (exit {proc.returncode}):\n"
                         f"{proc.stdout}{proc.stderr}")
    out = []
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            out.append((f"{m['path']}: error: {m['msg']}", line))
    return out


def read_baseline(path: Path) -> Counter[str]:
    if not path.exists():
        return collections.Counter()
    return collections.Counter(line for line in path.read_text().splitlines()
                               if line.strip() and not line.startswith("#"))


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true",
                        help="shrink the baseline to the errors mypy reports now")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--target", default="python/mxkv", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", type=Path, default=BASELINE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    baseline = args.baseline
    errors = run_mypy(args.root, args.target)
    now = collections.Counter(key for key, _ in errors)
    if args.update and not baseline.exists():
        base = collections.Counter(now)   # the first baseline: today's errors
    else:
        base = read_baseline(baseline)
    new = now - base
    fixed = base - now
    if new:
        print(f"mypy: {sum(new.values())} error(s) not in {baseline.name}:")
        left = collections.Counter(new)
        for key, line in errors:
            if left[key] > 0 and now[key] - base[key] > 0:
                print(f"  {line}")
                left[key] -= 1
        print("Fix them (the baseline only shrinks).")
        return 1
    if args.update:
        baseline.write_text("# mypy --ignore-missing-imports python/mxkv: known errors "
                            "(tools/mypy_baseline.py); only shrinks\n"
                            + "".join(f"{k}\n" for k in sorted(now.elements())))
        print(f"mypy baseline: {sum(now.values())} error(s) (was {sum(base.values())})")
        return 0
    if fixed:
        print(f"mypy: {sum(fixed.values())} baseline error(s) fixed; shrink the baseline: "
              f"python tools/mypy_baseline.py --update")
    print(f"mypy: {sum(now.values())} known error(s), none new")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
