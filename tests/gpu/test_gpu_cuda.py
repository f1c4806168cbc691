"""The comms on CUDA through CuPy: virtual GPUs on the one real GPU, and peer
copies between real ones. Skipped, with the reason, without a GPU; the same
algorithms run on simulated GPUs in test_gpu_simulated.py / test_gpu_tree.py."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import context
from mxkv.kvstore.comm import CommDevice, CommTree

pytestmark = pytest.mark.requires_gpu

f32 = np.float32


def test_virtual_gpus_are_cupy_devices_on_device_0(virtual_gpus):
    devs = virtual_gpus(4)
    assert context.num_gpus() == 4
    a = mx.nd.ones((3,), ctx=devs[3])
    assert a._array.device.id == 0 and devs[3].cuda_id == 0
    b = a.copyto(devs[1])
    a[:] = 5
    assert b.asnumpy().tolist() == [1, 1, 1]


def test_device_comm_on_virtual_gpus_copies_device_to_device(virtual_gpus):
    devs = virtual_gpus(4)
    comm = CommDevice()
    vals = [mx.nd.ones((1000,), ctx=d) * (i + 1) for i, d in enumerate(devs)]
    assert comm.reduce(0, vals).asnumpy().tolist() == [10] * 1000
    assert comm.copier.bytes == {"device": 3 * 4000}


@pytest.mark.parametrize("n", [2, 4, 5, 8])
def test_tree_comm_on_virtual_gpus_equals_the_flat_comm(virtual_gpus, monkeypatch, n):
    devs = virtual_gpus(n)
    rng = np.random.default_rng(n)
    for bound in ("10000000", "16"):
        monkeypatch.setenv("MXNET_KVSTORE_TREE_ARRAY_BOUND", bound)
        vals = [mx.nd.array(rng.integers(-9, 9, (4 * n, 5)).astype(f32), ctx=d) for d in devs]
        want = CommDevice().reduce(0, vals).asnumpy()
        tree = CommTree()
        assert np.array_equal(tree.reduce(0, vals).asnumpy(), want)
        outs = [mx.nd.zeros((4 * n, 5), ctx=d) for d in devs]
        tree.broadcast(0, mx.nd.array(want), outs)
        assert all(np.array_equal(o.asnumpy(), want) for o in outs)


@pytest.mark.requires_gpu(n=2)
@pytest.mark.parametrize("p2p", ["1", "0"])
def test_copies_between_real_gpus_take_the_p2p_route_or_the_host(monkeypatch, p2p):
    monkeypatch.setenv("MXNET_ENABLE_GPU_P2P", p2p)
    comm = CommDevice()
    vals = [mx.nd.ones((256,), ctx=mx.gpu(i)) for i in range(2)]
    assert comm.reduce(0, vals).asnumpy().tolist() == [2] * 256
    routes = set(comm.copier.bytes)
    assert routes <= ({"peer", "staged"} if p2p == "1" else {"staged"}) and routes


@pytest.mark.requires_gpu(n=2)
def test_tree_comm_on_real_gpus_equals_the_flat_comm():
    devs = [mx.gpu(i) for i in range(context.cuda_device_count())]
    vals = [mx.nd.ones((64, 3), ctx=d) * (i + 1) for i, d in enumerate(devs)]
    assert np.array_equal(CommTree().reduce(0, vals).asnumpy(),
                          CommDevice().reduce(0, vals).asnumpy())
