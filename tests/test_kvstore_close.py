"""A store's lifetime: close() releases what it holds, once; a closed store
refuses every operation by name; ``with`` closes it."""
import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import settings

import mxkv as mx
from mxkv.base import MXNetError

# Stores made by the memory test under tracemalloc (a few seconds for 1000):
# 1000 in `make test`, 250 in `make test-fast` (its hypothesis profile draws
# fewer examples too); the bound is per store either way.
STORES = 1000 if settings().max_examples >= 1000 else 250


def _used(kv, n=4, size=16 * 1024):
    kv.init(list(range(n)), [mx.nd.ones((size,)) for _ in range(n)])
    kv.push(0, [mx.nd.ones((size,)), mx.nd.ones((size,))])
    out = mx.nd.zeros((size,))
    kv.pull(0, out=out)
    return out


def test_a_with_block_closes_the_store():
    with mx.kv.create("local") as kv:
        out = _used(kv)
        assert np.all(out.asnumpy() == 2)
    assert kv._store_closed and kv._comm.closed


def test_close_is_idempotent():
    kv = mx.kv.create("local")
    _used(kv)
    kv.close()
    kv.close()
    assert kv._comm.closed


@pytest.mark.parametrize("call", [
    lambda kv: kv.push(0, mx.nd.ones((2,))),
    lambda kv: kv.pull(0, out=mx.nd.ones((2,))),
    lambda kv: kv.init(9, mx.nd.ones((2,))),
    lambda kv: kv.pushpull(0, mx.nd.ones((2,))),
    lambda kv: kv.set_optimizer(mx.optimizer.create("sgd")),
])
def test_a_closed_store_refuses_operations_naming_the_store(call):
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.ones((2,)))
    kv.close()
    with pytest.raises(MXNetError, match=r"kvstore 'device' \(KVStore at 0x[0-9a-f]+\) is closed"):
        call(kv)
    assert kv.type == "device" and isinstance(kv, mx.kv.KVStore)


def test_closing_one_store_leaves_another_working():
    a, b = mx.kv.create("local"), mx.kv.create("local")
    a.init(0, mx.nd.ones((3,)))
    b.init(0, mx.nd.ones((3,)) * 2)
    a.close()
    out = mx.nd.zeros((3,))
    b.pull(0, out=out)
    assert np.all(out.asnumpy() == 2)


def _traced_growth(make, n):
    kept = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            kept.append(make())
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_thousand_stores_used_closed_and_kept_cost_what_empty_ones_do():
    """Each store holds 4 x 64 KB of values while open and stays referenced
    after close: memory stays flat only if close frees what it held, down to
    the footprint of a store that was never used (its lock table). A
    thousand stores in `make test` (STORES)."""
    def used_and_closed():
        kv = mx.kv.create("local")
        _used(kv)
        kv.close()
        return kv

    for _ in range(20):  # warm caches (thread pools, interned names)
        used_and_closed()
    empty = _traced_growth(lambda: mx.kv.create("local"), STORES)
    closed = _traced_growth(used_and_closed, STORES)
    print(f"\n{STORES} stores kept: empty {empty / STORES:.0f} B each, used and closed "
          f"{closed / STORES:.0f} B each")
    # an open used store holds > 256 KB; closed, it may keep 1 KB more than an empty one
    assert closed < empty + STORES * 1024, (empty, closed)


def test_a_thousand_stores_created_used_and_closed_leave_rss_flat():
    import resource

    def rss_kib():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))

    for _ in range(50):
        with mx.kv.create("local") as kv:
            _used(kv)
    gc.collect()
    before = rss_kib()
    for _ in range(1000):
        with mx.kv.create("local") as kv:
            _used(kv)
    gc.collect()
    grown = rss_kib() - before
    print(f"\nRSS after 1000 more stores: {grown:+d} KiB "
          f"(peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB)")
    assert grown < 8 * 1024, f"RSS grew {grown} KiB over 1000 stores"


def test_the_bridge_release_closes_a_store(tmp_path):
    import json

    from mxkv.bridge import Arena, EngineFacade

    f = EngineFacade(arena=Arena(str(tmp_path)))
    try:
        res = f.call("kv.create", json.dumps(["device"]))
        assert res[0] == "o", res
        h = json.loads(res[1:])[0]
        kv = f._objects[h]
        assert f.call("release", json.dumps([[h]]))[0] == "o"
        assert kv._store_closed and kv._comm.closed
    finally:
        f.close()
