"""What every committed file keeps: no merge leftovers, no copies of upstream code."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _git_grep(*args):
    try:
        out = subprocess.run(["git", "grep", "-n", *args], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("git is not available")
    if out.returncode not in (0, 1):
        pytest.skip(f"not a git checkout ({out.stderr.strip()[:100]})")
    return out.stdout.splitlines()


def test_no_merge_conflict_markers_are_committed():
    assert _git_grep("-E", "^(<<<<<<< |>>>>>>> |=======$)", "--", ".",
                     ":!*.json") == []


def test_only_the_verbatim_tutorials_carry_the_asf_header():
    # The phrase is assembled so that this file does not carry it either.
    phrase = " ".join(["Licensed to the", "Apache", "Software Foundation"])
    hits = _git_grep("-l", phrase, "--", ".", ":!clojure/tutorial")
    assert hits == []


def test_the_dist_package_reads_no_private_field_of_the_local_store():
    # tools/dist_private_reads.py: the embedding API (docs/architecture.md) only
    import importlib.util

    spec = importlib.util.spec_from_file_location("dist_private_reads",
                                                  ROOT / "tools" / "dist_private_reads.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.reads(sorted(tool.DIST.glob("*.py"))) == []


def test_the_private_read_check_finds_a_private_read(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("dist_private_reads",
                                                  ROOT / "tools" / "dist_private_reads.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    bad = tmp_path / "probe.py"
    bad.write_text("def f(self, store, rsp):\n    self.kv._updater\n    store._data\n"
                   "    rsp._data\n    self._comm\n    KVStore._stored\n"
                   "    Updater.__new__(Updater)\n")
    found = tool.reads([bad])
    assert [line.split(": ", 1)[1] for line in found] == [
        "self.kv._updater", "store._data", "KVStore._stored", "Updater.__new__"]
