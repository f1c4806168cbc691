"""`mxkv launch` end to end: real worker processes on a local Ray cluster
it starts (and removes), server processes, failures, and a multi-node
cluster on loopback joined with --ray-address."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest
from dist_waits import remove_tree

pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

MXKV = [sys.executable, "-m", "mxkv.cli"]

WORKER = textwrap.dedent("""
    import os, sys
    import mxkv as mx
    kv = mx.kv.create(sys.argv[1])
    kv.init("w", mx.nd.zeros((2,)))
    if os.environ.get("CRASH_RANK") == str(kv.rank):
        if os.environ.get("CRASH_SIGNAL"):
            os.kill(os.getpid(), int(os.environ["CRASH_SIGNAL"]))
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
    # this installation's only: the machine may run other checkouts' clusters meanwhile
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if ("raylet" in line or "gcs_server" in line) and sys.prefix in line]


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


def test_env_flags_reach_the_shards_checkpoint_dir_included(tmp_path):
    # MXNet's launcher gives --env to its servers too: here the shards write
    # their logs where --env says (a directory the job does not own, so it
    # is left in place), and --env-server's checkpoint interval is theirs
    ckpt = tmp_path / "shared-ckpt"
    r = _launch(["-n", "2", "-s", "2", "--env", f"MXKV_CHECKPOINT_DIR={ckpt}",
                 "--env-server", "MXKV_CHECKPOINT_ROUNDS=1"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "got [3.0, 3.0]" in r.stdout
    # (a shard holding no key and given no command has nothing to log)
    logs = sorted(p.name for p in ckpt.iterdir() if p.name.endswith(".ckpt"))
    assert set(logs) <= {"shard-0.ckpt", "shard-1.ckpt"} and logs, sorted(os.listdir(ckpt))
    from mxkv.kvstore.dist.checkpoint import load_log

    # checkpointed after every round (MXKV_CHECKPOINT_ROUNDS=1 on the shards):
    # the shard holding "w" logged its last round, the third
    rounds = [load_log(str(ckpt / name))[0] for name in logs]
    assert any(s is not None and s["parts"].get("w", {}).get("round") == 3 for s in rounds), \
        rounds


@pytest.mark.parametrize("how, code, words", [
    ("exit 3", 3, "exited with code 3"),
    # as a shell reports it (128 + 9), not subprocess's -9 (which exits 247)
    ("SIGKILL", 137, "was killed by SIGKILL (exit code 137)"),
])
def test_a_crashed_worker_fails_the_job_and_is_named(tmp_path, how, code, words):
    env = {"CRASH_RANK": "1"}
    if how == "SIGKILL":
        env["CRASH_SIGNAL"] = str(int(signal.SIGKILL))
    r = _launch(["-n", "2", "-s", "2"], tmp_path, env=env)
    assert r.returncode == code, r.stdout + r.stderr
    assert f"worker 1 {words}" in r.stderr, r.stderr
    dead = [line for line in r.stdout.splitlines() if line.startswith("[worker 0] DEAD:")]
    assert dead and "rank 1" in dead[0] and words in dead[0], r.stdout


def _placed(address):
    """{Ray job id: {actor class: sorted node ids}} of every actor the cluster
    has seen, from Ray's actor table (where Ray ran them, whatever the
    launcher says)."""
    import ray
    from ray._private import state

    ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        table = state.actors()
    finally:
        ray.shutdown()
    out = {}
    for info in table.values():
        where = out.setdefault(info["JobID"], {}).setdefault(info["ActorClassName"], [])
        where.append(info["Address"]["NodeID"])
    return {job: {cls: sorted(nodes) for cls, nodes in by.items()} for job, by in out.items()}


def test_launch_places_shards_and_workers_on_a_multi_node_cluster(tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    monkeypatch.setenv("RAY_TMPDIR", temp)   # Ray's session files go there, removed after
    monkeypatch.setenv("RAY_raylet_start_wait_time_s", "300")   # a loaded machine is slow
    cluster = None
    try:
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "object_store_memory": 150 * 1024 * 1024})
        cluster.add_node(num_cpus=1, object_store_memory=150 * 1024 * 1024)
        cluster.wait_for_nodes()
        assert cluster.address.startswith("127.0.0.1:")
        nodes = sorted(n.node_id for n in cluster.list_all_nodes())
        assert len(nodes) == 2
        # --launcher ray, default spread: a shard and a worker on each node
        r = _launch(["-n", "2", "-s", "2", "--launcher", "ray", "--ray-address",
                     cluster.address], tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[worker 1] rank 1 of 2 got [3.0, 3.0]" in r.stdout
        spread = _placed(cluster.address)
        # pack: both shards on one node; the worker runs here
        r = _launch(["-n", "1", "-s", "2", "--shard-placement", "pack", "--ray-address",
                     cluster.address], tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[worker 0] rank 0 of 1 got [1.0, 1.0]" in r.stdout
        packed = {job: by for job, by in _placed(cluster.address).items() if job not in spread}
        [spread] = [by for by in spread.values() if "ServerShard" in by]
        [packed] = packed.values()
        print("spread:", spread, "\npacked:", packed, "\nnodes:", nodes)
        assert spread["ServerShard"] == nodes and spread["RemoteProcess"] == nodes, spread
        assert len(set(packed["ServerShard"])) == 1 and packed["ServerShard"][0] in nodes
        assert "RemoteProcess" not in packed
        assert "pack placement over 2 node(s): shard 0 on node " in r.stderr, r.stderr
    finally:
        if cluster is not None:
            cluster.shutdown()
        remove_tree(temp)   # (Ray's last processes may still be writing logs)


CLJ_WORKER = """
(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray]
         '[org.apache.clojure-mxnet.optimizer :as optimizer])
(def kv (kvstore/create "dist_sync"))
(def rank (kvstore/rank kv))
(kvstore/init kv ["w" "b"] [(ndarray/zeros [2 3]) (ndarray/zeros [4])])
(kvstore/set-optimizer kv (optimizer/sgd {:learning-rate 0.5 :wd 0.0}))
(def w (ndarray/zeros [2 3]))
(def b (ndarray/zeros [4]))
(dotimes [i 3]
  (kvstore/push kv ["w" "b"] [(ndarray/* (ndarray/ones [2 3]) (inc rank)) (ndarray/ones [4])])
  (kvstore/pull kv ["w" "b"] [w b]))
(println "rank" rank "of" (kvstore/num-workers kv) (kvstore/type kv)
         "w" (first (ndarray/->vec w)) "b" (first (ndarray/->vec b)))
"""

CLJ_SERVER = """
(require '[org.apache.clojure-mxnet.kvstore-server :as kvstore-server])
(kvstore-server/init {"DMLC_ROLE" "server"})
(kvstore-server/start)
(println "server" (System/getenv "DMLC_SERVER_ID") "saw the job end")
"""


def test_clojure_workers_and_a_clojure_server_process(tmp_path):
    if not shutil.which("java"):
        pytest.skip("needs a JDK (java) for the Clojure processes")
    mxkv = [*MXKV]
    build = subprocess.run([*mxkv, "build"], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr   # compile once, not in three JVMs at once
    (tmp_path / "train.clj").write_text(CLJ_WORKER)
    (tmp_path / "server.clj").write_text(CLJ_SERVER)
    server = " ".join([*mxkv, "clj", str(tmp_path / "server.clj")])
    e = {k: v for k, v in os.environ.items() if k not in ("MXKV_RAY_ADDRESS", "RAY_ADDRESS")}
    r = subprocess.run([*mxkv, "launch", "-n", "2", "-s", "1", "--server-cmd", server, "--",
                        *mxkv, "clj", str(tmp_path / "train.clj")],
                       capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in (0, 1):
        # SGD(lr=0.5) on the servers, 3 rounds: w -= 0.5 * (1 + 2), b -= 0.5 * 2
        assert f"[worker {rank}] rank {rank} of 2 dist_sync w -4.5 b -3.0" in r.stdout, r.stdout
    assert "[server 0] server 0 saw the job end" in r.stdout, r.stdout
    # nothing from third parties: the engines join Ray off their main thread
    assert "SIGTERM handler is not set" not in r.stdout + r.stderr, r.stderr


MODES = textwrap.dedent("""
    import os, stat, sys
    import mxkv as mx
    import ray
    kv = mx.kv.create("dist_sync")
    kv.init("w", mx.nd.zeros((2,)))
    kv._barrier()
    if kv.rank == 0:
        session = os.path.realpath(ray._private.worker.global_worker.node.get_session_dir_path())
        temp = os.path.dirname(os.path.dirname(session))
        for d in (temp, os.path.dirname(session), session, session + "/sockets",
                  session + "/logs"):
            print("MODE", oct(stat.S_IMODE(os.stat(d).st_mode)), d)
    kv._barrier()
""")


def test_the_launchers_ray_directories_are_private_and_a_reused_directory_needs_resume(
        tmp_path):
    script = tmp_path / "modes.py"
    script.write_text(MODES)
    ckpt = tmp_path / "ckpt"
    e = dict(os.environ, MXKV_DEAD_TIMEOUT="30", MXKV_CHECKPOINT_DIR=str(ckpt))
    e.pop("MXKV_RAY_ADDRESS", None)
    e.pop("RAY_ADDRESS", None)

    def launch(*flags):
        return subprocess.run([*MXKV, "launch", "-n", "2", "-s", "1", *flags, "--",
                               sys.executable, str(script)],
                              capture_output=True, text=True, timeout=120, env=e)

    r = launch()
    assert r.returncode == 0, r.stdout + r.stderr
    modes = [line.split() for line in r.stdout.splitlines() if "MODE" in line]
    assert len(modes) == 5 and all(m[-2] == "0o700" for m in modes), r.stdout
    r = launch()   # the first job's state is there: refused, naming the directory
    assert r.returncode != 0 and str(ckpt) in r.stderr and "--resume" in r.stderr, r.stderr
    r = launch("--resume")
    assert r.returncode == 0, r.stdout + r.stderr
