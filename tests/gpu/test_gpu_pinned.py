"""cpu_pinned memory: page-locked (CuPy's pinned allocator) where a GPU is,
plain numpy elsewhere."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import context


@pytest.mark.skipif(context.cuda_device_count() > 0, reason="checks the no-GPU answer")
def test_without_a_gpu_cpu_pinned_is_plain_numpy_memory():
    assert not context.pinned_memory_available()
    a = mx.nd.ones((3, 4), ctx=mx.cpu_pinned(0))
    b = mx.nd.array([1, 2, 3]).copyto(mx.cpu_pinned(0))
    for x in (a._array, b._array):
        assert type(x) is np.ndarray and x.base is None and x.flags.owndata
    assert a.asnumpy().sum() == 12 and b.asnumpy().tolist() == [1, 2, 3]


def test_simulated_gpus_keep_cpu_pinned_in_plain_numpy(simulate_gpus):
    simulate_gpus(2)
    assert not context.pinned_memory_available()
    assert mx.nd.zeros((2,), ctx=mx.cpu_pinned(0))._array.base is None


def test_empty_host_gives_every_host_context_its_shape_and_dtype():
    for ctx in (mx.cpu(0), mx.cpu_pinned(0), mx.cpu_pinned(1)):
        for shape in ((), (0,), (3, 5)):
            a = context.empty_host(ctx, shape, np.float16)
            assert a.shape == shape and a.dtype == np.float16 and a.flags.c_contiguous


def _is_page_locked(a: np.ndarray) -> bool:
    import cupy

    rt = cupy.cuda.runtime
    return rt.pointerGetAttributes(a.ctypes.data).type == rt.memoryTypeHost


@pytest.mark.requires_gpu
def test_cpu_pinned_arrays_and_stored_values_are_page_locked():
    assert context.pinned_memory_available()
    a = mx.nd.ones((1024,), ctx=mx.cpu_pinned(0))
    assert _is_page_locked(a._array) and a.asnumpy().sum() == 1024
    with mx.kv.create("device") as kv:
        kv.init("w", mx.nd.ones((256, 4)))
        assert _is_page_locked(kv._data["w"]._array)
        kv.push("w", [mx.nd.ones((256, 4), ctx=mx.gpu(0)) * 3])
        out = mx.nd.zeros((256, 4), ctx=mx.gpu(0))
        kv.pull("w", out=out)
        assert float(out.asnumpy().sum()) == 3 * 1024
    assert not _is_page_locked(np.ones(1024))
