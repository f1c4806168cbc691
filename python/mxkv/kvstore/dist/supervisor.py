"""How ``mxkv launch`` watches a job's processes and stops them.

* A worker that exits with an error, or that the coordinator declares dead
  (silent for ``MXKV_DEAD_TIMEOUT`` s: crashed host, ``SIGSTOP``, a hang in
  native code), ends the job: the others get :data:`GRACE` seconds to end on
  their own (their calls fail naming the dead rank), then ``SIGTERM``, and
  ``SIGKILL`` :data:`GRACE` seconds later. The launcher names the rank and
  exits non-zero.
* ``SIGTERM`` or ``SIGINT`` to the launcher is forwarded to every process
  it started; what is still running :data:`GRACE` seconds later is killed,
  and the launcher exits with 128 + the signal's number. A second signal
  kills everything at once: the launcher SIGKILLs every process below it,
  removes the job's directories and exits.
* ``SIGKILL`` to the launcher: :mod:`.watchdog` cleans up after it.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from ...supervise import exit_words, shell_status
from .processes import kill_descendants

__all__ = ["GRACE", "Interrupted", "Supervisor"]

#: Seconds the other workers get to end on their own after a death, and
#: processes get to act on a forwarded signal before they are killed.
GRACE = 5.0


class Interrupted(Exception):
    """A signal arrived while the job was starting."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _say(msg: str) -> None:
    print(f"mxkv launch: {msg}", file=sys.stderr, flush=True)


class Supervisor:
    """Watches the processes of one job; see the module's description.

    Attributes
    ----------
    procs : list of (role, index, process)
        What was started (``role`` is ``'worker'`` or ``'server'``).
    paths : list of str
        Directories to remove when killing at once.
    spare : set of int
        Processes below this one not to kill (the watchdog).
    """

    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self.procs: List[Tuple[str, int, Any]] = []
        self.paths: List[str] = []
        self.spare: Set[int] = set()   # processes below this one that outlive it
        self.signum: Optional[int] = None
        self.signal_at: Optional[float] = None
        self.starting = True
        self._count = 0
        self._saved: Dict[int, Any] = {}

    # ------------------------------------------------------------ signals
    def install(self) -> None:
        """Handle SIGTERM and SIGINT (again after Ray set a handler of its own)."""
        for s in (signal.SIGTERM, signal.SIGINT):
            self._saved.setdefault(s, signal.getsignal(s))
            signal.signal(s, self._on_signal)

    def uninstall(self) -> None:
        for s, old in self._saved.items():
            signal.signal(s, old)
        self._saved = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._count += 1
        if self._count > 1:
            self.kill_now(signum)
        self.signum, self.signal_at = signum, time.monotonic()
        _say(f"{signal.Signals(signum).name}: stopping the job (send it again to kill at once)")
        for _, _, p in self.procs:
            p.signal(signum)
        if self.starting:
            raise Interrupted(signum)

    def kill_now(self, signum: int) -> None:
        """Kill every process this one started, remove the job's directories, exit."""
        for _, _, p in self.procs:
            try:
                p.kill_now()
            except Exception:  # noqa: BLE001 - going down regardless
                pass
        kill_descendants(timeout=2.0, spare=self.spare)
        for path in self.paths:
            shutil.rmtree(path, ignore_errors=True)
        _say(f"{signal.Signals(signum).name} again: killed")
        os._exit(128 + signum)

    # ------------------------------------------------------------ watching
    def watch(self, job: Any) -> int:
        """Wait until every worker has ended; returns the launcher's exit code:
        the first error code of a worker, 1 if one was declared dead, 128 +
        the signal's number after a signal, else 0."""
        import ray

        self.starting = False
        code = 0
        failed: Set[int] = set()
        stop_at: Optional[float] = None   # when the job began to stop after a death
        term_at: Optional[float] = None   # when its processes were sent SIGTERM
        killed = False
        dead_ref, next_dead = None, 0.0
        while True:
            now = time.monotonic()
            running = 0
            for role, rank, p in self.procs:
                rc = p.poll()
                if role != "worker":
                    continue
                if rc is None:
                    running += 1
                elif (rc != 0 and rank not in failed and term_at is None
                      and self.signum is None):
                    failed.add(rank)
                    code = code or shell_status(rc)
                    where = getattr(p, "host", None)
                    _say(f"worker {rank} {exit_words(rc)}"
                         + (f" (on {where})" if where else ""))
                    try:
                        job.coordinator.declare_dead.remote(
                            rank, f"its process {exit_words(rc)}")
                    except Exception:  # noqa: BLE001 - the job is ending anyway
                        pass
                    stop_at = stop_at or now
            if not running:
                break
            # the coordinator's verdicts: workers silent past MXKV_DEAD_TIMEOUT
            if dead_ref is None and now >= next_dead:
                dead_ref = job.coordinator.dead_workers.remote()
            elif dead_ref is not None and ray.wait([dead_ref], timeout=0)[0]:
                try:
                    dead = ray.get(dead_ref)
                except Exception:  # noqa: BLE001 - coordinator gone: the workers will say
                    dead = {}
                dead_ref, next_dead = None, now + 0.5
                for rank, why in sorted(dead.items()):
                    if rank not in failed:
                        failed.add(rank)
                        code = code or 1
                        _say(f"worker {rank} was declared dead: {why}")
                        stop_at = stop_at or now
            if self.signum is not None and term_at is None:
                term_at = self.signal_at   # forwarded by the handler
            if stop_at is not None and term_at is None and now - stop_at >= self.grace:
                _say(f"stopping the other workers (worker(s) {sorted(failed)} died)")
                for _, _, p in self.procs:
                    p.signal(signal.SIGTERM)
                term_at = now
            if term_at is not None and not killed and now - term_at >= self.grace:
                for _, _, p in self.procs:
                    if p.poll() is None:
                        p.kill()
                killed = True
            time.sleep(0.1)
        return 128 + self.signum if self.signum is not None else code
