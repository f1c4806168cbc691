"""The randomized differential suite against MXNet 1.9.1's recorded results.

Every seed in tests/golden/differential.json.gz is a sequence of KVStore calls
from tests/differential/generator.py that MXNet ran (``make golden``); here mxkv
runs the same calls and every result must agree: whether the call raised, the
arrays it wrote (dtype-aware tolerances) and the keys the updater saw. See
docs/parity.md for the generator, the comparison and the deliberate
deviations it steers around; ``tools/differential.py live`` runs thousands of
seeds against a live MXNet.
"""
from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

try:
    from differential.compare import compare, digest
    from differential.generator import FORMAT, generate
    from differential.replay import replay
except ImportError:  # tests/ imported as a package
    from tests.differential.compare import compare, digest
    from tests.differential.generator import FORMAT, generate
    from tests.differential.replay import replay

GOLDEN_PATH = Path(__file__).resolve().parent / "golden" / "differential.json.gz"
REGENERATE = "run `make golden` to regenerate tests/golden/differential.json.gz"


def _golden() -> dict:
    with gzip.open(GOLDEN_PATH, "rb") as f:
        return json.loads(f.read())


GOLDEN = _golden() if GOLDEN_PATH.exists() else {}
SEEDS = sorted(GOLDEN.get("seeds", {}), key=int)


def test_golden_file_from_mxnet_1_9_1_with_enough_seeds():
    assert GOLDEN, f"{GOLDEN_PATH} is missing: {REGENERATE}"
    assert GOLDEN["meta"]["mxnet"] == "1.9.1"
    assert GOLDEN["format"] == FORMAT, REGENERATE
    assert len(SEEDS) >= 50 and GOLDEN["ops"] >= 200


def test_sequences_mix_every_operation_and_invalid_calls():
    ops = [op for s in SEEDS[:20] for op in generate(int(s), GOLDEN["ops"])]
    kinds = {op["op"] for op in ops}
    assert kinds >= {"create", "init", "push", "pull", "pushpull", "row_sparse_pull",
                     "broadcast", "set_updater", "set_optimizer"}
    invalid = sum("invalid" in op for op in ops) / len(ops)
    assert 0.10 <= invalid <= 0.20, invalid


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_agrees_with_mxnet(seed):
    import mxkv

    rec = GOLDEN["seeds"][seed]
    ops = generate(int(seed), GOLDEN["ops"])
    assert digest(ops) == rec["digest"], f"the generator changed: {REGENERATE}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float16 optimizer warnings, as MXNet's
        actual = replay(mxkv, ops)
    problems = compare(ops, rec["records"], actual)
    assert not problems, f"seed {seed}: {len(problems)} divergence(s):\n" + "\n".join(
        problems[:10])
