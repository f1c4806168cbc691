"""DLPack both ways: mxkv NDArrays to numpy (and PyTorch/CuPy where installed)
and back, sharing memory, as MXNet's to_dlpack_for_read/write and from_dlpack."""
import numpy as np
import pytest

import mxkv as mx


def test_mxnets_round_trip_through_capsules_shares_memory():
    a = mx.nd.array(np.arange(12).reshape(3, 4))
    b = mx.nd.from_dlpack(a.to_dlpack_for_read())
    c = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    assert b.asnumpy().tolist() == a.asnumpy().tolist() and c.shape == (3, 4)
    c[0, 0] = 100                    # written through the capsule: a sees it
    assert a.asnumpy()[0, 0] == 100 and b.asnumpy()[0, 0] == 100


def test_numpy_reads_an_ndarray_without_a_copy():
    a = mx.nd.ones((2, 3), dtype="int32")
    view = np.from_dlpack(a)
    assert a.__dlpack_device__() == (1, 0)
    a[1, 2] = 9
    assert view[1, 2] == 9 and view.dtype == np.int32


def test_an_ndarray_wraps_a_numpy_array_without_a_copy():
    src = np.zeros((4,), np.float64)
    nd = mx.nd.from_dlpack(src)
    src[2] = 5.0
    assert nd.asnumpy().tolist() == [0.0, 0.0, 5.0, 0.0]
    assert nd.dtype == np.float64 and nd.context == mx.cpu(0)


def test_non_contiguous_and_non_dlpack_inputs_are_refused():
    with pytest.raises(ValueError, match="C-contiguous"):
        mx.nd.from_dlpack(np.ones((3, 4))[:, ::2])
    with pytest.raises(TypeError, match="__dlpack__"):
        mx.nd.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="dense NDArray"):
        mx.nd.to_dlpack_for_read(mx.nd.sparse.zeros("row_sparse", (3, 2)))


def test_writing_through_a_capsule_never_reaches_a_store_sharing_the_array():
    kv = mx.kv.create("local")
    big = mx.nd.ones((64, 1024))          # 256 KiB: a one-device push shares it
    kv.init("w", mx.nd.zeros((64, 1024)))
    kv.push("w", big)
    alias = np.from_dlpack(mx.nd.from_dlpack(big.to_dlpack_for_write()))
    alias[:] = 7                          # the store copied before the capsule went out
    out = mx.nd.zeros((64, 1024))
    kv.pull("w", out=out)
    assert float(out.asnumpy().max()) == 1.0


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_other_libraries_exchange_arrays(lib):
    mod = pytest.importorskip(lib)   # optional: exercised where the library is installed
    if lib == "cupy" and not mx.context.cuda_device_count():
        pytest.skip("CuPy is installed but sees no GPU (no device or no CUDA driver)")
    if lib == "torch":
        t = mod.arange(6, dtype=mod.float32)
        nd = mx.nd.from_dlpack(t)
        t[0] = 42
        assert nd.asnumpy()[0] == 42
        back = mod.from_dlpack(nd)
        assert back.tolist() == nd.asnumpy().tolist()
    else:
        x = mod.arange(6, dtype=mod.float32)
        nd = mx.nd.from_dlpack(x)
        assert nd.context.is_gpu and nd.asnumpy().tolist() == x.get().tolist()
