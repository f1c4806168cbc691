"""A one-device push is stored without a copy (copy-on-write): no write into
the pushed array, by any path, ever changes the store, and the store never
writes into a buffer it shares."""
import gc

import numpy as np
import pytest

import mxkv as mx
from mxkv.ndarray import cow

N = 1 << 15  # 128 KiB of float32: big enough to be shared


@pytest.fixture(params=["local", "device"])
def kv(request):
    with mx.kv.create(request.param) as kv:
        kv.init(0, mx.nd.zeros((N,)))
        kv.init(1, mx.nd.zeros((N,)))
        yield kv


def pulled(kv, key=0):
    out = mx.nd.zeros((N,))
    kv.pull(key, out=out)
    return out.asnumpy()


def test_one_device_push_shares_the_buffer(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    assert kv._data.is_shared(0)
    assert np.shares_memory(kv._data[0]._array, a._array)
    assert np.all(pulled(kv) == 1)


WRITES = {
    "setitem_all": lambda a: a.__setitem__(slice(None), 5),
    "setitem_part": lambda a: a.__setitem__(slice(3, 9), 5),
    "setitem_index": lambda a: a.__setitem__(7, 5),
    "iadd": lambda a: a.__iadd__(5),
    "imul": lambda a: a.__imul__(5),
    "copyto": lambda a: (mx.nd.ones((N,)) * 5).copyto(a),
    "op_out": lambda a: mx.nd.square(mx.nd.ones((N,)) * 5, out=a),
    "view_before": None,  # filled in below: a view made before the push
    "view_after": lambda a: a[2:10].__setitem__(slice(None), 5),
    "reshape_view": lambda a: a.reshape((2, N // 2)).__setitem__(0, 5),
    "optimizer_update": lambda a: mx.optimizer.SGD(learning_rate=1.0).update(
        0, a, mx.nd.ones((N,)), None),
    "full_out": lambda a: mx.nd.full((N,), 5, out=a),
}


@pytest.mark.parametrize("how", sorted(WRITES))
def test_writes_to_the_pushed_array_never_reach_the_store(kv, how):
    a = mx.nd.ones((N,))
    early_view = a[4:12]
    kv.push(0, a)
    if how == "view_before":
        early_view[:] = 5
    else:
        WRITES[how](a)
    assert not np.all(a.asnumpy() == 1), "the write did not happen"
    assert np.all(pulled(kv) == 1)
    assert not kv._data.is_shared(0)


def test_pulling_another_key_into_the_pushed_array_keeps_the_first_key(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    kv.push(1, mx.nd.ones((N,)) * 7)
    kv.pull(1, out=a)
    assert np.all(a.asnumpy() == 7)
    assert np.all(pulled(kv, 0) == 1)


def test_pushpull_in_place_needs_no_copy_and_keeps_sharing(kv):
    a = mx.nd.ones((N,)) * 3
    kv.pushpull(0, a)
    assert np.all(a.asnumpy() == 3) and kv._data.is_shared(0)
    assert np.all(pulled(kv) == 3)


def test_a_multi_device_push_does_not_write_into_a_shared_buffer(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    kv.push(0, [mx.nd.ones((N,), ctx=mx.cpu(i)) * 2 for i in range(2)])
    assert np.all(a.asnumpy() == 1)
    assert np.all(pulled(kv) == 4)


def test_an_updater_does_not_write_into_a_shared_buffer(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    kv._set_updater(lambda key, grad, weight: weight.__iadd__(grad))
    kv.push(0, mx.nd.ones((N,)) * 2)
    assert np.all(a.asnumpy() == 1)
    assert np.all(pulled(kv) == 3)


def test_a_row_sparse_push_does_not_write_into_a_shared_buffer(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    kv.push(0, mx.nd.sparse.row_sparse_array(([2.0], [5]), shape=(N,)))
    assert np.all(a.asnumpy() == 1)
    expected = np.zeros(N)
    expected[5] = 2
    assert np.array_equal(pulled(kv), expected)


def test_pushing_again_after_a_write_shares_again(kv):
    a = mx.nd.ones((N,))
    kv.push(0, a)
    a[:] = 2
    kv.push(0, a)
    assert kv._data.is_shared(0) and np.all(pulled(kv) == 2)
    a[:] = 3
    assert np.all(pulled(kv) == 2)


def test_small_arrays_are_copied_not_shared():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((4,)))
    a = mx.nd.ones((4,))
    kv.push(0, a)
    assert not kv._data.is_shared(0)
    a[:] = 9
    out = mx.nd.zeros((4,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [1, 1, 1, 1]


def test_other_dtypes_are_cast_not_shared():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((N,)))
    kv.push(0, mx.nd.ones((N,), dtype="float64") / 3)
    assert not kv._data.is_shared(0)
    out = mx.nd.zeros((N,), dtype="float64")
    kv.pull(0, out=out)
    assert out.asnumpy()[0] == np.float32(1 / 3)


def test_a_store_that_goes_away_releases_its_shares():
    gc.collect()
    before = cow.shared_count()
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((N,)))
    a = mx.nd.ones((N,))
    kv.push(0, a)
    assert cow.shared_count() == before + 1
    del kv  # no reference cycle: freed (and its share released) right away
    assert cow.shared_count() == before
    a[:] = 2  # no store left to tell
    assert np.all(a.asnumpy() == 2)


def test_two_keys_sharing_one_array_both_keep_their_value():
    kv = mx.kv.create("local")
    kv.init([0, 1], [mx.nd.zeros((N,))] * 2)
    a = mx.nd.ones((N,))
    kv.push([0, 1], [a, a])
    a += 1
    for k in (0, 1):
        assert np.all(pulled(kv, k) == 1)
