"""The nccl store: its plan (one communicator, grouped reduce and broadcast,
roots by load) on simulated GPUs over SimulatedCollectives, which enforces
NCCL's calling rules but is not NCCL; its errors; and, on a GPU machine with
NCCL, the real thing."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import context
from mxkv.base import MXNetError
from mxkv.kvstore.comm.nccl import SimulatedCollectives

f32 = np.float32


def _store(simulate_gpus, n, **kw):
    devs = simulate_gpus(n, **kw)
    return mx.kv.create("nccl"), devs


def test_nccl_store_reduces_and_broadcasts_with_one_grouped_call_each(simulate_gpus):
    kv, devs = _store(simulate_gpus, 4)
    kv.init("w", mx.nd.zeros((3, 2)))
    kv.push("w", [mx.nd.ones((3, 2), ctx=d) * (i + 1) for i, d in enumerate(devs)])
    outs = [mx.nd.zeros((3, 2), ctx=d) for d in devs]
    kv.pull("w", out=outs)
    assert all(o.asnumpy().tolist() == [[10, 10]] * 3 for o in outs)
    assert kv._comm.collectives.calls == [("reduce", 0, 6), ("bcast", 0, 6)]
    assert kv.type == "nccl"


def test_roots_are_spread_by_load_like_merge_buffers(simulate_gpus):
    kv, devs = _store(simulate_gpus, 2)
    kv.init([0, 1], [mx.nd.zeros((100,)), mx.nd.zeros((10,))])
    kv.push([0, 1], [[mx.nd.ones((100,), ctx=d) for d in devs],
                     [mx.nd.ones((10,), ctx=d) for d in devs]])
    assert [c[:2] for c in kv._comm.collectives.calls] == [("reduce", 0), ("reduce", 1)]


def test_nccl_store_runs_an_optimizer_like_the_device_store(simulate_gpus):
    results = []
    for name in ("nccl", "device"):
        devs = simulate_gpus(3)
        kv = mx.kv.create(name)
        kv.init(5, mx.nd.ones((4,)))
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        for step in range(3):
            kv.push(5, [mx.nd.ones((4,), ctx=d) * (step + i) for i, d in enumerate(devs)])
        outs = [mx.nd.zeros((4,), ctx=d) for d in devs]
        kv.pull(5, out=outs)
        results.append([o.asnumpy() for o in outs])
    for a, b in zip(*results):
        assert np.allclose(a, b)


def test_push_from_another_device_set_is_refused_and_changes_nothing(simulate_gpus):
    kv, devs = _store(simulate_gpus, 4)
    kv.init([1, 2], [mx.nd.zeros((2,)), mx.nd.zeros((2,))])
    kv.push(1, [mx.nd.ones((2,), ctx=d) for d in devs])
    with pytest.raises(MXNetError, match=r"spans gpu\(0\), gpu\(1\), gpu\(2\), gpu\(3\); key 2 "
                                         r"was pushed from gpu\(0\), gpu\(1\)"):
        kv.push([1, 2], [[mx.nd.ones((2,), ctx=d) * 5 for d in devs],
                         [mx.nd.ones((2,), ctx=d) for d in devs[:2]]])
    out = mx.nd.zeros((2,))
    kv.pull(1, out=out)
    assert out.asnumpy().tolist() == [4, 4]  # key 1 kept the first push, not 20


@pytest.mark.parametrize("ctxs,match", [
    (lambda d: [d[0], d[0]], "one value per GPU"),
    (lambda d: [d[0], mx.cpu(0)], "sums values on GPUs"),
])
def test_pushes_nccl_cannot_take_are_refused(simulate_gpus, ctxs, match):
    kv, devs = _store(simulate_gpus, 2)
    kv.init(0, mx.nd.zeros((2,)))
    with pytest.raises(MXNetError, match=match):
        kv.push(0, [mx.nd.ones((2,), ctx=c) for c in ctxs(devs)])


def test_a_dtype_nccl_cannot_sum_is_refused(simulate_gpus):
    kv, devs = _store(simulate_gpus, 2)
    kv.init(0, mx.nd.zeros((2,), dtype="bool"))
    with pytest.raises(MXNetError, match="NCCL cannot sum dtype bool"):
        kv.push(0, [mx.nd.ones((2,), ctx=d, dtype="bool") for d in devs])


def test_gradient_compression_is_refused_as_mxnet(simulate_gpus):
    kv, _ = _store(simulate_gpus, 2)
    with pytest.raises(MXNetError, match="not supported for this type of kvstore"):
        kv.set_gradient_compression({"type": "2bit"})


def test_simulated_collectives_refuse_a_group_missing_a_rank():
    coll = SimulatedCollectives(3)
    bufs = [np.ones(4, f32) for _ in range(3)]
    with pytest.raises(MXNetError, match="NCCL would hang"):
        with coll.group():
            coll.reduce(0, bufs[0], bufs[0], 0)
            coll.reduce(1, bufs[1], None, 0)


def test_simulated_collectives_refuse_calls_outside_a_group():
    with pytest.raises(MXNetError, match="outside a group"):
        SimulatedCollectives(2).bcast(0, np.ones(2, f32), 0)


@pytest.mark.skipif(context.cuda_device_count() > 0, reason="checks the no-GPU error")
def test_nccl_store_without_cupy_or_nccl_names_what_to_install():
    with pytest.raises(MXNetError, match="nvidia-nccl-cu12|cupy-cuda12x"):
        mx.kv.create("nccl")


# ---------------------------------------------------------------- real NCCL
@pytest.mark.requires_gpu
def test_real_nccl_store_sums_over_every_gpu():
    n = context.num_gpus()
    if context.gpu_mode() == "virtual" or context.cuda_device_count() < 2:
        kv = mx.kv.create("nccl")
        kv.init(0, mx.nd.zeros((4,)))
        if n >= 2:  # virtual GPUs share one device: NCCL cannot rank them, and says so
            with pytest.raises(MXNetError, match="one physical GPU per rank"):
                kv.push(0, [mx.nd.ones((4,), ctx=mx.gpu(i)) for i in range(n)])
        return
    kv = mx.kv.create("nccl")
    kv.init(0, mx.nd.zeros((1000, 3)))
    kv.push(0, [mx.nd.ones((1000, 3), ctx=mx.gpu(i)) * (i + 1) for i in range(n)])
    outs = [mx.nd.zeros((1000, 3), ctx=mx.gpu(i)) for i in range(n)]
    kv.pull(0, out=outs)
    for o in outs:
        assert np.all(o.asnumpy() == n * (n + 1) / 2)


@pytest.mark.parametrize("name,usetree", [("nccl", "0"), ("device", "1")])
def test_threads_pushing_different_keys_get_their_own_sums(simulate_gpus, monkeypatch, name,
                                                           usetree):
    import threading

    monkeypatch.setenv("MXNET_KVSTORE_USETREE", usetree)
    devs = simulate_gpus(4)
    kv = mx.kv.create(name)
    keys = list(range(16))
    kv.init(keys, [mx.nd.zeros((50,))] * len(keys))
    errors = []

    def work(k):
        try:
            for _ in range(5):
                kv.push(k, [mx.nd.ones((50,), ctx=d) * k for d in devs])
        except Exception as exc:  # reported below, with the key
            errors.append((k, exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in keys:
        out = mx.nd.zeros((50,))
        kv.pull(k, out=out)
        assert out.asnumpy().tolist() == [4 * k] * 50, k
