"""What the interop tests share: the two drivers, one JVM per transport.

* ``py4j``: a JVM of its own (``java ... clojure.main -m interop.driver``)
  that spawns its engine as the Clojure API does, driven one JSON command a
  line over its stdin.
* ``jpype``: this pytest process hosts the JVM (``mxkv.jvm.start()``), the
  engine is in this process too, and the same driver functions are called
  directly.

Both run ``interop-tests/clj/interop/driver.clj``; conftest.py makes them
fixtures (``driver``, parametrized with ids ``py4j`` and ``jpype``, or
``py4j_driver`` / ``jpype_driver``). They need a JDK, a Clojure jar, py4j
and JPype1, which ``make test`` installs (``make clojure``, the ``test``
extra); without them the tests skip, saying what is missing.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mxkv import classpath as cp
from mxkv.base import MissingDependencyError

ROOT = Path(__file__).resolve().parents[1]
CLJ = Path(__file__).resolve().parent / "clj"
CLOJURE_TESTS = ROOT / "clojure" / "test"
TRANSPORTS = ("py4j", "jpype")


def _missing() -> str | None:
    if not (shutil.which("java") and shutil.which("javac")):
        return "no JDK (apt-get install -y default-jdk-headless; `make clojure` does it)"
    try:
        cp.clojure_jars()
        cp.py4j_jar()
    except MissingDependencyError as exc:
        return str(exc)
    try:
        import jpype  # noqa: F401
    except ImportError:
        return "JPype1 is not installed (pip install 'mxkv[jpype]')"
    return None


MISSING = _missing()


class DriverError(AssertionError):
    """The driver function raised on the JVM side."""


class Py4JDriver:
    """interop.driver in a JVM process of its own (Py4J transport)."""

    transport = "py4j"

    def __init__(self) -> None:
        java = shutil.which("java")
        path = os.pathsep.join([cp.classpath(test=True), str(CLJ)])
        self.log = tempfile.NamedTemporaryFile("w+", prefix="mxkv-interop-py4j-", suffix=".log",
                                               delete=False)
        env = {**os.environ, "MXKV_PYTHON": sys.executable}
        self.proc = subprocess.Popen(
            [java, *cp.jvm_opts(), "-Dmxkv.transport=py4j", "-cp", path, "clojure.main",
             "-m", "interop.driver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
            cwd=ROOT)

    def call(self, fn: str, *args: Any) -> Any:
        self.proc.stdin.write(json.dumps({"fn": fn, "args": list(args)}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.log.flush()
                raise DriverError(f"the py4j driver JVM exited ({self.proc.wait()}); "
                                  f"its log: {self.log.name}")
            if line.startswith("@@"):
                answer = json.loads(line[2:])
                if "error" in answer:
                    raise DriverError(answer["error"])
                return answer["ok"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)


class JPypeDriver:
    """interop.driver in this process's JVM (JPype transport)."""

    transport = "jpype"

    def __init__(self) -> None:
        import mxkv.jvm as jvm

        jvm.start(extra_classpath=[str(CLOJURE_TESTS), str(CLJ)])
        jvm.require("interop.driver")
        self.jvm = jvm
        self._call = jvm.var("interop.driver/call-json")

    def call(self, fn: str, *args: Any) -> Any:
        import jpype

        try:
            return json.loads(self._call(json.dumps({"fn": fn, "args": list(args)})))
        except jpype.JException as exc:
            raise DriverError(f"{exc.getClass().getName()}: {exc.getMessage()}") from exc


