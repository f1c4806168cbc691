"""Run MXNet 1.9.1's nightly KVStore tests against mxkv, each as a job of
``mxkv launch -n 2 -s 2`` on simulated GPUs (``MXKV_SIMULATE_GPUS=2``).

Give it a directory holding MXNet 1.9.1's ``tests/nightly`` scripts
(``dist_sync_kvstore.py``, ``dist_device_sync_kvstore.py``,
``dist_device_sync_kvstore_custom.py`` and ``test_kvstore.py``, which the
first imports); the repository holds no copy::

    .venv/bin/python tools/mxnet_nightly/run.py /work/upstream/mxnet-1.9.1-nightly

Each case runs through ``as_mxnet.py`` (``import mxnet`` gives mxkv). The
gluon cases are not run: mxkv has no gluon. Prints one line per case (pass
or fail, seconds) and exits 0 only when every case passed.

``--two-nodes`` runs every case on a Ray cluster of two nodes on this
machine (``ray.cluster_utils.Cluster``): the workers on the head node, one
shard on each node, so the pushes to the other node's shard go through the
head's relay (one aggregation per host) and Ray's object transfer.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (name, script, arguments for as_mxnet.py after the script's path)
CASES = [
    ("dist_sync_kvstore.py (default_cpu)", "dist_sync_kvstore.py", []),
    ("dist_sync_kvstore.py --type=compressed_cpu", "dist_sync_kvstore.py",
     ["--type=compressed_cpu"]),
    # its third case, test_gluon_trainer_type, is gluon's
    ("dist_device_sync_kvstore.py (without gluon)", "dist_device_sync_kvstore.py",
     ["--call", "test_sync_init,test_sync_push_pull"]),
    ("dist_device_sync_kvstore_custom.py", "dist_device_sync_kvstore_custom.py", []),
]


def run_case(nightly: Path, script: str, extra: list, timeout: float,
             address: str = "") -> tuple:
    call = []
    if extra[:1] == ["--call"]:
        call, extra = extra[:2], extra[2:]
    attach = ["--ray-address", address] if address else []
    cmd = [sys.executable, "-m", "mxkv.cli", "launch", "-n", "2", "-s", "2", *attach,
           "--env", "MXKV_SIMULATE_GPUS=2", "--", sys.executable, str(HERE / "as_mxnet.py"),
           *call, str(nightly / script), *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("MXKV_RAY_ADDRESS", "RAY_ADDRESS")}
    t = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=nightly, env=env, capture_output=True, text=True,
                           timeout=timeout)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = None, f"timed out after {timeout} s\n{exc.stdout or ''}{exc.stderr or ''}"
    return rc, time.monotonic() - t, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nightly", type=Path, help="MXNet 1.9.1's tests/nightly")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--log-dir", type=Path, default=None, help="keep each case's output here")
    ap.add_argument("--two-nodes", action="store_true",
                    help="on a two-node Ray cluster on loopback (a shard on each node)")
    args = ap.parse_args(argv)
    cluster = None
    if args.two_nodes:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 2, "object_store_memory": 500 << 20})
        cluster.add_node(num_cpus=2, object_store_memory=500 << 20)
        cluster.wait_for_nodes()
    try:
        return run_all(args, cluster.address if cluster else "")
    finally:
        if cluster is not None:
            cluster.shutdown()


def run_all(args: argparse.Namespace, address: str) -> int:
    failed = 0
    for name, script, extra in CASES:
        if args.only not in name:
            continue
        rc, secs, out = run_case(args.nightly.resolve(), script, extra, args.timeout, address)
        ok = rc == 0
        failed += not ok
        print(f"{'pass' if ok else 'FAIL'}  {secs:7.1f} s  {name}"
              + ("" if ok else f"  (exit {rc})"), flush=True)
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
            slug = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
            (args.log_dir / (slug + ".log")).write_text(out)
        if not ok:
            print("\n".join(out.splitlines()[-30:]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
