"""Where the Clojure side of mxkv lives, and the JVM classpath that reaches it.

Two layouts, found in this order:

* a **checkout** (``MXKV_HOME``, or the directory holding ``deps.edn`` and
  ``clojure/src`` above this file): the namespaces in ``clojure/src``, the
  bridge's Java sources compiled into ``clojure/classes`` when they change;
* the **package** (``pip install mxkv``): ``mxkv/_clojure/mxkv.jar`` holds the
  namespaces and the compiled bridge classes, ``mxkv/_clojure/tutorial`` the
  tutorial. A package built without a JDK ships the Java sources instead
  (``mxkv/_clojure/java``) and they are compiled on first use into
  ``~/.cache/mxkv`` (``MXKV_CACHE`` overrides).

Clojure itself comes from the official Clojure CLI (``clojure -Spath`` with
the checkout's deps.edn) where it is installed and works, else from
``MXKV_CLOJURE_JAR``, Debian's ``clojure`` package in /usr/share/java or
``~/.m2``. Py4J's jar is the one shipped inside the ``py4j`` Python package.

This module imports nothing but the standard library (the wheel's build
hook loads it on its own).
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List, Optional, Sequence

__all__ = ["Layout", "layout", "classpath", "clojure_jars", "py4j_jar", "jar", "build",
           "build_jar", "aot", "namespaces", "default_jvm_opts", "jvm_opts", "REPORT_TO_STDERR",
           "ClassDataArchive",
           "startup_classpath", "STARTUP_JVM_OPTS", "MissingDependency"]

_CLOJURE_JARS = ("clojure.jar", "spec.alpha.jar", "core.specs.alpha.jar")
#: The package's copy of the Clojure side (written by the wheel build).
PACKAGED = Path(__file__).resolve().parent / "_clojure"
JAR_NAME = "mxkv.jar"


try:
    from .base import MissingDependencyError as MissingDependency
except ImportError:  # loaded on its own by the wheel's build hook (no numpy there)
    class MissingDependency(RuntimeError):  # type: ignore[no-redef]
        """Something the JVM side needs is not installed; the message says what to install."""


def _env(name: str) -> str:
    # This module runs inside the wheel build too, where importing mxkv.base
    # (and numpy) is not possible: the same reading, without the dependency.
    try:
        from .base import env
    except ImportError:
        return os.environ.get(name, "")
    return env(name, "")


class Layout:
    """Where the namespaces, bridge classes and tutorial are.

    Attributes
    ----------
    kind : {'checkout', 'package'}
    root : Path
        The checkout, or the package's ``_clojure`` directory.
    """

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.root = root

    @property
    def tutorial(self) -> Path:
        """The KVStore tutorial transcript (``kvstore.clj``)."""
        sub = ("clojure", "tutorial") if self.kind == "checkout" else ("tutorial",)
        return self.root.joinpath(*sub, "kvstore.clj")

    @property
    def tests(self) -> Optional[Path]:
        """The Clojure test suite (a checkout only)."""
        return self.root / "clojure" / "test" if self.kind == "checkout" else None

    @property
    def java_sources(self) -> Path:
        """The directory of the bridge's Java sources."""
        sub = ("clojure", "java") if self.kind == "checkout" else ("java",)
        return self.root.joinpath(*sub)

    def __repr__(self) -> str:
        return f"Layout({self.kind!r}, {str(self.root)!r})"


def _is_checkout(d: Path) -> bool:
    return (d / "deps.edn").is_file() and (d / "clojure" / "src").is_dir()


def layout() -> Layout:
    """The checkout this module belongs to (``MXKV_HOME`` overrides), else the package."""
    home = _env("MXKV_HOME")
    if home:
        d = Path(home).resolve()
        if not _is_checkout(d):
            raise MissingDependency(f"MXKV_HOME={home} is not an mxkv checkout "
                                    "(no deps.edn and clojure/src there)")
        return Layout("checkout", d)
    for d in Path(__file__).resolve().parents:
        if _is_checkout(d):
            return Layout("checkout", d)
    if (PACKAGED / JAR_NAME).is_file() or (PACKAGED / "java").is_dir():
        return Layout("package", PACKAGED)
    raise MissingDependency("mxkv's Clojure side is missing: this installation has neither "
                            "mxkv/_clojure (a wheel built from the sources) nor a checkout; "
                            "reinstall mxkv, or set MXKV_HOME to a checkout")


# ---------------------------------------------------------------- jars
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
    env = _env("MXKV_CLOJURE_JAR")
    if env:
        return env.split(os.pathsep)
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


def _javac() -> str:
    javac = shutil.which("javac")
    if not javac:
        raise MissingDependency("javac not found: install a JDK "
                                "(apt-get install -y default-jdk-headless)")
    return javac


# ---------------------------------------------------------------- compiling
def _compile(sources: Path, classes: Path, quiet: bool) -> None:
    files = sorted(str(p) for p in sources.rglob("*.java"))
    cp = os.pathsep.join(clojure_jars() + [py4j_jar()])
    classes.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"mxkv: compiling {len(files)} Java sources into {classes}", file=sys.stderr)
    subprocess.run([_javac(), "-nowarn", "-d", str(classes), "-cp", cp,
                    *files], check=True)
    (classes / ".built").touch()


def _stale(sources: Path, classes: Path) -> bool:
    stamp = classes / ".built"
    if not stamp.is_file():
        return True
    built = stamp.stat().st_mtime
    return any(p.stat().st_mtime > built for p in sources.rglob("*.java"))


def _cache_dir() -> Path:
    d = _env("MXKV_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "mxkv"


def classes_dir(where: Optional[Layout] = None, quiet: bool = False) -> Optional[Path]:
    """The compiled bridge classes, compiled first when missing or stale.

    None for a package that ships its jar (the classes are in it).
    """
    where = where or layout()
    if where.kind == "checkout":
        classes = where.root / "clojure" / "classes"
        if _stale(where.java_sources, classes):
            _compile(where.java_sources, classes, quiet)
        return classes
    if (where.root / JAR_NAME).is_file():
        return None
    digest = hashlib.sha256()
    for p in sorted(where.java_sources.rglob("*.java")):
        digest.update(p.read_bytes())
    classes = _cache_dir() / f"classes-{digest.hexdigest()[:16]}"
    if not (classes / ".built").is_file():
        _compile(where.java_sources, classes, quiet)
    return classes


def build(where: Optional[Layout] = None, quiet: bool = False) -> None:
    """Compile the bridge's Java sources when they changed (``mxkv build``)."""
    classes_dir(where, quiet)


def namespaces(src: Path) -> List[str]:
    """The namespaces of the ``.clj`` files under ``src`` that declare one
    (``ndarray_data.clj`` and ``ndarray_operators.clj`` are loaded into
    ``ndarray``, not namespaces themselves)."""
    out = []
    for p in sorted(src.rglob("*.clj")):
        with open(p, encoding="utf-8") as f:
            for line in f:
                if line.startswith("(ns "):
                    out.append(line.split()[1].rstrip(")"))
                    break
    return out


def aot(root: Path, out: Path, quiet: bool = True) -> Path:
    """Compile every namespace of checkout ``root`` ahead of time into
    ``out`` (``clojure.core/compile``), so that a JVM loading them from the
    jar does not compile them at start-up. Returns ``out``."""
    where = Layout("checkout", root)
    classes = classes_dir(where, quiet)
    src = root / "clojure" / "src"
    out.mkdir(parents=True, exist_ok=True)
    nss = namespaces(src)
    p4j = py4j_jar(required=False)
    cp = os.pathsep.join([str(src), str(classes), *clojure_jars(), *([p4j] if p4j else [])])
    java = shutil.which("java")
    if not java:
        raise MissingDependency("java not found: install a JDK "
                                "(apt-get install -y default-jdk-headless)")
    if not quiet:
        print(f"mxkv: compiling {len(nss)} Clojure namespaces ahead of time into {out}",
              file=sys.stderr)
    form = ("(binding [*compile-path* %s] (doseq [n '[%s]] (compile n)))"
            % (_clj_string(str(out)), " ".join(nss)))
    subprocess.run([java, REPORT_TO_STDERR, "-cp", cp, "clojure.main", "-e", form], check=True,
                   stdin=subprocess.DEVNULL)
    return out


def _clj_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_jar(root: Path, dest: Path, quiet: bool = True) -> Path:
    """Write ``dest``: the namespaces of checkout ``root`` (``clojure/src``),
    compiled ahead of time (see :func:`aot`) beside their sources, and its
    compiled bridge classes, one jar as a Clojure library ships."""
    where = Layout("checkout", root)
    classes = classes_dir(where, quiet)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    aot_dir = dest.with_name(dest.name + ".aot")
    shutil.rmtree(aot_dir, ignore_errors=True)
    try:
        aot(root, aot_dir, quiet)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF",
                       "Manifest-Version: 1.0\r\nCreated-By: mxkv\r\n\r\n")
            seen = set()
            for base in (root / "clojure" / "src", classes, aot_dir):
                for p in sorted(base.rglob("*")):
                    name = p.relative_to(base).as_posix()
                    if (p.is_file() and p.suffix in (".clj", ".cljc", ".class", ".edn")
                            and name not in seen):
                        seen.add(name)
                        z.write(p, name)
    finally:
        shutil.rmtree(aot_dir, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def jar(where: Optional[Layout] = None) -> Path:
    """The mxkv jar (namespaces and bridge classes) for a user's own project:
    the package's, or in a checkout one built into ``build/mxkv.jar``."""
    where = where or layout()
    if where.kind == "package":
        if (where.root / JAR_NAME).is_file():
            return where.root / JAR_NAME
        raise MissingDependency("this mxkv package was built without a JDK and has no jar; "
                                "`mxkv classpath` gives a classpath that works all the same")
    dest = where.root / "build" / JAR_NAME
    sources = [*(where.root / "clojure" / "src").rglob("*.clj"),
               *where.java_sources.rglob("*.java")]
    if not dest.is_file() or any(p.stat().st_mtime > dest.stat().st_mtime for p in sources):
        build_jar(where.root, dest)
    return dest


# ---------------------------------------------------------------- classpath
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
        if cli and not _env("MXKV_NO_CLI"):
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


#: the default JVM options that are there for start-up (see :func:`default_jvm_opts`)
STARTUP_JVM_OPTS = ("-XX:TieredStopAtLevel=1",)


def default_jvm_opts() -> List[str]:
    """JVM options used when MXKV_JVM_OPTS is unset.

    ``-XX:TieredStopAtLevel=1`` compiles with C1 only: Clojure's runtime
    initialises faster (a JPype program's start-up 1.97x -> 1.32x plain
    Clojure's, docs/benchmarks.md), and the bridge's steady state did not
    lose (the JVM side of a call is thin: a small push over JPype 9.2-9.5
    -> 8.8-9.1 us p50, over Py4J 1.37-1.44x -> 1.29-1.35x its no-op;
    ``->vec`` and ``ndarray/array`` within the runs' spread).

    ``-Xms1g`` keeps a warm heap: without it G1 shrinks the heap after each
    collection and re-commits fresh pages for the next large array, and on
    virtual machines page faults cost more than the copy itself (a 64 MB
    ``->vec`` goes from ~35 ms to ~10 ms here). Only on machines with 8 GiB
    of memory or more.
    """
    opts = list(STARTUP_JVM_OPTS)
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return opts
    return opts + (["-Xms1g"] if ram >= 8 << 30 else [])


#: clojure.main writes the report of an uncaught error to stderr, not to a
#: /tmp/clojure-*.edn file that nothing removes: every JVM mxkv starts gets it.
REPORT_TO_STDERR = "-Dclojure.main.report=stderr"


def jvm_opts() -> List[str]:
    """``MXKV_JVM_OPTS`` split on blanks when set, else :func:`default_jvm_opts`;
    plus :data:`REPORT_TO_STDERR` unless they set ``clojure.main.report``."""
    opts = _env("MXKV_JVM_OPTS")
    opts = opts.split() if opts.strip() else default_jvm_opts()
    if not any(o.startswith("-Dclojure.main.report=") for o in opts):
        opts.append(REPORT_TO_STDERR)
    return opts


# ---------------------------------------------------------------- start-up
_CORE_SPECS = "clojure/core/specs/alpha"
#: the jars a compiled clojure.core.specs.alpha depends on (its own, Clojure's, spec's)
_SPEC_DEPS = ("clojure", "spec.alpha", "core.specs.alpha")


def _jar_kind(entry: str) -> Optional[str]:
    """Which of :data:`_SPEC_DEPS` the jar ``entry`` is, by its name (Debian's
    ``spec.alpha.jar``, Maven's ``spec.alpha-0.3.218.jar``), or None."""
    name = os.path.basename(entry)
    for kind in sorted(_SPEC_DEPS, key=len, reverse=True):
        if name == kind + ".jar" or (name.startswith(kind + "-") and name.endswith(".jar")):
            return kind
    return None


def startup_classpath(path: str, java: Optional[str] = None) -> str:
    """``path`` with, after its ``core.specs.alpha`` jar when that ships only
    its source (as Debian's and Maven's do), a jar of that namespace
    compiled ahead of time: a program's first macro (``ns``, ``let``,
    ``defn``...) makes Clojure check it against those specs, and compiling
    them from source took half of a plain ``clojure.main``'s start-up at
    every start (0.4 s of CPU against 0.8 s, docs/benchmarks.md).

    The jar is compiled once per set of Clojure jars (their paths, sizes and
    times) into the cache (``MXKV_CACHE``, else ``~/.cache/mxkv``, in
    ``aot/``) with ``java``, and Clojure takes its classes because they are
    newer than the source beside them. ``path`` unchanged when
    ``MXKV_CDS`` is ``0``, when there is no such jar, or when compiling
    fails."""
    entries = path.split(os.pathsep)
    specs = [e for e in entries if _jar_kind(e) == "core.specs.alpha" and os.path.isfile(e)]
    if not specs or _env("MXKV_CDS").strip().lower() in ("0", "false", "no", "off"):
        return path
    try:
        with zipfile.ZipFile(specs[0]) as z:
            names = set(z.namelist())
        if _CORE_SPECS + ".clj" not in names or _CORE_SPECS + "__init.class" in names:
            return path
        deps = [e for e in entries if _jar_kind(e) and os.path.isfile(e)]
        digest = hashlib.sha256()
        for e in deps:
            st = os.stat(e)
            digest.update(f"{os.path.realpath(e)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except (OSError, zipfile.BadZipFile):
        return path
    out = _cache_dir() / "aot" / f"core-specs-{digest.hexdigest()[:24]}.jar"
    if not out.is_file() and not _compile_specs(deps, out, java or shutil.which("java")):
        return path
    i = entries.index(specs[0]) + 1
    return os.pathsep.join([*entries[:i], str(out), *entries[i:]])


def _compile_specs(deps: List[str], out: Path, java: Optional[str]) -> bool:
    """Compile clojure.core.specs.alpha with ``deps`` on the path into the jar ``out``."""
    import tempfile

    if not java:
        return False
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as d:
            classes = Path(d) / "classes"
            classes.mkdir()
            form = ("(binding [*compile-path* %s] (compile 'clojure.core.specs.alpha))"
                    % _clj_string(str(classes)))
            r = subprocess.run([java, REPORT_TO_STDERR, "-cp", os.pathsep.join(deps),
                                "clojure.main", "-e", form],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
            files = sorted((classes / _CORE_SPECS).parent.rglob("*.class"))
            if r.returncode != 0 or not (classes / (_CORE_SPECS + "__init.class")).is_file():
                return False
            tmp = Path(d) / out.name
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF",
                           "Manifest-Version: 1.0\r\nCreated-By: mxkv\r\n\r\n")
                for f in files:
                    z.write(f, f.relative_to(classes).as_posix())
            os.replace(tmp, out)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


#: JVM options that mean the caller manages class data sharing itself
_CDS_OWN = ("-Xshare", "-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit")
#: archives kept in the cache (the most recently used); older ones are removed
CDS_KEEP = 8
#: a dynamic archive starts with this magic number (0xf00baba8, little-endian)
_CDS_MAGIC = bytes.fromhex("a8ab0bf0")


def libjvm(java: Optional[str] = None) -> Optional[str]:
    """The ``libjvm.so`` behind ``java`` (the one on PATH by default), or None."""
    exe = java or shutil.which("java")
    if not exe:
        return None
    home = Path(os.path.realpath(exe)).parent.parent
    for cand in (home / "lib" / "server" / "libjvm.so",
                 home / "jre" / "lib" / "server" / "libjvm.so"):
        if cand.is_file():
            return str(cand)
    return None


class ClassDataArchive:
    """A dynamic AppCDS archive of the classes a JVM loads on this classpath,
    so that the next JVM maps them instead of parsing and verifying them
    again (Clojure's runtime and mxkv's compiled namespaces: start-up of a
    program using mxkv from its jar ~0.6x, see docs/benchmarks.md).

    The archive lives in the cache (``MXKV_CACHE``, else ``~/.cache/mxkv``,
    in ``cds/``), named by a digest of everything it depends on: the JVM
    (its ``libjvm``'s path, size and time), the JVM options, and each
    classpath entry's path, size and time. When it is missing,
    :meth:`options` asks this JVM to write it at exit into a file of its own
    (``-XX:ArchiveClassesAtExit``: the exit takes about a second longer,
    once), and :meth:`finish`, called after the JVM has ended cleanly, moves
    it into place: a JVM never maps a half-written archive (one that is
    truncated crashes it). One left behind by a process that ended without
    :meth:`finish` is moved into place by the next start when it is whole.
    JDK 17's checks still apply: an archive the JVM finds stale is ignored
    (its warning is switched off with ``-Xlog:cds=off``).

    No archive (:meth:`options` is empty) when ``MXKV_CDS`` is ``0``, the
    options already choose class data sharing (``-Xshare``...), or the
    classpath holds anything but jar files: a checkout's ``clojure/src``
    and ``clojure/classes`` directories cannot be archived (JDK 17 refuses
    to start with a non-empty directory on the path while it dumps).
    """

    def __init__(self, classpath: str, jvm: Optional[str], options: Sequence[str] = (),
                 kind: str = "java") -> None:
        self.path: Optional[Path] = None
        self._tmp: Optional[Path] = None
        entries = [e for e in classpath.split(os.pathsep) if e]
        if (_env("MXKV_CDS").strip() in ("0", "false", "no", "off") or not jvm or not entries
                or any(o.startswith(_CDS_OWN) for o in options)):
            return
        digest = hashlib.sha256(f"{kind}\0{' '.join(options)}".encode())
        try:
            for f in (jvm, *entries):
                st = os.stat(f)
                if not os.path.isfile(f):
                    return
                digest.update(f"\0{os.path.realpath(f)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
        except OSError:
            return
        self.path = _cache_dir() / "cds" / f"{kind}-{digest.hexdigest()[:24]}.jsa"

    @staticmethod
    def _valid(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                return f.read(4) == _CDS_MAGIC and os.fstat(f.fileno()).st_size > 4096
        except OSError:
            return False

    def options(self) -> List[str]:
        """The JVM options: map the archive, or write it at exit; [] for none."""
        if self.path is None:
            return []
        quiet = "-Xlog:cds=off,cds+dynamic=off"
        if self.path.is_file() or self._adopt():
            try:
                os.utime(self.path)  # most recently used: kept by the pruning
            except OSError:
                pass
            return [f"-XX:SharedArchiveFile={self.path}", quiet]
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:  # a JVM asked to write where it cannot does not start at all
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o644))
        except OSError:
            return []
        self._tmp = tmp
        return [f"-XX:ArchiveClassesAtExit={tmp}", quiet]

    def _adopt(self) -> bool:
        """Move into place an archive whose JVM's process ended without
        :meth:`finish` (``System/exit`` in a program Python hosts over JPype
        ends the process from the JVM); True when one was. JDK 17 writes an
        archive's header, with its magic number, after everything else, so a
        file cut short by a kill fails :meth:`_valid`: those are removed."""
        from .bridge.private import pid_alive  # not at the top: the wheel's build loads this

        assert self.path is not None
        for tmp in self.path.parent.glob(self.path.name + ".*.tmp"):
            pid = tmp.name[len(self.path.name) + 1:-len(".tmp")]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue
            try:
                if self._valid(tmp):
                    os.replace(tmp, self.path)
                    return True
                tmp.unlink()
            except OSError:
                continue
        return self.path.is_file()

    def finish(self, ok: bool = True) -> None:
        """After the JVM has ended: keep the archive it wrote when it ended
        cleanly (``ok``), else drop it; prune the cache."""
        tmp, self._tmp = self._tmp, None
        if tmp is None or self.path is None:
            return
        try:
            if ok and self._valid(tmp):
                os.replace(tmp, self.path)
            else:
                tmp.unlink(missing_ok=True)
        except OSError:
            return
        self._prune(self.path.parent)

    @staticmethod
    def _prune(d: Path) -> None:
        import time

        now = time.time()
        try:
            files = list(d.iterdir())
            jsa = sorted((p for p in files if p.suffix == ".jsa"),
                         key=lambda p: p.stat().st_mtime, reverse=True)
            stale_tmp = [p for p in files if p.suffix == ".tmp"
                         and now - p.stat().st_mtime > 3600]
            for p in jsa[CDS_KEEP:] + stale_tmp:
                p.unlink(missing_ok=True)
        except OSError:
            pass
