"""The test bed itself (tools/hosts.py): hosts isolated from each other as
separate machines are, joined by one Ray cluster with token auth, and
removed without a trace by ``down``, by SIGTERM, or (the owner SIGKILLed)
by ``hosts.py down``'s sweep of stale beds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import ray, socket
    ray.init(logging_level="ERROR")
    print(socket.gethostname(), sorted(n["NodeManagerAddress"] for n in ray.nodes()
                                       if n["Alive"]))
""")


def test_hosts_are_isolated_share_one_cluster_and_leave_nothing_behind(bed_tool, needs_ray):
    bed = bed_tool.Bed(2, rate="1gbit")
    with bed:
        pidns = [h.pidns for h in bed.hosts]
        assert len(set(pidns)) == 2 and os.readlink("/proc/self/ns/pid") not in pidns
        for i, other in ((0, 1), (1, 0)):
            # its own name, address, processes (one raylet: its own), /dev/shm
            out = bed.run(i, ["sh", "-c", "hostname; ip -4 -o addr show eth0; "
                              "ps -eo args | grep -c '^[^ ]*raylet'; "
                              f"touch /dev/shm/{bed.prefix}-mark{i}; ls /dev/shm"]).stdout
            lines = out.splitlines()
            assert lines[0] == f"{bed.prefix}-h{i}"
            assert f"inet {bed.hosts[i].addr}/24" in lines[1]
            assert lines[2] == "1", out
            assert f"{bed.prefix}-mark{other}" not in lines[3:], out
            # the rate limit on both directions of its link
            assert "tbf" in subprocess.run(["tc", "-n", bed.hosts[i].netns, "qdisc", "show",
                                            "dev", "eth0"], capture_output=True,
                                           text=True).stdout
        assert not [p for p in os.listdir("/dev/shm") if p.startswith(bed.prefix)]
        # token auth is on: a driver with another token is refused (it takes
        # Ray ~20 s to give up: meanwhile the rest is checked)
        wrong = bed.popen(1, [bed.python, "-c", PROBE], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env={**bed.ray_env(), "RAY_AUTH_TOKEN": "0" * 64})
        # a driver on host 1 joins the cluster whose nodes are the two hosts
        r = bed.run(1, [bed.python, "-c", PROBE], env=bed.ray_env())
        assert r.stdout.split(None, 1) == [f"{bed.prefix}-h1",
                                           str(sorted(h.addr for h in bed.hosts)) + "\n"]
        out, err = wrong.communicate(timeout=120)
        assert wrong.returncode != 0
        assert "auth" in (out + err).lower(), err[-2000:]
        # bytes crossed host 1's link (the driver's traffic)
        assert bed.link_bytes(1)["tx"] > 0
    assert bed_tool.Bed.leftovers(bed.prefix, pidns) == []
    assert not os.path.exists(bed.dir)


OWNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tools!r})
    from hosts import Bed
    bed = Bed(2, ray=False).up()
    print(bed.prefix, bed.dir, *[h.pidns for h in bed.hosts], flush=True)
    bed.run(1, ["sleep", "1000"], timeout=None)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_bed_whose_owner_is_killed_is_removed(bed_tool, sig):
    # SIGTERM: the owner's handler takes the bed down. SIGKILL: the hosts'
    # processes die with it (pdeathsig), and `hosts.py down` sweeps the rest.
    tools = os.path.dirname(bed_tool.__file__)
    owner = subprocess.Popen([sys.executable, "-c", OWNER.format(tools=tools)],
                             stdout=subprocess.PIPE, text=True)
    try:
        prefix, bed_dir, *pidns = owner.stdout.readline().split()
        assert bed_tool.Bed.leftovers(prefix, pidns)   # it is up
        owner.send_signal(sig)
        owner.wait(timeout=60)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()
    if sig == signal.SIGKILL:
        bed_tool._wait_gone(pidns, 30)
        assert [f"netns {prefix}-br", f"netns {prefix}-h0", f"netns {prefix}-h1"] == sorted(
            x for x in bed_tool.Bed.leftovers(prefix, pidns) if x.startswith("netns"))
        out = subprocess.run([sys.executable, bed_tool.__file__, "down"], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert f"removed stale {prefix}-h1" in out.stdout
    assert bed_tool.Bed.leftovers(prefix, pidns) == []
    assert not os.path.exists(bed_dir)


SLOW_DOWN = textwrap.dedent("""
    import hosts, time
    waited = hosts._wait_gone
    def slow(*args, **kwargs):   # the bed is being removed: say so, and take a while
        print("removing", flush=True)
        time.sleep(1.0)
        return waited(*args, **kwargs)
    hosts._wait_gone = slow
""")


def test_a_second_signal_while_the_bed_is_removed_waits_for_the_removal(bed_tool):
    # `timeout 900 bench` killed by `pkill -f bench`: SIGTERM from both, the
    # second one arriving while the first one's handler takes the bed down
    tools = os.path.dirname(bed_tool.__file__)
    script = OWNER.format(tools=tools).replace("from hosts import Bed",
                                               "from hosts import Bed" + SLOW_DOWN)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        prefix, bed_dir, *pidns = owner.stdout.readline().split()
        assert bed_tool.Bed.leftovers(prefix, pidns)   # it is up
        owner.send_signal(signal.SIGTERM)
        assert owner.stdout.readline().strip() == "removing"
        owner.send_signal(signal.SIGTERM)
        assert owner.wait(timeout=60) == -signal.SIGTERM   # it still dies of it
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdout.close()
    assert bed_tool.Bed.leftovers(prefix, pidns) == []
    assert not os.path.exists(bed_dir)
