"""``mxkv clj``, ``mxkv repl`` and ``mxkv tutorial`` leave nothing behind:
after SIGTERM, SIGINT or SIGHUP to the ``mxkv`` process (forwarded to the
JVM), or SIGKILL (the JVM gets SIGTERM from the kernel, PR_SET_PDEATHSIG),
no JVM or engine process it started survives, and the engine's /dev/shm
files and the JVM's perf-data file (/tmp/hsperfdata_<user>/<pid>) are gone.

Real processes: ``mxkv`` runs in a session of its own, so only it gets the
signal; the JVM and the engine are found through /proc, and the test polls
(up to 90 s) until they are gone.
"""
from __future__ import annotations

import getpass
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HOLD = """
(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray])
(def kv (kvstore/create "local"))
(kvstore/init kv "w" (ndarray/ones [2 2]))
(println "MXKV-READY") (flush)
(Thread/sleep 600000)
"""

BOUND_S = 90.0


def _children(pid: int) -> list:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _engine_files(pid: int) -> list:
    shm = Path(os.environ.get("MXKV_SHM_DIR") or "/dev/shm")
    return sorted(p.name for p in shm.glob(f"mxkv-{pid}-*"))


def _perf_data(pids) -> list:
    """The JVMs' /tmp/hsperfdata_<user>/<pid> files among ``pids`` (a JVM
    killed with SIGKILL leaves its own unless told ``-XX:-UsePerfData``)."""
    d = Path(tempfile.gettempdir()) / f"hsperfdata_{getpass.getuser()}"
    return sorted(str(d / str(p)) for p in pids if (d / str(p)).exists())


def _ps(pids) -> str:
    r = subprocess.run(["ps", "-o", "pid,ppid,stat,args", "-p", ",".join(map(str, pids))],
                       capture_output=True, text=True)
    return "\n".join(ln[:160] for ln in r.stdout.splitlines())


_STARTED: list = []


def _default_signals() -> None:
    # a test run started in the background by a non-interactive shell
    # ignores SIGINT and SIGQUIT, and a child would inherit that
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def _kill_what_a_test_left():
    """A test that fails or is interrupted before its signal: the mxkv
    process it started, and the JVM and engine in its session, killed."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)


def _start(args, tmp_path, feed=None):
    log = open(tmp_path / "out.txt", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "mxkv.cli", *args], stdin=subprocess.PIPE,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=tmp_path, preexec_fn=_default_signals)
    _STARTED.append(proc)
    if feed:  # the stdin pipe stays open: a REPL waits on it
        proc.stdin.write(feed.encode())
        proc.stdin.flush()
    deadline = time.monotonic() + 240
    while "MXKV-READY" not in (tmp_path / "out.txt").read_text():
        assert proc.poll() is None, (tmp_path / "out.txt").read_text()[-3000:]
        assert time.monotonic() < deadline, "mxkv did not get ready in 240 s"
        time.sleep(0.2)
    return proc, log


def _tree(pid: int) -> list:
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def _signal_and_check(proc, sig, tmp_path, want_jvm=True, to_jvm=False):
    """Send ``sig`` to ``proc`` (``to_jvm``: to the JVM it started) and wait
    until nothing it started is left; returns its exit code."""
    started = _tree(proc.pid)
    engines = [p for p in started if "mxkv.bridge" in Path(f"/proc/{p}/cmdline")
               .read_bytes().decode(errors="replace")]
    if want_jvm:
        assert started, "mxkv started no JVM"
        assert engines and all(_engine_files(e) for e in engines), \
            f"no engine with /dev/shm files among {started}:\n{_ps(started)}"
    before = _ps([proc.pid, *started])
    target = proc.pid
    if to_jvm:
        jvms = [p for p in started if Path(f"/proc/{p}/exe").resolve().name == "java"]
        assert len(jvms) == 1, before
        target = jvms[0]
    os.kill(target, sig)
    deadline = time.monotonic() + BOUND_S
    while True:
        proc.poll()
        left = [p for p in [proc.pid, *started] if _alive(p)]
        files = [f for e in engines for f in _engine_files(e)] + _perf_data([proc.pid, *started])
        if not left and not files:
            break
        assert time.monotonic() < deadline, (
            f"{BOUND_S} s after {signal.Signals(sig).name}: alive {left}, files {files}\n"
            f"before:\n{before}\nnow:\n{_ps(left)}")
        time.sleep(0.2)
    elapsed = BOUND_S - (deadline - time.monotonic())
    print(f"{signal.Signals(sig).name}: before\n{before}\nafter {elapsed:.1f} s: ps -p "
          f"{','.join(map(str, [proc.pid, *started]))} finds none, /dev/shm has no "
          f"mxkv-<engine pid>-* file, no JVM left a perf-data file")
    return proc.wait(timeout=5)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_mxkv_clj_leaves_no_process_or_shm_file_py4j(sig, tmp_path):
    (tmp_path / "hold.clj").write_text(HOLD)
    proc, log = _start(["clj", "--transport", "py4j", "hold.clj"], tmp_path)
    rc = _signal_and_check(proc, sig, tmp_path)
    assert rc == (-signal.SIGKILL if sig == signal.SIGKILL else 128 + sig), rc
    log.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_mxkv_clj_over_jpype_ends_on_each_signal(sig, tmp_path):
    # One process (the JVM and the engine live in mxkv): it must end.
    (tmp_path / "hold.clj").write_text(HOLD)
    proc, log = _start(["clj", "--transport", "jpype", "hold.clj"], tmp_path)
    _signal_and_check(proc, sig, tmp_path, want_jvm=False)
    log.close()


def test_mxkv_repl_forwards_sighup(tmp_path):
    proc, log = _start(["repl"], tmp_path, feed=HOLD)
    _signal_and_check(proc, signal.SIGHUP, tmp_path)
    log.close()


def test_mxkv_tutorial_dies_with_its_parent(tmp_path):
    (tmp_path / "long.clj").write_text(HOLD)
    proc, log = _start(["tutorial", "long.clj"], tmp_path)
    _signal_and_check(proc, signal.SIGKILL, tmp_path)
    log.close()


@pytest.fixture(autouse=True)
def _linux_only():
    if not sys.platform.startswith("linux"):
        pytest.skip("checks /proc and /dev/shm (Linux)")


@pytest.mark.parametrize("transport", ["py4j", "jpype"])
def test_a_failed_clojure_program_reports_to_stderr_and_leaves_no_crash_file(transport, tmp_path):
    """clojure.main writes an uncaught error's report to a /tmp/clojure-*.edn
    file that nothing removes, unless told ``-Dclojure.main.report=stderr``;
    every JVM mxkv starts is told (here its temporary directory is
    ``tmp_path``, to see what it writes)."""
    env = dict(os.environ, MXKV_JVM_OPTS=f"-XX:TieredStopAtLevel=1 -Djava.io.tmpdir={tmp_path}")
    r = subprocess.run([sys.executable, "-m", "mxkv.cli", "clj", "--transport", transport,
                        "-e", '(throw (ex-info "mxkv-boom" {:why :test}))'],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "mxkv-boom" in r.stderr
    assert "Full report at" not in r.stderr, r.stderr
    assert not list(tmp_path.glob("clojure-*.edn")), sorted(p.name for p in tmp_path.iterdir())


def test_a_jvm_killed_with_sigkill_leaves_no_perf_data_file(tmp_path):
    # kill -9 of the JVM itself: mxkv ends, its engine with it, and the JVM
    # (started with -XX:-UsePerfData) left no /tmp/hsperfdata_<user>/<pid>
    (tmp_path / "hold.clj").write_text(HOLD)
    proc, log = _start(["clj", "--transport", "py4j", "hold.clj"], tmp_path)
    _signal_and_check(proc, signal.SIGKILL, tmp_path, to_jvm=True)
