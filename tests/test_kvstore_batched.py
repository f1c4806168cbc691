"""A batched push or pull of dense host keys runs as one batch on the reducer's
threads (``CommCPU.reduce_many``/``broadcast_many``, ``Reducer.run_shares``):
the sums and copies are the same as key by key, and the batch falls back to
key order whenever one key's writes touch memory another key uses."""
import threading

import numpy as np
import pytest

import mxkv as mx
from mxkv.kvstore.comm.reduce import SHARES_PER_THREAD, SMALL_PIECE, Reducer, _cut, disjoint
from mxkv.ndarray import NDArray

# Sizes that straddle the threads' shares and the 16-element cut bounds.
SIZES = [1, 7, 16, 33, 1000, 4097, 20_000, 65_536, 3, 120_001]


@pytest.fixture
def threaded(monkeypatch):
    """Stores whose batches go to two threads from 1,000 elements on."""
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "1000")
    monkeypatch.setenv("MXNET_KVSTORE_REDUCTION_NTHREADS", "2")


def _ints(rng, n, dtype):
    return rng.integers(-40, 40, n).astype(dtype)


@pytest.mark.parametrize("devices", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_batched_push_and_pull_give_each_keys_exact_sum(threaded, devices, dtype):
    rng = np.random.default_rng(devices)
    parts = [[_ints(rng, n, dtype) for _ in range(devices)] for n in SIZES]
    keys = [f"k{i}" for i in range(len(SIZES))]
    with mx.kv.create("local") as kv:
        assert kv._comm.reducer.nthreads == min(2, __import__("os").cpu_count())
        kv.init(keys, [mx.nd.zeros((n,), dtype=dtype) for n in SIZES])
        grads = [[mx.nd.array(p, ctx=mx.cpu(d), dtype=dtype) for d, p in enumerate(row)]
                 for row in parts]
        outs = [[mx.nd.zeros((n,), ctx=mx.cpu(d), dtype=dtype) for d in range(devices)]
                for n in SIZES]
        for _ in range(2):  # the second step: buffers kept from the first
            kv.push(keys, grads)
            kv.pull(keys, out=outs)
            for row, orow in zip(parts, outs):
                for o in orow:
                    assert np.array_equal(o.asnumpy(), sum(row))


def test_pulled_values_are_cast_to_each_outs_dtype_in_a_batch(threaded):
    with mx.kv.create("local") as kv:
        kv.init([0, 1], [mx.nd.ones((5000,)) * 3, mx.nd.ones((7000,)) * 5])
        o16 = mx.nd.zeros((5000,), dtype="float16")
        o64 = [mx.nd.zeros((7000,), dtype="float64"), mx.nd.zeros((7000,))]
        kv.pull([0, 1], out=[o16, o64])
        assert o16.dtype == np.float16 and set(o16.asnumpy().tolist()) == {3.0}
        assert all(set(o.asnumpy().tolist()) == {5.0} for o in o64)


# Keys 1 and 4 are big, 2 and 3 small: two equal shares would be 1 and 2 on one
# thread, 3 and 4 on the other, so 3 would be written while 1 is being copied,
# before 2 is.
BIG, SMALL = 2_000_000, SMALL_PIECE


def test_two_keys_pulled_into_one_array_end_as_the_later_key(threaded):
    with mx.kv.create("local") as kv:
        kv.init([1, 2, 3, 4], [mx.nd.ones((n,)) * i for i, n in
                               zip([1, 2, 3, 4], [BIG, SMALL, SMALL, BIG])])
        out = mx.nd.zeros((SMALL,))
        big = [mx.nd.zeros((BIG,)), mx.nd.zeros((BIG,))]
        kv.pull([3, 1, 4, 2], out=[out, big[0], big[1], out])  # int keys: sorted order
        assert set(out.asnumpy().tolist()) == {3.0}


def test_overlapping_views_of_one_buffer_are_written_in_key_order(threaded):
    buf = np.zeros(SMALL + SMALL // 2, np.float32)
    a = NDArray(buf[:SMALL], mx.cpu(0))
    b = NDArray(buf[SMALL // 2:], mx.cpu(0))
    keys = ["p", "a", "b", "q"]
    with mx.kv.create("local") as kv:
        kv.init(keys, [mx.nd.ones((n,)) * i for i, n in
                       zip([1, 2, 3, 4], [BIG, SMALL, SMALL, BIG])])
        kv.pull(keys, out=[mx.nd.zeros((BIG,)), a, b, mx.nd.zeros((BIG,))])  # init order
    assert set(buf[:SMALL // 2].tolist()) == {2.0}
    assert set(buf[SMALL // 2:].tolist()) == {3.0}


def _batches(kv, monkeypatch):
    """Record the batches the store's reducer runs as one (and run them)."""
    seen = []
    r = kv._comm.reducer
    for name in ("sum_many", "copy_many"):
        real = getattr(r, name)

        def spy(jobs, real=real, name=name):
            seen.append((name, len(jobs)))
            return real(jobs)
        monkeypatch.setattr(r, name, spy)
    return seen


def test_only_independent_batches_run_as_one(threaded, monkeypatch):
    with mx.kv.create("local") as kv:
        seen = _batches(kv, monkeypatch)
        kv.init([1, 2, 3], [mx.nd.ones((BIG,)) * i for i in (1, 2, 3)])
        outs = [mx.nd.zeros((BIG,)) for _ in range(3)]
        kv.push([1, 2, 3], [[mx.nd.ones((BIG,))] * 2] * 3)
        kv.pull([1, 2, 3], out=outs)
        assert seen == [("sum_many", 3), ("copy_many", 3)]
        seen.clear()
        kv.pull([1, 2, 3], out=[outs[0], outs[1], outs[0]])   # one out for keys 1 and 3
        kv.pull([1, 2], out=[outs[0], NDArray(outs[0]._array[:BIG], mx.cpu(0))])  # a view
        kv.push([1, 2], [[outs[2], outs[2]], [outs[2], outs[1]]])   # only read twice: fine
        assert seen == [("sum_many", 2)]
        seen.clear()
        kv.pull(1, out=outs[0])                            # one key: key by key, as before
        assert seen == []


def test_disjoint_views_of_one_buffer_are_still_summed_exactly(threaded):
    buf = np.zeros(40_000, np.float32)
    views = [NDArray(buf[i * 10_000:(i + 1) * 10_000], mx.cpu(0)) for i in range(4)]
    with mx.kv.create("local") as kv:
        kv.init(list(range(4)), [mx.nd.ones((10_000,)) * i for i in range(4)])
        kv.pull(list(range(4)), out=views)
        kv.push(list(range(4)), [[v, v] for v in views])
        kv.pull(list(range(4)), out=views)
    assert [set(buf[i * 10_000:(i + 1) * 10_000].tolist()) for i in range(4)] == \
        [{0.0}, {2.0}, {4.0}, {6.0}]


def test_a_pushed_array_that_is_also_an_out_sees_the_sum_only_after_the_push(threaded):
    # key 0's gradient is key 1's out: the pull of both comes after the push of both.
    with mx.kv.create("local") as kv:
        kv.init([0, 1], [mx.nd.zeros((8000,)), mx.nd.zeros((8000,))])
        g = mx.nd.ones((8000,))
        kv.push([0, 1], [[g, g], [mx.nd.ones((8000,)) * 5] * 2])
        o0 = mx.nd.zeros((8000,))
        kv.pull([0, 1], out=[o0, g])
        assert set(o0.asnumpy().tolist()) == {2.0}
        assert set(g.asnumpy().tolist()) == {10.0}


# ---------------------------------------------------------------- disjoint()
def _foreign(n):
    """A numpy array over memory numpy did not allocate (as pinned blocks are)."""
    return np.frombuffer(bytearray(4 * n), np.float32)


@pytest.mark.parametrize("make", [np.zeros, _foreign])
def test_disjoint_tells_overlapping_writes_from_shared_reads(make):
    buf = make(300)
    y, z, x = buf[0:100], buf[0:200], buf[50:60]
    other = make(10)
    assert disjoint([([y], [other]), ([z], [make(5)])])          # both only read buf
    assert not disjoint([([y], [other]), ([z], [x])])            # job 2 writes what job 1 reads
    assert not disjoint([([other], [buf[0:10]]), ([other], [buf[5:15]])])  # both write
    assert disjoint([([other], [buf[0:10]]), ([make(3)], [buf[10:20]])])   # side by side
    assert disjoint([([x], [x])])                                # within one job: its own order


def test_disjoint_sees_two_wrappers_of_one_memory():
    raw = bytearray(400)
    a = np.frombuffer(raw, np.float32)
    b = np.frombuffer(memoryview(raw), np.float32)[10:20]
    assert not disjoint([([], [a]), ([b], [])])
    assert disjoint([([], [a[:10]]), ([b], [])])


# ---------------------------------------------------------------- run_shares()
@pytest.mark.parametrize("nthreads", [2, 3, 4])
def test_shares_cover_every_range_once_in_order_with_equal_weight(nthreads):
    pieces = [(n, w, (i,)) for i, (n, w) in
              enumerate([(5, 2), (100_000, 3), (17, 4), (64_000, 2), (1, 6), (33_333, 3)])]
    shares = _cut(pieces, nthreads)
    assert len(shares) == nthreads
    flat = [(fn[0], lo, hi) for share in shares for fn, lo, hi in share]
    covered = {}
    for i, lo, hi in flat:
        assert lo < hi
        assert covered.get(i, 0) == lo  # each piece's ranges follow each other
        covered[i] = hi
    assert covered == {i: n for n, _, (i,) in pieces}
    weights = [sum((hi - lo) * pieces[fn[0]][1] for fn, lo, hi in s) for s in shares]
    assert max(weights) - min(weights) <= 2 * 16 * 6  # within two cuts' rounding


def test_run_shares_runs_every_share_once(monkeypatch):
    monkeypatch.setenv("MXNET_KVSTORE_BIGARRAY_BOUND", "10")
    monkeypatch.setenv("MXNET_KVSTORE_REDUCTION_NTHREADS", "2")
    r = Reducer()
    if r.nthreads < 2:
        pytest.skip("one core: the reducer runs one thread")
    seen, lock = [], threading.Lock()

    def fn(lo, hi):
        with lock:
            seen.append((threading.get_ident(), lo, hi))
    n = SMALL_PIECE + 1000
    small = []
    try:
        r.run_shares([(n, 2, fn), (7, 2, lambda lo, hi: small.append(
            (threading.get_ident(), lo, hi)))])
    finally:
        r.close()
    ranges = sorted((lo, hi) for _, lo, hi in seen)
    assert len(ranges) == 2 * SHARES_PER_THREAD
    bounds = [lo for lo, _ in ranges] + [n]
    assert [hi for _, hi in ranges] == bounds[1:] and bounds[0] == 0  # each element once
    assert all(b % 16 == 0 for b in bounds[:-1])                      # cut on cache lines
    assert small == [(threading.get_ident(), 0, 7)]  # a small piece: whole, on this thread
