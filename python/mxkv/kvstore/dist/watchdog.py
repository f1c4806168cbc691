"""Cleaning up after a launcher that could not: ``SIGKILL``, a crash.

``mxkv launch`` marks every process it starts with ``MXKV_LAUNCH_ID`` in
its environment (Ray's processes and the workers inherit it; so do their
children) and starts this watchdog in a session of its own, holding a pipe
from the launcher. The launcher writes down each directory it creates; when
the pipe closes, however the launcher ended, the watchdog SIGKILLs every
process still carrying the mark or holding a file in those directories,
removes the directories and exits. It also kills what carries the job's
``MXKV_JOB`` name (what Ray's actors on this host started for the job).
After a clean end it finds nothing to do.

Run as ``python -m mxkv.kvstore.dist.watchdog MARK LAUNCHER_PID`` (the launcher does).
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from typing import Iterable, List, Optional

__all__ = ["MARK_VAR", "Watchdog", "marked", "holding", "sweep"]

#: The environment variable that marks a launcher's processes.
MARK_VAR = "MXKV_LAUNCH_ID"


class Watchdog:
    """The launcher's side: marks this process's environment, starts the
    watchdog process, tells it the directories to remove."""

    def __init__(self) -> None:
        self.mark = secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if k != MARK_VAR}
        self.proc: Optional[subprocess.Popen] = subprocess.Popen(
            [sys.executable, "-m", __name__, self.mark, str(os.getpid())], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, env=env, start_new_session=True)
        os.environ[MARK_VAR] = self.mark   # inherited by all that is started from now on

    def remove_later(self, path: str) -> None:
        """Have ``path`` removed if the launcher dies before it does."""
        try:
            self.proc.stdin.write(path.encode() + b"\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, AttributeError):
            pass

    def mark_job(self, job: str) -> None:
        """Have the processes carrying ``MXKV_JOB=job`` killed too (those a
        Ray actor started on this host for the job carry that, not the
        launcher's mark)."""
        self.remove_later(f"job:{job}")

    def close(self, timeout: float = 10.0) -> None:
        """The launcher is done: the watchdog sweeps (finding nothing) and exits."""
        if os.environ.get(MARK_VAR) == self.mark:
            del os.environ[MARK_VAR]
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.proc = None


def marked(mark: str, var: str = MARK_VAR) -> List[int]:
    """The live processes whose environment carries ``var=mark``
    (``MXKV_LAUNCH_ID`` by default)."""
    needle = f"{var}={mark}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(name))
        except OSError:
            continue
    return out


def open_files(pid: int) -> List[str]:
    """What process ``pid``'s open file descriptors point to (``/proc``);
    one closed between the listing and its reading is left out, not the
    rest (a busy process's descriptors come and go). OSError when the
    process is gone or not ours to read."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return out


def holding(paths: List[str]) -> List[int]:
    """The processes with a file open, mapped (a shard's pull segments) or
    their working directory under ``paths``: Ray's processes keep their logs
    open in the cluster's directory, and a process that renames itself
    (Ray's agents call ``setproctitle``) may overwrite what
    ``/proc/PID/environ`` shows."""
    roots = tuple(os.path.join(os.path.realpath(p), "") for p in paths)
    out: List[int] = []
    if not roots:
        return out
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            links = [os.readlink(f"/proc/{name}/cwd"), *open_files(int(name))]
        except OSError:
            continue   # gone (or not ours to read)
        try:
            with open(f"/proc/{name}/maps") as f:
                links += [line.split(None, 5)[5].strip() for line in f
                          if line.count(" ") >= 5 and "/" in line]
        except (OSError, IndexError):
            pass
        if any(os.path.join(link, "").startswith(roots) for link in links):
            out.append(int(name))
    return out


def sweep(mark: str, paths: List[str], launcher: int, timeout: float = 10.0,
          var: str = MARK_VAR, spare: Iterable[int] = (), jobs: Iterable[str] = ()
          ) -> List[int]:
    """SIGKILL the processes marked ``var=mark`` (or ``MXKV_JOB=`` one of
    ``jobs``), and those holding files under ``paths``, but the
    ``launcher`` (which closed the pipe and is ending on its own) and
    ``spare``, until none is left (or ``timeout`` s), then remove
    ``paths``; returns the pids killed."""
    deadline = time.monotonic() + timeout
    spared = {launcher, *spare}
    jobs = list(jobs)
    killed: List[int] = []
    while time.monotonic() < deadline:
        # a zombie's environment and files read empty: not counted
        pids = set(marked(mark, var)) | set(holding(paths))
        for job in jobs:
            pids |= set(marked(job, "MXKV_JOB"))
        pids -= spared
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    return killed


def main() -> None:
    mark, launcher = sys.argv[1], int(sys.argv[2])
    lines = [line.decode().rstrip("\n") for line in sys.stdin.buffer]   # until EOF
    jobs = [x[4:] for x in lines if x.startswith("job:")]
    sweep(mark, [p for p in lines if p and not p.startswith("job:")], launcher, jobs=jobs)


if __name__ == "__main__":
    main()
