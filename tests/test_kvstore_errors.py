"""Bad input gets a clear MXNetError naming the key, shape or type at fault,
and leaves the store exactly as it was."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError

SHAPE = (2, 3)


@pytest.fixture(params=["local", "device"])
def kv(request):
    with mx.kv.create(request.param) as kv:
        kv.init(["a", "b"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 2])
        yield kv


def snapshot(kv, keys=("a", "b")):
    outs = [mx.nd.zeros(SHAPE) for _ in keys]
    kv.pull(list(keys), out=outs)
    return [o.asnumpy().copy() for o in outs]


def unchanged(kv, before):
    after = snapshot(kv)
    return all(np.array_equal(x, y) for x, y in zip(before, after))


def test_duplicate_init_names_the_key(kv):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match="duplicate init of key 'a'"):
        kv.init(["c", "a"], [mx.nd.ones(SHAPE)] * 2)
    assert unchanged(kv, before)
    with pytest.raises(MXNetError, match="has not been initialized"):
        kv.pull("c", out=mx.nd.zeros(SHAPE))


def test_duplicate_key_within_one_init(kv):
    with pytest.raises(MXNetError, match="duplicate init of key 'z'"):
        kv.init(["z", "z"], [mx.nd.ones(SHAPE)] * 2)
    with pytest.raises(MXNetError, match="not been initialized"):
        kv.pull("z", out=mx.nd.zeros(SHAPE))


def test_pull_uninitialized_key(kv):
    with pytest.raises(MXNetError, match="key 'nope' has not been initialized"):
        kv.pull("nope", out=mx.nd.zeros(SHAPE))


def test_push_uninitialized_key_in_a_batch_changes_nothing(kv):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match="key 'nope' has not been initialized"):
        kv.push(["a", "nope"], [mx.nd.ones(SHAPE) * 9, mx.nd.ones(SHAPE)])
    assert unchanged(kv, before)


def test_multi_value_push_to_unknown_key_raises_instead_of_crashing(kv):
    with pytest.raises(MXNetError, match="'ghost' has not been initialized"):
        kv.push("ghost", [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) for i in range(3)])


def test_single_device_push_of_wrong_shape_raises(kv):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match=r"key 'a' was pushed shape \(4,\) but was "
                                         r"initialized with shape \(2, 3\)"):
        kv.push("a", mx.nd.ones((4,)))
    assert unchanged(kv, before)


def test_multi_device_push_shape_mismatch_in_second_key(kv):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match=r"key 'b' was pushed shape \(3, 2\)"):
        kv.push(["a", "b"], [[mx.nd.ones(SHAPE)] * 2, [mx.nd.ones(SHAPE), mx.nd.ones((3, 2))]])
    assert unchanged(kv, before)


def test_one_value_of_another_dtype_under_an_optimizer_raises(kv):
    # MXNet hands the float64 value to the optimizer, whose update then fails
    # inside the callback and is dropped without a word.
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    before = snapshot(kv)
    with pytest.raises(MXNetError, match="key 'a' was pushed dtype float64 but holds "
                                         "dtype float32; the optimizer needs"):
        kv.push(["b", "a"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE, dtype="float64")])
    assert unchanged(kv, before)


def test_pull_shape_mismatch_leaves_outs_untouched(kv):
    good = mx.nd.zeros(SHAPE)
    with pytest.raises(MXNetError, match=r"key 'b' was pulled into shape \(6,\)"):
        kv.pull(["a", "b"], out=[good, mx.nd.zeros((6,))])
    assert np.all(good.asnumpy() == 0)


def test_mixed_key_types_in_one_call(kv):
    with pytest.raises(MXNetError, match="inconsistent types of keys"):
        kv.push(["a", 3], [mx.nd.ones(SHAPE)] * 2)


def test_mixed_key_types_across_calls(kv):
    with pytest.raises(MXNetError, match="mixed key types"):
        kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="mixed key types"):
        kv.pull(3, out=mx.nd.zeros(SHAPE))


def test_key_value_length_mismatch(kv):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match="2 keys but 3 values"):
        kv.push(["a", "b"], [mx.nd.ones(SHAPE)] * 3)
    assert unchanged(kv, before)


@pytest.mark.parametrize("bad", [b"\x00" * 12, [[1, 2, 3]], 3.0, None])  # (numpy: DLPack)
def test_non_array_values(kv, bad):
    before = snapshot(kv)
    with pytest.raises(MXNetError, match="key 'a' must be an NDArray"):
        kv.push("a", bad)
    assert unchanged(kv, before)


def test_bad_key_types(kv):
    with pytest.raises(MXNetError, match="unexpected type for key"):
        kv.push(1.5, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="bool"):
        kv.push(True, mx.nd.ones(SHAPE))


def test_pull_without_out(kv):
    with pytest.raises(MXNetError, match="out is required"):
        kv.pull("a")


def test_updater_must_be_callable(kv):
    with pytest.raises(MXNetError, match="must be callable"):
        kv._set_updater(3)


def test_set_optimizer_rejects_non_optimizers(kv):
    with pytest.raises(MXNetError, match="Optimizer"):
        kv.set_optimizer("sgd")


def test_optimizer_states_need_an_optimizer(kv, tmp_path):
    with pytest.raises(MXNetError, match="no optimizer"):
        kv.save_optimizer_states(str(tmp_path / "s"))


def test_failed_push_with_updater_does_not_call_it(kv):
    calls = []
    kv._set_updater(lambda k, m, s: calls.append(k))
    with pytest.raises(MXNetError):
        kv.push(["a", "b"], [mx.nd.ones(SHAPE), mx.nd.ones((1,))])
    assert calls == []


def test_an_empty_call_counts_as_int_keys_but_fixes_no_key_type():
    kv = mx.kv.create("local")
    kv.push([], [])          # MXNet: fixes this store to int keys, so a str init then fails
    kv.init("w", mx.nd.ones((2,)))   # mxkv: an empty call fixes nothing (docs/parity.md)
    with pytest.raises(MXNetError, match="an empty key list counts as int keys"):
        kv.pull([], out=[])  # as MXNet, on a store of str keys
