"""The project's tutorial is the acceptance file, byte for byte."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ROOT / "clojure" / "tutorial" / "kvstore.clj"
# The steering copy lies beside the checkout (../shared), on CI as in sessions.
ACCEPTANCE = ROOT.parent / "shared" / "acceptance" / "tutorial_kvstore.clj"


@pytest.mark.skipif(not ACCEPTANCE.exists(),
                    reason=f"no acceptance file at {ACCEPTANCE} outside the workplace")
def test_tutorial_copy_is_verbatim():
    assert OURS.read_bytes() == ACCEPTANCE.read_bytes()


def test_tutorial_copy_keeps_its_checked_values():
    text = OURS.read_text()
    checked = [line for line in text.splitlines() if line.startswith("(") and ";=>" in line]
    assert len(checked) == 5
    assert "(kvstore/create \"local\")" in text
