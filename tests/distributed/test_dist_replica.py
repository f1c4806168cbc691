"""A shard restarted on a node without its log restores from the copy
another node's agent kept (``MXKV_CHECKPOINT_REPLICA``): a Ray cluster of
nodes on loopback, the shard's node removed mid-run and its log deleted
(as a host's own directory would be gone with the host), the shard back on
a third node from the copy, the run's values those of an undisturbed one.
The emulated-host version, with a real host lost: tests/multihost/test_faults.py.

Placement as in test_dist_restore_elsewhere.py: the shard needs a custom
resource ``HOME`` that only the doomed node, then the third, offers."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

import test_dist_restore_elsewhere as base  # noqa: E402

from mxkv.kvstore.dist.cluster import create_job  # noqa: E402
from mxkv.kvstore.dist.node_keeper import replica_dir  # noqa: E402
from mxkv.kvstore.dist.shm import data_dir  # noqa: E402


def wait(cond, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_shard_restores_from_the_copy_another_node_kept(tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    monkeypatch.setenv("RAY_TMPDIR", temp)
    # one machine: every node sees the job's directory, so `auto` keeps no copy
    monkeypatch.setenv("MXKV_CHECKPOINT_REPLICA", "1")
    store = dict(num_cpus=1, object_store_memory=150 * 1024 * 1024)
    cluster = None
    try:
        cluster = Cluster(initialize_head=True, head_node_args=store)
        doomed = cluster.add_node(resources={base.HOME: 1}, **store)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="mxkv", log_to_driver=False,
                 configure_logging=False)
        head_id = ray.get_runtime_context().get_node_id()
        name = f"replica-{os.getpid()}"
        job = create_job(1, 1, name=name, timeouts=base.FAST, shard_options={
            "resources": {base.HOME: 0.01}, "scheduling_strategy": "DEFAULT"})
        try:
            assert job.replicated and len(job.agents) == 2
            ray.cloudpickle.register_pickle_by_value(sys.modules[base.__name__])
            worker = ray.remote(base.Worker).options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
                    head_id, soft=False)).remote()
            flag, go = str(tmp_path / "halfway"), str(tmp_path / "go")
            ref = worker.run.remote(job.environ(rank=0), base.train, (flag, go))
            before = ray.get(job.shards[0].stats.remote(), timeout=120)
            assert before["node"] == doomed.node_id and before["replica"]
            wait(lambda: os.path.exists(flag), "the worker never got halfway")
            log = os.path.join(job.checkpoint_dir, "shard-0.ckpt")
            copy = os.path.join(replica_dir(name), "shard-0.ckpt")

            def same():
                try:
                    with open(log, "rb") as a, open(copy, "rb") as b:
                        return a.read() == b.read()
                except FileNotFoundError:
                    return False
            wait(same, "the copy never matched the log")   # (the writer may be busy)
            assert os.path.getsize(copy) > 0
            cluster.remove_node(doomed)                  # the host goes, its log with it
            for f in os.listdir(job.checkpoint_dir):
                if f.startswith("shard-0.ckpt"):
                    os.unlink(os.path.join(job.checkpoint_dir, f))
            elsewhere = cluster.add_node(resources={base.HOME: 1}, **store)
            after = base.back(job.shards[0], before["incarnation"])
            open(go, "w").close()
            results = ray.get(ref, timeout=240)
        finally:
            job.close()
        assert after["node"] == elsewhere.node_id
        assert after["restored"] and after["restored_from"], after
        assert sorted(after["rounds"]) == [0, 1, 2]
        for got, want in zip(results, base.expected()):
            np.testing.assert_array_equal(got, want)
        for path in (job.checkpoint_dir, data_dir(name), replica_dir(name)):
            assert not os.path.exists(path), path
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        for _ in range(3):
            shutil.rmtree(temp, ignore_errors=True)
            time.sleep(0.2)
