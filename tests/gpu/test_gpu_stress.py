"""Stress where the GPU defects of issue 20 would show: staged copies back to
back through one pinned buffer, NCCL over many keys from several threads,
gradients written on a non-blocking stream and pushed without a
synchronisation, stores created and closed in a loop.

Real CUDA only (``requires_gpu``; ``requires_gpu(n=2)`` for what needs two
physical GPUs); run by ``make gpu-check-quick`` on the real GPU(s) and on 4
virtual GPUs. The same plans are checked on simulated GPUs against the
event model in ``test_gpu_streams.py``.
"""
import contextlib
import gc
import threading

import numpy as np
import pytest

import mxkv as mx
from mxkv import context
from mxkv.kvstore.comm import copies
from mxkv.kvstore.comm import streams as st

pytestmark = pytest.mark.requires_gpu


def _cp():
    return context.cupy_or_none()


def _devs():
    return [mx.gpu(i) for i in range(context.num_gpus())]


class _TwoStreams(st.CudaStreams):
    """Two real non-blocking streams on one CUDA device, for the two halves of
    a staged copy (``'src'`` downloads, ``'dst'`` uploads): they run
    concurrently, as two GPUs' streams would, so a buffer reused too early
    is overwritten while an upload still reads it."""

    def __init__(self, dev: int) -> None:
        super().__init__()
        self.dev = dev
        with self.cupy.cuda.Device(dev):
            self._mine = {"src": self.cupy.cuda.Stream(non_blocking=True),
                          "dst": self.cupy.cuda.Stream(non_blocking=True)}

    def current(self, key):
        return self._mine[key]

    def record(self, stream, dev=None):
        with self.cupy.cuda.Device(self.dev):
            return stream.record()

    def wait(self, stream, event, dev=None):
        stream.wait_event(event)


def test_same_size_staged_copies_back_to_back_land_intact():
    cp = _cp()
    be = _TwoStreams(0)
    stage = copies.Staging(pinned=True)
    n = 1 << 20  # 4 MB per copy, 64 copies through one 4 MB pinned buffer
    with cp.cuda.Device(0):
        srcs = [cp.full(n, i, cp.float32) for i in range(64)]
        dsts = [cp.zeros(n, cp.float32) for _ in srcs]
        cp.cuda.Device(0).synchronize()
        for s, d in zip(srcs, dsts):
            copies.copy_staged(be, stage, d, s, "dst", "src")
        cp.cuda.Device(0).synchronize()
        bad = [i for i, d in enumerate(dsts) if not bool((d == i).all())]
    assert bad == [] and stage.uses == 64 and stage.buf.nbytes == 4 * n
    stage.release(be)


@pytest.mark.requires_gpu(n=2)
def test_a_device_store_with_peer_access_off_sums_every_push(monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", "0")
    devs = [mx.gpu(i) for i in range(context.cuda_device_count())]
    n = len(devs)
    with mx.kv.create("device") as kv:
        kv.init(list(range(32)), [mx.nd.zeros((1 << 18,))] * 32)
        for rep in range(4):
            for k in range(32):
                kv.push(k, [mx.nd.ones((1 << 18,), ctx=d) * (k + rep) for d in devs])
            for k in range(32):
                outs = [mx.nd.zeros((1 << 18,), ctx=d) for d in devs]
                kv.pull(k, out=outs)
                for o in outs:
                    assert float(o.asnumpy().min()) == float(o.asnumpy().max()) == n * (k + rep)
        assert set(kv._comm.copier.bytes) >= {"staged"}


@pytest.mark.requires_gpu(n=2)
def test_nccl_over_many_keys_from_several_threads():
    devs = [mx.gpu(i) for i in range(context.cuda_device_count())]
    n, keys, errors = len(devs), list(range(64)), []
    kv = mx.kv.create("nccl")
    kv.init(keys, [mx.nd.zeros((4096,))] * len(keys))

    def work(mine):
        try:
            for rep in range(3):
                for k in mine:
                    kv.push(k, [mx.nd.ones((4096,), ctx=d) * (k + rep) for d in devs])
                    outs = [mx.nd.zeros((4096,), ctx=d) for d in devs]
                    kv.pull(k, out=outs)
                    for o in outs:
                        got = o.asnumpy()
                        if not np.all(got == n * (k + rep)):
                            errors.append((k, rep, float(got.min()), float(got.max())))
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(keys[t::4],)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    comms = kv._comm.collectives
    kv.close()
    assert errors == []
    assert comms.comms == []  # destroyed by close


@pytest.mark.parametrize("kind", ["device", "local"])
def test_gradients_written_on_a_non_blocking_stream_are_pushed_once_written(kind):
    cp = _cp()
    devs = _devs()
    size = 1 << 22  # 16 MB: 40 passes over it keep the stream busy while push is called
    be = st.cuda_backend()
    user = {}
    for d in devs:
        if d.cuda_id not in user:
            with cp.cuda.Device(d.cuda_id):
                user[d.cuda_id] = cp.cuda.Stream(non_blocking=True)
    want = 40 * sum(range(1, len(devs) + 1))
    with mx.kv.create(kind) as kv, contextlib.ExitStack() as stack:
        kv.init("g", mx.nd.zeros((size,)))
        for dev, s in user.items():  # the streams backward runs on, current for the step
            stack.enter_context(be.use(dev, s))
        grads = [mx.nd.zeros((size,), ctx=d) for d in devs]
        for rep in range(3):
            for i, (d, g) in enumerate(zip(devs, grads)):
                with cp.cuda.Device(d.cuda_id):
                    g._array.fill(0)
                    for _ in range(40):
                        g._array += i + 1
            kv.push("g", grads)          # no synchronisation: the push must wait
            outs = [mx.nd.zeros((size,), ctx=d) for d in devs]
            kv.pull("g", out=outs)
            for o in outs:                # read on the caller's streams
                with cp.cuda.Device(o.context.cuda_id):
                    lo, hi = float(o._array.min()), float(o._array.max())
                assert lo == hi == want, (kind, rep, lo, hi, want)


def test_stores_created_and_closed_in_a_loop_leave_gpu_memory_flat():
    cp = _cp()
    devs = _devs()

    def cycle(kind):
        with mx.kv.create(kind) as kv:
            kv.init(list(range(4)), [mx.nd.zeros((1 << 16,))] * 4)
            for k in range(4):
                kv.push(k, [mx.nd.ones((1 << 16,), ctx=d) for d in devs])
                kv.pull(k, out=[mx.nd.zeros((1 << 16,), ctx=d) for d in devs])

    kinds = ["device", "local"]
    for kind in kinds:
        cycle(kind)
    mx.nd.waitall()
    gc.collect()
    pool = cp.get_default_memory_pool()
    before = pool.used_bytes()
    for i in range(100):
        cycle(kinds[i % 2])
    mx.nd.waitall()
    gc.collect()
    grown = pool.used_bytes() - before
    print(f"\nGPU pool in use after 100 stores: {grown:+d} bytes; pinned free blocks "
          f"{cp.get_default_pinned_memory_pool().n_free_blocks()}")
    assert grown <= 1 << 20
