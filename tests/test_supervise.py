"""mxkv.supervise, the way ``mxkv clj`` runs its JVM, with small Python
children instead of a JVM: signals reach the child, a child that ignores
them is killed after the grace period, and a child dies with its parent even
when the parent is SIGKILLed (PR_SET_PDEATHSIG). Real processes; polls with
generous bounds. interop-tests/test_cli_signals.py does the same with the
real JVM and engine."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG and /proc are Linux's")

# A child that reports the signals it gets in a file, then ends by them
# (or, with IGNORE, ignores SIGTERM).
CHILD = textwrap.dedent("""
    import os, signal, sys, time
    log = sys.argv[1]
    def got(signum, _):
        open(log, "a").write(signal.Signals(signum).name + "\\n")
        if os.environ.get("IGNORE") != "1":
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, got)
    open(log, "a").write(f"READY {os.getpid()}\\n")
    time.sleep(120)
""")

# A parent running the child through supervise.run, as mxkv clj runs java.
PARENT = textwrap.dedent("""
    import sys
    from mxkv import supervise
    sys.exit(supervise.run([sys.executable, sys.argv[1], sys.argv[2]]))
""")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _wait_for(predicate, what, bound=60.0):
    deadline = time.monotonic() + bound
    while not predicate():
        assert time.monotonic() < deadline, f"no {what} within {bound} s"
        time.sleep(0.05)


def _start(tmp_path, env=None):
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT)
    log = tmp_path / "log"
    log.write_text("")
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"),
                               str(tmp_path / "child.py"), str(log)],
                              env={**os.environ, **(env or {})}, start_new_session=True)
    _wait_for(lambda: "READY" in log.read_text(), "child")
    child = int(log.read_text().split("READY ")[1].split()[0])
    return parent, child, log


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_the_parent_reaches_the_child_and_both_end(sig, tmp_path):
    parent, child, log = _start(tmp_path)
    os.kill(parent.pid, sig)
    assert parent.wait(timeout=60) == 128 + sig   # the child's status, as a shell says it
    assert signal.Signals(sig).name in log.read_text().split()
    _wait_for(lambda: not _alive(child), "end of the child")


def test_a_child_that_ignores_the_signal_is_killed_after_the_grace_period(tmp_path):
    parent, child, log = _start(tmp_path, {"IGNORE": "1", "MXKV_CHILD_GRACE_S": "1"})
    os.kill(parent.pid, signal.SIGTERM)
    assert parent.wait(timeout=60) == 128 + signal.SIGKILL
    assert "SIGTERM" in log.read_text()
    assert not _alive(child)


def test_the_child_gets_sigterm_when_the_parent_is_killed(tmp_path):
    parent, child, log = _start(tmp_path)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=60)
    _wait_for(lambda: not _alive(child), "end of the orphaned child")
    assert "SIGTERM" in log.read_text().split()


@pytest.mark.parametrize("rc, status, words", [
    (0, 0, "exited with code 0"),
    (3, 3, "exited with code 3"),
    (-9, 137, "was killed by SIGKILL (exit code 137)"),
    (-15, 143, "was killed by SIGTERM (exit code 143)"),
    (137, 137, "exited with code 137 (128 + SIGKILL)"),
])
def test_exit_codes_read_as_a_shell_reports_them(rc, status, words):
    from mxkv.supervise import exit_words, shell_status

    assert shell_status(rc) == status
    assert exit_words(rc) == words


def test_a_child_killed_by_a_signal_gives_128_plus_its_number():
    from mxkv.supervise import run

    assert run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]) \
        == 128 + signal.SIGKILL
