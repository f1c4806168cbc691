"""Run a child process (the JVM of ``mxkv clj``, ``repl``, ``tutorial``,
``test``) so that it never outlives this one.

* SIGTERM, SIGINT and SIGHUP sent to this process are forwarded to the
  child; if it has not exited ``MXKV_CHILD_GRACE_S`` seconds (default 10)
  after the first, it is killed. The JVM runs its shutdown hooks on each of
  those signals, which close its engine (the engine process ends and removes
  its /dev/shm files).
* On Linux the child is started with ``prctl(PR_SET_PDEATHSIG, SIGTERM)``:
  the kernel sends it SIGTERM when this process dies, even by SIGKILL, so
  the JVM shuts down, and its engine, which watches its stdin (a pipe from
  the JVM), follows.

Elsewhere only the forwarding applies.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from typing import Dict, List, Optional, Sequence

from .base import env

__all__ = ["FORWARDED", "run", "die_with_parent", "shell_status", "exit_words",
           "quiet_ray_off_main_thread"]

#: The signals forwarded to the child.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_PR_SET_PDEATHSIG = 1


def _libc():
    """The C library, loaded once at import: a child between fork and exec
    must not dlopen (a lock held by another thread of the parent would
    deadlock it). None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (OSError, AttributeError):
        return None


LIBC = _libc()


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """In a child between fork and exec: ask the kernel for ``sig`` when the
    parent dies (Linux; a no-op elsewhere). If the parent ``parent`` died
    before the request, send it now. The request is kept across exec and
    tied to the parent's forking *thread*: fork from the main thread."""
    if LIBC is None:
        return
    LIBC.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def shell_status(rc: int) -> int:
    """A child's exit status as a shell reports it: ``subprocess``'s ``-n``
    (signal n ended it) becomes 128 + n; other codes are kept."""
    return 128 - rc if rc < 0 else rc


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def exit_words(rc: int) -> str:
    """How a child with ``subprocess`` return code ``rc`` ended, in words:
    ``"exited with code 3"``, ``"was killed by SIGKILL (exit code 137)"``,
    or for a code a shell-like parent reported after its own child was killed
    by a signal, ``"exited with code 137 (128 + SIGKILL)"``."""
    if rc < 0:
        return f"was killed by {_signal_name(-rc)} (exit code {shell_status(rc)})"
    if 128 < rc < 128 + 65:
        return f"exited with code {rc} (128 + {_signal_name(rc - 128)})"
    return f"exited with code {rc}"


def quiet_ray_off_main_thread() -> None:
    """Drop Ray's warning "SIGTERM handler is not set because current thread is
    not the main thread" in this process. An engine joins a Ray job from the
    thread that serves the JVM's call (Py4J's or the JVM's own), and ends on
    SIGTERM by a handler of its own: the line would tell the user nothing."""
    logging.getLogger("ray._private.worker").addFilter(
        lambda record: "SIGTERM handler is not set" not in record.getMessage())


def run(cmd: Sequence[str], env_: Optional[Dict[str, str]] = None) -> int:
    """Run ``cmd`` to its end, forwarding :data:`FORWARDED` signals to it;
    its exit status (128 + n when signal n ended it, as a shell reports)."""
    grace = float(env("MXKV_CHILD_GRACE_S", 10.0))
    parent = os.getpid()
    proc = subprocess.Popen(list(cmd), env=env_,
                            preexec_fn=lambda: die_with_parent(parent))  # noqa: PLW1509
    first = threading.Event()

    def forward(signum, _frame):
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass
        if not first.is_set():
            first.set()
            threading.Thread(target=_kill_after, args=(proc, grace), daemon=True,
                             name="mxkv-child-grace").start()

    previous: List = []
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        for sig in FORWARDED:
            previous.append((sig, signal.signal(sig, forward)))
    try:
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:  # a SIGINT that arrived before our handler
                forward(signal.SIGINT, None)
    finally:
        for sig, handler in previous:
            signal.signal(sig, handler)
    return shell_status(rc)


def _kill_after(proc: subprocess.Popen, grace: float) -> None:
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
