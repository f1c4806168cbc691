"""The ``mxkv`` console command: the Clojure side of mxkv without a build tool.

Subcommands::

    mxkv classpath [--test]   print the JVM classpath (Clojure, Py4J, sources, classes)
    mxkv clj FILE|ARGS...     run clojure.main with that classpath (like `clojure`)
    mxkv repl                 a Clojure REPL with kvstore, ndarray, context required
    mxkv tutorial [FILE]      run the KVStore tutorial as a checked REPL transcript
    mxkv test [NS...]         run the Clojure test suite (clojure/test)
    mxkv build                compile the bridge's Java sources when they changed

The classpath comes from the official Clojure CLI (``clojure -Spath`` with the
project's deps.edn) where it is installed and works, else from a local
Clojure jar (Debian's ``clojure`` package in /usr/share/java, or
``MXKV_CLOJURE_JAR``), the Py4J jar shipped inside the ``py4j`` Python
package, ``clojure/src`` and the compiled bridge classes. The engine the JVM
spawns is this interpreter unless ``MXKV_PYTHON`` says otherwise.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

__all__ = ["main", "classpath", "project_root", "java_command"]

_CLOJURE_JARS = ("clojure.jar", "spec.alpha.jar", "core.specs.alpha.jar")


def project_root() -> Path:
    """The checkout holding deps.edn and clojure/ (``MXKV_HOME`` overrides)."""
    env = os.environ.get("MXKV_HOME")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for d in [*here.parents, Path.cwd()]:
        if (d / "deps.edn").is_file() and (d / "clojure" / "src").is_dir():
            return d
    raise SystemExit("mxkv: cannot find the mxkv checkout (deps.edn and clojure/src); "
                     "set MXKV_HOME to it")


def py4j_jar() -> str:
    try:
        from py4j.java_gateway import find_jar_path
    except ImportError:
        raise SystemExit("mxkv: the py4j package is missing: pip install 'mxkv[bridge]'") from None
    jar = find_jar_path()
    if jar and os.path.isfile(jar):
        return jar
    for cand in glob.glob(os.path.join(sys.prefix, "share", "py4j", "py4j*.jar")):
        return cand
    raise SystemExit("mxkv: py4j is installed but its jar was not found (reinstall py4j)")


def _m2_jar(group: str, artifact: str) -> Optional[str]:
    base = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact
    jars = sorted(base.glob(f"*/{artifact}-*.jar"))
    jars = [j for j in jars if not j.name.endswith(("-sources.jar", "-javadoc.jar"))]
    return str(jars[-1]) if jars else None


def clojure_jars() -> List[str]:
    """Clojure and its two spec jars, from MXKV_CLOJURE_JAR, Debian or ~/.m2."""
    env = os.environ.get("MXKV_CLOJURE_JAR")
    if env:
        return env.split(os.pathsep)
    debian = [os.path.join("/usr/share/java", j) for j in _CLOJURE_JARS]
    if all(os.path.isfile(j) for j in debian):
        return debian
    m2 = [_m2_jar("org.clojure", a) for a in ("clojure", "spec.alpha", "core.specs.alpha")]
    if all(m2):
        return m2  # type: ignore[return-value]
    raise SystemExit("mxkv: no Clojure jar found. Install one: `apt-get install -y clojure` "
                     "(Debian/Ubuntu), or the Clojure CLI "
                     "(https://clojure.org/guides/install_clojure), "
                     "or point MXKV_CLOJURE_JAR at clojure.jar:spec.alpha.jar:core.specs.alpha.jar")


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


def classpath(test: bool = False, root: Optional[Path] = None) -> str:
    root = root or project_root()
    cli = official_cli()
    if cli and not os.environ.get("MXKV_NO_CLI"):
        args = [cli, "-Spath"] + (["-A:test"] if test else [])
        try:
            out = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=300,
                                 stdin=subprocess.DEVNULL)
            if out.returncode == 0 and out.stdout.strip():
                # deps.edn paths are relative to the project: anchor them there.
                return os.pathsep.join(
                    p if os.path.isabs(p) else str(root / p)
                    for p in out.stdout.strip().split(os.pathsep))
        except (OSError, subprocess.TimeoutExpired):
            pass
    parts = [str(root / "clojure" / "src"), str(root / "clojure" / "classes")]
    if test:
        parts.append(str(root / "clojure" / "test"))
    parts += clojure_jars() + [py4j_jar()]
    return os.pathsep.join(parts)


def _stale(root: Path) -> bool:
    classes = root / "clojure" / "classes"
    stamp = classes / ".built"
    if not stamp.is_file():
        return True
    built = stamp.stat().st_mtime
    return any(p.stat().st_mtime > built for p in (root / "clojure" / "java").rglob("*.java"))


def build(root: Optional[Path] = None, quiet: bool = False) -> None:
    """Compile the bridge's Java sources into clojure/classes when they changed."""
    root = root or project_root()
    if not _stale(root):
        return
    javac = shutil.which("javac")
    if not javac:
        raise SystemExit("mxkv: javac not found: install a JDK "
                         "(apt-get install -y default-jdk-headless)")
    classes = root / "clojure" / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(p) for p in (root / "clojure" / "java").rglob("*.java"))
    cp = os.pathsep.join(clojure_jars() + [py4j_jar()])
    if not quiet:
        print(f"mxkv: compiling {len(sources)} Java sources into {classes}", file=sys.stderr)
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", cp, *sources], check=True)
    (classes / ".built").touch()


def default_jvm_opts() -> List[str]:
    """JVM options used when MXKV_JVM_OPTS is unset.

    ``-Xms1g`` keeps a warm heap: without it G1 shrinks the heap after each
    collection and re-commits fresh pages for the next large array, and on
    virtual machines page faults cost more than the copy itself (a 64 MB
    ``->vec`` goes from ~35 ms to ~10 ms here). Only on machines with 8 GiB
    of memory or more.
    """
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return []
    return ["-Xms1g"] if ram >= 8 << 30 else []


def java_command(main_args: Sequence[str], test: bool = False) -> List[str]:
    root = project_root()
    build(root)
    java = shutil.which("java")
    if not java:
        raise SystemExit("mxkv: java not found: install a JDK "
                         "(apt-get install -y default-jdk-headless)")
    env_opts = os.environ.get("MXKV_JVM_OPTS")
    opts = env_opts.split() if env_opts is not None else default_jvm_opts()
    return [java, *opts, "-cp", classpath(test, root), "clojure.main", *main_args]


def _run(cmd: List[str]) -> int:
    env = dict(os.environ)
    env.setdefault("MXKV_PYTHON", sys.executable)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130


_REPL_INIT = """
(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray]
         '[org.apache.clojure-mxnet.context :as context]
         '[org.apache.clojure-mxnet.optimizer :as optimizer]
         '[org.apache.clojure-mxnet.bridge :as bridge])
(println "mxkv: kvstore, ndarray, context, optimizer and bridge are required;"
         "the engine starts on first use.")
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "classpath":
        root = project_root()
        build(root, quiet=True)
        print(classpath("--test" in rest, root))
        return 0
    if cmd == "build":
        build()
        return 0
    if cmd == "clj":
        return _run(java_command(rest))
    if cmd == "repl":
        c = java_command(["-e", _REPL_INIT, "-r"])
        if sys.stdin.isatty() and shutil.which("rlwrap"):
            c = ["rlwrap", "-r", "-q", '\\"', "-b", "(){}[],^%#@\";:'", *c]
        return _run(c)
    if cmd == "tutorial":
        root = project_root()
        target = rest[0] if rest else str(root / "clojure" / "tutorial" / "kvstore.clj")
        return _run(java_command(["-m", "mxkv.transcript", target]))
    if cmd == "test":
        root = project_root()
        return _run(java_command(["-m", "mxkv.test-runner", str(root / "clojure" / "test"), *rest],
                                 test=True))
    print(f"mxkv: unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
