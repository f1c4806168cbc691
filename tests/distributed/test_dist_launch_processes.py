"""What `mxkv launch` starts: it ends, and leaves nothing behind (a frozen
worker, SIGTERM, a second SIGINT; checked afterwards with `ps` and the job's
directories), and its local cluster listens on loopback only and refuses
whoever lacks the job's token."""
from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

from mxkv.kvstore.dist.watchdog import open_files  # noqa: E402

MXKV = [sys.executable, "-m", "mxkv.cli"]

# A worker that does one round, says where it is, then waits outside the
# store (so only the launcher can end it). ON_TERM: what it does on SIGTERM.
WORKER = textwrap.dedent("""
    import os, signal, sys, time
    import mxkv as mx
    def on_term(signum, frame):
        print("got", signal.Signals(signum).name, flush=True)
        sys.exit(0)
    kv = mx.kv.create("dist_sync")
    mode = os.environ.get("ON_TERM", "default")   # after Ray set its own handlers
    if mode == "handle":
        signal.signal(signal.SIGTERM, on_term)
    elif mode == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    kv.init("w", mx.nd.zeros((2,)))
    kv.push("w", mx.nd.ones((2,)))
    kv.pull("w", out=mx.nd.zeros((2,)))
    print("READY", kv.rank, os.getpid(), os.environ["MXKV_CHECKPOINT_DIR"],
          os.environ["MXKV_RAY_ADDRESS"], flush=True)
    while True:
        time.sleep(0.1)
""")

# generous: a loaded 2-core machine starts Ray and four Python processes slowly
START = 240
END = 120


class Launch:
    """``mxkv launch -n 2 -s 1`` of WORKER, its output read as it comes."""

    def __init__(self, tmp_path, env=None):
        script = tmp_path / "worker.py"
        script.write_text(WORKER)
        e = {k: v for k, v in os.environ.items() if k not in ("MXKV_RAY_ADDRESS", "RAY_ADDRESS")}
        e.update(env or {})
        self.proc = subprocess.Popen([*MXKV, "launch", "-n", "2", "-s", "1", "--", sys.executable,
                                      str(script)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=e)
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=self._read, args=(s, b), daemon=True)
                        for s, b in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self.readers:
            t.start()
        self.tree = set()

    @staticmethod
    def _read(stream, buf):
        for line in stream:
            buf.append(line.rstrip("\n"))

    def wait_for(self, pred, what, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = pred()
            if found:
                return found
            assert self.proc.poll() is None, f"launcher ended before {what}: {self.text()}"
            time.sleep(0.1)
        raise AssertionError(f"no {what} in {timeout} s: {self.text()}")

    def ready(self):
        """Wait until both workers did a round; returns {rank: (pid, checkpoint dir)}."""
        def both():
            rows = [line.split() for line in self.out if " READY " in line]
            got = {int(r[3]): (int(r[4]), r[5]) for r in rows}
            return got if len(got) == 2 else None
        got = self.wait_for(both, "READY from both workers", START)
        self.tree = _tree(self.proc.pid)
        return got

    def end(self):
        """Wait for the launcher's exit code."""
        try:
            rc = self.proc.wait(timeout=END)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"launcher still running {END} s later: {self.text()}") \
                from None
        for t in self.readers:
            t.join(10)
        return rc

    def text(self):
        return "\nstdout:\n" + "\n".join(self.out) + "\nstderr:\n" + "\n".join(self.err)


@pytest.fixture
def launcher(tmp_path):
    """Starts launches; stops any still running when the test ends (SIGTERM,
    then SIGKILL), so a failing test leaves no job behind."""
    started = []

    def start(env=None):
        started.append(Launch(tmp_path, env))
        return started[-1]

    yield start
    for launch in started:
        if launch.proc.poll() is None:
            launch.proc.terminate()
            try:
                launch.proc.wait(60)
            except subprocess.TimeoutExpired:
                launch.proc.kill()


def _ps():
    """{pid: (ppid, state, args)} of every process, from `ps`."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,stat=,args="], capture_output=True,
                         text=True, check=True).stdout
    procs = {}
    for line in out.splitlines():
        pid, ppid, stat, *args = line.split(None, 3)
        procs[int(pid)] = (int(ppid), stat, args[0] if args else "")
    return procs


def _tree(root):
    """The pids of ``root`` and every process below it, with their command lines."""
    procs = _ps()
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        found[pid] = procs.get(pid, (0, "", ""))[2]
        todo += [p for p, (pp, _, _) in procs.items() if pp == pid]
    return set(found.items())


def _ray_dir(tree):
    """The /tmp/mxkv-ray-* directory the launcher's Ray cluster uses."""
    for _, args in tree:
        for arg in args.split():
            if "/mxkv-ray-" in arg:
                path = arg.split("=", 1)[-1]
                head, rest = path.split("/mxkv-ray-", 1)
                return f"{head}/mxkv-ray-{rest.split('/', 1)[0]}"
    return None


def _assert_nothing_left(launch, checkpoint_dir):
    ray_dir = _ray_dir(launch.tree)
    job = os.path.basename(checkpoint_dir).rsplit("-", 1)[0][len("mxkv-"):]
    data_dir = f"/dev/shm/mxkv-{job}-data"   # the same-host data path's segments
    assert ray_dir and checkpoint_dir.startswith("/dev/shm/mxkv-job-"), (launch.tree,
                                                                             checkpoint_dir)
    names = {pid: args for pid, args in launch.tree}
    assert any("raylet" in a for a in names.values()), names   # the tree did hold Ray
    # generous: a slow ps, Ray's processes ending, the watchdog after SIGKILL,
    # all on a loaded machine (a clean end takes a few seconds)
    deadline = time.monotonic() + 120
    while True:
        alive = {p: a for p, a in names.items()
                 if p in (now := _ps()) and now[p][2] == a and not now[p][1].startswith("Z")}
        gone = not alive and not any(map(os.path.exists, (ray_dir, checkpoint_dir, data_dir)))
        if gone or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not alive, f"left running: {alive}"
    assert not os.path.exists(ray_dir), os.listdir(ray_dir)
    assert not os.path.exists(checkpoint_dir), os.listdir(checkpoint_dir)
    assert not os.path.exists(data_dir), os.listdir(data_dir)


def test_a_frozen_worker_ends_the_job_naming_it_and_leaves_nothing(launcher):
    launch = launcher({"MXKV_DEAD_TIMEOUT": "5", "MXKV_HEARTBEAT_INTERVAL": "0.5"})
    workers = launch.ready()
    frozen, checkpoints = workers[1]
    os.kill(frozen, signal.SIGSTOP)
    rc = launch.end()
    assert rc != 0, launch.text()
    assert any("worker 1 was declared dead: no heartbeat" in line for line in launch.err), \
        launch.text()
    _assert_nothing_left(launch, checkpoints)


def test_sigterm_is_forwarded_and_the_launcher_leaves_nothing(launcher):
    launch = launcher({"ON_TERM": "handle"})
    workers = launch.ready()
    launch.proc.send_signal(signal.SIGTERM)
    rc = launch.end()
    assert rc == 128 + signal.SIGTERM, launch.text()
    for rank in (0, 1):
        assert f"[worker {rank}] got SIGTERM" in launch.out, launch.text()
    _assert_nothing_left(launch, workers[0][1])


def test_sigterm_ends_workers_without_ray_stack_dumps(launcher):
    # workers with no handler of their own: SIGTERM ends them, and Ray's
    # failure signal handler (off for the launcher's workers) prints nothing
    launch = launcher()
    workers = launch.ready()
    launch.proc.send_signal(signal.SIGTERM)
    assert launch.end() == 128 + signal.SIGTERM, launch.text()
    assert "SIGTERM received" not in launch.text(), launch.text()
    _assert_nothing_left(launch, workers[0][1])


def test_a_second_sigint_kills_at_once_and_leaves_nothing(launcher):
    launch = launcher({"ON_TERM": "ignore"})   # the workers ignore the first
    workers = launch.ready()
    launch.proc.send_signal(signal.SIGINT)
    launch.wait_for(lambda: any("SIGINT: stopping the job" in x for x in launch.err),
                    "the launcher's word that it is stopping", END)
    launch.proc.send_signal(signal.SIGINT)
    rc = launch.end()
    assert rc == 128 + signal.SIGINT, launch.text()
    assert "mxkv launch: SIGINT again: killed" in launch.err, launch.text()
    _assert_nothing_left(launch, workers[0][1])



# ---------------------------------------------------------------- a safe local cluster
def _address(hexaddr):
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words), int(port, 16)


def _listeners(pids):
    """(pid, protocol, ip, port) of the listening TCP and unconnected UDP
    sockets that the processes ``pids`` hold, from /proc."""
    out = []
    for pid in pids:
        try:
            inodes = {link[8:-1] for link in open_files(pid) if link.startswith("socket:[")}
        except OSError:
            continue   # (gone)
        for proto in ("tcp", "tcp6", "udp", "udp6"):
            try:
                with open(f"/proc/{pid}/net/{proto}") as f:
                    rows = [line.split() for line in f.read().splitlines()[1:]]
            except OSError:
                continue
            for row in rows:
                local, remote, state, inode = row[1], row[2], row[3], row[9]
                if inode not in inodes:
                    continue
                if proto.startswith("tcp") and state != "0A":   # 0A: LISTEN
                    continue
                if proto.startswith("udp") and _address(remote)[1] != 0:
                    continue
                out.append((pid, proto, *_address(local)))
    return out


def _loopback(ip):
    return ip.startswith("127.") or ip in ("::1", "::ffff:127.0.0.1") or \
        ip.startswith("::ffff:127.")


def test_the_local_cluster_listens_on_loopback_only_and_wants_the_jobs_token(launcher,
                                                                            tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    launch = launcher({"ON_TERM": "handle", "HOME": str(home)})
    workers = launch.ready()
    address = next(line.split()[-1] for line in launch.out if " READY 0 " in line)
    tree = _tree(launch.proc.pid)
    names = dict(tree)
    found = _listeners(names)
    listening = {(names[pid].split()[0].rsplit("/", 1)[-1], proto, ip, port)
                 for pid, proto, ip, port in found}
    # the GCS, the raylet, the workers' and actors' own servers: all there, all on loopback
    assert ("gcs_server", "tcp6", "::ffff:127.0.0.1", int(address.rsplit(":", 1)[1])) in \
        listening or ("gcs_server", "tcp", "127.0.0.1", int(address.rsplit(":", 1)[1])) in \
        listening, listening
    assert any(name == "raylet" for name, *_ in listening), listening
    assert [x for x in listening if not _loopback(x[2])] == [], listening

    # its own token: in the job's environment, on no command line, not in ~/.ray
    with open(f"/proc/{workers[0][0]}/environ", "rb") as f:
        environ = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    token = environ[b"RAY_AUTH_TOKEN"].decode()
    assert environ[b"RAY_AUTH_MODE"] == b"token" and len(token) == 64, environ
    assert not any(token in args for _, args in tree)
    assert not (home / ".ray").exists()
    # whoever joins without it (no token, or another one) is refused
    join = f"import ray; ray.init(address={address!r}); print('JOINED')"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    clean["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"   # else Ray dials the host's address
    intruders = [subprocess.Popen([sys.executable, "-c", join], env={**clean, **extra},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for extra in ({"HOME": str(home)},
                               {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64})]
    try:
        for p in intruders:
            out, err = p.communicate(timeout=END)
            assert p.returncode != 0 and "JOINED" not in out, out + err
            assert "AuthenticationError" in err or "InvalidAuthToken" in err, err[-2000:]
    finally:
        for p in intruders:
            p.kill()
            p.wait()
    launch.proc.send_signal(signal.SIGTERM)
    assert launch.end() == 128 + signal.SIGTERM, launch.text()


def test_a_sigkilled_launcher_leaves_nothing_either(launcher):
    # nothing can handle SIGKILL: the launcher's watchdog cleans up after it
    launch = launcher()
    workers = launch.ready()
    launch.proc.kill()
    assert launch.end() == -signal.SIGKILL
    _assert_nothing_left(launch, workers[0][1])


def _checkpoint_dirs():
    return set(glob.glob("/dev/shm/mxkv-job-*-*"))


def test_a_launcher_sigkilled_while_it_creates_the_job_leaves_nothing(launcher):
    # the job's directories exist before create_job returns: the watchdog
    # must know them from the moment they are made, not once the job is up
    before = _checkpoint_dirs()
    launch = launcher()
    made = launch.wait_for(lambda: sorted(d for d in _checkpoint_dirs() - before
                                          if not d.endswith(("-data", "-replica"))),
                           "the job's checkpoint directory", START)
    launch.tree = _tree(launch.proc.pid)
    assert not any(" READY " in line for line in launch.out), launch.text()  # mid-start
    launch.proc.kill()
    assert launch.end() == -signal.SIGKILL
    _assert_nothing_left(launch, made[0])


def test_a_remote_process_read_waits_for_a_line_or_the_end_not_longer():
    from mxkv.kvstore.dist.processes import RemoteProcess

    rp = RemoteProcess()
    rp.begin([sys.executable, "-c", "import time; time.sleep(0.5); print('one', flush=True);"
              " time.sleep(0.5)"], {})
    assert rp.read() == ([], None)        # no wait: answered at once, nothing yet
    t = time.monotonic()
    assert rp.read(wait=120) == ([b"one\n"], None)   # answered by the line
    assert rp.read(wait=120) == ([], 0)              # then by the end, with the code
    assert time.monotonic() - t < 60, "a read waited out its time instead of the output"
    quiet = RemoteProcess()
    quiet.begin([sys.executable, "-c", "import time; time.sleep(60)"], {})
    try:
        assert quiet.read(wait=0.2) == ([], None)    # nothing within the wait: empty
    finally:
        quiet.kill()
    assert quiet.read(wait=60) == ([], -signal.SIGKILL)
