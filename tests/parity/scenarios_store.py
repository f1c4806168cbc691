"""Parity scenarios for the store behaviours issue 7 settled: row-sparse
gradients under optimizers (lazy updates), row_ids nested like out, dtype
casts, and the deviations the differential suite steers around (D1-D16 in
docs/parity.md), each recorded from MXNet once here.

Registered into ``scenarios.SCENARIOS`` when ``scenarios`` is imported.
"""
from __future__ import annotations

import numpy as np

from .scenarios import RAISED, attempt, describe, row_ids, rsp, scenario, values

W6 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]


def _rsp_grad(mx, rows, scale=1.0, shape=(6, 2), ctx=None):
    data = [[scale * (r + 1), -scale * (r + 1)] for r in rows]
    return rsp(mx, data, rows, shape, ctx=ctx)


# --------------------------------------------------------------------------- item 1

def _lazy(mx, opt, pushes):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array(W6))
    kv.set_optimizer(opt)
    for p in pushes:
        kv.push(0, p)
    out = mx.nd.zeros((6, 2))
    kv.pull(0, out=out)
    return values(out)


@scenario()
def scenario_row_sparse_grad_dense_key_sgd_momentum_wd_lazy(mx):
    """Only the gradient's rows change: no weight decay or momentum elsewhere."""
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1)
    return _lazy(mx, opt, [_rsp_grad(mx, [1, 3]), _rsp_grad(mx, [1], 0.5)])


@scenario()
def scenario_row_sparse_grad_dense_key_sgd_several_devices(mx):
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.1)
    return _lazy(mx, opt, [[_rsp_grad(mx, [1], ctx=mx.cpu(0)),
                            _rsp_grad(mx, [2, 4], ctx=mx.cpu(1))]])


@scenario()
def scenario_row_sparse_grad_dense_key_adam_lazy(mx):
    opt = mx.optimizer.Adam(learning_rate=0.1, wd=0.1, rescale_grad=0.5)
    return _lazy(mx, opt, [_rsp_grad(mx, [0, 5]), _rsp_grad(mx, [5])])


@scenario()
def scenario_row_sparse_grad_dense_key_sgd_standard_update(mx):
    """lazy_update=False: every row decays."""
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1, lazy_update=False)
    return _lazy(mx, opt, [_rsp_grad(mx, [1, 3])])


@scenario()
def scenario_row_sparse_push_to_dense_key_then_row_sparse_pull(mx):
    """Without an updater a row-sparse push makes the key row sparse."""
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((6, 2)))
    kv.push(3, _rsp_grad(mx, [1, 4]))
    out = mx.nd.sparse.zeros("row_sparse", (6, 2))
    kv.row_sparse_pull(3, out=out, row_ids=row_ids(mx, [4, 0]))
    return describe(out)


# --------------------------------------------------------------------------- item 2

def _rsp_store(mx):
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [rsp(mx, W6, list(range(6)), (6, 2)),
                         rsp(mx, [[-x for x in r] for r in W6], list(range(6)), (6, 2))])
    return kv


@scenario()
def scenario_row_sparse_pull_row_ids_nested_like_out(mx):
    """Several keys, several outs each, one row_ids per out (MXNet's test_sparse_aggregator)."""
    kv = _rsp_store(mx)
    outs = [[mx.nd.sparse.zeros("row_sparse", (6, 2)) for _ in range(2)] for _ in range(2)]
    kv.row_sparse_pull(["a", "b"], out=outs,
                       row_ids=[[row_ids(mx, [0]), row_ids(mx, [5, 1])],
                                [row_ids(mx, [2, 2]), row_ids(mx, [3])]])
    return [[describe(o) for o in row] for row in outs]


@scenario()
def scenario_row_sparse_pull_one_row_ids_per_key(mx):
    kv = _rsp_store(mx)
    outs = [mx.nd.sparse.zeros("row_sparse", (6, 2)) for _ in range(2)]
    kv.row_sparse_pull(["a", "b"], out=outs, row_ids=[row_ids(mx, [1]), row_ids(mx, [4])])
    return [describe(o) for o in outs]


@scenario()
def scenario_row_sparse_pull_flat_row_ids_for_nested_outs_raises(mx):
    kv = _rsp_store(mx)

    def pull():
        outs = [[mx.nd.sparse.zeros("row_sparse", (6, 2)) for _ in range(2)] for _ in range(2)]
        kv.row_sparse_pull(["a", "b"], out=outs, row_ids=[row_ids(mx, [0]), row_ids(mx, [1])])
        return values(outs[0][0])

    return attempt(pull)


@scenario()
def scenario_row_sparse_pull_one_row_ids_for_several_keys_raises(mx):
    kv = _rsp_store(mx)

    def pull():
        outs = [mx.nd.sparse.zeros("row_sparse", (6, 2)) for _ in range(2)]
        kv.row_sparse_pull(["a", "b"], out=outs, row_ids=row_ids(mx, [0]))
        return values(outs[0])

    return attempt(pull)


@scenario()
def scenario_row_sparse_pull_empty_value_retains_nothing(mx):
    kv = mx.kv.create("local")
    kv.init("e", mx.nd.sparse.zeros("row_sparse", (6, 2)))
    out = mx.nd.sparse.zeros("row_sparse", (6, 2))
    kv.row_sparse_pull("e", out=out, row_ids=row_ids(mx, [1, 2]))
    return describe(out)


# --------------------------------------------------------------------------- item 3

@scenario()
def scenario_dtype_pull_into_several_dtypes(mx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.array([1.1, 2.5, 200.7]))
    outs = [mx.nd.zeros((3,), dtype=d) for d in ("float16", "float64", "int32", "uint8")]
    kv.pull(3, out=outs)
    return [describe(o) for o in outs]


@scenario()
def scenario_dtype_multi_value_push_casts_into_the_key_dtype(mx):
    """The first value has the key's dtype; the others are cast into its buffer."""
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros((2,), dtype="float16"))
    kv.push(3, [mx.nd.array([1, 2], dtype="float16"), mx.nd.array([0.5, 0.25], dtype="float64"),
                mx.nd.array([1, 1], dtype="float32", ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,), dtype="float16")
    kv.pull(3, out=out)
    return describe(out)


@scenario()
def scenario_dtype_custom_updater_sees_the_pushed_dtype(mx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,)))
    seen = []

    def update(key, grad, weight):
        seen.append(np.dtype(grad.dtype).name)
        weight += grad.astype(weight.dtype)

    kv._set_updater(update)
    kv.push(3, mx.nd.array([1, 2], dtype="float64"))
    kv.push(3, [mx.nd.array([1, 1]), mx.nd.array([2, 2], dtype="float16")])
    out = mx.nd.zeros((2,))
    kv.pull(3, out=out)
    return {"seen": seen, "out": values(out)}


@scenario(deviation="D7: MXNet hands the optimizer a gradient of another dtype than the weight; "
                    "the update fails inside the callback and is dropped silently (mxkv raises "
                    "and changes nothing)")
def scenario_dtype_optimizer_one_value_of_another_dtype(mx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))

    def push():
        kv.push(3, mx.nd.ones((2,), dtype="float64"))
        mx.nd.waitall()
        out = mx.nd.zeros((2,))
        kv.pull(3, out=out)
        return values(out)

    return attempt(push)


@scenario(deviation="D10: MXNet fails a multi-value push whose first value has another dtype "
                    "than the key; mxkv casts every value",
          mxkv_expected={"raises": False, "result": [3.5, 4.5]})
def scenario_dtype_multi_value_push_first_of_another_dtype(mx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros((2,)))

    def push():
        kv.push(3, [mx.nd.array([1, 2], dtype="float64"), mx.nd.array([2.5, 2.5])])
        out = mx.nd.zeros((2,))
        kv.pull(3, out=out)
        return values(out)

    return attempt(push)


# --------------------------------------------------------------------------- deviations

@scenario(mxnet_skip="D2: a multi-value push with more values than the key's first multi-value "
                     "push segfaults MXNet 1.9.1 (CommCPU sizes its copy buffers once)",
          expected={"raises": False, "result": [6.0, 6.0]})
def scenario_multi_value_push_growing_device_count(mx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((2,)))

    def push():
        kv.push(0, [mx.nd.ones((2,), ctx=mx.cpu(i)) for i in range(2)])
        kv.push(0, [mx.nd.ones((2,), ctx=mx.cpu(i)) * 1.5 for i in range(4)])
        out = mx.nd.zeros((2,))
        kv.pull(0, out=out)
        return values(out)

    return attempt(push)


@scenario(deviation="D3: MXNet refuses a multi-value push whose first value's storage type "
                    "differs from the key's earlier multi-value pushes; mxkv sums it",
          mxkv_expected={"raises": False, "result": [[0.0, 0.0], [4.0, -4.0], [0.0, 0.0],
                                                      [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]})
def scenario_multi_value_pushes_of_changing_storage_type(mx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((6, 2)))

    def push():
        kv.push(0, [mx.nd.ones((6, 2), ctx=mx.cpu(i)) for i in range(2)])
        kv.push(0, [_rsp_grad(mx, [1], ctx=mx.cpu(i)) for i in range(2)])
        out = mx.nd.zeros((6, 2))
        kv.pull(0, out=out)
        return values(out)

    return attempt(push)


@scenario(deviation="D14: after a multi-value push without an updater MXNet's stored value is "
                    "its merge buffer, so the next multi-value push through an optimizer "
                    "overwrites the weight with the gradient before updating it",
          mxkv_expected=[9.8, 9.8])
def scenario_optimizer_after_a_push_without_updater(mx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((2,)))
    kv.push(0, [mx.nd.ones((2,)) * 5, mx.nd.ones((2,), ctx=mx.cpu(1)) * 5])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.push(0, [mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    return values(out)


@scenario(deviation="D12: MXNet remembers a key a failed pull named, and a later init of it "
                    "raises 'duplicate init'; mxkv inits it",
          mxkv_expected={"raises": False, "result": [7.0]})
def scenario_init_after_a_failed_pull_of_the_key(mx):
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((1,)))
    attempt(lambda: kv.pull(9, out=mx.nd.zeros((1,))))

    def init():
        kv.init(9, mx.nd.ones((1,)) * 7)
        out = mx.nd.zeros((1,))
        kv.pull(9, out=out)
        return values(out)

    return attempt(init)


@scenario(deviation="D8: a batched push naming an unknown int key: MXNet pushes the other keys "
                    "and raises; mxkv raises and pushes nothing",
          mxkv_expected={"push": RAISED, "after": [[1.0], [1.0]]})
def scenario_batched_push_with_an_unknown_key(mx):
    kv = mx.kv.create("local")
    kv.init([1, 2], [mx.nd.ones((1,))] * 2)
    push = attempt(lambda: kv.push([1, 99, 2], [mx.nd.ones((1,)) * 5] * 3))
    outs = [mx.nd.zeros((1,)) for _ in range(2)]
    kv.pull([1, 2], out=outs)
    return {"push": push, "after": [values(o) for o in outs]}


@scenario(deviation="D13: MXNet's copy between storage types handles float32 only: pulling a "
                    "float16 row_sparse key into a dense out raises; mxkv converts",
          mxkv_expected={"raises": False, "result": [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]})
def scenario_float16_row_sparse_key_pulled_into_a_dense_out(mx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.sparse.row_sparse_array(
        (np.array([[1, 2]], dtype=np.float16), np.array([1], dtype=np.int64)), shape=(3, 2),
        dtype="float16"))

    def pull():
        out = mx.nd.zeros((3, 2), dtype="float16")
        kv.pull(0, out=out)
        return values(out)

    return attempt(pull)


@scenario(deviation="D11: MXNet prints and ignores an exception raised by a Python updater; "
                    "mxkv lets it propagate")
def scenario_updater_that_raises(mx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))

    def bad(key, grad, weight):
        raise ValueError("boom")

    kv._set_updater(bad)

    def push():
        kv.push(0, mx.nd.ones((2,)))
        mx.nd.waitall()
        return True

    return attempt(push)


@scenario()
def scenario_errors_are_runtime_errors(mx):
    """MXNet code catches MXNetError as a RuntimeError."""
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.ones((1,)))
    caught = []
    for call in (lambda: kv.pull(5, out=mx.nd.zeros((1,))),
                 lambda: kv.init(1, mx.nd.ones((1,)))):
        try:
            call()
            mx.nd.waitall()
            caught.append("no error")
        except RuntimeError as exc:
            caught.append(type(exc).__name__)
    return {"subclass": issubclass(mx.base.MXNetError, RuntimeError), "caught": caught}
