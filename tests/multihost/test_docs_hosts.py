"""docs/distributed.md's "Several hosts" block, run as written on two
emulated hosts: ``mxkv cluster head`` on host 0 (a new token, the address
other hosts reach), ``mxkv cluster join`` on host 1, then ``mxkv launch``
of 4 workers, 2 per host. And ``mxkv launch`` refusing a cluster that has
no token auth unless ``--trusted-network``."""
from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "distributed.md"
sys.path.insert(0, str(HERE))
import job_worker  # noqa: E402


def several_hosts_block():
    """The docs' block: a list of (host the comment names, its lines)."""
    text = DOC.read_text()
    section = text[text.index("### Several hosts"):]
    body = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    steps = []
    for line in body.splitlines():
        m = re.match(r"# on (the first host|every other host)", line)
        if m:
            steps.append((0 if m.group(1) == "the first host" else 1, []))
        steps[-1][1].append(line)
    return steps


def venv_path(bed):
    return os.path.dirname(bed.python) + os.pathsep + os.environ["PATH"]


def test_the_docs_several_hosts_block_runs_as_written(bed_tool, needs_ray):
    steps = several_hosts_block()
    assert [h for h, _ in steps] == [0, 1, 0]
    with bed_tool.Bed(2, ray=False) as bed:
        out = os.path.join(bed.dir, "out")
        os.mkdir(out)
        worker = f"python {HERE / 'job_worker.py'} {out}"
        for host, lines in steps:
            script = "set -e\n" + "\n".join(lines).replace("HEAD_IP", bed.hosts[0].addr) \
                .replace("python train.py", worker)
            r = bed.run(host, ["bash", "-c", script], cwd=bed.dir, check=False, timeout=300,
                        env={"PATH": venv_path(bed), "MXKV_DEAD_TIMEOUT": "30"})
            assert r.returncode == 0, f"host {host}:\n{script}\n{r.stdout[-3000:]}" \
                                      f"\n{r.stderr[-3000:]}"
            if host == 0 and "cluster head" in script:
                # the head took the host's address, and says how to join it
                assert f"mxkv cluster join {bed.hosts[0].addr}:6379" in r.stdout, r.stdout
        token = os.stat(os.path.join(bed.dir, "ray-token"))
        assert stat.S_IMODE(token.st_mode) == 0o600
        hosts = job_worker.check_pulls(out, 4)
        assert hosts == [f"{bed.prefix}-h0"] * 2 + [f"{bed.prefix}-h1"] * 2


def test_launch_refuses_a_cluster_without_auth_unless_trusted(bed_tool, needs_ray):
    with bed_tool.Bed(2, ray=False) as bed:
        env = {"PATH": venv_path(bed), "RAY_AUTH_MODE": "disabled"}
        head = f"{bed.hosts[0].addr}:6379"
        bed.run(0, ["ray", "start", "--head", "--port", "6379", "--node-ip-address",
                    bed.hosts[0].addr, "--num-cpus", "2", "--disable-usage-stats",
                    "--include-dashboard=false"], env=env, timeout=120)
        out = os.path.join(bed.dir, "out")
        os.mkdir(out)
        job = ["mxkv", "launch", "-n", "1", "-s", "1", "--ray-address", head]
        cmd = ["--", "python", str(HERE / "job_worker.py"), out]
        r = bed.run(0, job + cmd, env=env, check=False, timeout=300)
        assert r.returncode != 0
        assert "accepts connections without a token" in r.stderr, r.stderr[-3000:]
        assert "--trusted-network" in r.stderr
        assert os.listdir(out) == []   # no worker ran
        r = bed.run(0, job + ["--trusted-network"] + cmd, env=env, check=False, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert job_worker.check_pulls(out, 1) == [f"{bed.prefix}-h0"]


@pytest.mark.parametrize("mode", [0o644, 0o640])
def test_cluster_refuses_a_token_file_others_can_read(tmp_path, mode):
    from mxkv.kvstore.dist.nodes import token_environ

    path = tmp_path / "ray-token"
    path.write_text("0" * 64)
    path.chmod(mode)
    with pytest.raises(SystemExit, match="unreadable by others"):
        token_environ(str(path), create=False)
    path.chmod(0o600)
    assert token_environ(str(path), create=False) == {
        "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}
