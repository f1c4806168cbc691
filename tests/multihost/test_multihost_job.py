"""dist_sync jobs across two emulated hosts, started by ``mxkv launch
--launcher ray`` on host 0 against the bed's Ray cluster (token auth on):
2 workers x 2 shards, one of each per host. The pulls equal a local
store's, and the values crossed the hosts' links. (4 workers placed 2 per
host by ``--workers-per-host 2``: test_docs_hosts.py.) After the job, even
one that exits 0, nothing of it is left on either host."""
from __future__ import annotations

import os
import re
import sys

from conftest import wait_clean

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_worker  # noqa: E402


def launch(bed, out, *flags):
    """``mxkv launch`` of job_worker.py on host 0; asserts it exited 0."""
    os.mkdir(out)
    mxkv = os.path.join(os.path.dirname(bed.python), "mxkv")
    r = bed.run(0, [mxkv, "launch", *flags, "--launcher", "ray", "--",
                    bed.python, os.path.join(HERE, "job_worker.py"), out],
                env={**bed.ray_env(), "MXKV_DEAD_TIMEOUT": "30"}, check=False, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


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
    hosts = job_worker.check_pulls(out, 2)
    assert sorted(hosts) == [f"{bed.prefix}-h0", f"{bed.prefix}-h1"]
    # the big key's values crossed each link: 5 rounds of pushes and pulls
    # of the remote shard's half, at least, each way
    half = 1100 * 1000 * 4 // 2
    for i in range(2):
        assert after[i]["tx"] - before[i]["tx"] > 5 * 2 * half
        assert after[i]["rx"] - before[i]["rx"] > 5 * 2 * half

    # the remote shard's pull segments and checkpoint log are gone from host
    # 1's /dev/shm, as every process of the job (its agent removed them)
    took, first, now = wait_clean(bed)
    print(f"\n[fault] none (exit 0): left at the launcher's exit {first}, after {took:.1f} s "
          f"{now}")
    assert not any(now.values()), now
