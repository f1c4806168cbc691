"""The KVStore tutorial, verbatim (clojure/tutorial/kvstore.clj), over each
transport: every form runs and every value with a `;=>` comment prints as
the comment says."""
from __future__ import annotations

from support import ROOT

TUTORIAL = ROOT / "clojure" / "tutorial" / "kvstore.clj"


def test_tutorial_runs_verbatim(driver):
    expected = sum(1 for line in TUTORIAL.read_text().splitlines()
                   if ";=>" in line and not line.lstrip().startswith(";"))
    r = driver.call("tutorial", str(TUTORIAL))
    assert r["transport"] == driver.transport
    assert r["failures"] == [], r["transcript"]
    assert r["checked"] == expected >= 5
    assert r["forms"] >= 20
    assert "MISMATCH" not in r["transcript"]
