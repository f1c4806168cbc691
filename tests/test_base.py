"""The shared error hierarchy and the one environment reader."""
import numpy as np
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


def test_mxnet_base_helpers_have_mxnets_values(monkeypatch):
    from mxkv.base import integer_types, mx_real_t, mx_uint, numeric_types, py_str, string_types
    assert isinstance(3, integer_types) and isinstance(np.int64(3), integer_types)
    assert not isinstance(3.0, integer_types)
    assert isinstance(np.float16(1), numeric_types) and isinstance(True, numeric_types)
    assert isinstance("a", string_types) and not isinstance(b"a", string_types)
    assert py_str(b"caf\xc3\xa9") == "café"
    assert mx_real_t is np.float32 and mx_uint(7).value == 7
    monkeypatch.setenv("MXNET_HOME", "/tmp/mxh")
    assert base.data_dir() == "/tmp/mxh"
    assert repr(base._Null) == "_Null"


def test_classproperty_reads_and_sets_on_the_class():
    from mxkv.base import _ClassPropertyDescriptor, classproperty

    class Meta(type):
        def __setattr__(cls, key, value):
            obj = cls.__dict__.get(key)
            if isinstance(obj, _ClassPropertyDescriptor):
                return obj.__set__(cls, value)
            return super().__setattr__(key, value)

    class A(base.with_metaclass(Meta)):
        _v = 1

        @classproperty
        def v(cls):
            return cls._v

        @v.setter
        def v(cls, value):
            cls._v = value

    assert A.v == 1
    A.v = 5
    assert A.v == 5 and A()._v == 5


def test_not_supported_for_sparse_names_the_function():
    err = base.NotSupportedForSparseNDArray(len, "op", 1)
    assert isinstance(err, base.MXNetError)
    assert str(err) == ('Function len (namely operator "op") with arguments (<class \'int\'>) '
                        'is not supported for SparseNDArray and only available in NDArray.')
