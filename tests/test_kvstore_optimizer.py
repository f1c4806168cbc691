"""Optimizers running on the store, and their saved states."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError


def train(kv, steps, start=0):
    out = mx.nd.zeros((3,))
    for i in range(start, start + steps):
        kv.push("w", mx.nd.array([1.0, -2.0, 0.5]) * (i + 1))
    kv.pull("w", out=out)
    return out.asnumpy()


def fresh(opt=None):
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((3,)))
    kv.set_optimizer(opt or mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    return kv


def test_sgd_momentum_matches_the_formula():
    kv = fresh()
    w, mom = np.ones(3, np.float32), np.zeros(3, np.float32)
    for i in range(3):
        g = np.array([1.0, -2.0, 0.5], np.float32) * (i + 1)
        mom = 0.9 * mom - 0.1 * g
        w = w + mom
    assert np.allclose(train(kv, 3), w, rtol=1e-6)


def test_saved_states_resume_training_exactly(tmp_path):
    straight = train(fresh(), 4)
    kv = fresh()
    train(kv, 2)
    fname = str(tmp_path / "states")
    kv.save_optimizer_states(fname)
    kv2 = fresh()
    kv2_w = mx.nd.zeros((3,))
    kv.pull("w", out=kv2_w)
    kv2 = mx.kv.create("local")
    kv2.init("w", kv2_w)
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv2.load_optimizer_states(fname)
    assert np.allclose(train(kv2, 2, start=2), straight, rtol=1e-6)


def test_dump_optimizer_restores_the_optimizer(tmp_path):
    kv = fresh(mx.optimizer.SGD(learning_rate=0.25, momentum=0.5))
    train(kv, 1)
    fname = str(tmp_path / "states")
    kv.save_optimizer_states(fname, dump_optimizer=True)
    kv2 = fresh(mx.optimizer.SGD(learning_rate=99.0))
    kv2.load_optimizer_states(fname)
    assert kv2._updater.optimizer.lr == 0.25


def test_loading_garbage_states_is_a_clear_error(tmp_path):
    kv = fresh()
    fname = tmp_path / "junk"
    fname.write_bytes(b"not a pickle")
    with pytest.raises(MXNetError, match="not an optimizer states file"):
        kv.load_optimizer_states(str(fname))


def test_adam_on_the_store_matches_the_formula():
    kv = fresh(mx.optimizer.Adam(learning_rate=0.01))
    w = np.ones(3, np.float64)
    m = np.zeros(3)
    v = np.zeros(3)
    for t in range(1, 3):
        g = np.array([1.0, -2.0, 0.5]) * t
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        w = w - lr * m / (np.sqrt(v) + 1e-8)
    assert np.allclose(train(kv, 2), w, rtol=1e-5)
