"""The Py4J handshake with a real JVM: the JVM starts the gateway and spawns
the engine, the engine registers, and the engine dies with the JVM.

Skipped where no JVM, javac or Clojure jar is installed (``make clojure``
sets them up)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mxkv import cli

HOLD = """
(require '[org.apache.clojure-mxnet.bridge :as bridge])
(let [c (bridge/connection)]
  (println (bridge/->json (assoc (bridge/info c) :ok (nil? (bridge/call c "noop")))))
  (flush)
  (Thread/sleep 120000))
"""


BUSY = """
(require '[org.apache.clojure-mxnet.bridge :as bridge]
         '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray])
(let [c (bridge/connection)
      kv (kvstore/create)]
  (kvstore/init kv "w" (ndarray/zeros [256]))
  (dotimes [_ 4]
    (future (loop [] (kvstore/push kv "w" (ndarray/ones [256])) (recur))))
  (dotimes [_ 4]
    (future (loop [] (ndarray/->vec (ndarray/ones [300000])) (recur))))
  (Thread/sleep 300)
  (println (bridge/->json (assoc (bridge/info c) :ok (nil? (bridge/call c "noop")))))
  (flush)
  (Thread/sleep 120000))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _start_jvm(script: str):
    env = {**os.environ, "MXKV_PYTHON": sys.executable}
    p = subprocess.Popen(cli.java_command(["-e", script]), stdout=subprocess.PIPE, text=True,
                         env=env)
    try:
        line = p.stdout.readline()
        assert line.startswith("{"), f"JVM printed {line!r}"
        yield p, json.loads(line)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture
def jvm(needs_jvm):
    """A JVM holding an engine; yields (jvm process, engine info)."""
    yield from _start_jvm(HOLD)


@pytest.fixture
def busy_jvm(needs_jvm):
    """A JVM whose eight threads keep its engine busy (pushes, and reads
    through the arena and the region file); yields (jvm process, engine info)."""
    yield from _start_jvm(BUSY)


def _wait(pred, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def test_engine_registers_and_answers(jvm):
    _, info = jvm
    assert info["ok"] is True
    assert _alive(info["pid"])
    assert os.path.exists(info["arena"])


@pytest.mark.parametrize("which", ["jvm", "busy_jvm"])
def test_engine_exits_and_cleans_up_when_the_jvm_is_killed(request, which, needs_jvm):
    p, info = request.getfixturevalue(which)
    p.send_signal(signal.SIGKILL)
    p.wait()
    # (how fast it goes is not this test's business: only that it goes)
    assert _wait(lambda: not _alive(info["pid"])), "engine outlived its JVM"
    assert _wait(lambda: not os.path.exists(info["arena"])), "engine left its arena behind"
    assert _wait(lambda: not os.path.exists(info["regions"])), "engine left its region file behind"


def test_secret_travels_in_the_environment_not_the_command_line(jvm):
    _, info = jvm
    with open(f"/proc/{info['pid']}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    assert b"mxkv.bridge" in argv
    with open(f"/proc/{info['pid']}/environ", "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    secret = env[b"MXKV_BRIDGE_SECRET"]
    assert len(secret) >= 32  # >= 128 bits, hex
    assert not any(secret in a for a in argv)


def test_gateway_refuses_a_client_without_the_secret(jvm):
    from py4j.java_gateway import GatewayParameters, JavaGateway
    from py4j.protocol import Py4JError

    _, info = jvm
    with open(f"/proc/{info['pid']}/environ", "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    port = int(env[b"MXKV_BRIDGE_PORT"])
    intruder = JavaGateway(gateway_parameters=GatewayParameters(
        address="127.0.0.1", port=port, auth_token="0" * 64, auto_convert=False))
    try:
        with pytest.raises((Py4JError, OSError)):
            intruder.jvm.java.lang.System.getProperty("user.name")
    finally:
        intruder.close()
