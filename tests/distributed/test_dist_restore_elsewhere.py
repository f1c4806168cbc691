"""A shard restarted on another node restores its keys from a shared
``MXKV_CHECKPOINT_DIR``: a Ray cluster of nodes on loopback, the shard's
node is removed mid-run, Ray restarts the shard on another node, and the
run ends with the values of an undisturbed one.

Where an actor goes is Ray's choice; the test makes it deterministic: the
job's coordinator starts while the head is the only node, the shard needs a
custom resource ``HOME`` that only a node added then offers, and before
that node is removed a third node offering ``HOME`` joins, so the restart
can only land on the third."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time

import dist_waits
import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

import mxkv as mx  # noqa: E402
from mxkv.kvstore.dist.cluster import create_job  # noqa: E402
from mxkv.kvstore.dist.job import NAMESPACE, Timeouts, shard_name  # noqa: E402

SHAPES = [(30, 10), (7,), (3, 3)]
ROUNDS = 8
HOME = "mxkv_test_shard_home"
FAST = Timeouts(stall=30.0, fail=120.0, heartbeat=0.5, dead=30.0)


class Worker:
    """A worker process pinned to a node: runs ``fn(kv, mx, *args)`` on a
    fresh store of the job, as a process ``mxkv launch`` starts would."""

    def run(self, env, fn, args):
        import mxkv as mx

        os.environ.update(env)
        kv = mx.kv.create("dist_sync")
        try:
            return fn(kv, mx, *args)
        finally:
            kv.close()


def train(kv, mx, flag, go):
    """Rounds of SGD with momentum; between rounds ROUNDS/2 and ROUNDS/2+1,
    wait for the test to move the shard."""
    keys = list(range(len(SHAPES)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.05, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in SHAPES]
    for i in range(ROUNDS):
        if i == ROUNDS // 2:
            open(flag, "w").close()
            deadline = time.monotonic() + 240
            while not os.path.exists(go):
                if time.monotonic() > deadline:
                    raise TimeoutError("the test never moved the shard")
                time.sleep(0.05)
        kv.push(keys, [mx.nd.array(np.full(s, (i % 3) + 1.0, np.float32)) for s in SHAPES])
        kv.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def expected():
    local = mx.kv.create("local")
    keys = list(range(len(SHAPES)))
    local.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.05, momentum=0.9))
    for i in range(ROUNDS):
        local.push(keys, [mx.nd.array(np.full(s, (i % 3) + 1.0, np.float32)) for s in SHAPES])
    outs = [mx.nd.zeros(s) for s in SHAPES]
    local.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def back(shard, old):
    """The shard's stats once it answers as a new incarnation."""
    deadline = time.monotonic() + 240
    while True:
        try:
            stats = ray.get(shard.stats.remote(), timeout=60)
            if stats["incarnation"] != old:
                return stats
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.RayActorError):
            pass   # restarting
        assert time.monotonic() < deadline, "the shard did not come back"
        time.sleep(0.2)


def test_a_shard_whose_node_dies_restores_its_keys_on_the_other_node(tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    monkeypatch.setenv("RAY_TMPDIR", temp)
    ckpt = str(tmp_path / "shared-ckpt")           # the directory both nodes see
    cluster = None
    try:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "object_store_memory": 150 * 1024 * 1024})
        ray.init(address=cluster.address, namespace="mxkv", log_to_driver=False,
                 configure_logging=False)
        head_id = ray.get_runtime_context().get_node_id()
        # The coordinator starts while the head is the only node; the shard
        # needs HOME (and leaves the job's placement group, whose bundle has
        # none), so it waits for the node that is added then, and will die.
        name = f"restore-{os.getpid()}"
        made: list = []
        creator = threading.Thread(target=lambda: made.append(create_job(
            1, 1, name=name, timeouts=FAST, checkpoint_dir=ckpt,
            shard_options={"resources": {HOME: 0.01}, "scheduling_strategy": "DEFAULT"})),
            daemon=True)
        creator.start()
        deadline = time.monotonic() + 240
        while True:      # the shard actor is made once the coordinator answered
            try:
                ray.get_actor(shard_name(name, 0), namespace=NAMESPACE)
                break
            except ValueError:
                assert time.monotonic() < deadline and creator.is_alive(), \
                    "create_job never made the shard"
                time.sleep(0.05)
        doomed = cluster.add_node(num_cpus=1, resources={HOME: 1},
                                  object_store_memory=150 * 1024 * 1024)
        creator.join(240)
        assert made, "create_job did not finish"
        job = made[0]
        try:
            ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
            worker = ray.remote(Worker).options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(head_id,
                                                                               soft=False)
            ).remote()
            flag, go = str(tmp_path / "halfway"), str(tmp_path / "go")
            ref = worker.run.remote(job.environ(rank=0), train, (flag, go))
            before = ray.get(job.shards[0].stats.remote(), timeout=120)
            assert before["node"] == doomed.node_id
            deadline = time.monotonic() + 240
            while not os.path.exists(flag):
                assert time.monotonic() < deadline, ray.get(ref, timeout=1)
                time.sleep(0.05)
            # the job's identity, the log (and its spare: the log's earlier
            # version, kept to write over); the writer may be replacing the
            # log by its spare right now (a '.next' name for a moment)
            settled = (["mxkv-job.json", "shard-0.ckpt"],
                       ["mxkv-job.json", "shard-0.ckpt", "shard-0.ckpt.spare"])
            try:
                dist_waits.wait_until(lambda: sorted(os.listdir(ckpt)) in settled,
                                      "the checkpoint directory to hold the log alone",
                                      timeout=60)
            except AssertionError:
                raise AssertionError(sorted(os.listdir(ckpt))) from None
            elsewhere = cluster.add_node(num_cpus=1, object_store_memory=150 * 1024 * 1024,
                                         resources={HOME: 1})
            cluster.wait_for_nodes()
            cluster.remove_node(doomed)                 # the host goes away
            after = back(job.shards[0], before["incarnation"])
            open(go, "w").close()
            results = ray.get(ref, timeout=240)
            final = ray.get(job.shards[0].stats.remote(), timeout=60)
        finally:
            job.close()
        assert after["node"] == elsewhere.node_id != before["node"]
        assert after["restored"] and after["incarnation"] != before["incarnation"]
        # restored from the log: every key, at a round the run had reached
        assert sorted(after["rounds"]) == [0, 1, 2]
        assert all(r <= ROUNDS // 2 for r in after["rounds"].values()), after["rounds"]
        assert final["rounds"] == {0: ROUNDS, 1: ROUNDS, 2: ROUNDS}
        for got, want in zip(results, expected()):
            np.testing.assert_array_equal(got, want)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        for _ in range(3):   # Ray's last processes may still be writing logs
            shutil.rmtree(temp, ignore_errors=True)
            time.sleep(0.2)
