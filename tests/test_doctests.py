"""Every ``>>>`` example in python/mxkv's docstrings runs and prints what it
shows (doctest), and the main entry points keep an example.

Examples see their module's names and ``mx`` (``import mxkv as mx``),
``np`` and ``numpy``, as in MXNet's docs, and run in a scratch directory
(their temporary directory too: nothing they make is left behind).
``mxkv.jvm``'s examples start a JVM, which JPype allows once per process:
they run in a Python process of their own (and only where a JDK and Clojure
are installed: ``needs_jvm``).
"""
from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import mxkv

SRC = Path(mxkv.__file__).resolve().parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
IN_A_PROCESS_OF_THEIR_OWN = {"mxkv.jvm"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = sorted(_module_name(p) for p in SRC.rglob("*.py") if ">>>" in p.read_text())

# The entry points a user meets first: each keeps a runnable example.
ENTRY_POINTS = [
    "mxkv.kvstore.base.create",
    "mxkv.kvstore.local.KVStore.init",
    "mxkv.kvstore.local.KVStore.push",
    "mxkv.kvstore.local.KVStore.pull",
    "mxkv.kvstore.local.KVStore.pushpull",
    "mxkv.kvstore.local.KVStore.row_sparse_pull",
    "mxkv.kvstore.local.KVStore.set_optimizer",
    "mxkv.kvstore.local.KVStore.save_optimizer_states",
    "mxkv.ndarray.creation.array",
    "mxkv.ndarray.io.save",
    "mxkv.ndarray.io.load",
    "mxkv.jvm",
    "mxkv.kvstore.dist.launch.parse_args",
]


def run_examples(name: str) -> tuple:
    """(examples tried, failures, the runner's report) for module ``name``."""
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    tried = 0
    # (as doctest.testmod: the module's own names, plus mx, np and numpy)
    globs = {**vars(module), "mx": mxkv, "np": np, "numpy": np}
    for test in doctest.DocTestFinder().find(module, name, globs=globs):
        tried += len(test.examples)
        runner.run(test, out=report.append)
    return tried, runner.failures, "".join(report)


@pytest.mark.parametrize("name", [m for m in MODULES if m not in IN_A_PROCESS_OF_THEIR_OWN])
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # (mkdtemp in an example)
    tried, failures, report = run_examples(name)
    assert tried > 0
    assert failures == 0, report


def test_jvm_examples_run_in_a_process_of_their_own(needs_jvm, tmp_path):
    code = ("import sys; sys.path.insert(0, %r); from test_doctests import run_examples; "
            "tried, failures, report = run_examples('mxkv.jvm'); print(report); "
            "sys.exit(1 if failures or not tried else 0)" % str(Path(__file__).parent))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("dotted", ENTRY_POINTS)
def test_main_entry_points_have_examples(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        break
    assert ">>>" in (obj.__doc__ or ""), f"{dotted} has no example"


def test_a_wrong_example_fails(tmp_path):
    bad = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "bad", "bad.py", 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(bad, out=lambda _: None)
    assert runner.failures == 1
