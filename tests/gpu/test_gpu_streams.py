"""The comms' stream discipline (kvstore/comm/streams.py), checked on simulated
GPUs against the event model (comm/stream_model.py): every access is made
on a stream, and one that is not ordered after what it depends on raises.

Each test writes gradients on a stream of the caller's own (as PyTorch or a
non-blocking CuPy stream would), runs the store or comm, and reads the
results on that stream or on the host, as a training step does."""
import contextlib

import numpy as np
import pytest

import mxkv as mx
from mxkv.kvstore.comm import CommDevice, CommTree
from mxkv.kvstore.comm import streams as st
from mxkv.kvstore.comm.peer import Copier
from mxkv.kvstore.comm.stream_model import StreamOrderError


@pytest.fixture
def sim(simulate_gpus):
    """``sim(n)`` -> (devices, model, {device: the caller's stream}), the
    caller's streams current for the test."""
    with contextlib.ExitStack() as stack:
        def make(n, topology=None):
            devs = simulate_gpus(n, topology)
            m = st.reset_model()
            user = {d: m.new_stream(f"user {d}") for d in devs}
            for d in devs:
                stack.enter_context(m.use(d, user[d]))
            return devs, m, user
        yield make
    st.reset_model()


def _grads(m, user, devs, shape=(6, 4), scale=1.0):
    """Gradients on every device, written by a kernel on the caller's stream."""
    grads = [mx.nd.ones(shape, ctx=d) * (i + 1) * scale for i, d in enumerate(devs)]
    for g in grads:
        m.access(user[g.context], writes=[g], what="backward")
    return grads


# ------------------------------------------------------------------- the model itself
def test_the_model_catches_a_read_on_another_stream_without_a_wait(sim):
    devs, m, user = sim(1)
    a = mx.nd.zeros((4,), ctx=devs[0])
    other = m.new_stream("other")
    m.access(user[devs[0]], writes=[a])
    with pytest.raises(StreamOrderError, match="other reads .* written on user"):
        m.access(other, reads=[a])
    m.wait(other, m.record(user[devs[0]]))
    m.access(other, reads=[a])  # ordered now


def test_the_model_catches_an_overwrite_of_memory_another_stream_still_reads(sim):
    devs, m, user = sim(1)
    a = mx.nd.zeros((4,), ctx=devs[0])
    reader = m.new_stream("reader")
    m.wait(reader, m.record(user[devs[0]]))
    m.access(reader, reads=[a[1:3]])
    with pytest.raises(StreamOrderError, match="overwrites .* read on reader"):
        m.access(user[devs[0]], writes=[a])


# ------------------------------------------------------------------- stores
@pytest.mark.parametrize("kind", ["device", "nccl"])
def test_a_push_waits_for_gradients_written_on_the_callers_streams(sim, kind):
    devs, m, user = sim(2)
    kv = mx.kv.create(kind)
    kv.init(3, mx.nd.zeros((6, 4)))
    kv.push(3, _grads(m, user, devs))
    outs = [mx.nd.zeros((6, 4), ctx=d) for d in devs]
    kv.pull(3, out=outs)
    for o in outs:  # the next forward pass reads the weights on the caller's stream
        m.access(user[o.context], reads=[o], what="forward")
        assert np.all(o.asnumpy() == 3)
    assert m.violations == []
    assert m.counts["wait"] > 0


def test_a_pull_is_ordered_before_the_callers_next_work(sim):
    devs, m, user = sim(4)
    kv = mx.kv.create("device")
    kv.init("w", mx.nd.ones((5,)) * 7)
    outs = [mx.nd.zeros((5,), ctx=d) for d in devs]
    kv.pull("w", out=outs)
    for o in outs:
        m.access(user[o.context], writes=[o], what="optimizer step")
    assert m.violations == []


def test_gradients_rewritten_after_a_push_wait_for_the_copies_that_read_them(sim):
    devs, m, user = sim(4)   # groups topology: peer copies inside a group, staged across
    comm = CommDevice()
    comm.init(0, (64,), np.float32, "default")
    grads = _grads(m, user, devs, shape=(64,))
    for _ in range(3):
        merged = comm.reduce(0, grads)
        for g in grads:  # the next backward pass writes the same gradient buffers
            m.access(user[g.context], writes=[g], what="backward")
    merged.wait_to_read()
    m.host_read(merged)
    assert np.all(merged.asnumpy() == 10)
    assert comm.copier.bytes["peer"] and comm.copier.bytes["staged"]


def test_tree_buffers_are_reused_only_after_the_peer_copies_that_read_them(sim):
    devs, m, user = sim(4, "nvlink")
    comm = CommTree()
    grads = _grads(m, user, devs, shape=(8, 2))
    for _ in range(3):
        out = [mx.nd.zeros((8, 2), ctx=d) for d in devs]
        merged = comm.reduce("k", grads)
        comm.broadcast("k", merged, out)
        for o in out:
            m.access(user[o.context], reads=[o])
    assert np.all(out[3].asnumpy() == 10)
    assert m.violations == []


# ------------------------------------------------------------------- the host
def test_wait_to_read_waits_for_the_comm_streams(sim):
    devs, m, user = sim(2)
    comm = CommDevice()
    merged = comm.reduce(1, _grads(m, user, devs))  # GPU only: nothing waits on the host
    with pytest.raises(StreamOrderError, match="host reads"):
        m.host_read(merged)
    merged.wait_to_read()
    m.host_read(merged)
    assert np.all(merged.asnumpy() == 3)


def test_waitall_waits_for_the_comm_streams(sim):
    devs, m, user = sim(2)
    comm = CommDevice()
    merged = comm.reduce(1, _grads(m, user, devs))
    mx.nd.waitall()
    m.host_read(merged)
    assert m.violations == []


def test_a_reduce_into_host_memory_is_complete_when_it_returns(sim):
    devs, m, user = sim(2)
    comm = CommDevice()
    out = mx.nd.zeros((6, 4), ctx=mx.cpu_pinned(0))
    comm.reduce(2, _grads(m, user, devs), out=out)
    m.host_read(out)
    assert np.all(out.asnumpy() == 3) and m.violations == []


# ------------------------------------------------------------------- staging
def test_staged_copies_back_to_back_reuse_one_buffer_only_after_its_upload(sim, monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", "0")
    devs, m, user = sim(2)
    copier, order = Copier(), st.StreamOrder()
    srcs = [mx.nd.ones((256,), ctx=devs[0]) * i for i in range(16)]
    dsts = [mx.nd.zeros((256,), ctx=devs[1]) for _ in srcs]
    for s in srcs:
        m.access(user[devs[0]], writes=[s])
    with order.op(srcs, dsts):
        for s, d in zip(srcs, dsts):
            assert copier.copy(d, s) == "staged"
    for i, d in enumerate(dsts):
        m.access(user[devs[1]], reads=[d])
        assert np.all(d.asnumpy() == i)
    (stage, _), = copier._stages.values()
    assert stage.uses == 16 and stage.buf.nbytes == 256 * 4
    assert m.violations == []
    copier.close()
    assert stage.buf is None


def test_a_staging_buffer_that_grows_waits_for_its_last_upload(sim, monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", "0")
    devs, m, user = sim(2)
    copier, order = Copier(), st.StreamOrder()
    small, big = mx.nd.ones((4,), ctx=devs[0]), mx.nd.ones((4096,), ctx=devs[0]) * 2
    out_s, out_b = mx.nd.zeros((4,), ctx=devs[1]), mx.nd.zeros((4096,), ctx=devs[1])
    with order.op([small, big], [out_s, out_b]):
        copier.copy(out_s, small)
        syncs = m.counts["synchronize"]
        copier.copy(out_b, big)
    assert np.all(out_b.asnumpy() == 2) and np.all(out_s.asnumpy() == 1)
    assert m.violations == [] and syncs == 0


def test_a_comm_operation_nested_in_another_joins_it(sim):
    devs, m, user = sim(2)
    order = st.StreamOrder()
    a = mx.nd.ones((4,), ctx=devs[0])
    with order.op([a], []):
        waits = m.counts["wait"]
        with order.op([a], []):
            pass
        assert m.counts["wait"] == waits


def test_a_pull_into_gpus_of_several_dtypes_casts_every_copy(sim):
    devs, m, user = sim(2)
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.ones((5,)) * 1.5)
    outs = [mx.nd.zeros((5,), ctx=devs[0], dtype="float16"), mx.nd.zeros((5,), ctx=devs[1])]
    kv.pull(0, out=outs)
    for o in outs:
        m.access(user[o.context], reads=[o])
    assert outs[0].asnumpy().tolist() == [1.5] * 5 and outs[1].dtype == np.float32
    assert outs[1].asnumpy().tolist() == [1.5] * 5 and m.violations == []
