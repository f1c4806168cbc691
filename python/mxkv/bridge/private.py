"""Files only this user can reach: the engine's shared-memory files and the
attach files of :func:`mxkv.bridge.serve`.

On a shared host other users can write to ``/dev/shm`` and ``/tmp``. A file
the engine creates there gets an unpredictable name (the pid, for cleanup,
then 64 random bits), is created exclusively (``O_CREAT | O_EXCL``, which
never follows a symbolic link) and with ``O_NOFOLLOW``, has mode 0600, and
is checked after opening (a regular file, ours, one link, empty). Anything
else (a name taken, a directory others may write without the sticky bit)
is refused with an :class:`~mxkv.base.MXNetIOError` that says what was
found. The JVM checks the same before it maps a file (``PrivateFiles.java``).
See ``SECURITY.md``.
"""
from __future__ import annotations

import os
import re
import secrets
import stat
from typing import List, Tuple

from ..base import MXNetIOError

__all__ = ["check_directory", "create_private", "owned_regular_file", "private_directory",
           "private_name", "pid_alive", "remove_files_of_dead"]

_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_CLOEXEC", 0))


def private_name(kind: str) -> str:
    """``mxkv-<pid>-<16 random hex digits>-<kind>``: the pid lets the next
    engine remove files of engines that died; the random part makes the
    name impossible to guess beforehand."""
    return f"mxkv-{os.getpid()}-{secrets.token_hex(8)}-{kind}"


def check_directory(directory: str, what: str = "directory") -> None:
    """Refuse a directory where another user could replace our files: one
    that is not a directory, or that others may write to without the sticky
    bit (``/dev/shm`` and ``/tmp`` have it: there only a file's owner may
    remove or rename it)."""
    try:
        st = os.stat(directory)
    except OSError as exc:
        raise MXNetIOError(f"cannot use {what} {directory!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise MXNetIOError(f"cannot use {what} {directory!r}: it is not a directory")
    # A directory's owner may remove or rename any file in it, sticky or not.
    if st.st_uid not in (os.getuid(), 0):
        raise MXNetIOError(f"refusing {what} {directory!r}: it belongs to user {st.st_uid}, "
                           "who could replace mxkv's files there")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise MXNetIOError(
            f"refusing {what} {directory!r}: other users may write to it (mode "
            f"{stat.S_IMODE(st.st_mode):04o}) and it has no sticky bit, so they could replace "
            "mxkv's files there; use a directory only you can write, or one with the sticky "
            "bit such as /dev/shm")


def create_private(directory: str, kind: str) -> Tuple[str, int]:
    """Create a new empty file ``private_name(kind)`` in ``directory``, mode
    0600, and return ``(path, fd)`` (the fd is open read-write).

    Raises :class:`~mxkv.base.MXNetIOError` when the directory is unsafe
    (:func:`check_directory`), when something already exists at the random
    name (a file, a symbolic link: someone is interfering), or when the file
    opened is not a fresh regular file of ours."""
    check_directory(directory, "the shared-memory directory")
    path = os.path.join(directory, private_name(kind))
    try:
        fd = os.open(path, _FLAGS, 0o600)
    except FileExistsError:
        raise MXNetIOError(f"refusing {path}: something already exists at this new, random "
                           "name; another process may be tampering with the directory") from None
    except OSError as exc:
        raise MXNetIOError(f"cannot create {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(st.st_mode):
            problem = "it is not a regular file"
        elif st.st_uid != os.getuid():
            problem = f"it belongs to user {st.st_uid}"
        elif st.st_nlink != 1:
            problem = f"it has {st.st_nlink} links"
        elif st.st_size != 0:
            problem = f"it already holds {st.st_size} bytes"
        if problem:
            raise MXNetIOError(f"refusing {path}: {problem}")
        # Exactly 0600 whatever the umask: the JVM (same user) opens it read-write.
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return path, fd


def owned_regular_file(path: str) -> bool:
    """True when ``path`` itself (not a link's target) is a regular file of ours."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()


def private_directory(directory: str, what: str = "directory") -> str:
    """Create ``directory`` (mode 0700) when missing; refuse one that is not
    ours or that others may write to (they could swap the files in it).
    Returns it."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.stat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise MXNetIOError(f"cannot use {what} {directory!r}: it is not a directory")
    if st.st_uid != os.getuid():
        raise MXNetIOError(f"refusing {what} {directory!r}: it belongs to user {st.st_uid}, "
                           "not to you")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise MXNetIOError(f"refusing {what} {directory!r}: other users may write to it (mode "
                           f"{stat.S_IMODE(st.st_mode):04o}); chmod 700 it")
    return directory


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def remove_files_of_dead(directory: str, pattern: "re.Pattern[str]") -> List[str]:
    """Remove the files in ``directory`` whose name matches ``pattern`` (its
    first group a pid) and whose process is gone; return their paths. Only
    regular files of this user are removed (never a link's target)."""
    removed: List[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = pattern.match(name)
        path = os.path.join(directory, name)
        if m and not pid_alive(int(m.group(1))) and owned_regular_file(path):
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed
