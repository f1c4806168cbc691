"""Class data sharing: an AppCDS archive of the classes a JVM loads, kept in the cache."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import List, Optional, Sequence

from .common import cache_dir, env

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
        if (env("MXKV_CDS").strip() in ("0", "false", "no", "off") or not jvm or not entries
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
        self.path = cache_dir() / "cds" / f"{kind}-{digest.hexdigest()[:24]}.jsa"

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
        from ..bridge.private import pid_alive  # not at the top: the wheel's build loads this

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
