"""The same-host data path (shm.py): pushes and pulls through reused shared
segments give the object store's results, segments are reused once durable
and removed at the end, and a pull that raced with a rewrite asks again."""
from __future__ import annotations

import os

import numpy as np
import pytest

import mxkv as mx
from mxkv.kvstore.dist.shm import HEADER, Publisher, PushPool, Reader, layout

SPLIT = {"MXNET_KVSTORE_BIGARRAY_BOUND": "100"}


# ---------------------------------------------------------------- units
def test_layout_aligns_every_part_after_the_header():
    parts, size = layout([np.zeros(3, np.float32), np.zeros((2, 5), np.float64)])
    assert parts == [(HEADER, "<f4", (3,)), (HEADER + 64, "<f8", (2, 5))]
    assert size == HEADER + 64 + 128


def test_a_push_segment_is_reused_only_after_its_release(tmp_path):
    pool = PushPool(str(tmp_path), "w0-s0")
    a, b = np.arange(5, dtype=np.float32), np.ones((2, 2), np.float32)
    batch1, release1 = pool.pack([a, b])
    batch2, release2 = pool.pack([a * 2, b])
    assert batch1.path != batch2.path and pool.segments == 2
    got = Reader().views(batch1)
    np.testing.assert_array_equal(got[0], a)     # not overwritten by the second pack
    np.testing.assert_array_equal(got[1], b)
    assert not got[0].flags.writeable            # shards map segments read-only
    release1()
    release1()                                   # a second release is a no-op
    batch3, _ = pool.pack([a * 3, b])
    assert batch3.path == batch1.path and pool.segments == 2
    pool.close()
    assert os.listdir(tmp_path) == []


def test_a_reader_tells_when_a_published_segment_was_rewritten(tmp_path):
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=1 << 20)
    reader = Reader()
    first = pub.publish(("a",), [np.full(4, 1.0, np.float32)])
    np.testing.assert_array_equal(reader.views(first)[0], 1.0)
    assert reader.still(first)
    pub.publish(("a",), [np.full(4, 2.0, np.float32)])     # the ring's other segment
    assert reader.still(first)
    third = pub.publish(("a",), [np.full(4, 3.0, np.float32)])   # first's segment again
    assert third.path == first.path and not reader.still(first) and reader.still(third)
    pub.close()
    assert os.listdir(tmp_path) == []


def test_a_pinned_publication_is_not_written_over_and_its_segment_is_used_again(tmp_path):
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=1 << 20)
    reader = Reader()
    first = pub.publish(("a",), [np.full(4, 1.0, np.float32)])
    pinned = pub.pin(first)                                  # the checkpoint writer's
    pub.publish(("a",), [np.full(4, 2.0, np.float32)])
    third = pub.publish(("a",), [np.full(4, 3.0, np.float32)])   # first's turn in the ring
    assert third.path != first.path                          # ... taken by a new segment
    np.testing.assert_array_equal(pinned[0], 1.0)
    np.testing.assert_array_equal(reader.views(third)[0], 3.0)
    assert len(os.listdir(tmp_path)) == 3
    pub.unpin(first.path)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 3                     # first's segment kept for the next pin
    # each checkpoint after: a pin, two publications, the unpin; the segment
    # unpinned last takes the pinned one's place, no new one is made
    for value in range(4, 10):
        batch = pub.publish(("a",), [np.full(4, float(value), np.float32)])
        held = pub.pin(batch)
        after = [pub.publish(("a",), [np.full(4, float(value) + 0.5, np.float32)])
                 for _ in range(2)]
        np.testing.assert_array_equal(held[0], value)       # not written over
        np.testing.assert_array_equal(reader.views(after[-1])[0], value + 0.5)
        pub.unpin(batch.path)
        assert sorted(os.listdir(tmp_path)) == files
    assert not reader.still(first)     # a reader of first's old values is told
    pub.close()
    assert os.listdir(tmp_path) == []


def test_a_publishers_unpinned_segments_go_first_when_over_its_bytes(tmp_path):
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=4 * (HEADER + 64))   # 4 segments
    first = pub.publish(("a",), [np.zeros(4, np.float32)])
    pub.pin(first)
    pub.publish(("a",), [np.ones(4, np.float32)])
    pub.publish(("a",), [np.ones(4, np.float32)])             # first detached: 3 segments
    pub.unpin(first.path)                                    # kept: within max_bytes
    assert len(os.listdir(tmp_path)) == 3
    other = pub.publish(("b",), [np.ones(4, np.float32)])     # a ring of 2 more: over
    assert first.path not in {os.path.join(str(tmp_path), f) for f in os.listdir(tmp_path)}
    assert len(os.listdir(tmp_path)) == 4 and os.path.exists(other.path)
    pub.close()
    assert os.listdir(tmp_path) == []


def test_a_push_pool_keeps_a_few_free_segments_and_removes_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(PushPool, "MAX_FREE_BYTES", 0)    # (the count alone)
    pool = PushPool(str(tmp_path), "w0-s0")
    held = [pool.pack([np.full(8, i, np.float32)]) for i in range(7)]   # a burst in flight
    assert pool.segments == 7 and len(os.listdir(tmp_path)) == 7
    for batch, release in held:
        np.testing.assert_array_equal(Reader().views(batch)[0], float(held.index((batch, release))))
        release()
        release()                          # (a second release does nothing)
    assert pool.segments == PushPool.MAX_FREE == len(os.listdir(tmp_path))
    batch, release = pool.pack([np.ones(8, np.float32)])   # reuses one of them
    assert pool.segments == PushPool.MAX_FREE and batch.path in {
        os.path.join(str(tmp_path), f) for f in os.listdir(tmp_path)}
    pool.close()
    assert os.listdir(tmp_path) == []


def test_a_push_pool_keeps_free_segments_within_its_byte_budget(tmp_path, monkeypatch):
    # a round's chunks (7 segments) come back together once durable: all kept,
    # and the next round's chunks reuse them; past the budget they go
    monkeypatch.setattr(PushPool, "MAX_FREE_BYTES", 6 * (HEADER + 4096))
    pool = PushPool(str(tmp_path), "w0-s0")
    held = [pool.pack([np.full(1024, i, np.float32)]) for i in range(7)]
    paths = {b.path for b, _ in held}
    for _, release in held:
        release()
    assert pool.segments == 6 == len(os.listdir(tmp_path))   # the 7th went past the budget
    again = [pool.pack([np.zeros(1024, np.float32)]) for _ in range(6)]
    assert {b.path for b, _ in again} <= paths and pool.segments == 6   # none made anew
    pool.close()
    assert os.listdir(tmp_path) == []


def test_publisher_drops_least_recently_used_rings_past_its_budget(tmp_path):
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=3 * (HEADER + 4096))
    for name in ("a", "b", "c"):
        pub.publish((name,), [np.zeros(1024, np.float32)])
    assert len(os.listdir(tmp_path)) == 2        # one ring (two segments) fits
    pub.close()


# ---------------------------------------------------------------- jobs
def pushes_ahead_then_pulls(kv, mx, rounds):
    """Several rounds pushed before any pull: each round's segment must stay
    intact while the shard holds it in a pending round."""
    shapes = [(30, 10), (7,), (3, 3)]
    keys = list(range(len(shapes)))
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    for i in range(rounds):
        kv.push(keys, [mx.nd.ones(s) * (kv.rank + 1) * (i + 1) for s in shapes])
    outs = [mx.nd.zeros(s) for s in shapes]
    kv.pull(keys, out=outs)
    pools = kv._transport.pools
    segments = sum(p.segments for p in pools.values())
    files = sorted(os.listdir(next(iter(pools.values())).directory)) if pools else []
    return [o.asnumpy() for o in outs], segments, files


@pytest.mark.parametrize("shm", ["1", "0", "0-ray"])
def test_rounds_pushed_ahead_give_the_closed_form_on_both_paths(jobs, shm):
    rounds = 5
    job = jobs.job(2, 2)
    # without shared memory, chunks go over TCP (bulk.py, sent from push
    # segments) or, with MXKV_BULK_TRANSPORT=ray, through the object store
    results = jobs.run(job, pushes_ahead_then_pulls, rounds,
                       env={"MXKV_SHM": shm[0], **SPLIT,
                            "MXKV_BULK_TRANSPORT": "ray" if shm == "0-ray" else "tcp"})
    want = 3.0 * rounds    # the last round: (1 + 2) * rounds
    for outs, segments, files in results:
        for o in outs:
            np.testing.assert_array_equal(o, want)
        if shm != "0-ray":
            assert segments >= 2 and files   # segments for both shards
        else:
            assert segments == 0


def reuse_and_cleanup(kv, mx):
    kv.init("w", mx.nd.zeros((50, 20)))
    out = mx.nd.zeros((50, 20))
    for i in range(8):
        kv.push("w", mx.nd.ones((50, 20)) * (i + 1))
        kv.pull("w", out=out)
    kv._chan.reap(block=True)
    pool = kv._transport.pools[0]
    mine = [f for f in os.listdir(pool.directory) if f.startswith(pool.prefix)]
    segments = pool.segments
    value = float(out.asnumpy().max())
    kv.close()
    left = [f for f in os.listdir(pool.directory) if f.startswith(pool.prefix)] \
        if os.path.isdir(pool.directory) else []
    return segments, len(mine), value, left


def test_push_segments_are_reused_once_durable_and_removed_at_close(jobs):
    # MXKV_KEEP_BYTES below one round's push: every round's pull answers once
    # its checkpoint is written, so the next push finds the segment durable and
    # reuses it. (With checkpoints merely every round, how many segments turn
    # depends on how far the shard's writer lags: 4 under a loaded CI.)
    job = jobs.job(1, 1, shard_env={"MXKV_KEEP_BYTES": "1000", "MXKV_CHECKPOINT_ROUNDS": "100"})
    segments, files, value, left = jobs.run(job, reuse_and_cleanup)[0]
    assert value == 8.0
    assert segments == 1 and files == 1   # 8 rounds, one segment in turn
    assert left == []


def big_rounds(kv, mx):
    kv.init("w", mx.nd.zeros((64, 1024)))
    grad, out = mx.nd.ones((64, 1024)) * (kv.rank + 1), mx.nd.zeros((64, 1024))
    counts = []
    for _ in range(30):
        kv.push("w", grad)
        kv.pull("w", out=out)
        counts.append(sum(p.segments for p in kv._transport.pools.values()))
    return counts, float(out.asnumpy().min())


def test_every_workers_pull_waits_for_a_forced_checkpoint_so_one_segment_serves(jobs):
    # MXKV_KEEP_BYTES below one round's pushes: every round forces a
    # checkpoint, and each worker's pull answers once it is written, so each
    # worker reuses one push segment (when only the first puller waited, the
    # other made a second segment: another copy of a big key)
    job = jobs.job(2, 1, shard_env={"MXKV_KEEP_BYTES": "1000", "MXKV_CHECKPOINT_ROUNDS": "100"})
    for counts, value in jobs.run(job, big_rounds):
        assert value == 3.0
        assert counts == [1] * 30, counts


def raced_pull(kv, mx):
    kv.init(["a", "b"], [mx.nd.zeros((4,)), mx.nd.zeros((300,))])
    kv.push(["a", "b"], [mx.nd.ones((4,)) * (kv.rank + 1), mx.nd.ones((300,)) * 2])
    calls = []
    transport = kv._transport
    real = transport._fetch

    def fetch(groups, fast):
        calls.append(dict(fast))
        return real(groups, fast)
    transport._fetch = fetch
    transport.reader.still = lambda batch: False    # as if every segment was rewritten meanwhile
    a, b = mx.nd.zeros((4,)), mx.nd.zeros((300,))
    kv.pull(["a", "b"], out=[a, b])
    return calls, a.asnumpy().tolist(), float(b.asnumpy().min()), float(b.asnumpy().max())


def test_a_pull_that_raced_with_a_rewrite_asks_again_through_the_object_store(jobs):
    job = jobs.job(2, 2)
    for calls, a, lo, hi in jobs.run(job, raced_pull, env=SPLIT):
        assert calls[0] and all(calls[0].values())       # first through shared memory
        assert calls[-1] and not any(calls[-1].values())  # then through the object store
        assert a == [3.0] * 4 and lo == hi == 4.0


def test_a_big_pulled_batch_is_unmapped_once_read_and_reads_the_same_again(tmp_path,
                                                                           monkeypatch):
    from mxkv.kvstore.dist import shm

    monkeypatch.setattr(shm, "FORGET_BYTES", 1)
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=1 << 30)
    reader = Reader()
    value = np.arange(300_000, dtype=np.float32)
    batch = pub.publish(("a",), [value])
    np.testing.assert_array_equal(reader.views(batch)[0], value)
    reader.done(batch)                          # the pages leave this process's mapping
    np.testing.assert_array_equal(reader.views(batch)[0], value)   # not the file's data
    assert reader.still(batch)
    pub.close()


def bounded_inits(kv, mx):
    """Record which of rank 0's inits waited for the ones in flight."""
    waits = []
    real = kv._chan.reap

    def reap(block=False):
        if block:
            waits.append(len(log))
        return real(block)
    kv._chan.reap = reap
    log = []
    for name, n in [("big", 20000), ("small", 100), ("next", 100)]:
        log.append(name)
        kv.init(name, mx.nd.ones((n,)))    # 80000, 400, 400 bytes
    log.append("push")
    kv.push("small", mx.nd.ones((100,)))
    out = mx.nd.zeros((20000,))
    kv.pull("big", out=out)
    return list(waits), float(out.asnumpy().min())   # (a copy: close waits too)


def test_an_init_waits_for_those_in_flight_only_when_it_would_pass_the_bound(jobs):
    # MXKV_KEEP_BYTES=50000: the first init (80000 bytes, nothing in flight)
    # is sent and not waited for; the second would take what is in flight
    # past the bound, so it waits first; the third fits beside the second;
    # the first push waits for the inits in flight
    job = jobs.job(1, 1)
    (waits, value), = jobs.run(job, bounded_inits, env={"MXKV_KEEP_BYTES": "50000"})
    assert waits == [2, 4], waits     # (indexes into: big, small, next, push)
    assert value == 1.0


def sums_then_sgd(kv, mx):
    """Three rounds of plain sums, then three with SGD on the servers; the
    shard's counters after each half."""
    import ray
    shape = (64, 1024)
    kv.init("w", mx.nd.zeros(shape))
    grad, out = mx.nd.ones(shape) * (kv.rank + 1), mx.nd.zeros(shape)
    seen = []
    for i in range(6):
        if i == 3:
            kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5))
        kv.push("w", grad)
        kv.pull("w", out=out)
        if i in (2, 5):
            kv._barrier()
            seen.append(ray.get(kv._chan.shards[0].stats.remote()))
            kv._barrier()
    return seen, out.asnumpy()


def test_sums_are_written_into_the_pull_segment_and_an_updater_gets_its_own_copy(jobs):
    # without an updater each round is summed straight into a pull segment,
    # which holds the stored value (the pull copies nothing on the shard);
    # an optimizer set later writes in place, so the value moves out first
    job = jobs.job(2, 1)
    (seen, got), (_, got1) = jobs.run(job, sums_then_sgd)
    plain, sgd = seen
    assert plain["sums_published"] == 3 and plain["publish_copies"] == 0, plain
    assert plain["in_segments"] == 1
    assert sgd["sums_published"] == 3 and sgd["in_segments"] == 0, sgd
    local = mx.kv.create("local")
    local.init("w", mx.nd.zeros((64, 1024)))
    for i in range(6):
        if i == 3:
            local.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5))
        local.push("w", [mx.nd.ones((64, 1024)), mx.nd.ones((64, 1024)) * 2])
    want = mx.nd.zeros((64, 1024))
    local.pull("w", out=want)
    np.testing.assert_array_equal(got, want.asnumpy())
    np.testing.assert_array_equal(got1, want.asnumpy())


def two_batches(kv, mx):
    kv.init(["a", "b"], [mx.nd.zeros((300, 100)), mx.nd.zeros((200, 100))])
    got = []
    for i in range(5):
        for k, shape in (("a", (300, 100)), ("b", (200, 100))):
            kv.push(k, mx.nd.ones(shape) * (kv.rank + 1) * (i + 1))
            out = mx.nd.zeros(shape)
            kv.pull(k, out=out)
            got.append((float(out.asnumpy().min()), float(out.asnumpy().max())))
    return got


def test_summed_values_outlive_their_pull_segments_being_dropped(jobs):
    # MXKV_SHM_PUBLISH_BYTES=1: each publication drops the other key's pull
    # segments, though they hold that key's stored value (it stays mapped)
    job = jobs.job(2, 1, shard_env={"MXKV_SHM_PUBLISH_BYTES": "1"})
    for got in jobs.run(job, two_batches):
        assert got == [(3.0 * (i + 1),) * 2 for i in range(5) for _ in range(2)], got


def test_parts_are_grouped_by_the_rings_they_already_have(tmp_path):
    pub = Publisher(str(tmp_path), "shard0-x", max_bytes=1 << 20)
    four = np.zeros(4, np.float32)
    pub.end(*pub.begin(("b", "a"), [four, four]))
    pub.end(*pub.begin(("c",), [four]))
    made = len(os.listdir(tmp_path))
    assert pub.groups(["a", "b"]) == [("b", "a")]            # the same set, in its ring's order
    assert pub.groups(["c", "a", "b", "d"]) == [("c",), ("b", "a"), ("d",)]
    assert pub.groups(["a"]) == [("a",)]                     # some of a ring: one of its own
    assert pub.groups(["d", "e"]) == [("d", "e")]
    assert len(os.listdir(tmp_path)) == made                 # (asking makes no segment)
    pub.close()
