"""Emulated hosts on one Linux machine: the multi-host test bed.

Each host is a network + PID + mount + UTS namespace with its own
``/dev/shm`` and ``/tmp`` (tmpfs), a veth into a bridge that lives in a
namespace of its own, an address on a private subnet (``10.77.0.<i+1>/24``),
and a ``tc tbf`` rate limit on both directions of its link (the host's
egress, and the bridge port's egress into it): a host's NIC. With ``ray``
(the default) a Ray node runs on every host, the head on host 0, with token
authentication (a fresh token, in the environment only). Network namespaces
alone are not enough: Ray finds "its" raylet by scanning the process table,
so every host has a PID namespace of its own.

    with Bed(2, rate="1gbit") as bed:          # up; down at the end, even on failure
        bed.run(1, ["hostname"])               # a command "on" host 1 (CompletedProcess)
        bed.popen(0, cmd, env=bed.ray_env())   # joins the bed's Ray cluster
        tx, rx = bed.link_bytes(1)             # bytes through host 1's NIC so far
    assert not Bed.leftovers(bed.prefix)       # nothing of it left on the machine

By hand (root)::

    python tools/hosts.py up -n 2 --rate 1gbit     # holds the bed until Ctrl-C / down
    python tools/hosts.py run 1 -- ray status      # on host 1 of the (only) bed
    python tools/hosts.py down                     # ends it (and any stale bed)

Names start with ``mxkvh<pid>`` (the owner's pid), so beds of several
processes live side by side, and a bed whose owner died (SIGKILL: its
namespaces' processes die with it) is found and removed by ``down``.
Everything goes at :meth:`Bed.down` (a ``with`` block's end, ``atexit``,
SIGTERM/SIGINT/SIGHUP; one more while it runs acts once it is done): the
hosts' processes (killing a PID namespace's first process kills all of
it), the namespaces and so their links and tmpfs, the bed's directory.
The bed's directory (:attr:`Bed.dir`) is shared by every host at the same
path, for files all of them must see; so are this checkout and its Python
when they live under /tmp (a clone there).
"""
from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence

from mxkv.bridge.private import pid_alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBNET = "10.77.0"
RAY_PORT = 6379
PREFIX_RE = re.compile(r"^mxkvh(\d+)x")
# The first process of each host: mounts the host's tmpfs, then reaps
# orphans (Ray's daemons) as an init does, until it is killed.
_INIT = r"""
set -e
mount -t tmpfs -o mode=1777 tmpfs "$STAGE"
IFS=:
for d in $KEEP_DIRS; do   # kept in sight under the host's own /tmp
    mkdir -p "$STAGE/${d#/tmp/}"
    mount --bind "$d" "$STAGE/${d#/tmp/}"
done
unset IFS
mount --move "$STAGE" /tmp
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
hostname "$HOSTNAME_"
echo ready
exec python3 -c '
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.5)
'
"""


class BedError(RuntimeError):
    """The bed cannot be made here (not root, a tool missing) or a step failed."""


def unavailable() -> Optional[str]:
    """Why no bed can be made on this machine, or None when one can."""
    if sys.platform != "linux":
        return f"emulated hosts need Linux namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return "emulated hosts need root (network and mount namespaces, tc)"
    missing = [t for t in ("ip", "unshare", "nsenter", "tc", "setpriv", "mount")
               if shutil.which(t) is None]
    if missing:
        return f"emulated hosts need {', '.join(missing)} (iproute2, util-linux)"
    return None


def _sh(argv: Sequence[str], timeout: float = 30, check: bool = True) -> str:
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise BedError(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def _tbf(rate: str) -> List[str]:
    """``tc`` arguments of a token bucket at ``rate``: a burst of 2 ms at that
    rate (at least 256 KB, above a GSO segment), a queue of 20 ms."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not m:
        raise ValueError(f"rate {rate!r}: give it as tc does, e.g. 1gbit or 500mbit")
    bits = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    burst = max(256 * 1024, int(bits / 8 * 0.002))
    return ["tbf", "rate", rate, "burst", str(burst), "latency", "20ms"]


def _kept_in_sight(bed_dir: str) -> List[str]:
    """The directories under /tmp that a host's own /tmp must still show:
    the bed's directory, this checkout and the Python running it (a clone
    in /tmp: its venv's python would vanish from the hosts), the working
    directory; none inside another."""
    found = sorted({os.path.realpath(p) for p in (bed_dir, ROOT, sys.prefix, sys.base_prefix,
                                                   os.getcwd())})
    under = [p for p in found if p.startswith("/tmp/")]
    return [p for p in under if not any(p.startswith(q + "/") for q in under if q != p)]


class Host:
    """One emulated host: its namespace's name, address and first process."""

    def __init__(self, index: int, netns: str, addr: str) -> None:
        self.index = index
        self.netns = netns
        self.addr = addr
        self.holder: Optional[subprocess.Popen] = None   # `unshare`, parent of init
        self.init_pid: Optional[int] = None              # the PID namespace's first process
        self.pidns: Optional[str] = None                 # its inode, "pid:[...]"


class Bed:
    """N emulated hosts, with a Ray node on each (see the module's text).

    Parameters
    ----------
    n : int
        Number of hosts (2 to 200).
    rate : str, optional
        Each host's link rate in ``tc``'s notation (``"1gbit"``); None: unshaped.
    ray : bool
        Start a Ray node on every host (head on host 0).
    python : str, optional
        The interpreter whose ``ray`` starts the nodes (default: the repository's .venv).
    num_cpus : int
        CPUs each Ray node offers.
    object_store_mb : int
        Each Ray node's object store.
    """

    def __init__(self, n: int = 2, rate: Optional[str] = "1gbit", ray: bool = True,
                 python: Optional[str] = None, num_cpus: int = 4,
                 object_store_mb: int = 2048) -> None:
        if not 2 <= n <= 200:
            raise ValueError(f"n={n}: a bed has 2 to 200 hosts")
        if rate is not None:
            _tbf(rate)
        self.n, self.rate, self.with_ray = n, rate, ray
        self.python = python or os.path.join(ROOT, ".venv", "bin", "python")
        self.num_cpus, self.object_store_mb = num_cpus, object_store_mb
        self.prefix = f"mxkvh{os.getpid()}x{secrets.token_hex(2)}"
        self.bridge_ns = f"{self.prefix}-br"
        self.hosts = [Host(i, f"{self.prefix}-h{i}", f"{SUBNET}.{i + 1}") for i in range(n)]
        self.token = secrets.token_hex(32)
        self.dir = ""
        self._up = False
        self._lock = threading.Lock()
        self._saved: Dict[int, object] = {}
        self._removing = False               # down() under way
        self._deferred: Optional[int] = None  # a signal that came meanwhile

    # ------------------------------------------------------------ up and down
    def __enter__(self) -> "Bed":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    @property
    def head(self) -> str:
        """The Ray head's address, ``10.77.0.1:6379``."""
        return f"{self.hosts[0].addr}:{RAY_PORT}"

    def up(self) -> "Bed":
        """Make the hosts (and start Ray on them); on any failure remove what
        was made and raise :class:`BedError`."""
        why = unavailable()
        if why:
            raise BedError(why)
        self._up = True
        atexit.register(self.down)
        self._trap_signals()
        try:
            self.dir = tempfile.mkdtemp(prefix=self.prefix + "-")
            os.chmod(self.dir, 0o755)   # the hosts' users see it; its files are the owner's
            self._network()
            for h in self.hosts:
                self._start_init(h)
            if self.with_ray:
                self._start_ray()
            with open(os.path.join(self.dir, "bed.json"), "w") as f:
                json.dump(self.describe(), f)
        except BaseException:
            self.down()
            raise
        return self

    def describe(self) -> Dict:
        """What ``hosts.py run`` needs to find this bed: its names and pids."""
        return {"prefix": self.prefix, "owner": os.getpid(), "dir": self.dir,
                "head": self.head if self.with_ray else None, "token": self.token,
                "hosts": [{"netns": h.netns, "addr": h.addr, "init_pid": h.init_pid}
                          for h in self.hosts]}

    def _network(self) -> None:
        br = self.bridge_ns
        _sh(["ip", "netns", "add", br])
        _sh(["ip", "-n", br, "link", "set", "lo", "up"])
        _sh(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        _sh(["ip", "-n", br, "link", "set", "br0", "up"])
        for h in self.hosts:
            port = f"p{h.index}"
            _sh(["ip", "netns", "add", h.netns])
            _sh(["ip", "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                 "netns", h.netns])
            _sh(["ip", "-n", br, "link", "set", port, "master", "br0", "up"])
            _sh(["ip", "-n", h.netns, "link", "set", "lo", "up"])
            _sh(["ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", "eth0"])
            _sh(["ip", "-n", h.netns, "link", "set", "eth0", "up"])
            if self.rate:   # the host's egress, and the bridge's egress into the host
                _sh(["tc", "-n", h.netns, "qdisc", "add", "dev", "eth0", "root",
                     *_tbf(self.rate)])
                _sh(["tc", "-n", br, "qdisc", "add", "dev", port, "root", *_tbf(self.rate)])

    def _start_init(self, h: Host) -> None:
        stage = os.path.join(self.dir, f"stage{h.index}")
        os.mkdir(stage)
        env = dict(os.environ, STAGE=stage, KEEP_DIRS=":".join(_kept_in_sight(self.dir)),
                   HOSTNAME_=f"{self.prefix}-h{h.index}")
        # KILL when this process dies (setpriv), and the namespace's first
        # process with `unshare` (--kill-child): the PID namespace dies with it
        h.holder = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", "ip", "netns", "exec", h.netns,
             "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--uts",
             "--propagation", "private", "--", "/bin/sh", "-c", _INIT],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        line = h.holder.stdout.readline()   # "ready" once the mounts are made
        if line.strip() != "ready":
            err = h.holder.stderr.read() if h.holder.poll() is not None else ""
            raise BedError(f"host {h.index} did not start: {line!r} {err.strip()}")
        children = open(f"/proc/{h.holder.pid}/task/{h.holder.pid}/children").read().split()
        if len(children) != 1:
            raise BedError(f"host {h.index}: expected one first process, found {children}")
        h.init_pid = int(children[0])
        h.pidns = os.readlink(f"/proc/{h.init_pid}/ns/pid")

    def _start_ray(self) -> None:
        for h in self.hosts:
            self._ray_start(h.index)
        self._wait_nodes()

    def _ray_start(self, host: int) -> None:
        ray = os.path.join(os.path.dirname(self.python), "ray")
        common = ["--num-cpus", str(self.num_cpus), "--object-store-memory",
                  str(self.object_store_mb * 1024 * 1024), "--disable-usage-stats"]
        env = self.ray_env()
        env.pop("RAY_ADDRESS")
        h = self.hosts[host]
        where = ["--head", "--port", str(RAY_PORT), "--include-dashboard=false"] \
            if h.index == 0 else \
            ["--address", self.head]
        p = self.run(h.index, [ray, "start", *where, "--node-ip-address", h.addr,
                               "--resources", json.dumps({f"bed_host_{h.index}": 100}),
                               *common], env=env, timeout=120, check=False)
        if p.returncode != 0:
            raise BedError(f"ray start on host {h.index} failed:\n{p.stdout[-2000:]}"
                           f"\n{p.stderr[-2000:]}")

    def _wait_nodes(self) -> None:
        """Every host's node alive in the head's view, and no other (a lost
        host's old node declared dead), before anyone uses the cluster."""
        wait = ("import ray, sys, time\nray.init(address='auto', logging_level='ERROR')\n"
                f"deadline = time.monotonic() + 90\n"
                f"while sum(n['Alive'] for n in ray.nodes()) != {self.n}:\n"
                "    if time.monotonic() > deadline: sys.exit('nodes missing')\n"
                "    time.sleep(0.2)\n")
        self.run(0, [self.python, "-c", wait], env=self.ray_env(), timeout=120)

    def restart_host(self, host: int) -> None:
        """After a fault test: kill every process left on ``host`` (its first
        aside), bring its link up, and start its Ray node again (not the head's)."""
        if host == 0:
            raise ValueError("host 0 holds the Ray head: make a new bed instead")
        h = self.hosts[host]
        self.link(host, up=True)
        for attempt in range(3):   # (a loaded machine may time `ray start` out)
            for pid in _pids_in(h.pidns):
                if pid != h.init_pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + 30
            while [p for p in _pids_in(h.pidns) if p != h.init_pid] and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            try:
                self._ray_start(host)
                break
            except BedError:
                if attempt == 2:
                    raise
        self._wait_nodes()

    def link(self, host: int, up: bool) -> None:
        """Bring ``host``'s link down (a partition: nothing crosses) or up."""
        _sh(["ip", "-n", self.hosts[host].netns, "link", "set", "eth0",
             "up" if up else "down"])

    def ray_env(self) -> Dict[str, str]:
        """What a process needs in its environment to join the bed's Ray cluster."""
        return {"RAY_ADDRESS": self.head, "MXKV_RAY_ADDRESS": self.head,
                "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def down(self) -> None:
        """Remove everything of the bed (idempotent; safe to call when up failed)."""
        with self._lock:
            if not self._up:
                return
            self._up = False
            self._removing = True
        try:
            self._remove()
        finally:
            saved = dict(self._saved)
            self._untrap_signals()
            try:
                atexit.unregister(self.down)
            except Exception:  # noqa: BLE001 - interpreter shutting down
                pass
            self._removing = False
            deferred, self._deferred = self._deferred, None
        if deferred is not None:
            _act(deferred, saved.get(deferred), None)

    def _remove(self) -> None:
        for h in self.hosts:   # its PID namespace dies with its first process
            if h.init_pid:
                try:
                    os.kill(h.init_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if h.holder is not None:
                if h.holder.poll() is None:
                    h.holder.kill()
                h.holder.wait(timeout=30)
                for f in (h.holder.stdout, h.holder.stderr):
                    f.close()
        _wait_gone([h.pidns for h in self.hosts if h.pidns], 30)
        for ns in [h.netns for h in self.hosts] + [self.bridge_ns]:
            _sh(["ip", "netns", "del", ns], check=False)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _trap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._saved[sig] = signal.signal(sig, self._on_signal)

    def _untrap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._saved.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, old)
        self._saved = {}

    def _on_signal(self, sig: int, frame) -> None:
        if self._removing:
            # a second signal (timeout's and pkill's SIGTERM, Ctrl-C twice)
            # while down() runs, here or on another thread: it acts once the
            # bed is gone, instead of killing this process half-way through
            self._deferred = self._deferred or sig
            return
        old = self._saved.get(sig)
        self.down()
        _act(sig, old, frame)

    # ------------------------------------------------------------ on a host
    def cmd(self, host: int, argv: Sequence[str], cwd: Optional[str] = None) -> List[str]:
        """The command line that runs ``argv`` on ``host`` (in ``cwd``, default
        this process's), in all of its namespaces."""
        h = self.hosts[host]
        if not h.init_pid:
            raise BedError(f"host {host} is not up")
        return nsenter(h.init_pid, argv, cwd or os.getcwd())

    def run(self, host: int, argv: Sequence[str], env: Optional[Dict[str, str]] = None,
            timeout: Optional[float] = 120, check: bool = True,
            cwd: Optional[str] = None) -> subprocess.CompletedProcess:
        """Run ``argv`` on ``host`` and wait; ``env`` adds to this process's
        environment, less its Ray and job variables (``RAY_*``, ``MXKV_RAY_*``,
        ``MXKV_JOB*``, ``DMLC_*``: another cluster's). With ``check``, a non-zero
        exit raises :class:`BedError` showing its output."""
        p = subprocess.run(self.cmd(host, argv, cwd), env={**_environ(), **(env or {})},
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise BedError(f"on host {host}: {' '.join(argv)} exited {p.returncode}:\n"
                           f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    def popen(self, host: int, argv: Sequence[str], env: Optional[Dict[str, str]] = None,
              cwd: Optional[str] = None, **kw) -> subprocess.Popen:
        """Start ``argv`` on ``host`` (as :class:`subprocess.Popen`, ``kw`` its
        options); its environment as :meth:`run`'s."""
        return subprocess.Popen(self.cmd(host, argv, cwd), env={**_environ(), **(env or {})},
                                **kw)

    def link_bytes(self, host: int) -> Dict[str, int]:
        """Bytes ``host`` has sent (``tx``) and received (``rx``) on its link."""
        # (its /sys, seen through its first process's root: no process started)
        stats = f"/proc/{self.hosts[host].init_pid}/root/sys/class/net/eth0/statistics"
        out = {}
        for k in ("tx", "rx"):
            with open(f"{stats}/{k}_bytes") as f:
                out[k] = int(f.read())
        return out

    def processes(self, host: int) -> List[str]:
        """The command lines of every process on ``host`` (its first one aside)."""
        h = self.hosts[host]
        out = []
        for pid in _pids_in(h.pidns):
            if pid == h.init_pid:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip())
            except OSError:
                pass
        return out

    # ------------------------------------------------------------ checks
    @staticmethod
    def leftovers(prefix: str, pidns: Sequence[str] = ()) -> List[str]:
        """What of the bed named ``prefix`` is still on this machine: network
        namespaces, links in this namespace, processes in its PID namespaces
        (``pidns``), /dev/shm entries and temporary directories."""
        out = [f"netns {n}" for n in _netns() if n.startswith(prefix)]
        out += [f"link {n}" for n in _links() if n.startswith(prefix)]
        for ns in pidns:
            out += [f"process {p} in {ns}" for p in _pids_in(ns)]
        out += [f"file {p}" for p in glob.glob(f"/dev/shm/{prefix}*")]
        out += [f"file {p}" for p in glob.glob(os.path.join(tempfile.gettempdir(),
                                                            prefix + "*"))]
        return out


def _act(sig: int, old: object, frame) -> None:
    """Do what signal ``sig`` did before the bed trapped it (``old``): call
    that handler, or die of it (unless it was ignored). Off the main thread
    the signal is sent again, for the main thread's handler."""
    if threading.current_thread() is not threading.main_thread():
        os.kill(os.getpid(), sig)
    elif callable(old):
        old(sig, frame)
    elif old != signal.SIG_IGN:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)


def _environ() -> Dict[str, str]:
    """This process's environment without Ray's and the job's variables
    (another cluster's address, token or settings): a host's command gets
    the bed's, or what its caller passes."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("RAY_", "MXKV_RAY_", "MXKV_JOB", "DMLC_"))}


def nsenter(init_pid: int, argv: Sequence[str], cwd: str) -> List[str]:
    """The command that runs ``argv`` in every namespace of process ``init_pid``."""
    return ["nsenter", "--target", str(init_pid), "--net", "--pid", "--mount", "--uts",
            f"--wd={cwd}", "--", *argv]


def _netns() -> List[str]:
    return [line.split()[0] for line in _sh(["ip", "netns", "list"]).splitlines() if line]


def _links() -> List[str]:
    return [link["ifname"] for link in json.loads(_sh(["ip", "-j", "link", "show"]) or "[]")]


def _pids_in(pidns: Optional[str]) -> List[int]:
    if not pidns:
        return []
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink(f"/proc/{d}/ns/pid") == pidns:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _wait_gone(pidns: Sequence[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(_pids_in(ns) for ns in pidns) and time.monotonic() < deadline:
        time.sleep(0.05)


# ------------------------------------------------------------ the command line
def _beds() -> List[Dict]:
    out = []
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "mxkvh*", "bed.json")):
        try:
            with open(path) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            pass
    return out


def _pick(prefix: Optional[str]) -> Dict:
    beds = [b for b in _beds() if prefix is None or b["prefix"] == prefix]
    if len(beds) != 1:
        raise SystemExit(f"hosts.py: {len(beds)} beds match "
                         f"({', '.join(b['prefix'] for b in _beds()) or 'none up'}): "
                         "name one with --bed")
    return beds[0]


def remove_stale() -> List[str]:
    """Remove the namespaces and directories of beds whose owner is dead;
    returns what was removed."""
    gone = []
    names = [n for n in _netns() if PREFIX_RE.match(n)]
    dirs = glob.glob(os.path.join(tempfile.gettempdir(), "mxkvh*"))
    for name in names + dirs:
        base = os.path.basename(name)
        m = PREFIX_RE.match(base)
        if not m or pid_alive(int(m.group(1))):
            continue
        if name in names:
            for pid in _sh(["ip", "netns", "pids", name], check=False).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _sh(["ip", "netns", "del", name], check=False)
        else:
            shutil.rmtree(name, ignore_errors=True)
        gone.append(name)
    return gone


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="hosts.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    up = sub.add_parser("up", help="make a bed and hold it until Ctrl-C or `down`")
    up.add_argument("-n", type=int, default=2)
    up.add_argument("--rate", default="1gbit", help="per host link, tc notation; 'none'")
    up.add_argument("--no-ray", action="store_true")
    run = sub.add_parser("run", help="run a command on a host of a bed")
    run.add_argument("--bed", default=None)
    run.add_argument("host", type=int)
    run.add_argument("command", nargs=argparse.REMAINDER)
    down = sub.add_parser("down", help="end a bed (and remove stale ones)")
    down.add_argument("--bed", default=None)
    sub.add_parser("status", help="list the beds")
    a = p.parse_args(argv)
    if a.what == "up":
        bed = Bed(a.n, rate=None if a.rate == "none" else a.rate, ray=not a.no_ray).up()
        print(f"bed {bed.prefix}: {a.n} hosts {', '.join(h.addr for h in bed.hosts)}"
              f"{', Ray head ' + bed.head if bed.with_ray else ''}; shared dir {bed.dir}\n"
              f"  python tools/hosts.py run HOST -- CMD   (Ctrl-C or `down` ends it)",
              flush=True)
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        bed.down()
        return 0
    if a.what == "run":
        bed = _pick(a.bed)
        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        h = bed["hosts"][a.host]
        env = dict(_environ(), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=bed["token"])
        if bed["head"]:
            env.update(RAY_ADDRESS=bed["head"], MXKV_RAY_ADDRESS=bed["head"])
        return subprocess.run(nsenter(h["init_pid"], cmd or ["bash"], os.getcwd()),
                              env=env).returncode
    if a.what == "down":
        for bed in [b for b in _beds() if (a.bed is None or b["prefix"] == a.bed)
                    and pid_alive(b["owner"])]:   # (a dead owner's: below)
            os.kill(bed["owner"], signal.SIGTERM)
            deadline = time.monotonic() + 60
            while os.path.exists(bed["dir"]) and time.monotonic() < deadline:
                time.sleep(0.1)
            print(f"bed {bed['prefix']}: down")
        for name in remove_stale():
            print(f"removed stale {name}")
        return 0
    for bed in _beds():
        state = "" if pid_alive(bed["owner"]) else ", stale: `down` removes it"
        print(f"{bed['prefix']} (owner {bed['owner']}{state}): "
              f"{', '.join(h['addr'] for h in bed['hosts'])}; head {bed['head']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
