"""The local store's API for code that embeds it (the dist shard, dist/states.py)."""
import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.kvstore.local import KeyLayout, KVStore


def test_stored_value_is_the_stored_array_itself():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2, 3)))
    kv.push("w", mx.nd.full((2, 3), 4.0))
    value = kv.stored_value("w")
    assert value.asnumpy().tolist() == [[4.0] * 3] * 2
    assert kv.stored_value("w") is value
    with pytest.raises(MXNetError, match="key 'x' has not been initialized"):
        kv.stored_value("x")


def test_layouts_list_every_key_in_init_order():
    kv = mx.kv.create("local")
    kv.init([5, 2], [mx.nd.zeros((3,), dtype="float16"),
                     mx.nd.zeros((4, 2)).tostype("row_sparse")])
    assert kv.layouts() == {5: KeyLayout((3,), np.dtype("float16"), "default"),
                            2: KeyLayout((4, 2), np.dtype("float32"), "row_sparse")}
    assert list(kv.layouts()) == [5, 2]


def test_sum_into_keeps_out_as_the_stored_value_and_casts_as_push():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((3,)))
    out = mx.nd.empty((3,))
    kv.sum_into(0, [mx.nd.ones((3,)), mx.nd.array([1, 2, 3], dtype="float64")], out)
    assert kv.stored_value(0) is out
    assert out.asnumpy().tolist() == [2.0, 3.0, 4.0]
    pulled = mx.nd.zeros((3,))
    kv.pull(0, out=pulled)
    assert pulled.asnumpy().tolist() == [2.0, 3.0, 4.0]


def test_sum_into_refuses_a_store_with_an_updater_and_changes_nothing():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    with pytest.raises(MXNetError, match="sum_into: key 0: this store has an updater"):
        kv.sum_into(0, [mx.nd.ones((2,))], mx.nd.empty((2,)))
    assert kv.stored_value(0).asnumpy().tolist() == [1.0, 1.0]


def test_replace_value_keeps_the_array_and_checks_shape_and_dtype():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.zeros((2,)))
    new = mx.nd.array([7, 8])
    kv.replace_value("w", new)
    assert kv.stored_value("w") is new
    with pytest.raises(MXNetError, match=r"key 'w' holds shape \(2,\) float32, got \(3,\)"):
        kv.replace_value("w", mx.nd.zeros((3,)))
    with pytest.raises(MXNetError, match="float64"):
        kv.replace_value("w", mx.nd.zeros((2,), dtype="float64"))
    assert kv.stored_value("w") is new


def test_the_cast_rule_converts_only_other_dtypes():
    a, b = mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float16")
    out = KVStore.cast([a, b], np.float32)
    assert out[0] is a and out[1].dtype == np.float32


def test_updater_states_round_trip_through_bytes():
    kv = mx.kv.create("local")
    assert kv.updater is None and not kv.keeps_states and kv.updater_state(0) is None
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    assert kv.keeps_states
    kv.push(0, mx.nd.ones((2,)))
    momentum = kv.updater_state(0).asnumpy().tolist()
    blob = kv.get_updater_states(dump_optimizer=True)
    other = mx.kv.create("local")
    other.init(0, mx.nd.ones((2,)))
    other.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    other.set_updater_states(blob)
    assert other.updater.optimizer.lr == 0.1
    assert other.updater_state(0).asnumpy().tolist() == momentum


def test_updater_states_need_an_optimizer():
    kv = mx.kv.create("local")
    with pytest.raises(MXNetError, match="get_updater_states: no optimizer is set"):
        kv.get_updater_states()
    kv._set_updater(lambda key, grad, weight: None)
    assert kv.updater is not None and not kv.keeps_states
    with pytest.raises(MXNetError, match="set_updater_states: the updater set with "
                                         "_set_updater has no states"):
        kv.set_updater_states(b"")
