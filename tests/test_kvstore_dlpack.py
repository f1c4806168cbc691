"""Store calls take arrays of other libraries (anything with ``__dlpack__``:
numpy, and PyTorch or CuPy where installed) where they take NDArrays."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError
from mxkv.kvstore.foreign import wrap

F32 = np.float32


@pytest.fixture(params=["local", "device"])
def kv(request):
    with mx.kv.create(request.param) as kv:
        yield kv


def test_numpy_arrays_in_init_push_pull_and_pushpull(kv):
    kv.init(["a", "b"], [np.ones((2, 3), F32), np.full((4,), 2, F32)])
    kv.push("a", [np.ones((2, 3), F32), np.full((2, 3), 2, F32)])   # two "devices"
    out = np.zeros((2, 3), F32)
    kv.pull("a", out=out)                     # written into the numpy array's memory
    assert out.tolist() == [[3, 3, 3]] * 2
    outs = [np.zeros((4,), F32), mx.nd.zeros((4,))]
    kv.pushpull("b", np.arange(4, dtype=F32), out=outs)
    assert outs[0].tolist() == [0, 1, 2, 3] and outs[1].asnumpy().tolist() == [0, 1, 2, 3]
    grad = np.full((4,), 5, F32)
    kv.pushpull("b", grad)                    # out defaults to the pushed array
    assert grad.tolist() == [5] * 4


def test_a_contiguous_array_is_wrapped_without_a_copy_and_others_are_copied():
    src = np.arange(6, dtype=F32).reshape(2, 3)
    assert np.shares_memory(wrap("'a'", src, "push", "value")._array, src)
    strided = np.arange(12, dtype=F32).reshape(3, 4)[:, ::2]
    copied = wrap("'a'", strided, "push", "value")
    assert not np.shares_memory(copied._array, strided)
    assert copied.asnumpy().tolist() == strided.tolist()


def test_a_non_contiguous_value_is_pushed_as_a_copy(kv):
    kv.init(0, mx.nd.zeros((3, 2)))
    kv.push(0, np.arange(6, dtype=F32).reshape(2, 3).T)
    out = mx.nd.zeros((3, 2))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [[0, 3], [1, 4], [2, 5]]


def test_a_pushed_numpy_buffer_is_never_kept_by_reference(kv):
    # a big one-device push of an NDArray is kept copy-on-write; a foreign
    # buffer can be written behind mxkv's back, so the store copies it
    big = np.ones((64, 1024), F32)
    kv.init("w", np.zeros((64, 1024), F32))
    kv.push("w", big)
    big[:] = 7
    out = np.zeros((64, 1024), F32)
    kv.pull("w", out=out)
    assert float(out.max()) == 1.0


def test_errors_name_the_key_and_change_nothing(kv):
    kv.init(["a", "b"], [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])
    with pytest.raises(MXNetError, match=r"key 'b' was pushed shape \(3, 3\)"):
        kv.push(["a", "b"], [np.full((2, 3), 9, F32), np.ones((3, 3), F32)])
    ro = np.zeros((2, 3), F32)
    ro.flags.writeable = False
    with pytest.raises(MXNetError, match="out for key 'b' .*read-only"):
        kv.pull(["a", "b"], out=[np.zeros((2, 3), F32), ro])
    with pytest.raises(MXNetError, match="out for key 'a' .*not C-contiguous"):
        kv.pull("a", out=np.zeros((3, 2), F32).T)
    with pytest.raises(MXNetError, match="value for key 'c' must be an NDArray, got list"):
        kv.init("c", [[1.0, 2.0]])
    out = np.zeros((2, 3), F32)
    kv.pull("a", out=out)
    assert out.tolist() == [[1, 1, 1]] * 2 and ro.tolist() == [[0, 0, 0]] * 2


class _Broken:
    def __dlpack__(self, stream=None):
        raise RuntimeError("no memory here")

    def __dlpack_device__(self):
        return (1, 0)


def test_a_producer_that_fails_is_reported_with_the_key(kv):
    kv.init(3, mx.nd.ones((2,)))
    with pytest.raises(MXNetError, match="value for key 3 .*_Broken.*no memory here"):
        kv.push(3, _Broken())


def test_row_sparse_pull_takes_numpy_outs_only_where_it_takes_ndarrays(kv):
    # its outs must be row_sparse, and its row ids NDArrays (as MXNet)
    kv.init("e", mx.nd.array([[1, 1], [2, 2], [3, 3]]).tostype("row_sparse"))
    with pytest.raises(MXNetError, match="out for key 'e' must be row_sparse"):
        kv.row_sparse_pull("e", out=np.zeros((3, 2), F32), row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="row_ids"):
        kv.row_sparse_pull("e", out=mx.nd.sparse.zeros("row_sparse", (3, 2)),
                           row_ids=np.array([0]))


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_other_libraries_push_and_pull(kv, lib):
    mod = pytest.importorskip(lib)   # optional: exercised where the library is installed
    if lib == "cupy" and not mx.context.cuda_device_count():
        pytest.skip("CuPy is installed but sees no GPU (no device or no CUDA driver)")
    kv.init("t", mod.ones((2, 2), dtype=mod.float32))
    kv.push("t", [mod.full((2, 2), 2.0, dtype=mod.float32)] * 2)
    out = mod.zeros((2, 2), dtype=mod.float32)
    kv.pull("t", out=out)
    host = out.get() if lib == "cupy" else out.numpy()
    assert host.tolist() == [[4, 4], [4, 4]]
