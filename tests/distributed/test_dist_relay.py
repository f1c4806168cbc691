"""One aggregation per host (relay.py), on a Ray cluster of two nodes on
loopback: two workers on the head node, the shard on the other node. The
head's relay sums the two workers' pushes, so the shard receives one push
per round standing for both ranks; results equal a local store's. Killing
the relay mid-run (Ray restarts it) changes no value; with
``MXKV_HOST_AGGREGATION=0`` each worker pushes to the shard itself."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

import dist_waits
import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

from local_reference import local_sgd  # noqa: E402

from conftest import TestWorker  # noqa: E402  (a worker process: a fresh store, fn)
from mxkv.kvstore.dist.cluster import create_job  # noqa: E402
from mxkv.kvstore.dist.job import Timeouts  # noqa: E402

# a big key (split in parts over both shards) and small ones
SHAPES = [(1100, 1000), (30, 10), (7,)]
ROUNDS = 6
FAST = Timeouts(stall=30.0, fail=120.0, heartbeat=0.5, dead=30.0)


def value(rank, i, shape):
    return np.full(shape, (rank + 1.0) * ((i % 3) + 1.0), np.float32)


def train(kv, mx, pause):
    """SGD with momentum on the servers; before round ``pause`` (if any),
    wait for the test's go file."""
    keys = list(range(len(SHAPES)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in SHAPES]
    for i in range(ROUNDS):
        if pause is not None and i == pause[0]:
            open(pause[1] + f".{kv.rank}", "w").close()
            dist_waits.wait_for_file(pause[2], "the test's go")
        kv.push(keys, [mx.nd.array(value(kv.rank, i, s)) for s in SHAPES])
        kv.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def expected(workers=2):
    return local_sgd(SHAPES, ROUNDS, value, workers)


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    old = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp
    cluster = None
    try:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "object_store_memory": 200 * 1024 * 1024})
        other = cluster.add_node(num_cpus=1, object_store_memory=200 * 1024 * 1024)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="mxkv", log_to_driver=False,
                 configure_logging=False)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray.get_runtime_context().get_node_id(), other.node_id
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        if old is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old
        for _ in range(3):   # Ray's last processes may still be writing logs
            shutil.rmtree(temp, ignore_errors=True)
            time.sleep(0.2)


def run_job(nodes, name, extra_env=None, pause=None, during=None, worker_nodes=None,
            spread=False, shard_env=None, fn=train):
    """Workers on ``worker_nodes`` (default: two on the head node), two
    shards on the other node (``spread``: one on each); returns the
    workers' results, the shards' stats and the relays' stats."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    head, other = nodes
    worker_nodes = worker_nodes or [head, head]
    placed = {} if spread else {"shard_options": {
        "scheduling_strategy": NodeAffinitySchedulingStrategy(other, soft=False)}}
    job = create_job(len(worker_nodes), 2, name=f"{name}-{os.getpid()}", timeouts=FAST,
                     shard_env=shard_env, **placed)
    try:
        want = sorted([head, other]) if spread else [other, other]
        assert sorted(job.shard_nodes()) == want
        workers = [ray.remote(TestWorker).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
        ).remote() for node in worker_nodes]
        refs = [w.run.remote({**job.environ(rank=r), **(extra_env or {})}, "dist_sync", fn,
                             (pause,)) for r, w in enumerate(workers)]
        if during is not None:
            during(job, refs)
        results = ray.get(refs, timeout=240)
        shards = ray.get([s.stats.remote() for s in job.shards], timeout=60)
        relays = ray.get(job.coordinator.relay_handles.remote(), timeout=60)
        relay_stats = {node: ray.get(r.stats.remote(), timeout=60)
                       for node, r in relays.items()}
    finally:
        job.close()
    return results, shards, relay_stats


def check_values(results):
    want = expected(len(results))
    for rank in range(len(results)):
        for got, w in zip(results[rank], want):
            np.testing.assert_allclose(got, w, rtol=1e-6)


@pytest.mark.parametrize("transport", ["tcp", "ray"])
def test_the_hosts_relay_sends_the_shard_one_push_per_round(two_nodes, transport):
    results, shards, relays = run_job(two_nodes, f"relay{transport}",
                                      {"MXKV_BULK_TRANSPORT": transport})
    check_values(results)
    # the relay's sums came on its TCP connections (bulk.py), one chunk or
    # more per round and shard
    if transport == "tcp":
        assert all(s["bulk_received"] >= ROUNDS for s in shards), shards
    else:
        assert [s["bulk_received"] for s in shards] == [0, 0]
    head, _ = two_nodes
    assert list(relays) == [head]
    stats = relays[head]
    if transport == "tcp":
        # the workers pulled through the relay: each round's chunk of each
        # shard (one: 2.2 MB) fetched once, over TCP, for both workers
        assert stats["pulled"] == stats["pulled_tcp"] == 2 * ROUNDS, stats
        assert stats["pull_calls"] == 2 * stats["pulled"], stats
        assert stats["pull_copies"] == 0, stats   # received straight into its segments
    else:   # each worker from the object store, which Ray moves to the host once
        assert stats["pull_calls"] == stats["pulled"] == 0, stats
    assert stats["node"] == head and tuple(stats["ranks"]) == (0, 1)
    # per round, one message from each worker per shard in, one per shard out
    assert stats["received"] == 2 * 2 * ROUNDS, stats
    assert stats["sent"] == 2 * ROUNDS, stats
    # pushes came by the doorbell first (doorbell.py), their calls then
    # finding them taken: every round still sent once (above). A part's first
    # push is registered by a call (the relay asks the shard about a part it
    # has not seen), but a doorbell queued meanwhile, even that push's own,
    # may be taken before the call gathers it: any part of any round may
    # come first by the doorbell, each counted once per rank
    assert 0 < stats["rung"] <= 2 * 2 * ROUNDS, stats
    assert 0 < stats["rung_first"] <= 2 * 4 * ROUNDS, stats
    arrivals = [a for s in shards for a in s["arrivals"]]
    # every push a shard took stood for both ranks: 4 parts (the big key's
    # 2 and the 2 small keys), once per round
    assert {tuple(r) if isinstance(r, (list, tuple)) else r for r, _ in arrivals} == {(0, 1)}
    assert len(arrivals) == 4 * ROUNDS


def train_and_count_rings(kv, mx, pause):
    return train(kv, mx, pause), kv._transport.pulls_rung


def test_the_relay_rings_each_workers_doorbell_with_its_pull_answers(two_nodes):
    # (doorbell.py) the relay sends each answer to the worker's doorbell
    # before its call returns it; the worker takes whichever comes first,
    # once: the values are exact either way
    results, _, relays = run_job(two_nodes, "relayring", fn=train_and_count_rings)
    check_values([outs for outs, _ in results])
    rung = [n for _, n in results]
    # each worker pulls ROUNDS rounds of one chunk per shard through the relay
    assert all(0 < n <= 2 * ROUNDS for n in rung), rung
    [stats] = relays.values()
    assert stats["pull_calls"] == 2 * 2 * ROUNDS, stats


def train_and_log_relayed_sends(kv, mx, pause):
    """``train``, logging each relayed push's doorbell ring and its call in
    the worker's channel, with a mark where each push call begins."""
    chan, log = kv._chan, []
    ring, submit, push = chan._ring, chan._submit_message, kv.push

    def logged_ring(msg):
        rang = ring(msg)
        log.append(("ring", id(msg), rang))
        return rang

    def logged_submit(msg, rung=False):
        if msg.relayed:
            log.append(("call", id(msg), rung))
        return submit(msg, rung)

    def marked_push(*args, **kwargs):
        log.append(("push", None, None))
        return push(*args, **kwargs)
    chan._ring, chan._submit_message, kv.push = logged_ring, logged_submit, marked_push
    return train(kv, mx, pause), log


def test_a_worker_rings_a_rounds_every_chunk_before_its_relay_calls(two_nodes):
    # (Channel.send) the relay has a push from its doorbell, so a worker
    # copies and rings every chunk of the round before it makes the chunks'
    # Ray calls, which took up to 40 ms each on a loaded host
    results, _, relays = run_job(two_nodes, "relayorder", {"MXKV_STREAM_CHUNK_BYTES": "1000000"},
                                 fn=train_and_log_relayed_sends)
    check_values([outs for outs, _ in results])
    for _, log in results:
        pushes = [j for j, e in enumerate(log) if e[0] == "push"]
        assert len(pushes) == ROUNDS
        for lo, hi in zip(pushes, pushes[1:] + [len(log)]):
            events = log[lo + 1:hi]
            rung = [m for kind, m, ok in events if kind == "ring" and ok]
            calls = [(m, was_rung) for kind, m, was_rung in events if kind == "call"]
            # the 2.2 MB parts of the big key and the small keys: 2 chunks
            # or more for each of the 2 shards, all through the relay
            assert len(rung) >= 4, events
            # each rung chunk has one call, made once all of them rang
            assert sorted(m for m, was_rung in calls if was_rung) == sorted(rung), events
            last_ring = max(j for j, e in enumerate(events) if e[0] == "ring")
            first_call = min(j for j, e in enumerate(events) if e[0] == "call")
            assert last_ring < first_call, events
    [stats] = relays.values()
    assert stats["sent"] >= 2 * ROUNDS, stats


def test_a_relay_whose_shards_have_no_listener_pulls_through_the_object_store(two_nodes):
    # the shards without a TCP listener (MXKV_BULK_TRANSPORT=ray on their
    # side): the relay still fetches each chunk once for both workers, from
    # the object store, and copies it into its segment
    results, shards, relays = run_job(two_nodes, "relaynolisten",
                                      shard_env={"MXKV_BULK_TRANSPORT": "ray"})
    check_values(results)
    assert [s["bulk"] for s in shards] == [None, None]
    stats = relays[two_nodes[0]]
    assert stats["pulled"] == 2 * ROUNDS and stats["pulled_tcp"] == 0, stats
    assert stats["pull_calls"] == 2 * stats["pulled"], stats
    assert stats["pull_copies"] == stats["pulled"], stats


def test_without_host_aggregation_each_worker_pushes_to_the_shard(two_nodes):
    results, shards, relays = run_job(two_nodes, "norelay", {"MXKV_HOST_AGGREGATION": "0"})
    check_values(results)
    # each worker's chunks on its own TCP connection to each shard
    assert all(s["bulk_received"] >= 2 * ROUNDS for s in shards), shards
    assert relays == {}
    arrivals = [a for s in shards for a in s["arrivals"]]
    assert sorted({r for r, _ in arrivals}) == [0, 1]
    assert len(arrivals) == 2 * 4 * ROUNDS


def test_a_host_with_one_worker_pushes_itself_beside_a_relay(two_nodes):
    # ranks 0 and 1 on the head, rank 2 on the other node, a shard on each
    head, other = two_nodes
    results, shards, relays = run_job(two_nodes, "mixed", worker_nodes=[head, head, other],
                                      spread=True)
    check_values(results)
    assert list(relays) == [head]                 # one worker on the other node: no relay

    def senders(stats):
        return sorted({tuple(r) if isinstance(r, (list, tuple)) else (r,)
                       for r, _ in stats["arrivals"]})
    by_node = {s["node"]: s for s in shards}
    assert senders(by_node[other]) == [(0, 1), (2,)]     # the head's relay, and rank 2
    assert senders(by_node[head]) == [(0,), (1,), (2,)]  # same node: each by shared memory


def halfway(tmp_path, action):
    """``run_job``'s ``pause`` and ``during`` for running ``action(job)`` once
    both workers wait before round ROUNDS/2 (then they go on), and the list
    that gets its result."""
    flag, go = str(tmp_path / "halfway"), str(tmp_path / "go")
    got = []

    def during(job, refs):
        dist_waits.wait_until(lambda: all(os.path.exists(f"{flag}.{r}") for r in range(2)),
                              "both workers halfway")
        got.append(action(job))
        open(go, "w").close()
    return (ROUNDS // 2, flag, go), during, got


def test_a_relay_killed_mid_run_changes_no_value(two_nodes, tmp_path):
    def kill_relay(job):
        (relay,) = ray.get(job.coordinator.relay_handles.remote(), timeout=60).values()
        before = ray.get(relay.stats.remote(), timeout=60)
        ray.kill(relay, no_restart=False)      # Ray restarts it, empty
        return before

    pause, during, killed = halfway(tmp_path, kill_relay)
    results, shards, relays = run_job(two_nodes, "relaykill", pause=pause, during=during)
    check_values(results)
    (after,) = relays.values()
    assert killed and after["incarnation"] != killed[0]["incarnation"]
    assert killed[0]["sent"] == 2 * (ROUNDS // 2)
    # the new relay took the rest of the rounds (and any re-sent push again)
    assert after["sent"] >= 2 * (ROUNDS - ROUNDS // 2), after
    final = {n: r for s in shards for n, r in s["rounds"].items()}
    assert set(final.values()) == {ROUNDS}, final


def test_a_shard_killed_mid_run_behind_a_relay_changes_no_value(two_nodes, tmp_path):
    # the shard restarts from its checkpoint; the relay re-sends the rounds
    # it sent that the checkpoint lacks, and the workers' re-sends to the
    # relay (their pulls saw the restart) are dropped there
    def kill_shard(job):
        before = ray.get(job.shards[0].stats.remote(), timeout=60)
        ray.kill(job.shards[0], no_restart=False)      # Ray restarts it
        return before

    pause, during, before = halfway(tmp_path, kill_shard)
    results, shards, relays = run_job(two_nodes, "shardkill", pause=pause, during=during)
    check_values(results)
    assert shards[0]["incarnation"] != before[0]["incarnation"] and shards[0]["restored"]
    final = {n: r for s in shards for n, r in s["rounds"].items()}
    assert set(final.values()) == {ROUNDS}, final
    (relay,) = relays.values()
    assert relay["sent"] >= 2 * ROUNDS, relay


def half_pushed(kv, mx, flag):
    """Rank 0 pushes and waits for rank 1's report; rank 1 reports what the
    round waits for (rank 1 itself, at the relay), then pushes."""
    kv.init("w", mx.nd.zeros((4,)))
    out = mx.nd.zeros((4,))
    kv._barrier()
    if kv.rank == 0:
        kv.push("w", mx.nd.ones((4,)))
        kv.pull("w", out=out)
        return float(out.asnumpy()[0])
    relay = kv._chan.relay if kv._transport.via_relay(0) else None
    dist_waits.wait_until(lambda: ray.get(relay.stalled.remote()), "rank 0's push at the relay")
    report = kv._chan.stall_report()
    kv.push("w", mx.nd.ones((4,)))
    kv.pull("w", out=out)
    return report


def test_a_stall_report_names_the_rank_the_hosts_relay_waits_for(two_nodes):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    head, other = two_nodes
    job = create_job(2, 1, name=f"relaystall-{os.getpid()}", timeouts=FAST, shard_options={
        "scheduling_strategy": NodeAffinitySchedulingStrategy(other, soft=False)})
    try:
        workers = [ray.remote(TestWorker).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)
        ).remote() for _ in range(2)]
        value, report = ray.get([w.run.remote(job.environ(rank=r), "dist_sync", half_pushed,
                                              (None,)) for r, w in enumerate(workers)],
                                timeout=120)
    finally:
        job.close()
    assert value == 2.0
    assert report == "rank 1 has not pushed keys 'w' (round 1)", report
