"""The KVStore updater: lazy per-key states, save/restore, optimizer dump."""
import pickletools

import numpy as np
import pytest

import mxkv as mx


def _grads(n, shape=(2, 3), seed=0):
    rs = np.random.RandomState(seed)
    return [rs.uniform(-1, 1, shape).astype(np.float32) for _ in range(n)]


def test_updater_updates_weight_in_place():
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", learning_rate=0.1))
    w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    updater(0, g, w)
    np.testing.assert_allclose(w.asnumpy(), [0.9, 0.9], rtol=1e-6)
    assert isinstance(updater, mx.optimizer.Updater)


def test_states_are_created_lazily_per_key():
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    assert updater.states == {}
    updater(3, mx.nd.ones((2,)), mx.nd.ones((2,)))
    updater("embed", mx.nd.ones((4,)), mx.nd.ones((4,)))
    assert set(updater.states) == {3, "embed"}
    assert updater.states["embed"].shape == (4,)
    first = updater.states[3]
    updater(3, mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert updater.states[3] is first


def test_bytes_keys_are_decoded():
    updater = mx.optimizer.get_updater(mx.optimizer.Adam())
    updater(b"w0", mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert list(updater.states) == ["w0"]


def test_each_key_counts_its_own_updates():
    opt = mx.optimizer.Adam()
    updater = mx.optimizer.get_updater(opt)
    for key in (0, 0, 1):
        updater(key, mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert opt._index_update_count == {0: 2, 1: 1}
    assert opt.num_update == 2


def test_list_of_keys_equals_one_call_per_key():
    ws_a = [mx.nd.ones((2, 3)) for _ in range(5)]
    ws_b = [mx.nd.ones((2, 3)) for _ in range(5)]
    grads = _grads(5)
    up_a = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1))
    up_b = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1))
    for _ in range(2):
        up_a(list(range(5)), [mx.nd.array(g) for g in grads], ws_a)
        for k in range(5):
            up_b(k, mx.nd.array(grads[k]), ws_b[k])
    for a, b in zip(ws_a, ws_b):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("name, kwargs", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    ("rmsprop", {"centered": True}),
    ("dcasgd", {"momentum": 0.5}),
    ("nadam", {}),
])
def test_restored_states_continue_exactly_as_never_stopped(name, kwargs):
    grads = _grads(6)
    # uninterrupted
    opt = mx.optimizer.create(name, **kwargs)
    up = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((2, 3))
    for g in grads:
        up("k", mx.nd.array(g), w)
    # three steps, save everything, restore into a fresh updater, three more
    opt1 = mx.optimizer.create(name, **kwargs)
    up1 = mx.optimizer.get_updater(opt1)
    w1 = mx.nd.ones((2, 3))
    for g in grads[:3]:
        up1("k", mx.nd.array(g), w1)
    blob = up1.get_states(dump_optimizer=True)
    up2 = mx.optimizer.get_updater(mx.optimizer.create(name, **kwargs))
    up2.set_states(blob)
    for g in grads[3:]:
        up2("k", mx.nd.array(g), w1)
    np.testing.assert_array_equal(w1.asnumpy(), w.asnumpy())


def test_set_states_without_optimizer_keeps_current_optimizer():
    up = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    up(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    blob = up.get_states()
    target = mx.optimizer.SGD(learning_rate=0.5, momentum=0.9)
    up2 = mx.optimizer.get_updater(target)
    up2.set_states(blob)
    assert up2.optimizer is target
    np.testing.assert_allclose(up2.states[0].asnumpy(), up.states[0].asnumpy())


def test_dump_optimizer_restores_its_schedule_and_counts():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.4)
    opt = mx.optimizer.SGD(lr_scheduler=sched, wd=0.01)
    opt.set_lr_mult({0: 0.5})
    up = mx.optimizer.get_updater(opt)
    for _ in range(5):
        up(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    up2 = mx.optimizer.get_updater(mx.optimizer.SGD())
    up2.set_states(up.get_states(dump_optimizer=True))
    restored = up2.optimizer
    assert type(restored) is mx.optimizer.SGD and restored is not opt
    assert restored.num_update == 5 and restored._index_update_count == {0: 5}
    assert restored.lr_mult == {0: 0.5} and restored.wd == 0.01
    assert restored.learning_rate == pytest.approx(0.1)


def _globals(blob: bytes) -> set:
    """The (module, name) pairs a pickle names (protocol 4: two strings, STACK_GLOBAL)."""
    ops = list(pickletools.genops(blob))
    strings = [a for op, a, _ in ops if op.name in ("SHORT_BINUNICODE", "BINUNICODE")]
    found, last = set(), []
    for op, arg, _ in ops:
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE"):
            last = (last + [arg])[-2:]
        elif op.name == "STACK_GLOBAL":
            found.add(tuple(last))
        elif op.name == "GLOBAL":
            found.add(tuple(arg.split(" ")))
    assert strings
    return found


def test_saved_states_name_only_mxnets_classes():
    # (the handle is a bytearray, as MXNet's ctypes2buffer gives)
    up = mx.optimizer.get_updater(mx.optimizer.Adam(
        lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, base_lr=0.1)))
    up(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    arrays = {("mxnet.ndarray.ndarray", "NDArray"), ("builtins", "bytearray")}
    assert _globals(up.get_states()) == arrays
    assert _globals(up.get_states(dump_optimizer=True)) == arrays | {
        ("mxnet.optimizer.optimizer", "Adam"), ("mxnet.lr_scheduler", "FactorScheduler")}
    back = mx.optimizer.get_updater(mx.optimizer.Adam())
    back.set_states(up.get_states(dump_optimizer=True))
    assert [s.asnumpy().tolist() for s in back.states[0]] == \
        [s.asnumpy().tolist() for s in up.states[0]]
    assert back.optimizer._index_update_count == {0: 1}


def test_multi_precision_states_round_trip():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True)
    up = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((3,), dtype="float16")
    up(0, mx.nd.ones((3,), dtype="float16"), w)
    up2 = mx.optimizer.get_updater(opt)
    up2.set_states(up.get_states())
    mom, master = up2.states[0]
    assert master.dtype == np.float32 and mom.dtype == np.float32
    np.testing.assert_allclose(master.asnumpy(), [0.9, 0.9, 0.9], rtol=1e-6)


def test_states_follow_the_weight_to_its_context_after_restore():
    up = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    up(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    up2 = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    up2.set_states(up.get_states())
    assert up2.states_synced == {0: False}
    w = mx.nd.ones((2,), ctx=mx.cpu(1))
    up2(0, mx.nd.ones((2,), ctx=mx.cpu(1)), w)
    assert up2.states[0].context == mx.cpu(1)
    assert up2.states_synced == {0: True}


def test_sync_state_context_keeps_structure():
    up = mx.optimizer.get_updater(mx.optimizer.SGD())
    state = (mx.nd.ones((2,)), [mx.nd.zeros((1,)), None], 3)
    moved = up.sync_state_context(state, mx.cpu(2))
    assert isinstance(moved, tuple) and isinstance(moved[1], list)
    assert moved[0].context == mx.cpu(2) and moved[1][0].context == mx.cpu(2)
    assert moved[1][1] is None and moved[2] == 3


def test_kvstore_runs_the_optimizer_on_push(tmp_path):
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.init(3, mx.nd.ones((2, 3)))
    kv.push(3, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])   # merged grad: 2
    out = mx.nd.zeros((2, 3))
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), 1 - 0.1 * 2, rtol=1e-6)

    fname = str(tmp_path / "opt.states")
    kv.save_optimizer_states(fname, dump_optimizer=True)
    kv2 = mx.kv.create("local")
    kv2.set_optimizer(mx.optimizer.SGD())
    kv2.init(3, out)
    kv2.load_optimizer_states(fname)
    kv.push(3, mx.nd.ones((2, 3)))
    kv2.push(3, mx.nd.ones((2, 3)))
    a, b = mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))
    kv.pull(3, out=a)
    kv2.pull(3, out=b)
    np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-7)
    np.testing.assert_allclose(a.asnumpy(), 0.8 - (0.9 * 0.2 + 0.1), rtol=1e-6)
