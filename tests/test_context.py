"""Context: naming devices, equality, default-context scoping, array modules."""
import threading

import numpy as np
import pytest

import mxkv as mx
from mxkv import context
from mxkv.base import MXNetError


def test_repr_and_str_read_like_mxnet():
    assert repr(mx.cpu(1)) == "cpu(1)"
    assert str(mx.gpu(2)) == "gpu(2)"
    assert repr(mx.cpu_pinned(0)) == "cpu_pinned(0)"
    assert repr(mx.Context("cpu_shared", 3)) == "cpu_shared(3)"


def test_default_device_id_is_zero():
    assert mx.cpu().device_id == 0
    assert mx.gpu().device_id == 0


def test_device_type_and_typeid():
    assert (mx.cpu(1).device_type, mx.cpu(1).device_typeid) == ("cpu", 1)
    assert (mx.gpu(0).device_type, mx.gpu(0).device_typeid) == ("gpu", 2)
    assert mx.cpu_pinned(0).device_typeid == 3
    assert mx.Context("cpu_shared", 0).device_typeid == 5


def test_context_copies_another_context():
    c = mx.Context(mx.gpu(3))
    assert (c.device_type, c.device_id) == ("gpu", 3)


def test_equality_is_on_type_and_id():
    assert mx.cpu(1) == mx.Context("cpu", 1)
    assert mx.cpu(1) != mx.cpu(2)
    assert mx.cpu(0) != mx.cpu_pinned(0)
    assert mx.cpu(0) != mx.gpu(0)


def test_context_never_equals_other_types():
    assert mx.cpu(1) != "cpu(1)"
    assert mx.cpu(0).__eq__(None) is False


def test_equal_contexts_hash_alike():
    d = {mx.cpu(1): "a", mx.gpu(0): "b"}
    assert d[mx.Context("cpu", 1)] == "a"
    assert len({mx.cpu(0), mx.cpu(0), mx.cpu(1)}) == 2


def test_unknown_device_type_raises():
    with pytest.raises(MXNetError, match="tpu"):
        mx.Context("tpu", 0)


def test_negative_device_id_raises():
    with pytest.raises(MXNetError, match="-1"):
        mx.cpu(-1)


def test_current_context_defaults_to_cpu0():
    assert mx.current_context() == mx.cpu(0)


def test_with_sets_and_restores_the_default():
    with mx.cpu(2) as c:
        assert c == mx.cpu(2)
        assert mx.current_context() == mx.cpu(2)
    assert mx.current_context() == mx.cpu(0)


def test_with_blocks_nest_even_with_one_instance():
    c = mx.cpu(3)
    with c:
        with mx.cpu(4):
            assert mx.current_context() == mx.cpu(4)
        with c:
            assert mx.current_context() == c
        assert mx.current_context() == c
    assert mx.current_context() == mx.cpu(0)


def test_with_restores_after_an_exception():
    with pytest.raises(ValueError), mx.cpu(5):
        raise ValueError("boom")
    assert mx.current_context() == mx.cpu(0)


def test_default_context_is_per_thread():
    seen = []
    with mx.cpu(7):
        t = threading.Thread(target=lambda: seen.append(mx.current_context()))
        t.start()
        t.join()
    assert seen == [mx.cpu(0)]


def test_creation_uses_the_default_context():
    with mx.cpu(1):
        a = mx.nd.zeros((2,))
    assert a.context == mx.cpu(1)


def test_default_ctx_class_property_reads_and_sets():
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(0)
    with mx.cpu(6):
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = mx.cpu(8)
        assert mx.current_context() == mx.cpu(8)
    assert mx.current_context() == mx.cpu(0)


def test_xp_for_cpu_flavours_is_numpy():
    for ctx in (mx.cpu(0), mx.cpu(3), mx.cpu_pinned(0), mx.Context("cpu_shared", 1)):
        assert context.xp_for(ctx) is np


def test_num_gpus_is_a_non_negative_int():
    n = context.num_gpus()
    assert isinstance(n, int) and n >= 0


@pytest.mark.skipif(context.num_gpus() > 0, reason="checks the no-GPU error")
def test_xp_for_gpu_without_gpu_names_the_package():
    with pytest.raises(MXNetError, match="cupy-cuda12x|GPU"):
        context.xp_for(mx.gpu(0))


@pytest.mark.skipif(context.num_gpus() > 0, reason="checks the no-GPU error")
def test_creating_a_gpu_array_without_gpu_raises():
    with pytest.raises(MXNetError, match="gpu\\(0\\)"):
        mx.nd.ones((2,), ctx=mx.gpu(0))


@pytest.mark.requires_gpu
def test_xp_for_gpu_is_cupy():
    assert context.xp_for(mx.gpu(0)).__name__ == "cupy"


@pytest.mark.requires_gpu
def test_gpu_beyond_the_visible_ones_raises():
    with pytest.raises(MXNetError, match="not available"):
        context.xp_for(mx.gpu(context.num_gpus()))


@pytest.mark.requires_gpu
def test_gpu_memory_info_and_empty_cache():
    free, total = context.gpu_memory_info(0)
    assert 0 < free <= total
    mx.nd.ones((1024,), ctx=mx.gpu(0))
    mx.gpu(0).empty_cache()
