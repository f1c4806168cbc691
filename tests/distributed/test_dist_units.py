"""The distributed store's pure parts, without a cluster: sharding, rounds
and exactly-once bookkeeping, checkpoint files, the launcher's flags."""
from __future__ import annotations

import asyncio
import os
import time

import pytest

import mxkv as mx
from mxkv.base import DeadNodeError, MXNetError
from mxkv.kvstore.dist import launch
from mxkv.kvstore.dist.checkpoint import CheckpointWriter, load_checkpoint
from mxkv.kvstore.dist.launch import main as launch_main
from mxkv.kvstore.dist.launch import parse_args
from mxkv.kvstore.dist.rounds import RoundBook
from mxkv.kvstore.dist.sharding import plan_key, shard_of


# ---------------------------------------------------------------- sharding
def test_small_keys_go_whole_to_a_stably_hashed_shard():
    assert shard_of(3, 4) == (3 * 9973) % 4          # MXNet's hash for int keys
    assert shard_of("fc.weight", 4) == shard_of("fc.weight", 4)
    [p] = plan_key("fc.bias", (1000,), "default", 4, bound=10 ** 6)
    assert (p.shard, p.lo, p.hi, p.name, p.shape) == (shard_of("fc.bias", 4), 0, 1000,
                                                      "fc.bias", (1000,))


def test_big_arrays_split_evenly_as_mxnet_rounds_them():
    parts = plan_key(7, (10, 10), "default", 3, bound=50)
    assert [(p.shard, p.lo, p.hi) for p in parts] == [(0, 0, 33), (1, 33, 67), (2, 67, 100)]
    assert [p.shape for p in parts] == [(33,), (34,), (33,)]


def test_row_sparse_values_split_by_whole_rows():
    parts = plan_key("emb", (5, 40), "row_sparse", 2, bound=100)
    assert [(p.lo, p.hi, p.shape) for p in parts] == [(0, 2, (2, 40)), (2, 5, (3, 40))]


def test_p3_slices_round_robin_from_the_home_shard():
    parts = plan_key(1, (250,), "default", 3, bound=10, p3_slice=100)
    home = shard_of(1, 3)
    assert [(p.shard, p.lo, p.hi, p.name) for p in parts] == [
        (home, 0, 100, "1#0"), ((home + 1) % 3, 100, 200, "1#1"),
        ((home + 2) % 3, 200, 250, "1#2")]


# ---------------------------------------------------------------- rounds
def test_a_sync_round_completes_with_every_rank_and_drops_duplicates():
    book = RoundBook(2, sync=True)
    book.add_part("k")
    assert book.accept(1, "k", 1, "b") == "pending"
    assert book.accept(1, "k", 1, "b") is None          # re-sent: dropped
    assert book.stalled() == [("k", 1, [0])]
    assert book.accept(0, "k", 1, "a") == "complete"
    assert book.contributions("k") == ["a", "b"]         # rank order, not arrival order
    book.complete("k")
    assert book.accept(0, "k", 1, "a") is None           # an old round: dropped
    assert book.pull_ready(0, [("k", 1)]) and not book.pull_ready(0, [("k", 2)])
    assert not book.ready_to_accept(0, [("k", 3)])       # from the future: waits


def test_async_applies_in_each_ranks_order_exactly_once():
    book = RoundBook(2, sync=False)
    book.add_part("k")
    assert not book.ready_to_accept(0, [("k", 2)])
    assert book.accept(0, "k", 1, None) == "apply"
    assert book.accept(0, "k", 1, None) is None
    assert book.pull_ready(0, [("k", 1)]) and not book.pull_ready(1, [("k", 1)])


def test_a_dead_rank_fails_the_rounds_that_need_it():
    book = RoundBook(2, sync=True)
    book.add_part(5)
    book.accept(0, 5, 1, "a")
    book.mark_dead({1: "no heartbeat for 3.0 s"})
    with pytest.raises(DeadNodeError, match=r"rank 1 \(no heartbeat"):
        book.pull_ready(0, [(5, 1)])


def test_waiters_wake_when_a_round_completes():
    async def scenario():
        book = RoundBook(2, sync=True)
        book.add_part("k")
        book.accept(0, "k", 1, 1)
        waiter = asyncio.ensure_future(book.wait(lambda: book.pull_ready(0, [("k", 1)])))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        book.accept(1, "k", 1, 2)
        book.complete("k")
        await book.changed()
        await asyncio.wait_for(waiter, 1)
    asyncio.run(scenario())


def test_restore_forgets_pushes_of_rounds_not_checkpointed():
    book = RoundBook(2, sync=True)
    book.add_part("k", rounds=3, seen={0: 4, 1: 3})
    again = RoundBook(2, sync=True)
    again.restore(book.state())
    assert again.accept(0, "k", 4, "x") == "pending"     # rank 0's round 4 is taken again


# ---------------------------------------------------------------- checkpoints
def test_checkpoint_slots_alternate_and_a_torn_write_keeps_the_last_good_one(tmp_path):
    import numpy as np

    path = str(tmp_path / "shard-0.ckpt")
    seen = []
    w = CheckpointWriter(path, seen.append)
    big = np.arange(1000, dtype=np.float32)
    w.write_now({"n": 1, "v": big})
    w.write_now({"n": 2, "v": big * 2})
    got = load_checkpoint(path)
    assert got["n"] == 2 and np.array_equal(got["v"], big * 2)
    assert sorted(os.listdir(tmp_path)) == ["shard-0.ckpt.a", "shard-0.ckpt.b"]
    # a writer killed mid-body leaves its slot's header invalid: the other slot wins
    with open(path + ".a", "r+b") as f:       # slot a holds n=2 (sequence 2)
        f.write(b"MXKVCKP1" + b"\0" * 16)
        f.write(b"\x01" * 50)
    assert load_checkpoint(path)["n"] == 1
    w2 = CheckpointWriter(path, seen.append)  # a restarted shard continues the sequence
    w2.submit({"n": 3})
    for _ in range(500):
        if not w2.busy():
            break
        time.sleep(0.01)
    assert load_checkpoint(path)["n"] == 3 and [s["n"] for s in seen] == [1, 2, 3]
    assert load_checkpoint(str(tmp_path / "none")) is None


# ---------------------------------------------------------------- launcher & environment
def test_launch_flags_follow_mxnets_launcher():
    a = parse_args(["-n", "3", "--env", "A=1", "--env-worker", "B:2", "--", "python", "t.py"])
    assert (a.num_workers, a.num_servers, a.command) == (3, 3, ["python", "t.py"])
    assert a.env == ["A=1"] and a.env_worker == ["B:2"]
    with pytest.raises(SystemExit):
        parse_args(["-n", "2", "-H", "hosts", "--", "python", "t.py"])
    with pytest.raises(SystemExit):
        parse_args(["-n", "2"])


@pytest.mark.parametrize("value,why", [("abc", "not a valid int"), ("-5", "at least 0")])
def test_launch_refuses_a_bad_call_timeout_before_starting_anything(monkeypatch, capsys,
                                                                    value, why):
    monkeypatch.setenv("MXKV_CALL_TIMEOUT_MS", value)
    # no Ray address: the launcher would start a local Ray cluster next
    monkeypatch.delenv("MXKV_RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def start_local_ray(num_cpus):
        raise AssertionError("a local Ray cluster was started")

    monkeypatch.setattr(launch, "_start_local_ray", start_local_ray)
    assert launch_main(["-n", "1", "--", "true"]) == 1
    err = capsys.readouterr().err
    assert f"MXKV_CALL_TIMEOUT_MS={value!r}" in err and why in err, err


def test_dist_types_without_a_job_say_how_to_start_one(monkeypatch):
    monkeypatch.delenv("MXKV_JOB", raising=False)
    with pytest.raises(MXNetError, match="mxkv launch"):
        mx.kv.create("dist_sync")
    assert os.environ.get("MXKV_JOB") is None
