"""Start-up: Clojure's core specs compiled ahead of time, once per set of jars."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import List, Optional

from .common import cache_dir, clj_string, env
from .jvm_options import QUIET_JVM_OPTS

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
    if not specs or env("MXKV_CDS").strip().lower() in ("0", "false", "no", "off"):
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
    out = cache_dir() / "aot" / f"core-specs-{digest.hexdigest()[:24]}.jar"
    if not out.is_file() and not _compile_specs(deps, out, java or shutil.which("java")):
        return path
    i = entries.index(specs[0]) + 1
    return os.pathsep.join([*entries[:i], str(out), *entries[i:]])


def _compile_specs(deps: List[str], out: Path, java: Optional[str]) -> bool:
    """Compile clojure.core.specs.alpha with ``deps`` on the path into the jar ``out``."""
    if not java:
        return False
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent) as d:
            classes = Path(d) / "classes"
            classes.mkdir()
            form = ("(binding [*compile-path* %s] (compile 'clojure.core.specs.alpha))"
                    % clj_string(str(classes)))
            r = subprocess.run([java, *QUIET_JVM_OPTS, "-cp", os.pathsep.join(deps),
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
