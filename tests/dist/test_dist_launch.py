"""`mxkv launch` end to end: real worker processes on a local Ray cluster
it starts (and removes), server processes, failures, and a multi-node
cluster on loopback joined with --ray-address."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

MXKV = [sys.executable, "-m", "mxkv.cli"]

WORKER = textwrap.dedent("""
    import os, sys
    import mxkv as mx
    kv = mx.kv.create(sys.argv[1])
    kv.init("w", mx.nd.zeros((2,)))
    if os.environ.get("CRASH_RANK") == str(kv.rank):
        os._exit(3)
    out = mx.nd.zeros((2,))
    try:
        for i in range(3):
            kv.push("w", mx.nd.ones((2,)) * (kv.rank + 1))
            kv.pull("w", out=out)
    except mx.base.DeadNodeError as exc:
        print("DEAD:", exc)
        sys.exit(1)
    print("rank", kv.rank, "of", kv.num_workers, "got", out.asnumpy().tolist(),
          "role", os.environ["DMLC_ROLE"], "servers", os.environ["DMLC_NUM_SERVER"],
          "extra", os.environ.get("EXTRA"))
""")


def _launch(args, tmp_path, timeout=120, env=None):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cmd = [*MXKV, "launch", *args, "--", sys.executable, str(script), "dist_sync"]
    e = dict(os.environ, MXKV_DEAD_TIMEOUT="30", **(env or {}))
    e.pop("MXKV_RAY_ADDRESS", None)
    e.pop("RAY_ADDRESS", None)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def _ray_processes():
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "raylet" in line or "gcs_server" in line]


def test_launch_runs_workers_and_a_server_process_then_cleans_up(tmp_path):
    before = _ray_processes()
    server = f"{sys.executable} -m mxkv.kvstore_server && echo server done"
    r = _launch(["-n", "2", "-s", "1", "--env", "EXTRA=yes", "--server-cmd", server], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    for rank in (0, 1):
        assert (f"[worker {rank}] rank {rank} of 2 got [3.0, 3.0] role worker servers 1 "
                f"extra yes") in lines, r.stdout
    assert "[server 0] server done" in lines
    assert _ray_processes() == before     # the cluster it started is gone


def test_a_crashed_worker_fails_the_job_and_is_named(tmp_path):
    r = _launch(["-n", "2", "-s", "2"], tmp_path, env={"CRASH_RANK": "1"})
    assert r.returncode == 3, r.stdout + r.stderr
    assert "worker 1 exited with code 3" in r.stderr
    dead = [line for line in r.stdout.splitlines() if line.startswith("[worker 0] DEAD:")]
    assert dead and "rank 1" in dead[0] and "exited with code 3" in dead[0], r.stdout


def test_launch_joins_a_multi_node_cluster_by_address(tmp_path):
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 150 * 1024 * 1024, "temp_dir": temp})
    try:
        cluster.add_node(num_cpus=1, object_store_memory=150 * 1024 * 1024)
        cluster.wait_for_nodes()
        r = _launch(["-n", "2", "-s", "2", "--ray-address", cluster.address], tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[worker 1] rank 1 of 2 got [3.0, 3.0]" in r.stdout
        assert cluster.address.startswith("127.0.0.1:")
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
