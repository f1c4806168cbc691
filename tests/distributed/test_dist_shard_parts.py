"""The server shard's parts, without Ray: its durability book and its sum
publication (a real local store, real pull segments in a temporary directory;
the object store is a function that copies, as ``ray.put`` does)."""
from __future__ import annotations

import numpy as np
import pytest

import mxkv as mx
from mxkv.kvstore.compression import GradientCompression
from mxkv.kvstore.dist.durability import Durability
from mxkv.kvstore.dist.messages import RowSparse
from mxkv.kvstore.dist.publication import Publication
from mxkv.kvstore.dist.shm import Publisher, Reader


# ---------------------------------------------------------------- durability
def test_a_checkpoint_is_due_after_every_changes_and_written_at_the_next():
    dur = Durability(every=3, keep_bytes=1 << 30)
    dur.mark("w", "value")
    assert [dur.changed(), dur.changed(), dur.changed()] == [False, False, False]
    assert dur.due
    assert dur.changed() is True      # the next change writes it
    taken = dur.take()
    assert taken.dirty == {"w": {"value"}} and not dur.due
    assert dur.take().empty()         # the counts start again
    assert dur.changed(force=True) is True


def test_a_round_in_many_messages_counts_once_per_part():
    # a round streamed in chunks (or pushed a key at a time) reaches a shard
    # in many messages: MXKV_CHECKPOINT_ROUNDS counts rounds of a part
    dur = Durability(every=2, keep_bytes=1 << 30)
    assert [dur.changed(names=[n]) for n in "abc"] == [False] * 3   # round 1, 3 chunks
    assert not dur.due
    assert dur.changed(names=["a", "b"]) is False     # round 2 of a and b
    assert dur.due
    assert dur.changed(names=["c"]) is True           # written at the next change
    dur.take()
    assert [dur.changed(names=[n]) for n in "abc"] == [False] * 3   # the counts start again
    assert not dur.due


def test_a_due_checkpoint_wants_changed_values_not_yet_published():
    dur = Durability(every=1, keep_bytes=1 << 30)
    dur.mark("a", "value")
    dur.mark("b", "value", fresh=np.ones(2))   # an init's payload: taken as it is
    assert not dur.wanted(["a"])                # not due yet
    dur.changed()
    assert dur.wanted(["a", "c"]) and not dur.wanted(["b", "c"])


def test_adopting_every_changed_value_says_write_now_and_hands_them_over():
    dur = Durability(every=1, keep_bytes=1 << 30)
    dur.mark("a", "value")
    dur.mark("b", "value", "state")
    dur.changed()
    va, vb = np.zeros(2), np.ones(2)
    assert dur.adopt([("a", va)]) is False       # b still missing
    dur.pin("/dev/shm/seg-1")
    assert dur.adopt([("b", vb), ("zz", vb)]) is True
    taken = dur.take()
    assert taken.fresh["a"] is va and taken.fresh["b"] is vb and "zz" not in taken.fresh
    assert taken.pinned == ["/dev/shm/seg-1"]
    assert taken.dirty == {"a": {"value"}, "b": {"value", "state"}}


def test_a_later_change_makes_an_adopted_value_stale():
    dur = Durability(every=1, keep_bytes=1 << 30)
    dur.mark("a", "value")
    before = dur.version("a")
    dur.mark("a", "value")            # written again before the snapshot was read
    assert dur.version("a") != before
    dur.changed()
    assert dur.adopt([]) is False and dur.wanted(["a"])


def test_pushes_past_keep_bytes_ask_for_a_checkpoint_and_a_checkpoint_resets_them():
    dur = Durability(every=100, keep_bytes=1000)
    assert dur.pushed(600) is False
    assert dur.pushed(600) is True
    dur.take()
    assert dur.pushed(600) is False


def test_keep_bytes_is_what_one_worker_keeps_over_every_shard():
    # MXKV_KEEP_BYTES bounds what a worker keeps: with 2 shards, half of it
    # pushed here by one worker (or a host's relay) asks for a checkpoint;
    # other pushers' bytes are theirs to keep
    dur = Durability(every=100, keep_bytes=1000, shards=2)
    assert dur.pushed(400, 0) is False
    assert dur.pushed(400, 1) is False
    assert dur.pushed(400, [2, 3]) is False     # a relay's push (its ranks, as a list)
    assert dur.pushed(100, 0) is True           # rank 0: 500 here, 1000 over both shards
    assert dur.pushed(100, (2, 3)) is True      # the same relay
    dur.take()
    assert dur.pushed(400, 0) is False


def test_loaded_states_keep_fresh_values_and_a_new_updater_resets_states():
    dur = Durability(every=1, keep_bytes=1 << 30)
    payload = np.ones(3)
    dur.mark("a", "value", fresh=payload)
    dur.mark_states(["a", "b"])
    dur.mark_meta(reset_states=True)
    dur.mark_meta()
    taken = dur.take()
    assert taken.fresh == {"a": payload}
    assert taken.dirty == {"a": {"value", "state"}, "b": {"state"}}
    assert taken.meta_dirty and taken.reset_states and not taken.empty()


def test_durable_rounds_come_from_the_writer():
    dur = Durability(every=1, keep_bytes=1)
    dur.on_durable({"a": 3})
    dur.on_durable({"b": 1, "a": 4})
    assert dur.durable_of(["a", "b", "c"]) == [4, 1, -1]


# ---------------------------------------------------------------- publication
@pytest.fixture
def shard_store(tmp_path):
    kv = mx.kv.create("local")
    kv.init(["w", "v"], [mx.nd.zeros((4,)), mx.nd.zeros((2, 3))])
    put_calls = []

    def put(payloads):   # the object store's copy, taken at once
        put_calls.append(payloads)
        return [np.array(p) for p in payloads]

    publisher = Publisher(str(tmp_path), "shard0-test", 1 << 20)
    reader = Reader()
    yield kv, Publication(kv, publisher, put), put_calls, reader
    reader.close()
    publisher.close()
    kv.close()


def _round(pushes):
    return [("w", (4,), pushes)]


def test_a_sync_round_is_summed_into_a_pull_segment_that_then_holds_the_value(shard_store):
    kv, pub, puts, reader = shard_store
    rounds = _round([np.ones(4, np.float32), np.arange(4, dtype=np.float32)])
    assert pub.can_sum(rounds, sync=True, gc=None)
    [(names, batch)] = pub.sum_published(rounds)
    pub.note_summed(names, batch, (1,))
    assert kv.stored_value("w").asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert pub.in_segments == 1 and pub.sums_published == 1
    reply = pub.reply(("w",), (1,), shm=True)
    assert reply.source == "summed" and reply.ref is batch
    assert reader.views(reply.ref)[0].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert pub.reply(("w",), (1,), shm=True).source == "cached"
    assert pub.publisher.copies == 0 and puts == []


def test_parts_summed_together_are_answered_one_chunk_at_a_time_without_a_copy(shard_store):
    # a round completed by one message (a same-node worker's whole push)
    # and pulled in chunks (transport.py): each chunk is the parts it names
    # in the segment they were summed into
    kv, pub, puts, reader = shard_store
    rounds = [("w", (4,), [np.full(4, 2, np.float32)]),
              ("v", (2, 3), [np.arange(6, dtype=np.float32).reshape(2, 3)])]
    [(names, batch)] = pub.sum_published(rounds)
    pub.note_summed(names, batch, (1, 1))
    v = pub.reply(("v",), (1,), shm=True)
    w = pub.reply(("w",), (1,), shm=True)
    both = pub.reply(("v", "w"), (1, 1), shm=True)
    assert [r.source for r in (v, w, both)] == ["summed"] * 3
    assert {r.ref.path for r in (v, w, both)} == {batch.path}
    assert reader.views(v.ref)[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert reader.views(w.ref)[0].tolist() == [2.0] * 4
    assert [a.tolist() for a in reader.views(both.ref)] == [[[0, 1, 2], [3, 4, 5]], [2.0] * 4]
    assert pub.publisher.copies == 0 and puts == []
    # a name at another round is copied, as before
    assert pub.reply(("v",), (0,), shm=True).source == "segment"
    assert pub.reply(("w", "v"), (1, 0), shm=True).source == "segment"


def test_a_round_completed_at_once_is_summed_where_its_chunks_are_published(shard_store):
    # rounds completed chunk by chunk (another node's pushes) made a ring
    # for each chunk; a round one message completes for several chunks at
    # once goes into those rings, not into a new ring for that combination
    kv, pub, puts, reader = shard_store
    kv.init("u", mx.nd.zeros((5,)))
    w = ("w", (4,), [np.full(4, 1, np.float32)])
    v = ("v", (2, 3), [np.full((2, 3), 2, np.float32)])
    u = ("u", (5,), [np.full(5, 3, np.float32)])
    for one in (w, v):
        for names, batch in pub.sum_published([one]):
            pub.note_summed(names, batch, (1,))
    made = pub.publisher._count
    got = pub.sum_published([w, v, u])
    assert sorted(names for names, _ in got) == [("u",), ("v",), ("w",)]
    assert pub.publisher._count == made + 2       # a new ring for "u" alone
    for names, batch in got:
        pub.note_summed(names, batch, (2,))
    again = pub.sum_published([w, v, u])             # the same combination: no new segment
    assert pub.publisher._count == made + 2 and len(again) == 3
    for names, batch in again:
        pub.note_summed(names, batch, (3,))
    for name, want in (("w", [1.0] * 4), ("u", [3.0] * 5)):
        reply = pub.reply((name,), (3,), shm=True)
        assert reply.source == "summed" and reader.views(reply.ref)[0].tolist() == want
    both = pub.reply(("v", "w"), (3, 3), shm=True)   # a set summed apart: a copy
    assert both.source == "segment"
    assert [a.tolist() for a in reader.views(both.ref)] == [[[2.0] * 3] * 2, [1.0] * 4]
    assert puts == []


def test_a_pull_of_an_older_round_or_another_node_gets_a_copy(shard_store):
    kv, pub, puts, reader = shard_store
    [(names, batch)] = pub.sum_published(_round([np.full(4, 2, np.float32)]))
    pub.note_summed(names, batch, (1,))
    seg = pub.reply(("w",), (0,), shm=True)      # not the summed round: copied
    assert seg.source == "segment" and seg.ref is not batch
    assert reader.views(seg.ref)[0].tolist() == [2.0] * 4
    away = pub.reply(("w",), (1,), shm=False)
    assert away.source == "store" and away.ref[0].tolist() == [2.0] * 4 and len(puts) == 1


def test_a_write_moves_a_stored_value_out_of_its_segment_first(shard_store):
    kv, pub, _puts, reader = shard_store
    [(names, batch)] = pub.sum_published(_round([np.full(4, 5, np.float32)]))
    pub.note_summed(names, batch, (1,))
    pub.privatize(["w"])
    assert pub.in_segments == 0
    kv.push("w", mx.nd.full((4,), 9.0))
    assert reader.views(batch)[0].tolist() == [5.0] * 4   # the published round is intact
    assert pub.reply(("w",), (1,), shm=True).source == "segment"   # summed is forgotten


def test_sums_are_published_only_for_sync_dense_rounds_without_updater_or_compression(
        shard_store):
    kv, pub, _puts, _reader = shard_store
    dense = _round([np.ones(4, np.float32)])
    assert not pub.can_sum(dense, sync=False, gc=None)
    assert not pub.can_sum(dense, sync=True,
                           gc=GradientCompression.create({"type": "2bit"}))
    assert not pub.can_sum(_round([RowSparse(np.ones((1,), np.float32), np.zeros(1))]),
                           sync=True, gc=None)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    assert not pub.can_sum(dense, sync=True, gc=None)


def test_snapshots_are_kept_for_the_last_few_pulls_only(shard_store):
    _kv, pub, puts, _reader = shard_store
    for r in range(6):
        assert pub.reply(("w",), (r,), shm=False).source == "store"
    assert pub.reply(("w",), (5,), shm=False).source == "cached"
    assert pub.reply(("w",), (0,), shm=False).source == "store"   # dropped: copied again
    assert len(puts) == 7
