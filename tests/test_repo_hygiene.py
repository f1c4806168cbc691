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
