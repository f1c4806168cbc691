"""The processes ``mxkv launch`` starts, and how it stops every one of them.

A worker (or server) command runs either here (:class:`LocalProcess`) or in
a Ray actor on some node (:class:`RayProcess` over :class:`RemoteProcess`).
Each runs in a session of its own, so that a signal reaches the command and
everything it started (a JVM and the engine it spawned, a shell's
children) as one process group, and a terminal's Ctrl-C reaches the
launcher alone, which forwards it.

The launcher makes itself a *child subreaper* (Linux): a process whose
parent dies (a Ray actor's worker when its raylet is killed, a worker's own
children) is re-parented to the launcher rather than to init, so
:func:`descendants` of the launcher are, until it exits, everything it
started, and :func:`kill_descendants` leaves nothing behind.
"""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple, cast

from ...supervise import LIBC, die_with_parent

__all__ = ["LocalProcess", "RemoteProcess", "RayProcess", "become_subreaper",
           "descendants", "kill_descendants", "signal_group"]

_PRINT = threading.Lock()


def _emit(prefix: bytes, line: bytes) -> None:
    out = sys.stdout.buffer
    with _PRINT:
        out.write(prefix + (line if line.endswith(b"\n") else line + b"\n"))
        out.flush()


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pgid``, then ``SIGCONT``: a stopped
    (``SIGSTOP``-frozen) process acts on a pending signal only once continued."""
    for s in (sig, signal.SIGCONT):
        try:
            os.killpg(pgid, s)
        except (ProcessLookupError, PermissionError):
            return


def _spawn(cmd: List[str], env: Dict[str, str], tied: bool) -> subprocess.Popen:
    # tied: dies with this process. The signal is sent when the *thread* that
    # forked exits, so only the launcher's main thread ties its children.
    # SIGKILL when the launcher dies, even by SIGKILL (kept across exec, as Ray
    # does for its own processes)
    tie = functools.partial(die_with_parent, os.getpid(), signal.SIGKILL) \
        if tied and LIBC is not None else None
    return subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=tie)


class LocalProcess:
    """A command run here; its output is copied to ours, line by line, prefixed."""

    def __init__(self, cmd: List[str], env: Dict[str, str], prefix: str) -> None:
        tied = threading.current_thread() is threading.main_thread()
        self.proc = _spawn(cmd, env, tied)
        self.prefix = prefix.encode()
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):  # type: ignore[union-attr]
            _emit(self.prefix, line)

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the command's process group."""
        signal_group(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL the command's process group."""
        signal_group(self.proc.pid, signal.SIGKILL)

    kill_now = kill

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the last lines of output to be printed."""
        self._pump_thread.join(timeout)


class RemoteProcess:
    """A command run by a Ray actor on some node (``--launcher ray``).

    The command gets that node's environment plus the job's variables; its
    output lines are fetched by the launcher and printed prefixed. The
    actor is threaded (:data:`ACTOR_CONCURRENCY`): a :meth:`read` waits for
    output while :meth:`signal` and :meth:`kill` go on.
    """

    def start(self, cmd: List[str], env: Dict[str, str]) -> Tuple[str, str]:
        """Start ``cmd``; returns this node's host name and Ray node id."""
        import socket

        import ray

        self.begin(cmd, env)
        return socket.gethostname(), ray.get_runtime_context().get_node_id()

    def begin(self, cmd: List[str], env: Dict[str, str]) -> None:
        """Start ``cmd`` and the thread that reads its output (:meth:`start`
        without Ray)."""
        import collections

        self.lines: "collections.deque[bytes]" = collections.deque()
        self._more = threading.Condition()
        self._held = _hold_job_dir(env.get("MXKV_JOB", ""))
        self.proc = _spawn(cmd, env, False)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):  # type: ignore[union-attr]
            with self._more:
                self.lines.append(line)
                self._more.notify_all()
        with self._more:
            self.lines.append(b"")   # end of output
            self._more.notify_all()

    def read(self, wait: float = 0.0) -> Tuple[List[bytes], Optional[int]]:
        """The lines printed since the last read, and the exit code once the
        output has ended (else None). Waits up to ``wait`` s for a line or
        the end, so that a quiet command costs the launcher one call per
        ``wait`` s rather than one per poll."""
        with self._more:
            self._more.wait_for(lambda: bool(self.lines), timeout=max(0.0, wait))
            out = list(self.lines)
            self.lines.clear()
        done = bool(out) and out[-1] == b""
        return [x for x in out if x], (self.proc.wait() if done else None)

    def signal(self, sig: int) -> None:
        signal_group(self.proc.pid, sig)

    def kill(self) -> None:
        signal_group(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


#: a :class:`RemoteProcess` actor's threads: a waiting read, a signal, a kill
ACTOR_CONCURRENCY = 4
#: how long a :class:`RemoteProcess` read waits for output (s)
READ_WAIT_S = 2.0


def _hold_job_dir(job: str) -> Optional[int]:
    """Keep a descriptor open on this node's directory of job ``job``
    (made by its node agent, when there is one): the node's keeper sweeps
    every process holding something there when the job is gone, this
    actor included, with no need of Ray's actor table, which a host cut
    off from the head cannot read (:mod:`.node_keeper`)."""
    from .shm import data_dir

    if not job:
        return None
    try:
        return os.open(data_dir(job), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:   # no agent here (one node): the launcher's cleanup covers it
        return None


class RayProcess:
    """The launcher's side of a :class:`RemoteProcess`.

    Parameters
    ----------
    cmd, env, prefix
        The command, its extra environment, and the prefix of its lines.
    options : dict, optional
        Ray actor options (the scheduling strategy that places it).
    """

    def __init__(self, cmd: List[str], env: Dict[str, str], prefix: str,
                 options: Optional[dict] = None) -> None:
        import ray

        opts = {"num_cpus": 0, "scheduling_strategy": "SPREAD",
                "max_concurrency": ACTOR_CONCURRENCY, **(options or {})}
        # (Any: the handle's methods are called through .remote, which Ray's
        # types do not show)
        self.actor = cast(Any, ray.remote(RemoteProcess).options(**opts).remote())
        self.ray = ray
        self.prefix = prefix.encode()
        self.code: Optional[int] = None
        self._reading: Any = None
        self.host, self.node_id = ray.get(self.actor.start.remote(cmd, env))

    def poll(self) -> Optional[int]:
        """The command's exit code, None while it runs; prints the lines
        read so far. Never waits: a host that stopped answering must not
        hold up the launcher (its workers are declared dead meanwhile). One
        read is out at a time, answered when there is output, when the
        command ends, or after :data:`READ_WAIT_S`."""
        if self.code is None:
            if self._reading is None:
                self._reading = self.actor.read.remote(READ_WAIT_S)
            if not self.ray.wait([self._reading], timeout=0)[0]:
                return None
            ref, self._reading = self._reading, None
            try:
                lines, self.code = self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                lines, self.code = [f"(its actor died: {exc})".encode()], 1   # no signal
            for line in lines:
                _emit(self.prefix, line)
        return self.code

    def signal(self, sig: int) -> None:
        if self.code is None:
            self.actor.signal.remote(sig)

    def kill(self) -> None:
        """SIGKILL the command (waiting up to 5 s: its host may not answer),
        then end the actor."""
        try:
            self.ray.wait([self.actor.kill.remote()], timeout=5)
            self.ray.kill(self.actor)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def kill_now(self) -> None:
        """Ask the actor to SIGKILL the command, without waiting."""
        self.actor.kill.remote()

    def drain(self, timeout: float) -> None:
        pass   # poll() printed what was read


# ---------------------------------------------------------------- the process tree
def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux
    ``PR_SET_CHILD_SUBREAPER``); False where that is not available."""
    if LIBC is None:
        return False
    return LIBC.prctl(36, 1, 0, 0, 0) == 0   # type: ignore[attr-defined]  # SUBREAPER


def _parents() -> Dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        out[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(pid: int) -> List[int]:
    """The processes below ``pid`` (children, their children, ...)."""
    if not os.path.isdir("/proc"):
        return []
    kids: Dict[int, List[int]] = {}
    for child, parent in _parents().items():
        kids.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_descendants(timeout: float = 5.0, spare: Iterable[int] = ()) -> List[int]:
    """SIGKILL every process below this one but ``spare`` and reap the ones
    re-parented here, until none is left or ``timeout`` s have passed;
    returns the pids killed."""
    killed: List[int] = []
    spare = set(spare)
    deadline = time.monotonic() + timeout
    while True:
        _reap()
        found = [p for p in descendants(os.getpid()) if p not in spare and not _zombie(p)]
        if not found or time.monotonic() > deadline:
            return killed
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
