"""The project's tutorials are the acceptance files, byte for byte."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "clojure" / "tutorial"
# The steering copies lie in a `shared` directory beside the checkout (../shared
# for the main checkout, ../../shared for a worktree under wt/).
ACCEPTANCE = next((d / "shared" / "acceptance" for d in ROOT.parents
                   if (d / "shared" / "acceptance").is_dir()),
                  ROOT.parent / "shared" / "acceptance")

# our copy -> (acceptance file, number of top-level forms carrying a ;=> value)
COPIES = {
    "kvstore.clj": ("tutorial_kvstore.clj", 5),
    "ndarray.clj": ("tutorial_ndarray.clj", 15),
}


@pytest.mark.parametrize("ours", sorted(COPIES))
def test_tutorial_copy_is_verbatim(ours):
    accepted = ACCEPTANCE / COPIES[ours][0]
    if not accepted.exists():
        pytest.skip(f"no acceptance file at {accepted} outside the workplace")
    assert (TUTORIALS / ours).read_bytes() == accepted.read_bytes()


@pytest.mark.parametrize("ours", sorted(COPIES))
def test_tutorial_copy_keeps_its_checked_values(ours):
    lines = (TUTORIALS / ours).read_text().splitlines()
    checked = [ln for ln in lines if not ln.startswith(";") and ";=>" in ln]
    assert len(checked) == COPIES[ours][1]


def test_tutorials_use_the_api_namespaces():
    assert '(kvstore/create "local")' in (TUTORIALS / "kvstore.clj").read_text()
    nd = (TUTORIALS / "ndarray.clj").read_text()
    assert "(ndarray/dot arr1 arr2)" in nd and '(ndarray/load "filename")' in nd
