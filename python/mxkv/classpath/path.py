"""The JVM classpath that reaches mxkv's namespaces and classes, Clojure and Py4J."""
from __future__ import annotations

import os
import subprocess
from typing import Optional

from .build import classes_dir
from .common import MissingDependency, env
from .jars import clojure_jars, official_cli, py4j_jar
from .layout import JAR_NAME, Layout, layout


def classpath(test: bool = False, where: Optional[Layout] = None,
              require_py4j: bool = True) -> str:
    """The JVM classpath: mxkv's namespaces and classes, Clojure, Py4J.

    ``test`` adds the checkout's Clojure test suite. Py4J's jar is left out
    when ``require_py4j`` is false and the ``py4j`` package is absent (the
    JPype transport does not need it).
    """
    where = where or layout()
    if where.kind == "checkout":
        cli = official_cli()
        if cli and not env("MXKV_NO_CLI"):
            args = [cli, "-Spath"] + (["-A:test"] if test else [])
            try:
                out = subprocess.run(args, cwd=where.root, capture_output=True, text=True,
                                     timeout=300, stdin=subprocess.DEVNULL)
                if out.returncode == 0 and out.stdout.strip():
                    classes_dir(where, quiet=True)
                    # deps.edn paths are relative to the project: anchor them there.
                    return os.pathsep.join(
                        p if os.path.isabs(p) else str(where.root / p)
                        for p in out.stdout.strip().split(os.pathsep))
            except (OSError, subprocess.TimeoutExpired):
                pass
        parts = [str(where.root / "clojure" / "src"), str(classes_dir(where))]
        if test:
            parts.append(str(where.root / "clojure" / "test"))
    else:
        if test:
            raise MissingDependency("the Clojure test suite is not part of the package: "
                                    "run `mxkv test` in a checkout")
        classes = classes_dir(where)
        parts = [str(where.root / JAR_NAME)] if classes is None else [
            str(where.root / "src"), str(classes)]
    parts += clojure_jars()
    p4j = py4j_jar(required=require_py4j)
    if p4j:
        parts.append(p4j)
    return os.pathsep.join(parts)
