"""The jars the JVM side needs: Py4J's, Clojure's, and the tools (the
official Clojure CLI, javac) that find or build the rest."""
from __future__ import annotations

import glob
import os
import shutil
import sys
from pathlib import Path
from typing import List, Literal, Optional, overload

from .common import MissingDependency, env

_CLOJURE_JARS = ("clojure.jar", "spec.alpha.jar", "core.specs.alpha.jar")


@overload
def py4j_jar(required: Literal[True] = ...) -> str: ...


@overload
def py4j_jar(required: bool) -> Optional[str]: ...


def py4j_jar(required: bool = True) -> Optional[str]:
    """The Py4J jar shipped in the ``py4j`` Python package (None when absent and not required)."""
    try:
        from py4j.java_gateway import find_jar_path
    except ImportError:
        if not required:
            return None
        raise MissingDependency("the py4j package is missing: pip install 'mxkv[bridge]'") from None
    jar = find_jar_path()
    if jar and os.path.isfile(jar):
        return jar
    for cand in glob.glob(os.path.join(sys.prefix, "share", "py4j", "py4j*.jar")):
        return cand
    if not required:
        return None
    raise MissingDependency("py4j is installed but its jar was not found (reinstall py4j)")


def _m2_jar(group: str, artifact: str) -> Optional[str]:
    base = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact
    jars = sorted(base.glob(f"*/{artifact}-*.jar"))
    jars = [j for j in jars if not j.name.endswith(("-sources.jar", "-javadoc.jar"))]
    return str(jars[-1]) if jars else None


def clojure_jars() -> List[str]:
    """Clojure and its two spec jars, from MXKV_CLOJURE_JAR, Debian or ~/.m2."""
    given = env("MXKV_CLOJURE_JAR")
    if given:
        return given.split(os.pathsep)
    debian = [os.path.join("/usr/share/java", j) for j in _CLOJURE_JARS]
    if all(os.path.isfile(j) for j in debian):
        return debian
    m2 = [_m2_jar("org.clojure", a) for a in ("clojure", "spec.alpha", "core.specs.alpha")]
    if all(m2):
        return m2  # type: ignore[return-value]
    raise MissingDependency(
        "no Clojure jar found. Install one: `apt-get install -y clojure` (Debian/Ubuntu), "
        "or the Clojure CLI (https://clojure.org/guides/install_clojure), or point "
        "MXKV_CLOJURE_JAR at clojure.jar:spec.alpha.jar:core.specs.alpha.jar")


def official_cli() -> Optional[str]:
    """The official Clojure CLI (tools.deps) if installed; Debian's `clojure` script is not it."""
    exe = shutil.which("clojure")
    if not exe:
        return None
    try:
        with open(exe, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    return exe if b"Spath" in head or b"tools.deps" in head else None


def javac() -> str:
    javac = shutil.which("javac")
    if not javac:
        raise MissingDependency("javac not found: install a JDK "
                                "(apt-get install -y default-jdk-headless)")
    return javac
