"""2-bit compression on a device store: each device's gradient is quantized
with its own residual (error feedback) before the sum."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError

SHAPE = (4, 4)


def test_compression_is_refused_on_local_stores():
    for name in ["local", "local_allreduce_cpu"]:
        with pytest.raises(MXNetError, match="not supported for this type"):
            mx.kv.create(name).set_gradient_compression({"type": "2bit", "threshold": 0.5})


@pytest.mark.parametrize("params,msg", [
    ({"type": "3bit"}, "Unknown type"),
    ({"type": "2bit", "threshold": 0}, "threshold"),
    ({"type": "2bit", "threshold": -1}, "threshold"),
    ("2bit", "param_dict"),
    ({"threshold": 0.5}, "type"),
])
def test_bad_compression_params_are_refused_and_change_nothing(params, msg):
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match=msg):
        kv.set_gradient_compression(params)
    kv.push(0, mx.nd.ones(SHAPE) * 0.3)  # uncompressed: stored exactly
    out = mx.nd.zeros(SHAPE)
    kv.pull(0, out=out)
    assert np.allclose(out.asnumpy(), 0.3)


def test_two_bit_push_sends_threshold_multiples_and_keeps_residuals():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, mx.nd.zeros(SHAPE))
    out = mx.nd.zeros(SHAPE)
    # 0.3 per push: below threshold once, crosses on the second push (0.6 >= 0.5)
    kv.push(0, mx.nd.ones(SHAPE) * 0.3)
    kv.pull(0, out=out)
    assert np.all(out.asnumpy() == 0)
    kv.push(0, mx.nd.ones(SHAPE) * 0.3)
    kv.pull(0, out=out)
    assert np.all(out.asnumpy() == 0.5)


def test_two_bit_from_three_devices_sums_dequantized_values():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", mx.nd.zeros(SHAPE))
    vals = [mx.nd.ones(SHAPE, ctx=mx.cpu(0)) * 0.7,     # -> +0.5
            mx.nd.ones(SHAPE, ctx=mx.cpu(1)) * -2.0,    # -> -0.5
            mx.nd.ones(SHAPE, ctx=mx.cpu(2)) * 0.1]     # -> 0
    kv.push("w", vals)
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    assert np.all(out.asnumpy() == 0.0)
    kv.push("w", vals)  # residuals: 0.2+0.7=0.9 -> 0.5 ; -1.5-2 -> -0.5 ; 0.2 -> 0
    kv.pull("w", out=out)
    assert np.all(out.asnumpy() == 0.0)
    kv.push("w", [v * 0 for v in vals[:2]] + [mx.nd.ones(SHAPE, ctx=mx.cpu(2)) * 0.4])
    kv.pull("w", out=out)  # dev0 residual 0.4 -> 0; dev1 -3.0 -> -0.5; dev2 0.6 -> +0.5
    assert np.all(out.asnumpy() == 0.0)


def test_compression_needs_float32():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros(SHAPE, dtype="float64"))
    with pytest.raises(MXNetError, match="float32"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})


def test_compressed_push_with_optimizer():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 1.0})
    kv.init(0, mx.nd.zeros(SHAPE))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.push(0, [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) * 1.5 for i in range(2)])
    out = mx.nd.zeros(SHAPE)
    kv.pull(0, out=out)
    assert np.allclose(out.asnumpy(), -0.1 * 2.0)
