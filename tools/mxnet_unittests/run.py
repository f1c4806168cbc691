"""Run MXNet 1.9.1's own unit tests against mxkv.

Give it the ``tests/python/unittest`` directory of an MXNet 1.9.1 checkout
(the repository holds no copy of MXNet's tests)::

    .venv/bin/python tools/mxnet_unittests/run.py /work/upstream/mxnet-1.9.1/tests/python/unittest
    .venv/bin/python tools/mxnet_unittests/run.py DIR --files test_kvstore.py -- -k row_sparse

The test files are copied, unchanged, into a temporary directory next to the shims in
``shim/``: a ``conftest.py`` that makes ``import mxnet`` give mxkv, and
mxkv's own stand-ins for ``mxnet.test_utils``, the tests' ``common`` module
and ``nose.tools``. Tests of features mxkv does not claim are deselected,
each with its reason (``deselected.py``). The summary gives passed / failed
/ deselected per file; the exit status is 0 only when nothing failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from deselected import DESELECTED  # noqa: E402

FILES = ("test_kvstore.py", "test_optimizer.py", "test_ndarray.py", "test_sparse_ndarray.py")

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("unittest_dir", type=Path, help="MXNet's tests/python/unittest")
    ap.add_argument("--files", nargs="+", default=list(FILES))
    ap.add_argument("--python", default=sys.executable, help="interpreter with mxkv")
    ap.add_argument("--json", type=Path, help="write the counts here")
    ap.add_argument("--no-deselect", action="store_true", help="run every test")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.pytest_args = extra

    missing = [f for f in args.files if not (args.unittest_dir / f).is_file()]
    if missing:
        print(f"not found in {args.unittest_dir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="mxkv-mxnet-unittests-"))
    try:
        for f in args.files:
            shutil.copy(args.unittest_dir / f, work / f)
        for f in args.unittest_dir.iterdir():  # data files the tests read (legacy_ndarray.v0)
            if f.is_file() and f.suffix not in (".py", ".pyc"):
                shutil.copy(f, work / f.name)
        for f in (HERE / "shim").glob("*.py"):
            shutil.copy(f, work / f.name)
        deselect = {} if args.no_deselect else {
            k: v for k, v in DESELECTED.items() if k.split("::")[0] in args.files}
        junit = work / "junit.xml"
        csr_report = work / "csr.json"
        cmd = [args.python, "-m", "pytest", str(work), "-q", "-p", "no:cacheprovider",
               "--rootdir", str(work), f"--junitxml={junit}", "-o", "junit_family=xunit1",
               "-W", "ignore::DeprecationWarning"]
        for test in deselect:
            cmd += ["--deselect", test]
        cmd += args.pytest_args
        env = dict(os.environ, MXKV_UNITTEST_CSR_REPORT=str(csr_report))
        subprocess.run(cmd, cwd=work, env=env, check=False)
        counts = summarize(junit, args.files, deselect)
        csr = json.loads(csr_report.read_text()) if csr_report.exists() else {}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(counts, deselect, csr)
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "csr_subchecks_not_run": csr},
                                        indent=1, sort_keys=True) + "\n")
    return 0 if all(c["failed"] == 0 for c in counts.values()) else 1


def summarize(junit: Path, files: list[str], deselect: dict) -> dict:
    counts = {f: {"passed": 0, "failed": 0, "skipped": 0, "deselected": 0, "failures": []}
              for f in files}
    for test in deselect:
        counts[test.split("::")[0]]["deselected"] += 1
    if not junit.exists():
        return counts
    for case in ET.parse(junit).getroot().iter("testcase"):
        fname = Path(case.get("file") or case.get("classname", "").replace(".", "/") + ".py").name
        c = counts.setdefault(fname, {"passed": 0, "failed": 0, "skipped": 0,
                                      "deselected": 0, "failures": []})
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            c["failed"] += 1
            c["failures"].append(f"{case.get('name')}: {(bad.get('message') or '')[:200]}")
        elif case.find("skipped") is not None:
            c["skipped"] += 1
        else:
            c["passed"] += 1
    return counts


def report(counts: dict, deselect: dict, csr: dict) -> None:
    print("\nMXNet 1.9.1 unit tests on mxkv")
    print(f"{'file':<26}{'passed':>8}{'failed':>8}{'skipped':>9}{'deselected':>12}")
    for f, c in counts.items():
        print(f"{f:<26}{c['passed']:>8}{c['failed']:>8}{c['skipped']:>9}{c['deselected']:>12}")
    for f, c in counts.items():
        for line in c["failures"]:
            print(f"FAILED {f}::{line}")
    if deselect:
        print("\ndeselected (features mxkv does not claim):")
        for test, why in sorted(deselect.items()):
            print(f"  {test}: {why}")
    if csr:
        print("\ncsr sub-checks not run inside otherwise-run tests (compare_optimizer):")
        for test, n in sorted(csr.items()):
            print(f"  {test}: {n}")


if __name__ == "__main__":
    sys.exit(main())
