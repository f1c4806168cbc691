"""The local and device stores with values on a GPU: every test runs on
simulated GPUs (numpy memory, always) and on CUDA GPUs through CuPy (skipped,
with the reason, where there is none)."""
import numpy as np
import pytest

import mxkv as mx


@pytest.fixture(autouse=True, params=["simulated",
                                      pytest.param("cuda", marks=pytest.mark.requires_gpu)])
def gpus(request, simulate_gpus):
    if request.param == "simulated":
        simulate_gpus(2)
    return request.param


SHAPE = (64, 33)


@pytest.mark.parametrize("name", ["local", "device"])
def test_push_from_gpu_and_host_then_pull_to_both(name):
    kv = mx.kv.create(name)
    kv.init(0, mx.nd.zeros(SHAPE))
    vals = [mx.nd.ones(SHAPE, ctx=mx.gpu(0)) * 2, mx.nd.ones(SHAPE, ctx=mx.gpu(0)),
            mx.nd.ones(SHAPE, ctx=mx.cpu(1)) * 4]
    kv.push(0, vals)
    outs = [mx.nd.zeros(SHAPE, ctx=mx.gpu(0)), mx.nd.zeros(SHAPE, ctx=mx.cpu(0))]
    kv.pull(0, out=outs)
    assert outs[0].context == mx.gpu(0)
    for o in outs:
        assert np.all(o.asnumpy() == 7)


@pytest.mark.parametrize("name", ["local", "device"])
def test_sgd_on_the_store_with_gpu_gradients(name):
    kv = mx.kv.create(name)
    kv.init("w", mx.nd.ones(SHAPE))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9))
    for _ in range(2):
        kv.push("w", [mx.nd.ones(SHAPE, ctx=mx.gpu(0)), mx.nd.ones(SHAPE, ctx=mx.gpu(0))])
    out = mx.nd.zeros(SHAPE, ctx=mx.gpu(0))
    kv.pull("w", out=out)
    # mom1 = -1, w1 = 0; mom2 = 0.9*-1 - 1 = -1.9, w2 = -1.9
    assert np.allclose(out.asnumpy(), -1.9)


def test_two_bit_compression_on_gpu_matches_the_cpu_result():
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]
    results = []
    for ctx in (mx.gpu(0), mx.cpu(0)):
        kv = mx.kv.create("device")
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        kv.init(0, mx.nd.zeros(SHAPE))
        for _ in range(3):
            kv.push(0, [mx.nd.array(g, ctx=ctx) for g in grads])
        out = mx.nd.zeros(SHAPE)
        kv.pull(0, out=out)
        results.append(out.asnumpy())
    assert np.array_equal(results[0], results[1])


def test_row_sparse_pull_into_gpu_out():
    kv = mx.kv.create("local")
    data = mx.nd.ones((2, 33))
    kv.init(0, mx.nd.sparse.row_sparse_array((data, mx.nd.array([1, 5], dtype="int64")),
                                             shape=SHAPE))
    out = mx.nd.sparse.zeros("row_sparse", SHAPE, ctx=mx.gpu(0))
    kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array([5, 7], dtype="int64"))
    assert out.indices.asnumpy().tolist() == [5, 7]
    assert out.data.asnumpy()[:, 0].tolist() == [1.0, 0.0]
