"""Compiling the bridge's Java sources, the namespaces ahead of time, and
the mxkv jar a user's own project takes."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List, Optional

from .common import MissingDependency, cache_dir, clj_string
from .jars import clojure_jars, javac, py4j_jar
from .jvm_options import NO_PERF_DATA, QUIET_JVM_OPTS
from .layout import JAR_NAME, Layout, layout


def _compile(sources: Path, classes: Path, quiet: bool) -> None:
    files = sorted(str(p) for p in sources.rglob("*.java"))
    cp = os.pathsep.join(clojure_jars() + [py4j_jar()])
    classes.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"mxkv: compiling {len(files)} Java sources into {classes}", file=sys.stderr)
    subprocess.run([javac(), "-J" + NO_PERF_DATA, "-nowarn", "-d", str(classes), "-cp", cp,
                    *files], check=True)
    (classes / ".built").touch()


def _stale(sources: Path, classes: Path) -> bool:
    stamp = classes / ".built"
    if not stamp.is_file():
        return True
    built = stamp.stat().st_mtime
    return any(p.stat().st_mtime > built for p in sources.rglob("*.java"))




def classes_dir(where: Optional[Layout] = None, quiet: bool = False) -> Optional[Path]:
    """The compiled bridge classes, compiled first when missing or stale.

    None for a package that ships its jar (the classes are in it).
    """
    where = where or layout()
    if where.kind == "checkout":
        return _checkout_classes(where, quiet)
    if (where.root / JAR_NAME).is_file():
        return None
    digest = hashlib.sha256()
    for p in sorted(where.java_sources.rglob("*.java")):
        digest.update(p.read_bytes())
    classes = cache_dir() / f"classes-{digest.hexdigest()[:16]}"
    if not (classes / ".built").is_file():
        _compile(where.java_sources, classes, quiet)
    return classes


def _checkout_classes(where: Layout, quiet: bool) -> Path:
    """A checkout's bridge classes (``clojure/classes``), compiled first when stale."""
    classes = where.root / "clojure" / "classes"
    if _stale(where.java_sources, classes):
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
            % (clj_string(str(out)), " ".join(nss)))
    subprocess.run([java, *QUIET_JVM_OPTS, "-cp", cp, "clojure.main", "-e", form], check=True,
                   stdin=subprocess.DEVNULL)
    return out




def build_jar(root: Path, dest: Path, quiet: bool = True) -> Path:
    """Write ``dest``: the namespaces of checkout ``root`` (``clojure/src``),
    compiled ahead of time (see :func:`aot`) beside their sources, and its
    compiled bridge classes, one jar as a Clojure library ships."""
    where = Layout("checkout", root)
    classes = _checkout_classes(where, quiet)
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
