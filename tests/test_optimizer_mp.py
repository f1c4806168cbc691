"""float16 weights with multi_precision: a float32 master copy does the learning."""
import numpy as np
import pytest

import mxkv as mx


def test_sgd_multi_precision_state_is_momentum_then_master_copy():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    w = mx.nd.array([1.0, 2.0], dtype="float16")
    mom, master = opt.create_state_multi_precision(0, w)
    assert mom.dtype == np.float32 and master.dtype == np.float32
    assert master.asnumpy().tolist() == [1.0, 2.0]


def test_base_multi_precision_state_is_master_copy_then_state():
    opt = mx.optimizer.Adam(multi_precision=True)
    w = mx.nd.array([1.0, 2.0], dtype="float16")
    master, (mean, _var) = opt.create_state_multi_precision(0, w)
    assert master.dtype == np.float32 and mean.dtype == np.float32


@pytest.mark.parametrize("name, kwargs", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("sgd", {"learning_rate": 0.1}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}),
])
def test_float16_follows_float32_run_through_master_copy(name, kwargs):
    rs = np.random.RandomState(3)
    w0 = rs.uniform(-1, 1, (4, 3)).astype(np.float16)
    grads = [rs.uniform(-1, 1, (4, 3)).astype(np.float16) for _ in range(3)]

    ref = mx.optimizer.create(name, **kwargs)
    w32 = mx.nd.array(w0, dtype="float32")
    s32 = ref.create_state(0, w32)

    opt = mx.optimizer.create(name, multi_precision=True, **kwargs)
    w16 = mx.nd.array(w0, dtype="float16")
    s16 = opt.create_state_multi_precision(0, w16)
    for g in grads:
        ref.update(0, w32, mx.nd.array(g, dtype="float32"), s32)
        opt.update_multi_precision(0, w16, mx.nd.array(g, dtype="float16"), s16)
        assert w16.dtype == np.float16
        np.testing.assert_array_equal(w16.asnumpy(), w32.asnumpy().astype(np.float16))


def test_master_copy_accumulates_steps_too_small_for_float16():
    # 1.0 + 1e-4 rounds back to 1.0 in float16; the float32 master keeps it
    opt = mx.optimizer.SGD(learning_rate=1e-4, multi_precision=True)
    w = mx.nd.ones((1,), dtype="float16")
    state = opt.create_state_multi_precision(0, w)
    for _ in range(100):
        opt.update_multi_precision(0, w, mx.nd.array([-1.0], dtype="float16"), state)
    assert state[1].asnumpy()[0] == pytest.approx(1.01, rel=1e-5)
    assert w.asnumpy()[0] == np.float16(1.01)

    plain = mx.optimizer.SGD(learning_rate=1e-4)
    w2 = mx.nd.ones((1,), dtype="float16")
    for _ in range(100):
        plain.update(0, w2, mx.nd.array([-1.0], dtype="float16"), None)
    assert w2.asnumpy()[0] == 1.0


def test_multi_precision_ignored_for_float32_weights():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    w = mx.nd.ones((2,))
    state = opt.create_state_multi_precision(0, w)
    assert state.dtype == np.float32 and not isinstance(state, tuple)
    opt.update_multi_precision(0, w, mx.nd.ones((2,)), state)
    np.testing.assert_allclose(w.asnumpy(), [0.99, 0.99], rtol=1e-6)
