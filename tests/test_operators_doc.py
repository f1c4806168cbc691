"""docs/operators.md is what tools/gen_operators_doc.py writes from the table."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gen_operators_doc  # noqa: E402

from mxkv.ndarray import optable  # noqa: E402


def test_the_operators_page_is_generated_from_the_table():
    assert (ROOT / "docs" / "operators.md").read_text() == gen_operators_doc.render(), \
        "docs/operators.md is stale: run .venv/bin/python tools/gen_operators_doc.py"


def test_the_page_names_every_operator_with_its_clojure_name():
    text = (ROOT / "docs" / "operators.md").read_text()
    for d in optable.iter_ops():
        assert f"`{d.name}`" in text and f"`{optable.clojure_name(d.name)}`" in text


def test_clojure_names_follow_clojure_mxnets_generator():
    cases = {"broadcast_add": "broadcast-add", "FullyConnected": "fully-connected",
             "L2Normalization": "l2-normalization", "SliceChannel": "slice-channel",
             "FOOBarBaz": "foo-bar-baz", "_plus": "-plus", "BatchNorm_v1": "batch-norm-v1"}
    assert {n: optable.clojure_name(n) for n in cases} == cases
