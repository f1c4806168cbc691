"""The project's tutorials are the acceptance files, byte for byte.

The acceptance files live outside the repository (a `shared` directory of
the workplace), so every clone would skip a comparison with them. Their
SHA-256 digests are recorded here instead: every clone checks its copies
against the digests, and where the acceptance files are at hand the
digests are checked against them too (a changed acceptance file fails until
the copy and its digest are brought up to date together)."""
import hashlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "clojure" / "tutorial"
# The steering copies lie in a `shared` directory beside the checkout (../shared
# for the main checkout, ../../shared for a worktree under wt/).
ACCEPTANCE = next((d / "shared" / "acceptance" for d in ROOT.parents
                   if (d / "shared" / "acceptance").is_dir()),
                  ROOT.parent / "shared" / "acceptance")

# our copy -> (acceptance file, its SHA-256, number of top-level forms carrying a ;=> value)
COPIES = {
    "kvstore.clj": ("tutorial_kvstore.clj",
                    "907657cf7a320045a2e6efbe9666b4073a0bc98ab4e1df972623362983b231d3", 5),
    "ndarray.clj": ("tutorial_ndarray.clj",
                    "b804e438fc360395d86f0e2f004bd7d0dc3d6174deba9df37cce4e6eb59fb780", 15),
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("ours", sorted(COPIES))
def test_tutorial_copy_is_verbatim(ours):
    name, digest, _ = COPIES[ours]
    assert _sha256(TUTORIALS / ours) == digest, (
        f"clojure/tutorial/{ours} is no longer the acceptance file {name}")
    accepted = ACCEPTANCE / name
    if accepted.exists():   # in the workplace: the record is the file's
        assert _sha256(accepted) == digest, f"{accepted} changed: update the copy and its digest"


@pytest.mark.parametrize("ours", sorted(COPIES))
def test_tutorial_copy_keeps_its_checked_values(ours):
    lines = (TUTORIALS / ours).read_text().splitlines()
    checked = [ln for ln in lines if not ln.startswith(";") and ";=>" in ln]
    assert len(checked) == COPIES[ours][2]


def test_tutorials_use_the_api_namespaces():
    assert '(kvstore/create "local")' in (TUTORIALS / "kvstore.clj").read_text()
    nd = (TUTORIALS / "ndarray.clj").read_text()
    assert "(ndarray/dot arr1 arr2)" in nd and '(ndarray/load "filename")' in nd
