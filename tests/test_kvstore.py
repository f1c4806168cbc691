"""The local KVStore, read like MXNet's KVStore tutorial: each test shows a use
and checks its result."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError

SHAPE = (2, 3)


@pytest.fixture(params=["local", "device"])
def kv(request):
    with mx.kv.create(request.param) as kv:
        yield kv


def full(v, ctx=None, dtype="float32", shape=SHAPE):
    return mx.nd.ones(shape, ctx=ctx, dtype=dtype) * v


def test_init_then_pull_gives_the_initial_value(kv):
    kv.init("3", full(2))
    a = mx.nd.zeros(SHAPE)
    kv.pull("3", out=a)
    assert a.asnumpy().tolist() == [[2.0] * 3] * 2


def test_init_copies_so_later_changes_to_the_source_do_not_leak(kv):
    src = full(2)
    kv.init(3, src)
    src[:] = 100
    a = mx.nd.zeros(SHAPE)
    kv.pull(3, out=a)
    assert np.all(a.asnumpy() == 2)


def test_push_without_updater_overwrites(kv):
    kv.init("3", full(2))
    kv.push("3", full(8))
    a = mx.nd.zeros(SHAPE)
    kv.pull("3", out=a)
    assert np.all(a.asnumpy() == 8)


def test_push_from_three_devices_is_summed(kv):
    kv.init("3", full(2))
    b = [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) for i in range(3)]
    kv.push(["3", "3", "3"], b)
    a = mx.nd.zeros(SHAPE)
    kv.pull("3", a)
    assert np.all(a.asnumpy() == 3)


def test_a_list_of_values_for_one_key_is_summed(kv):
    kv.init(9, full(0))
    kv.push(9, [full(1, mx.cpu(0)), full(2, mx.cpu(1)), full(4, mx.cpu(2))])
    a = mx.nd.zeros(SHAPE)
    kv.pull(9, out=a)
    assert np.all(a.asnumpy() == 7)


def test_pushed_values_are_not_changed_by_the_push(kv):
    kv.init(1, full(0))
    vals = [full(1), full(2)]
    kv.push(1, vals)
    assert np.all(vals[0].asnumpy() == 1) and np.all(vals[1].asnumpy() == 2)


def test_pushing_the_same_array_twice_counts_it_twice(kv):
    kv.init(1, full(0))
    v = full(3)
    kv.push([1, 1], [v, v])
    a = mx.nd.zeros(SHAPE)
    kv.pull(1, out=a)
    assert np.all(a.asnumpy() == 6)


def test_pull_to_several_devices(kv):
    kv.init("3", full(3))
    outs = [mx.nd.ones(SHAPE, ctx=mx.cpu(i)) for i in range(2)]
    kv.pull(["3", "3"], outs)
    for i, o in enumerate(outs):
        assert o.context == mx.cpu(i)
        assert np.all(o.asnumpy() == 3)


def test_pulled_arrays_do_not_share_memory_with_the_store(kv):
    kv.init("3", full(3))
    a, b = mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
    kv.pull("3", a)
    a[:] = -1
    kv.pull("3", b)
    assert np.all(b.asnumpy() == 3)


def test_list_of_keys_with_list_of_lists(kv):
    ks = [5, 7, 9]
    kv.init(ks, [full(1)] * 3)
    kv.push(ks, [[full(1, mx.cpu(0)), full(i, mx.cpu(1))] for i in range(3)])
    outs = [[mx.nd.zeros(SHAPE, ctx=mx.cpu(j)) for j in range(2)] for _ in ks]
    kv.pull(ks, out=outs)
    for i, pair in enumerate(outs):
        for o in pair:
            assert np.all(o.asnumpy() == 1 + i)


def test_updater_runs_once_per_key_with_the_merged_value(kv):
    calls = []

    def update(key, merged, stored):
        calls.append((key, merged.asnumpy().copy()))
        stored += merged * 2

    kv.init("3", full(1))
    kv._set_updater(update)
    kv.push("3", [full(1, mx.cpu(i)) for i in range(3)])
    a = mx.nd.zeros(SHAPE)
    kv.pull("3", out=a)
    assert [c[0] for c in calls] == ["3"]
    assert np.all(calls[0][1] == 3)
    assert np.all(a.asnumpy() == 7)


def test_updater_order_follows_int_keys(kv):
    seen = []
    kv.init([3, 1, 2], [full(0)] * 3)
    kv._set_updater(lambda k, m, s: seen.append(k))
    kv.push([2, 3, 1], [full(1)] * 3)
    assert seen == [1, 2, 3]


def test_set_optimizer_sgd_updates_stored_weights(kv):
    kv.init(0, mx.nd.zeros((2, 2)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.push(0, mx.nd.ones((2, 2)))
    w = mx.nd.ones((2, 2))
    kv.pull(0, out=w)
    assert np.allclose(w.asnumpy(), -0.1)


def test_pushpull_pushes_then_pulls_into_the_values(kv):
    kv.init("w", full(0))
    vals = [full(1, mx.cpu(0)), full(2, mx.cpu(1))]
    kv.pushpull("w", vals)
    for v in vals:
        assert np.all(v.asnumpy() == 3)


def test_pushpull_into_separate_outs(kv):
    kv.init("w", full(0))
    out = mx.nd.zeros(SHAPE)
    v = full(5)
    kv.pushpull("w", v, out=out)
    assert np.all(out.asnumpy() == 5) and np.all(v.asnumpy() == 5)


def test_broadcast_inits_and_pulls(kv):
    outs = [mx.nd.zeros(SHAPE, ctx=mx.cpu(i)) for i in range(3)]
    kv.broadcast("b", full(4), out=outs)
    assert all(np.all(o.asnumpy() == 4) for o in outs)
    with pytest.raises(MXNetError, match="duplicate init"):
        kv.broadcast("b", full(4), out=outs)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "uint8"])
def test_dtypes_round_trip(kv, dtype):
    kv.init(1, mx.nd.ones(SHAPE, dtype=dtype))
    kv.push(1, [mx.nd.ones(SHAPE, dtype=dtype, ctx=mx.cpu(i)) for i in range(2)])
    out = mx.nd.zeros(SHAPE, dtype=dtype)
    kv.pull(1, out=out)
    assert np.dtype(out.dtype) == np.dtype(dtype)
    assert np.all(out.asnumpy() == 2)


def test_type_rank_and_workers():
    assert mx.kv.create("Local").type == "local"
    kv = mx.kv.create("local_allreduce_device")
    assert kv.type == "local_allreduce_device"
    assert kv._comm.name == "device"
    assert mx.kv.create()._comm.name == "cpu"
    assert (kv.rank, kv.num_workers) == (0, 1)
    assert kv.is_capable("optimizer")
    with pytest.raises(ValueError, match="Unknown capability"):
        kv.is_capable("teleport")


@pytest.mark.parametrize("name", ["dist_sync", "dist_async", "dist_device_sync", "nccl"])
def test_unavailable_types_fail_clearly(name):
    with pytest.raises(MXNetError, match=name):
        mx.kv.create(name)


def test_create_rejects_non_strings():
    with pytest.raises(TypeError):
        mx.kv.create(3)


def test_plugin_registration():
    @mx.kv.KVStoreBase.register
    class MyTinyStore(mx.kv.KVStoreBase):
        @property
        def type(self):
            return "mytinystore"

    assert type(mx.kv.create("MyTinyStore")) is MyTinyStore
    ts = mx.kv.create("teststore")
    out = mx.nd.zeros(SHAPE)
    ts.pushpull(0, [full(1), full(2)], out=out)
    assert np.all(out.asnumpy() == 3)
    assert ts.is_capable("optimizer") is False


def test_create_builds_a_registered_family_by_substring(monkeypatch):
    from mxkv.kvstore import base

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    made = []
    base.register_family("tinyfam", lambda name: made.append(name) or base.TestStore())
    assert type(mx.kv.create("my_TinyFam_sync")) is base.TestStore
    assert made == ["my_tinyfam_sync"]
    assert type(mx.kv.create("local")) is mx.kv.KVStore  # the other names: as before


def test_barrier_and_server_commands_are_local_noops(kv):
    kv.init(1, full(1))
    kv._barrier()
    kv._send_command_to_servers(0, "")
    assert kv.num_dead_node(0) == 0
    out = mx.nd.zeros(SHAPE)
    kv.pull(1, out=out)
    assert np.all(out.asnumpy() == 1)


def test_reduction_threads_and_chunks_give_the_exact_sum(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000")
    monkeypatch.setenv("MXNET_KVSTORE_REDUCTION_NTHREADS", "2")
    kv = mx.kv.create("local")
    assert kv._comm.reducer.bigarray_bound == 1000
    n = 300_001
    rng = np.random.default_rng(0)
    parts = [rng.integers(-50, 50, n).astype(np.float64) for _ in range(5)]
    kv.init(0, mx.nd.zeros((n,), dtype="float64"))
    kv.push(0, [mx.nd.array(p, ctx=mx.cpu(i), dtype="float64") for i, p in enumerate(parts)])
    out = mx.nd.zeros((n,), dtype="float64")
    kv.pull(0, out=out)
    assert np.array_equal(out.asnumpy(), sum(parts))


def test_bad_env_knob_is_reported(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "lots")
    with pytest.raises(MXNetError, match="MXNET_KVSTORE_BIGARRAY_BOUND"):
        mx.kv.create("local")


def test_closing_a_store_frees_its_comm_threads_and_twice_is_harmless():
    with mx.kv.create("local") as kv:
        kv._comm.reducer._executor()   # (the pool big reductions start)
        assert kv._comm.reducer._pool is not None
    assert kv._comm.reducer._pool is None
    kv.close()


@pytest.mark.parametrize("name", ["lcoal", "mystore", "sync", ""])
def test_an_unknown_store_type_is_refused_naming_the_known_ones(name):
    # MXNet makes a local store of any name without "dist"/"nccl" (a typo
    # passes unseen); mxkv refuses it: docs/parity.md, D28
    with pytest.raises(mx.base.MXNetValueError,
                       match=rf"unknown kvstore type {name!r}: known types are .*'device'.*"
                             r"'dist_sync'.*'local'.*'nccl'"):
        mx.kv.create(name)


@pytest.mark.parametrize("name", ["Local", "local_update_cpu", "local_allreduce_cpu",
                                  "local_allreduce_device", "device"])
def test_mxnets_local_type_names_still_make_local_stores(name):
    assert mx.kv.create(name).type == name.lower()
