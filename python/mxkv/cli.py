"""The ``mxkv`` console command: the Clojure side of mxkv without a build tool.

Subcommands::

    mxkv classpath [--test]    print the JVM classpath (mxkv, Clojure, Py4J)
    mxkv jar [--deps-edn]      print the path of the mxkv jar (namespaces and bridge
                               classes) or a deps.edn :deps map for your own project
    mxkv clj FILE|ARGS...      run clojure.main with that classpath (like `clojure`)
    mxkv repl                  a Clojure REPL with kvstore, ndarray, context required
    mxkv tutorial [FILE]       run the KVStore tutorial as a checked REPL transcript
    mxkv test [NS-REGEX...]    run the Clojure test suite (a checkout's clojure/test)
    mxkv build                 compile the bridge's Java sources when they changed
    mxkv launch -n W [-s S] -- CMD...  run CMD as W workers of a distributed job on Ray
    mxkv cluster head|join ADDRESS     start a Ray node of a multi-host cluster (token auth,
                                       the address other hosts reach)

``clj``, ``repl``, ``tutorial`` and ``test`` take ``--transport py4j|jpype``
(default: ``MXKV_TRANSPORT``, else py4j). With py4j a JVM process starts and
spawns this Python as its engine; with jpype this Python process hosts the
JVM (JPype) and the engine runs in it.

With py4j, SIGTERM, SIGINT and SIGHUP sent to ``mxkv`` are forwarded to the
JVM (killed if it has not ended 10 s later, ``MXKV_CHILD_GRACE_S``), and on
Linux the JVM gets SIGTERM when ``mxkv`` dies, even by SIGKILL; the JVM's
shutdown closes its engine, which removes its /dev/shm files (see
:mod:`mxkv.supervise`). With jpype everything is this one process.

The Clojure side comes from the checkout this command belongs to, else from
the installed package (see :mod:`mxkv.classpath`). The engine the JVM spawns
over Py4J is this interpreter unless ``MXKV_PYTHON`` says otherwise.
"""
from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional, Sequence, Tuple

from . import classpath as cp
from . import supervise
from .base import MissingDependencyError, env

__all__ = ["main", "java_command", "TRANSPORTS"]

TRANSPORTS = ("py4j", "jpype")

_REPL_INIT = """
(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray]
         '[org.apache.clojure-mxnet.context :as context]
         '[org.apache.clojure-mxnet.optimizer :as optimizer]
         '[org.apache.clojure-mxnet.bridge :as bridge])
(println "mxkv: kvstore, ndarray, context, optimizer and bridge are required;"
         "the engine starts on first use.")
"""


def java_command(main_args: Sequence[str], test: bool = False) -> List[str]:
    """The ``java`` command line running clojure.main with ``main_args`` (Py4J transport)."""
    return _java(main_args, test, cds=False)[0]


def _java(main_args: Sequence[str], test: bool = False, cds: bool = True
          ) -> Tuple[List[str], Optional[cp.ClassDataArchive]]:
    """:func:`java_command`; with ``cds``, with Clojure's core specs compiled
    (:func:`mxkv.classpath.startup_classpath`) and the class-data archive it
    maps or writes (:class:`mxkv.classpath.ClassDataArchive`: ``finish`` it
    once the JVM has ended)."""
    java = shutil.which("java")
    if not java:
        raise MissingDependencyError("java not found: install a JDK "
                                     "(apt-get install -y default-jdk-headless)")
    opts = [*cp.jvm_opts(), "-Dmxkv.transport=py4j"]
    path = cp.classpath(test)
    archive = None
    if cds:
        path = cp.startup_classpath(path, java)
        archive = cp.ClassDataArchive(path, cp.libjvm(java), opts)
    extra = archive.options() if archive is not None else []
    return [java, *opts, *extra, "-cp", path, "clojure.main", *main_args], archive


def _transport(args: List[str]) -> Tuple[str, List[str]]:
    """Take ``--transport X`` / ``--transport=X`` out of ``args`` (before any
    other argument); the default is MXKV_TRANSPORT, else py4j."""
    transport = env("MXKV_TRANSPORT", "py4j").strip().lower()
    rest = list(args)
    while rest and rest[0].startswith("--transport"):
        opt = rest.pop(0)
        if "=" in opt:
            transport = opt.split("=", 1)[1]
        elif rest:
            transport = rest.pop(0)
        else:
            raise SystemExit("mxkv: --transport needs a value: py4j or jpype")
    if transport not in TRANSPORTS:
        raise SystemExit(f"mxkv: unknown transport {transport!r}: expected py4j or jpype")
    return transport, rest


def _run_java(cmd: List[str], archive: Optional[cp.ClassDataArchive] = None) -> int:
    env_ = dict(os.environ)
    env_.setdefault("MXKV_PYTHON", sys.executable)
    rc = supervise.run(cmd, env_)
    if archive is not None:
        archive.finish(ok=rc < 128)  # not after a signal: it may have cut the archive short
    return rc


def _run_jpype(main_args: Sequence[str], test: bool = False) -> int:
    """Run clojure.main in a JVM hosted by this process; its exit code."""
    from . import jvm

    extra = []
    if test:
        tests = cp.layout().tests
        if tests is None:
            raise MissingDependencyError("the Clojure test suite is not part of the package: "
                                         "run `mxkv test` in a checkout")
        extra.append(str(tests))
    jvm.start(extra_classpath=extra)
    try:
        jvm.run_main(main_args)
    except KeyboardInterrupt:
        return 130
    finally:
        jvm.stop()
    return 0


def _run(transport: str, main_args: List[str], test: bool = False) -> int:
    if transport == "jpype":
        return _run_jpype(main_args, test)
    return _run_java(*_java(main_args, test))


def _deps_edn() -> str:
    """A deps.edn map for a user's own project: Clojure, the mxkv jar, Py4J's jar."""
    lines = ['{:deps {org.clojure/clojure {:mvn/version "1.11.1"}',
             f'        mxkv/mxkv {{:local/root "{cp.jar()}"}}']
    p4j = cp.py4j_jar(required=False)
    if p4j:
        lines.append(f'        net.sf.py4j/py4j {{:local/root "{p4j}"}}')
    return "\n".join(lines) + "}}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``mxkv`` command with ``argv`` (default ``sys.argv[1:]``);
    returns its exit code. ``mxkv help`` lists the subcommands."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "launch":
        from .kvstore.dist.launch import main as launch_main

        return launch_main(rest)
    if cmd == "cluster":
        from .kvstore.dist.nodes import main as cluster_main

        return cluster_main(rest)
    try:
        if cmd == "classpath":
            print(cp.classpath("--test" in rest))
            return 0
        if cmd == "jar":
            print(_deps_edn() if "--deps-edn" in rest else cp.jar())
            return 0
        if cmd == "build":
            cp.build()
            return 0
        if cmd in ("clj", "repl", "tutorial", "test"):
            transport, rest = _transport(rest)
            if cmd == "clj":
                return _run(transport, rest)
            if cmd == "repl":
                if transport == "jpype":
                    return _run(transport, ["-e", _REPL_INIT, "-r"])
                c, archive = _java(["-e", _REPL_INIT, "-r"])
                if sys.stdin.isatty() and shutil.which("rlwrap"):
                    c = ["rlwrap", "-r", "-q", '\\"', "-b", "(){}[],^%#@\";:'", *c]
                return _run_java(c, archive)
            if cmd == "tutorial":
                target = rest[0] if rest else str(cp.layout().tutorial)
                return _run(transport, ["-m", "mxkv.transcript", target])
            tests = cp.layout().tests
            if tests is None:
                raise MissingDependencyError("the Clojure test suite is not part of the "
                                             "package: run `mxkv test` in a checkout")
            return _run(transport, ["-m", "mxkv.test-runner", str(tests), *rest], test=True)
    except MissingDependencyError as exc:
        print(f"mxkv: {exc}", file=sys.stderr)
        return 1
    print(f"mxkv: unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
