"""Optimizers on gpu(0) (CuPy arrays) give the CPU's numbers; skipped without a GPU."""
import math
import pickletools

import numpy as np
import pytest

import mxkv as mx

pytestmark = pytest.mark.requires_gpu

SHAPE = (6, 5)
ROWS = [[0, 3], [1, 3, 5], [2]]

CASES = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.5}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01, "rescale_grad": 0.5}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "clip_weights": 0.9}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}),
    ("adadelta", {"wd": 0.01}),
    ("signum", {"learning_rate": 0.01, "wd_lh": 0.1}),
    ("signum", {"learning_rate": 0.01, "momentum": 0.0}),
    ("ftrl", {"wd": 0.01}),
    ("ftml", {"learning_rate": 0.01}),
    ("adamax", {}),
    ("nadam", {}),
    ("dcasgd", {"momentum": 0.9}),
]


def _inputs(seed):
    rs = np.random.RandomState(seed)
    return (rs.uniform(-1, 1, SHAPE).astype(np.float32),
            [rs.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(3)])


def _run(name, kwargs, ctx, sparse=False, dtype="float32"):
    w0, grads = _inputs(0)
    updater = mx.optimizer.get_updater(mx.optimizer.create(name, **kwargs))
    w = mx.nd.array(w0, ctx=ctx, dtype=dtype)
    out = []
    for step, g in enumerate(grads):
        if sparse:
            rows = ROWS[step]
            grad = mx.nd.sparse.row_sparse_array(
                (g[rows].astype(dtype), np.array(rows, dtype=np.int64)), shape=SHAPE, ctx=ctx)
        else:
            grad = mx.nd.array(g, ctx=ctx, dtype=dtype)
        updater(0, grad, w)
        out.append(w.asnumpy())
    return out, updater


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_gpu_matches_cpu(name, kwargs):
    cpu, _ = _run(name, kwargs, mx.cpu())
    gpu, updater = _run(name, kwargs, mx.gpu(0))
    for a, b in zip(gpu, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    state = updater.states[0]
    for s in (state if isinstance(state, tuple) else (state,)):
        if s is not None:
            assert s.context == mx.gpu(0) and type(s._array).__module__.startswith("cupy")


@pytest.mark.parametrize("name, kwargs", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05, "lazy_update": False}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    ("adagrad", {"learning_rate": 0.1}),
])
def test_gpu_row_sparse_matches_cpu(name, kwargs):
    cpu, _ = _run(name, kwargs, mx.cpu(), sparse=True)
    gpu, _ = _run(name, kwargs, mx.gpu(0), sparse=True)
    for a, b in zip(gpu, cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sgd", "nag", "adam"])
def test_gpu_float16_multi_precision_matches_cpu(name):
    kwargs = {"learning_rate": 0.05, "multi_precision": True}
    if name != "adam":
        kwargs["momentum"] = 0.9
    cpu, _ = _run(name, kwargs, mx.cpu(), dtype="float16")
    gpu, _ = _run(name, kwargs, mx.gpu(0), dtype="float16")
    for a, b in zip(gpu, cpu):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=1e-3,
                                   atol=1e-3)


def test_gpu_states_round_trip_and_continue():
    _, grads = _inputs(1)
    up = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.01))
    w = mx.nd.ones(SHAPE, ctx=mx.gpu(0))
    for g in grads:
        up(0, mx.nd.array(g, ctx=mx.gpu(0)), w)
    want = w.asnumpy()

    up1 = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.01))
    w1 = mx.nd.ones(SHAPE, ctx=mx.gpu(0))
    up1(0, mx.nd.array(grads[0], ctx=mx.gpu(0)), w1)
    blob = up1.get_states(dump_optimizer=True)
    names = {a for op, a, _ in pickletools.genops(blob) if op.name == "SHORT_BINUNICODE"}
    assert "mxnet.ndarray.ndarray" in names  # MXNet's array encoding (host bytes)
    up2 = mx.optimizer.get_updater(mx.optimizer.Adam())
    up2.set_states(blob)
    assert up2.states[0][0].context == mx.gpu(0)
    for g in grads[1:]:
        up2(0, mx.nd.array(g, ctx=mx.gpu(0)), w1)
    np.testing.assert_allclose(w1.asnumpy(), want, rtol=1e-6)


def test_states_saved_on_cpu_follow_a_gpu_weight():
    up = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    up(0, mx.nd.ones((3,)), mx.nd.ones((3,)))
    up2 = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    up2.set_states(up.get_states())
    w = mx.nd.ones((3,), ctx=mx.gpu(0))
    up2(0, mx.nd.ones((3,), ctx=mx.gpu(0)), w)
    assert up2.states[0].context == mx.gpu(0)
    np.testing.assert_allclose(w.asnumpy(), [1 - 0.09 - 0.1] * 3, rtol=1e-6)


def test_gpu_sgld_noise_has_variance_lr():
    import cupy
    cupy.random.seed(3)
    lr = 0.04
    w = mx.nd.zeros((100000,), ctx=mx.gpu(0))
    mx.optimizer.SGLD(learning_rate=lr).update(0, w, mx.nd.zeros((100000,), ctx=mx.gpu(0)),
                                               None)
    noise = w.asnumpy()
    assert abs(noise.mean()) < 0.003
    assert noise.std() == pytest.approx(math.sqrt(lr), rel=0.02)
