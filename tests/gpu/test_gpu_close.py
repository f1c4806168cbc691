"""Closing stores on simulated GPUs: every comm's close runs, after its
streams are synchronised; NCCL communicators are destroyed."""
import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.kvstore.comm import streams as st
from mxkv.kvstore.comm.nccl import SimulatedCollectives


def _step(kv, devs, key=0, shape=(8, 4)):
    kv.init(key, mx.nd.zeros(shape))
    kv.push(key, [mx.nd.ones(shape, ctx=d) for d in devs])
    outs = [mx.nd.zeros(shape, ctx=d) for d in devs]
    kv.pull(key, out=outs)
    return outs


@pytest.mark.parametrize("kind,usetree", [("local", False), ("device", False),
                                           ("device", True), ("nccl", False)])
def test_every_comm_is_closed_after_its_streams(simulate_gpus, monkeypatch, kind, usetree):
    monkeypatch.setenv("MXNET_KVSTORE_USETREE", "1" if usetree else "0")
    devs = simulate_gpus(4, "nvlink")
    m = st.reset_model()
    kv = mx.kv.create(kind)
    comm = kv._comm
    outs = _step(kv, devs)
    assert np.all(outs[-1].asnumpy() == 4)
    synced = m.counts["synchronize"]
    closes = []
    real_free = comm._free
    comm._free = lambda: (closes.append(m.counts["synchronize"]), real_free())
    kv.close()
    assert comm.closed and closes, "the comm's close did not run"
    if kind != "local":  # the comm's streams were waited for before its buffers went
        assert closes[0] > synced
        assert not comm._merge and not comm._copy_buf and not comm.copier._stages


def test_closing_an_nccl_store_destroys_its_communicator(simulate_gpus):
    devs = simulate_gpus(2)
    before = SimulatedCollectives.alive
    kv = mx.kv.create("nccl")
    _step(kv, devs)
    coll = kv._comm.collectives
    assert SimulatedCollectives.alive == before + 1
    kv.close()
    assert coll.destroyed and SimulatedCollectives.alive == before
    with pytest.raises(MXNetError, match="kvstore 'nccl'.*is closed"):
        kv.push(0, [mx.nd.ones((8, 4), ctx=d) for d in devs])


def test_nccl_stores_created_and_closed_in_a_loop_leave_no_communicator(simulate_gpus):
    devs = simulate_gpus(2)
    before = SimulatedCollectives.alive
    for i in range(100):
        with mx.kv.create("nccl") as kv:
            outs = _step(kv, devs, key=i % 3)
    assert SimulatedCollectives.alive == before
    assert np.all(outs[0].asnumpy() == 2)


def test_a_staged_store_closes_its_staging_buffers(simulate_gpus, monkeypatch):
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", "0")
    devs = simulate_gpus(2)
    st.reset_model()
    kv = mx.kv.create("device")
    _step(kv, devs)
    stages = [s for s, _ in kv._comm.copier._stages.values()]
    assert stages and all(s.buf is not None for s in stages)
    kv.close()
    assert all(s.buf is None for s in stages)
