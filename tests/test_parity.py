"""Parity with Apache MXNet 1.9.1: every scenario in tests/parity/scenarios.py, run
with mxkv, must give what MXNet gave (tests/golden/parity.json, made by `make golden`).

Ints, strings, bools, shapes, dtypes and stypes compare exactly; floats with
``np.allclose(rtol=1e-6)``. See docs/parity.md for what is compared and for the
deliberate deviations.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

try:
    from parity.scenarios import SCENARIOS
except ImportError:  # tests/ imported as a package: the repo root is on sys.path
    from tests.parity.scenarios import SCENARIOS

GOLDEN_PATH = Path(__file__).resolve().parent / "golden" / "parity.json"
RTOL = 1e-6
REGENERATE = "run `make golden` to regenerate tests/golden/parity.json"


def _load_golden() -> dict:
    if not GOLDEN_PATH.exists():
        return {}
    return json.loads(GOLDEN_PATH.read_text())


GOLDEN = _load_golden()


@pytest.fixture(scope="module")
def mx():
    import mxkv

    return mxkv


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def assert_matches(actual: Any, expected: Any, path: str = "$") -> None:
    """Assert ``actual`` equals golden ``expected``: exact, floats within RTOL."""
    def fail(why: str) -> None:
        raise AssertionError(
            f"{path}: {why}\n  mxnet: {_short(expected)}\n  mxkv:  {_short(actual)}")

    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            fail("expected an object")
        if set(actual) != set(expected):
            fail(f"keys differ (missing {sorted(set(expected) - set(actual))}, "
                 f"extra {sorted(set(actual) - set(expected))})")
        for key in sorted(expected):
            assert_matches(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        if not isinstance(actual, list):
            fail("expected a list")
        if len(actual) != len(expected):
            fail(f"length {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_matches(a, e, f"{path}[{i}]")
    elif isinstance(expected, bool) or expected is None or isinstance(expected, str):
        if type(actual) is not type(expected) or actual != expected:
            fail("not equal")
    elif isinstance(expected, int):
        if isinstance(actual, bool) or not isinstance(actual, int) or actual != expected:
            fail("integers differ (or not an integer)")
    elif isinstance(expected, float):
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            fail("expected a number")
        if not np.allclose(actual, expected, rtol=RTOL):
            fail(f"float beyond rtol={RTOL}")
    else:  # pragma: no cover - golden files hold JSON only
        fail(f"unexpected golden type {type(expected).__name__}")


def test_golden_file_present_and_from_mxnet_1_9_1():
    assert GOLDEN, f"{GOLDEN_PATH} is missing: {REGENERATE}"
    assert GOLDEN["meta"]["mxnet"] == "1.9.1", GOLDEN["meta"]


def test_golden_file_has_no_stale_scenarios():
    stale = sorted(set(GOLDEN.get("scenarios", {})) - set(SCENARIOS))
    assert not stale, f"golden scenarios no longer in the registry: {stale}; {REGENERATE}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_parity(name, mx):
    sc = SCENARIOS[name]
    if sc.mxnet_skip:
        golden = sc.expected
    else:
        recorded = GOLDEN.get("scenarios", {})
        if name not in recorded:
            pytest.fail(f"scenario {name!r} is not in {GOLDEN_PATH.name}: {REGENERATE}")
        golden = recorded[name]

    actual = sc.run(mx)

    if sc.deviation:
        # MXNet's behaviour stays on record in the golden file; mxkv does better.
        assert golden != sc.mxkv_expected, (
            f"{name}: MXNet now gives {_short(golden)}, so the deviation "
            f"({sc.deviation}) is gone: drop it from the scenario and docs/parity.md")
        assert_matches(actual, sc.mxkv_expected, f"{name} (deviation: {sc.deviation})")
    else:
        assert_matches(actual, golden, name)


FILE_SCENARIOS = sorted(n for n, v in GOLDEN.get("scenarios", {}).items()
                        if isinstance(v, dict) and "bytes" in v)


def test_file_scenarios_are_recorded():
    assert len(FILE_SCENARIOS) >= 4, f"file scenarios missing from the golden file: {REGENERATE}"


@pytest.mark.parametrize("name", FILE_SCENARIOS)
def test_files_written_by_mxnet_load_in_mxkv(name, mx):
    """The bytes MXNet 1.9.1 wrote load in mxkv to what MXNet loaded from them."""
    from parity.scenarios import describe, to_jsonable

    rec = GOLDEN["scenarios"][name]
    loaded = mx.nd.load_frombuffer(bytes.fromhex(rec["bytes"]))
    if isinstance(loaded, dict):
        got = {k: describe(v) for k, v in sorted(loaded.items())}
    else:
        got = [describe(v) for v in loaded]
    assert_matches(to_jsonable(got), rec["loaded"], name)
