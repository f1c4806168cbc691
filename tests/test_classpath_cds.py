"""mxkv.classpath.ClassDataArchive: which archive a JVM gets, and when it is
kept (no JVM here; interop-tests/test_jvm.py starts real ones)."""
from __future__ import annotations

import os

import pytest

from mxkv import classpath as cp


@pytest.fixture
def jars(tmp_path, monkeypatch):
    monkeypatch.setenv("MXKV_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MXKV_CDS", raising=False)
    made = []
    for name in ("libjvm.so", "a.jar", "b.jar"):
        p = tmp_path / name
        p.write_bytes(b"x" * 10)
        made.append(str(p))
    return made


def _archive(jars, options=("-Xms1g",), kind="java"):
    libjvm, *path = jars
    return cp.ClassDataArchive(os.pathsep.join(path), libjvm, list(options), kind)


def test_a_missing_archive_is_written_at_exit_into_a_file_of_its_own(jars):
    a = _archive(jars)
    (opt, quiet) = a.options()
    assert opt.startswith("-XX:ArchiveClassesAtExit=") and opt.endswith(".tmp")
    assert quiet.startswith("-Xlog:cds=off")
    assert not a.path.exists()
    assert os.path.isfile(opt.split("=", 1)[1])  # made here: the JVM can write it


def test_finish_keeps_a_complete_archive_and_the_next_jvm_maps_it(jars):
    a = _archive(jars)
    tmp = a.options()[0].split("=", 1)[1]
    with open(tmp, "wb") as f:
        f.write(bytes.fromhex("a8ab0bf0") + bytes(8192))
    a.finish()
    assert a.path.is_file() and not os.path.exists(tmp)
    assert _archive(jars).options()[0] == f"-XX:SharedArchiveFile={a.path}"


@pytest.mark.parametrize("content", [b"", b"\0" * 8192, bytes.fromhex("a8ab0bf0")])
def test_finish_drops_what_is_not_a_whole_archive(jars, content):
    a = _archive(jars)
    tmp = a.options()[0].split("=", 1)[1]
    with open(tmp, "wb") as f:
        f.write(content)
    a.finish()
    assert not a.path.exists() and not os.path.exists(tmp)


def test_finish_drops_the_archive_of_a_jvm_that_did_not_end_cleanly(jars):
    a = _archive(jars)
    tmp = a.options()[0].split("=", 1)[1]
    with open(tmp, "wb") as f:
        f.write(bytes.fromhex("a8ab0bf0") + bytes(8192))
    a.finish(ok=False)
    assert not a.path.exists() and not os.path.exists(tmp)


def test_the_archive_follows_the_jvm_the_options_and_every_jar(jars):
    names = {_archive(jars).path, _archive(jars, options=("-Xmx2g",)).path,
             _archive(jars, kind="jpype").path}
    assert len(names) == 3
    before = _archive(jars).path
    os.utime(jars[1], ns=(0, 12345))
    assert _archive(jars).path != before
    assert _archive(jars).path == _archive(jars).path


def test_no_archive_for_directories_own_sharing_options_or_mxkv_cds_0(jars, tmp_path,
                                                                     monkeypatch):
    libjvm, *path = jars
    with_dir = cp.ClassDataArchive(os.pathsep.join([*path, str(tmp_path)]), libjvm, [])
    assert with_dir.options() == []
    assert _archive(jars, options=("-Xshare:off",)).options() == []
    assert cp.ClassDataArchive(os.pathsep.join(path), None, []).options() == []
    monkeypatch.setenv("MXKV_CDS", "0")
    assert _archive(jars).options() == []


def test_the_cache_keeps_the_most_recently_used_archives(jars, tmp_path):
    d = tmp_path / "cache" / "cds"
    d.mkdir(parents=True)
    for i in range(cp.CDS_KEEP + 3):
        p = d / f"java-{i}.jsa"
        p.write_bytes(b"")
        os.utime(p, (1000 + i, 1000 + i))
    a = _archive(jars)
    tmp = a.options()[0].split("=", 1)[1]
    with open(tmp, "wb") as f:
        f.write(bytes.fromhex("a8ab0bf0") + bytes(8192))
    a.finish()
    kept = sorted(p.name for p in d.iterdir())
    assert len(kept) == cp.CDS_KEEP and a.path.name in kept
    assert "java-0.jsa" not in kept and f"java-{cp.CDS_KEEP + 2}.jsa" in kept


def test_startup_classpath_leaves_a_path_without_source_only_core_specs(jars, tmp_path,
                                                                        monkeypatch):
    import zipfile

    libjvm, *path = jars
    assert cp.startup_classpath(os.pathsep.join(path)) == os.pathsep.join(path)
    compiled = tmp_path / "core.specs.alpha-0.2.62.jar"  # one that ships its classes
    with zipfile.ZipFile(compiled, "w") as z:
        z.writestr("clojure/core/specs/alpha.clj", "")
        z.writestr("clojure/core/specs/alpha__init.class", "")
    with_compiled = os.pathsep.join([*path, str(compiled)])
    assert cp.startup_classpath(with_compiled) == with_compiled
    source_only = tmp_path / "core.specs.alpha.jar"
    with zipfile.ZipFile(source_only, "w") as z:
        z.writestr("clojure/core/specs/alpha.clj", "")
    monkeypatch.setenv("MXKV_CDS", "0")
    with_source = os.pathsep.join([*path, str(source_only)])
    assert cp.startup_classpath(with_source) == with_source


def test_no_archive_is_asked_for_where_it_cannot_be_written(jars, tmp_path):
    # JDK 17 refuses to start when -XX:ArchiveClassesAtExit names a file it
    # cannot create.
    (tmp_path / "cache").write_text("a file, not a directory")
    assert _archive(jars).options() == []


def test_an_archive_left_by_an_ended_process_is_taken_when_whole(jars, tmp_path):
    # System/exit in a program Python hosts over JPype ends the process
    # before finish() runs: the next start takes what that JVM wrote.
    import subprocess
    import sys

    a = _archive(jars)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(gone.stdout)
    d = tmp_path / "cache" / "cds"
    d.mkdir(parents=True)
    cut = d / f"{a.path.name}.{pid}.tmp"
    cut.write_bytes(bytes(8192))  # killed before the header: not whole
    assert _archive(jars).options()[0].startswith("-XX:ArchiveClassesAtExit=")
    assert not cut.exists()
    whole = d / f"{a.path.name}.{pid}.tmp"
    whole.write_bytes(bytes.fromhex("a8ab0bf0") + bytes(8192))
    mine = d / f"{a.path.name}.{os.getpid()}.tmp"  # a live process's: left alone
    mine.write_bytes(bytes.fromhex("a8ab0bf0") + bytes(8192))
    assert _archive(jars).options()[0] == f"-XX:SharedArchiveFile={a.path}"
    assert a.path.is_file() and not whole.exists() and mine.exists()
