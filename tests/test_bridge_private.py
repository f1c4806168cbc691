"""The engine's files on a shared host: shared-memory files with names no
one can guess, created exclusively, never through a link, mode 0600; unsafe
directories refused; attach files private, and those of killed programs
removed. (The JVM's side of the same checks is PrivateFiles.java, tested in
clojure/test/.../bridge_test.clj.)"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest

from mxkv.base import MXNetIOError
from mxkv.bridge import Arena, private
from mxkv.bridge.interop_ops import shared_file_of, shared_host_array


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def fixed_token(monkeypatch):
    """Makes the next private name predictable, as an attacker would need."""
    monkeypatch.setattr(private.secrets, "token_hex", lambda n: "0123456789abcdef")
    return f"mxkv-{os.getpid()}-0123456789abcdef"


def test_arena_files_have_random_names_and_mode_0600(tmp_path):
    a, b = Arena(str(tmp_path)), Arena(str(tmp_path), name="regions")
    try:
        for arena, kind in ((a, "arena"), (b, "regions")):
            name = os.path.basename(arena.path)
            assert re.fullmatch(rf"mxkv-{os.getpid()}-[0-9a-f]{{16}}-{kind}", name), name
            assert _mode(arena.path) == 0o600
            assert os.stat(arena.path).st_uid == os.getuid()
        randoms = [os.path.basename(x.path).split("-")[2] for x in (a, b)]
        assert randoms[0] != randoms[1], "each file its own random part"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("umask", [0o000, 0o277])
def test_the_mode_is_0600_whatever_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        a = Arena(str(tmp_path))
    finally:
        os.umask(old)
    try:
        assert _mode(a.path) == 0o600
    finally:
        a.close()


def test_a_planted_symlink_is_refused_and_its_target_untouched(tmp_path, fixed_token):
    target = tmp_path / "victim"
    target.write_bytes(b"precious")
    (tmp_path / f"{fixed_token}-arena").symlink_to(target)
    with pytest.raises(MXNetIOError, match="already exists"):
        Arena(str(tmp_path))
    assert target.read_bytes() == b"precious", "the link's target was not truncated"


def test_a_planted_file_is_refused_not_reused(tmp_path, fixed_token):
    planted = tmp_path / f"{fixed_token}-arena"
    planted.write_bytes(b"x")
    os.chmod(planted, 0o666)
    with pytest.raises(MXNetIOError, match="already exists"):
        Arena(str(tmp_path))
    assert planted.read_bytes() == b"x" and _mode(planted) == 0o666


def test_a_directory_others_can_write_without_sticky_bit_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(MXNetIOError, match="no sticky bit"):
        Arena(str(shared))
    os.chmod(shared, 0o1777)  # as /dev/shm and /tmp
    a = Arena(str(shared))
    a.close()
    with pytest.raises(MXNetIOError, match="No such file"):
        Arena(str(tmp_path / "missing"))
    (tmp_path / "plain").write_bytes(b"")
    with pytest.raises(MXNetIOError, match="not a directory"):
        Arena(str(tmp_path / "plain"))


def test_shared_arrays_live_in_private_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MXKV_SHM_DIR", str(tmp_path))
    host = shared_host_array((4,))
    path, offset = shared_file_of(host)
    assert offset == 0
    assert re.fullmatch(rf"mxkv-{os.getpid()}-[0-9a-f]{{16}}-share", os.path.basename(path))
    assert _mode(path) == 0o600
    del host
    import gc

    gc.collect()
    assert not os.path.exists(path), "removed with the array"


def test_attach_directory_must_be_private(tmp_path, monkeypatch):
    pytest.importorskip("py4j")
    from mxkv.bridge import serve

    open_dir = tmp_path / "attach"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    monkeypatch.setenv("MXKV_ATTACH_DIR", str(open_dir))
    with pytest.raises(MXNetIOError, match="other users may write"):
        serve()
    os.chmod(open_dir, 0o700)
    with serve() as server:
        assert _mode(server.path) == 0o600
        assert json.loads(server.path.read_text())["pid"] == os.getpid()


def test_attach_files_of_killed_programs_are_removed(tmp_path, monkeypatch):
    pytest.importorskip("py4j")
    from mxkv.bridge import serve

    monkeypatch.setenv("MXKV_ATTACH_DIR", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f"engine-{dead}-1.json"
    stale.write_text("{}")
    mine = tmp_path / f"engine-{os.getpid()}-999.json"
    mine.write_text("{}")
    with serve():
        assert not stale.exists()
        assert mine.exists(), "a live program's file stays"
