"""One aggregation per host, on and off: ResNet-50's push + pull with the
shards on another node.

A Ray cluster of two nodes on this machine (``ray.cluster_utils.Cluster``):
``--workers`` workers (Ray actors) on the head node, ``--servers`` shards on
the other node, so every push crosses from one node's object store to the
other's (Ray's object transfer, over loopback here). Sides, launched as
whole jobs in turn (A B A B ...):

* ``relay``: ``MXKV_HOST_AGGREGATION=1`` (the default): the head's relay
  sums the workers' pushes and sends each shard one per round;
* ``direct``: ``MXKV_HOST_AGGREGATION=0``: each worker sends its own.

It prints the median time per iteration of each side, their ratio, and the
pushes each shard received per round with what crossed to its node.

    .venv/bin/python benchmarks/studies/relay_bench.py --reps 2 --iters 15
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from resnet50 import resnet50_param_shapes  # noqa: E402

SIDES = {"relay": "1", "direct": "0"}


class Worker:
    """A worker process pinned to a node; returns rank 0's iteration times."""

    def run(self, env: dict, warmup: int, iters: int) -> list:
        import numpy as np

        os.environ.update(env)
        import mxkv as mx

        shapes = [s for _, s in resnet50_param_shapes()]
        keys = list(range(len(shapes)))
        kv = mx.kv.create("dist_sync")
        try:
            kv.init(keys, [mx.nd.zeros(s) for s in shapes])
            grads = [mx.nd.ones(s) for s in shapes]
            outs = [mx.nd.zeros(s) for s in shapes]
            kv._barrier()
            times = []
            for i in range(warmup + iters):
                t = time.perf_counter()
                kv.push(keys, grads)
                kv.pull(keys, out=outs)
                dt = time.perf_counter() - t
                if i == 0 and not (outs[-1].asnumpy() == kv.num_workers).all():
                    raise SystemExit(f"wrong result: {np.ravel(outs[-1].asnumpy())[:4]}")
                if i >= warmup:
                    times.append(dt)
            kv._barrier()
            return times
        finally:
            kv.close()


def run_side(ray, head: str, other: str, side: str, a: argparse.Namespace, n: int) -> dict:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from mxkv.kvstore.dist.cluster import create_job

    job = create_job(a.workers, a.servers, name=f"relaybench-{side}-{n}", shard_options={
        "scheduling_strategy": NodeAffinitySchedulingStrategy(other, soft=False)})
    try:
        workers = [ray.remote(Worker).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)
        ).remote() for _ in range(a.workers)]
        env = {"MXKV_HOST_AGGREGATION": SIDES[side]}
        refs = [w.run.remote({**job.environ(rank=r), **env}, a.warmup, a.iters)
                for r, w in enumerate(workers)]
        times = ray.get(refs, timeout=1800)[0]
        stats = ray.get([s.stats.remote() for s in job.shards])
    finally:
        job.close()
    rounds = a.warmup + a.iters
    pushes = sum(len(s["arrivals"]) for s in stats) / rounds
    return {"ms": 1e3 * statistics.median(times), "pushes_per_round": pushes}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--store-mb", type=int, default=2048, help="each node's object store")
    a = p.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    os.environ["RAY_TMPDIR"] = temp
    cluster = None
    try:
        store = a.store_mb << 20
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "object_store_memory": store})
        other = cluster.add_node(num_cpus=1, object_store_memory=store).node_id
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="mxkv", log_to_driver=False,
                 configure_logging=False)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        import resnet50
        ray.cloudpickle.register_pickle_by_value(resnet50)
        head = ray.get_runtime_context().get_node_id()
        got = {s: [] for s in SIDES}
        for n in range(a.reps):
            for side in SIDES:
                r = run_side(ray, head, other, side, a, n)
                got[side].append(r)
                print(f"{side:7s} rep {n}: {r['ms']:.1f} ms/iter, "
                      f"{r['pushes_per_round']:.0f} part pushes per round at the shards",
                      flush=True)
        med = {s: statistics.median(r["ms"] for r in rs) for s, rs in got.items()}
        print(f"\n{a.workers} workers on one node, {a.servers} shard(s) on the other, "
              f"{a.reps} runs x {a.iters} iterations a side (medians):")
        for s in SIDES:
            runs = ", ".join(f"{r['ms']:.1f}" for r in got[s])
            print(f"  {s:7s} {med[s]:8.1f} ms/iter  (runs: {runs})")
        print(f"  relay/direct {med['relay'] / med['direct']:.2f}")
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
