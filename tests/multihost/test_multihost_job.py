"""dist_sync jobs across two emulated hosts, started by ``mxkv launch
--launcher ray`` on host 0 against the bed's Ray cluster (token auth on):
2 workers x 2 shards, one of each per host, and 4 workers placed 2 per host
by ``--workers-per-host 2``. The pulls equal a local store's, and the values
crossed the hosts' links."""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

import mxkv as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_worker  # noqa: E402


def expected(workers=2):
    local = mx.kv.create("local")
    keys = list(range(len(job_worker.SHAPES)))
    local.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in job_worker.SHAPES])
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    for i in range(job_worker.ROUNDS):
        local.push(keys, [[mx.nd.array(job_worker.value(r, i, s)) for r in range(workers)]
                          for s in job_worker.SHAPES])
    outs = [mx.nd.zeros(s) for s in job_worker.SHAPES]
    local.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


@pytest.fixture(scope="module")
def bed(bed_tool, needs_ray):
    with bed_tool.Bed(2, rate="1gbit") as bed:
        yield bed


def launch(bed, out, *flags):
    """``mxkv launch`` of job_worker.py on host 0; asserts it exited 0."""
    os.mkdir(out)
    mxkv = os.path.join(os.path.dirname(bed.python), "mxkv")
    r = bed.run(0, [mxkv, "launch", *flags, "--launcher", "ray", "--",
                    bed.python, os.path.join(HERE, "job_worker.py"), out],
                env={**bed.ray_env(), "MXKV_DEAD_TIMEOUT": "30"}, check=False, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def check_pulls(out, workers):
    """Every rank's pulls equal a local store's; returns each rank's host."""
    want = expected(workers)
    hosts = []
    for rank in range(workers):
        got = np.load(os.path.join(out, f"rank{rank}.npz"))
        hosts.append(str(got["host"]))
        for k, w in enumerate(want):
            np.testing.assert_allclose(got[f"k{k}"], w, rtol=1e-6, err_msg=f"key {k}")
    return hosts


def test_dist_sync_two_hosts_one_worker_and_one_shard_each(bed):
    out = os.path.join(bed.dir, "out")
    before = [bed.link_bytes(i) for i in range(2)]
    r = launch(bed, out, "-n", "2", "-s", "2")
    after = [bed.link_bytes(i) for i in range(2)]
    # one shard on each host (the launcher says where)
    where = re.search(r"placement over 2 node\(s\): (.*)", r.stderr)
    assert where, r.stderr[-3000:]
    shards = re.findall(r"shard \d on node \w+ \(([\d.]+)\)", where.group(1))
    assert sorted(shards) == [h.addr for h in bed.hosts], where.group(0)
    # one worker on each host, and every pull as a local store's
    hosts = check_pulls(out, 2)
    assert sorted(hosts) == [f"{bed.prefix}-h0", f"{bed.prefix}-h1"]
    # the big key's values crossed each link: 5 rounds of pushes and pulls
    # of the remote shard's half, at least, each way
    half = 1100 * 1000 * 4 // 2
    for i in range(2):
        assert after[i]["tx"] - before[i]["tx"] > 5 * 2 * half
        assert after[i]["rx"] - before[i]["rx"] > 5 * 2 * half


def test_workers_per_host_places_two_workers_on_each_host(bed):
    # ranks 0 and 1 on the launcher's host, 2 and 3 on the other
    out = os.path.join(bed.dir, "out4")
    launch(bed, out, "-n", "4", "-s", "2", "--workers-per-host", "2")
    hosts = check_pulls(out, 4)
    assert hosts == [f"{bed.prefix}-h0"] * 2 + [f"{bed.prefix}-h1"] * 2
