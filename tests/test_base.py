"""The shared error hierarchy and the one environment reader."""
import pytest

import mxkv as mx
from mxkv import base


def test_mxnet_error_is_a_runtime_error_as_in_mxnet():
    with pytest.raises(RuntimeError):
        mx.kv.create("local").pull(3, out=mx.nd.zeros((1,)))


@pytest.mark.parametrize("cls,builtin", [
    (base.MXNetValueError, ValueError), (base.MXNetTypeError, TypeError),
    (base.MXNetIndexError, IndexError), (base.MXNetIOError, OSError),
    (base.UnknownOptimizerError, ValueError),
])
def test_error_subclasses_are_mxnet_errors_and_builtins(cls, builtin):
    assert issubclass(cls, base.MXNetError) and issubclass(cls, builtin)


def test_env_unset_or_blank_gives_default(monkeypatch):
    monkeypatch.delenv("MXKV_TEST_KNOB", raising=False)
    assert base.env("MXKV_TEST_KNOB", 7) == 7
    monkeypatch.setenv("MXKV_TEST_KNOB", "  ")
    assert base.env("MXKV_TEST_KNOB", 7) == 7


@pytest.mark.parametrize("raw,default,want", [
    ("1e6", 4, 1000000), ("12", 4, 12), ("0.25", 1.0, 0.25),
    ("yes", False, True), ("0", True, False), ("OFF", True, False), ("abc", "x", "abc"),
])
def test_env_parses_by_the_default_type(monkeypatch, raw, default, want):
    monkeypatch.setenv("MXKV_TEST_KNOB", raw)
    got = base.env("MXKV_TEST_KNOB", default)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("raw,default", [("abc", 4), ("1.5", 4), ("maybe", False), ("x", 0.5)])
def test_env_bad_value_names_the_variable(monkeypatch, raw, default):
    monkeypatch.setenv("MXKV_TEST_KNOB", raw)
    with pytest.raises(base.MXNetValueError, match=r"MXKV_TEST_KNOB='" + raw):
        base.env("MXKV_TEST_KNOB", default)


def test_env_minimum(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_REDUCTION_NTHREADS", "0")
    with pytest.raises(base.MXNetValueError, match="at least 1"):
        base.env("MXNET_KVSTORE_REDUCTION_NTHREADS", 4, minimum=1)
