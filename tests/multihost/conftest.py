"""One bed of two emulated hosts (1 Gbit/s each, a Ray node on each, token
auth) shared by the job and fault tests of this directory, and what they
check after each job: that nothing of it is left on either host."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

#: Command-line pieces of a job's processes: the launcher and its watchdog,
#: the workers, the keepers, and the job's Ray actors (a Ray node's own
#: processes, `ray start`'s, are the user's and stay)
JOB_PROCESSES = ("mxkv launch", "kvstore.dist.watchdog", "kvstore.dist.node_keeper",
                 "job_worker.py", "ray::ServerShard", "ray::NodeAgent", "ray::HostRelay",
                 "ray::RemoteProcess", "ray::Coordinator")


@pytest.fixture(scope="session")
def bed(bed_tool, needs_ray):
    with bed_tool.Bed(2, rate="1gbit") as bed:
        yield bed


def job_leftovers(bed, host):
    """What of any mxkv job is on ``host``: its processes, its /dev/shm
    and /tmp entries (``mxkv-*``)."""
    out = [f"process {p[:120]}" for p in bed.processes(host)
           if any(s in p for s in JOB_PROCESSES)]
    root = f"/proc/{bed.hosts[host].init_pid}/root"
    for d in ("dev/shm", "tmp"):
        try:
            out += [f"/{d}/{f}" for f in os.listdir(f"{root}/{d}") if f.startswith("mxkv-")]
        except OSError:
            pass
    return out


def wait_clean(bed, timeout=120.0, hosts=None):
    """Poll the hosts (default: all) until nothing of a job is left on
    ``hosts``, up to ``timeout`` s (generous: tearing down Ray actors and
    processes on two hosts of a loaded machine is slow; how long it took is
    recorded, the callers assert only what is left); returns (seconds it
    took, what was on each host at the first look, what is there at the end)."""
    start = time.monotonic()
    hosts = range(bed.n) if hosts is None else hosts
    first = {h: job_leftovers(bed, h) for h in range(bed.n)}
    while True:
        now = {h: job_leftovers(bed, h) for h in range(bed.n)}
        if not any(now[h] for h in hosts) or time.monotonic() - start > timeout:
            return time.monotonic() - start, first, now
        time.sleep(0.1)


def launch(bed, out, *flags, env=None):
    """Start ``mxkv launch FLAGS -- job_worker.py OUT ...`` on host 0 (as a
    Popen; output in OUT/launch.log)."""
    os.makedirs(out, exist_ok=True)
    mxkv = os.path.join(os.path.dirname(bed.python), "mxkv")
    argv = [mxkv, "launch", *flags[0], "--", bed.python, os.path.join(HERE, "job_worker.py"),
            out, *[str(a) for a in flags[1:]]]
    log = open(os.path.join(out, "launch.log"), "w")
    p = bed.popen(0, argv, env={**bed.ray_env(), **(env or {})}, stdout=log,
                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    return p


def output(out):
    with open(os.path.join(out, "launch.log")) as f:
        return f.read()


def wait_files(paths, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        assert proc.poll() is None, f"the job ended early ({proc.returncode})"
        assert time.monotonic() < deadline, f"{paths} did not appear"
        time.sleep(0.05)


def host_pids(bed_tool, bed, host, needle):
    """The pids (this machine's) of ``host``'s processes whose command line holds ``needle``."""
    out = []
    for pid in bed_tool._pids_in(bed.hosts[host].pidns):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            out.append(pid)
    return out


def kill(pids, sig=signal.SIGKILL):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
