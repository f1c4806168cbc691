"""Simulated GPUs (MXKV_SIMULATE_GPUS): contexts, copies between distinct
devices, the device comm's placement, routes and compression, on CPU."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import context
from mxkv.base import MXNetError, MXNetValueError
from mxkv.kvstore.comm import CommDevice
from mxkv.kvstore.compression import GradientCompression

f32 = np.float32


# ---------------------------------------------------------------- contexts
def test_simulated_gpus_are_counted_and_live_in_numpy(simulate_gpus):
    simulate_gpus(3)
    assert context.num_gpus() == 3
    assert context.gpu_mode() == "simulated"
    a = mx.nd.ones((2, 2), ctx=mx.gpu(2))
    assert isinstance(a._array, np.ndarray)
    assert mx.gpu(2).is_gpu and not mx.gpu(2).uses_cupy and mx.gpu(2).cuda_id is None


def test_a_gpu_beyond_the_simulated_ones_is_refused(simulate_gpus):
    simulate_gpus(2)
    with pytest.raises(MXNetError, match=r"gpu\(2\).*MXKV_SIMULATE_GPUS=2"):
        mx.nd.zeros((1,), ctx=mx.gpu(2))


def test_simulated_gpus_never_share_memory(simulate_gpus):
    simulate_gpus(2)
    a = mx.nd.array([1, 2], ctx=mx.gpu(0))
    b = a.copyto(mx.gpu(1))
    a[:] = 9
    assert b.asnumpy().tolist() == [1, 2]
    assert b.context == mx.gpu(1)


def test_mixing_a_simulated_gpu_and_the_cpu_in_one_op_raises_as_on_a_gpu(simulate_gpus):
    simulate_gpus(1)
    with pytest.raises(MXNetError, match=r"gpu\(0\).*cpu\(0\)"):
        mx.nd.ones((2,), ctx=mx.gpu(0)) + mx.nd.ones((2,))


def test_simulated_and_virtual_together_is_an_error(simulate_gpus, monkeypatch):
    simulate_gpus(2)
    monkeypatch.setenv("MXKV_VIRTUAL_GPUS", "2")
    context._reset_devices()
    with pytest.raises(MXNetValueError, match="MXKV_SIMULATE_GPUS=2 and MXKV_VIRTUAL_GPUS=2"):
        context.num_gpus()


@pytest.mark.skipif(context.cuda_device_count() > 0, reason="checks the no-GPU answer")
def test_virtual_gpus_without_a_real_gpu_are_none_and_say_why(monkeypatch):
    monkeypatch.setenv("MXKV_VIRTUAL_GPUS", "4")
    context._reset_devices()
    try:
        assert context.num_gpus() == 0
        with pytest.raises(MXNetError, match="MXKV_VIRTUAL_GPUS=4 needs one real GPU|CuPy"):
            context.xp_for(mx.gpu(0))
    finally:
        monkeypatch.delenv("MXKV_VIRTUAL_GPUS")
        context._reset_devices()


def test_gpu_memory_info_of_a_simulated_gpu_is_the_hosts(simulate_gpus):
    simulate_gpus(1)
    free, total = context.gpu_memory_info(0)
    assert 0 < free <= total


# ---------------------------------------------------------------- the device comm
def test_merge_buffers_are_placed_by_bytes_largest_first(simulate_gpus):
    devs = simulate_gpus(3)
    comm = CommDevice()
    sizes = {"a": (100,), "b": (60,), "c": (50,), "d": (30,), "e": (20,)}
    for k, shape in sizes.items():
        comm.init(k, shape, np.float32, "default")
    # reduce without `out` returns the merge buffer, on the device that holds it
    merged = {k: comm.reduce(k, [mx.nd.ones(shape, ctx=d) for d in devs])
              for k, shape in sizes.items()}
    # 100 -> gpu0; 60 -> gpu1; 50 -> gpu2; 30 -> gpu2 (50 < 60); 20 -> gpu1 (60 < 80)
    assert [merged[k].context for k in sizes] == [devs[0], devs[1], devs[2], devs[2], devs[1]]
    assert all(np.all(merged[k].asnumpy() == 3) for k in sizes)


def test_placement_counts_bytes_not_elements(simulate_gpus):
    devs = simulate_gpus(2)
    comm = CommDevice()
    comm.init("f64", (10,), np.float64, "default")   # 80 bytes
    comm.init("f32", (12,), np.float32, "default")   # 48 bytes, more elements
    comm.init("i8", (40,), np.int8, "default")       # 40 bytes, most elements
    merged = {k: comm.reduce(k, [mx.nd.ones((n,), ctx=d, dtype=dt) for d in devs])
              for k, dt, n in (("f64", "float64", 10), ("f32", "float32", 12),
                               ("i8", "int8", 40))}
    assert merged["f64"].context == devs[0]
    assert merged["f32"].context == devs[1]
    assert merged["i8"].context == devs[1]


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_device_store_sums_pushes_from_every_simulated_gpu(simulate_gpus, n):
    devs = simulate_gpus(n)
    kv = mx.kv.create("device")
    kv.init("w", mx.nd.zeros((5, 3)))
    kv.push("w", [mx.nd.ones((5, 3), ctx=d) * (i + 1) for i, d in enumerate(devs)])
    outs = [mx.nd.zeros((5, 3), ctx=d) for d in devs]
    kv.pull("w", out=outs)
    for o, d in zip(outs, devs):
        assert o.context == d
        assert np.all(o.asnumpy() == n * (n + 1) / 2)


def test_sources_are_copied_to_the_merge_gpu_by_their_routes(simulate_gpus):
    devs = simulate_gpus(4)  # groups {0, 1} and {2, 3}: P2P inside a group only
    comm = CommDevice()
    comm.init(0, (8,), np.float32, "default")
    merged = comm.reduce(0, [mx.nd.ones((8,), ctx=d) for d in devs])
    assert merged.context == devs[0]
    assert comm.copier.bytes == {"peer": 32, "staged": 64}


def test_p2p_off_stages_every_gpu_to_gpu_copy(simulate_gpus, monkeypatch):
    devs = simulate_gpus(4)
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", "0")
    comm = CommDevice()
    comm.init(0, (8,), np.float32, "default")
    out = comm.reduce(0, [mx.nd.ones((8,), ctx=d) for d in devs])
    assert comm.copier.bytes == {"staged": 96}
    assert out.asnumpy().tolist() == [4] * 8


def test_pull_uploads_once_then_copies_between_gpus(simulate_gpus):
    devs = simulate_gpus(4, topology="nvlink")
    comm = CommDevice()
    src = mx.nd.array(np.arange(6, dtype=f32))
    outs = [mx.nd.zeros((6,), ctx=d) for d in devs] + [mx.nd.zeros((6,), ctx=mx.cpu(1))]
    comm.broadcast(0, src, outs)
    assert comm.copier.bytes == {"h2d": 24, "peer": 72}
    for o in outs:
        assert o.asnumpy().tolist() == list(range(6))


def test_mixed_push_from_cpu_and_simulated_gpus_sums_as_mxnet(simulate_gpus):
    devs = simulate_gpus(2)
    kv = mx.kv.create("device")
    kv.init(1, mx.nd.zeros((3,)))
    kv.push(1, [mx.nd.ones((3,), ctx=devs[0]), mx.nd.ones((3,), ctx=mx.cpu(0)) * 2,
                mx.nd.ones((3,), ctx=devs[1]) * 4])
    outs = [mx.nd.zeros((3,), ctx=mx.cpu(1)), mx.nd.zeros((3,), ctx=devs[1])]
    kv.pull(1, out=outs)
    assert [o.asnumpy().tolist() for o in outs] == [[7, 7, 7]] * 2


@pytest.mark.parametrize("mode", ["simulated",
                                  pytest.param("virtual", marks=pytest.mark.requires_gpu)])
@pytest.mark.parametrize("params", [{"type": "2bit", "threshold": 0.5},
                                    {"type": "1bit", "threshold": 0.0}])
def test_compressed_push_on_gpus_equals_the_cpu_result(simulate_gpus, virtual_gpus, mode,
                                                       params):
    """Quantized on each GPU (numpy kernels on simulated GPUs, CUDA kernels on
    virtual ones), packed words copied, dequantized on the merge GPU:
    bit-identical to the fused host path on cpu contexts."""
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal((33, 5)).astype(f32) for _ in range(3)]
    devs = (simulate_gpus if mode == "simulated" else virtual_gpus)(3)
    results = []
    for ctxs in (devs, [mx.cpu(i) for i in range(3)]):
        kv = mx.kv.create("device")
        kv.set_gradient_compression(params)
        kv.init(0, mx.nd.zeros((33, 5)))
        for _ in range(3):
            kv.push(0, [mx.nd.array(g, ctx=c) for g, c in zip(grads, ctxs)])
        out = mx.nd.zeros((33, 5))
        kv.pull(0, out=out)
        results.append(out.asnumpy())
        if ctxs is devs:  # only packed words crossed between the GPUs
            moved = kv._comm.copier.bytes
            words = GradientCompression.create(params).packed_size(33 * 5)
            crossed = sum(moved[r] for r in ("peer", "staged", "device"))
            assert crossed == 3 * 2 * words * 4
    assert np.array_equal(results[0], results[1])


def test_compression_keeps_a_residual_on_each_source_gpu(simulate_gpus):
    devs = simulate_gpus(2)
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, mx.nd.zeros((4,)))
    for _ in range(4):  # 0.125 per push crosses the threshold on the 4th push
        kv.push(0, [mx.nd.ones((4,), ctx=d) * 0.125 for d in devs])
    out = mx.nd.zeros((4,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [1.0] * 4
    assert [r.context for r in kv._comm._residual[0]] == devs
