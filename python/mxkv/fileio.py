"""Files that survive crashes: every file mxkv writes is replaced atomically.

:func:`atomic_write` writes to a temporary file in the target's directory,
flushes it to disk (``fsync``), renames it over the target (``os.replace``,
atomic on POSIX) and flushes the directory entry. So a reader, or a process
killed at any moment, sees the previous file or the new one, never a mix;
and any number of threads or processes may save to one path at once: each
writes its own temporary, and the file always holds one complete save.

Temporaries are named ``<name>.mxkv-tmp.<pid>.<random>.<host>`` and created
exclusively (``O_EXCL``, never following a link), with the permissions of the
file they replace (else ``0666`` less the umask). On every failure path (an
exception, ``KeyboardInterrupt``) the temporary is removed before the error
propagates. Only ``SIGKILL`` (or a power cut) can leave one behind; the next
save to the same path on the same host removes the temporaries of that path
whose process is gone, so none outlives its path's next save.

Nd files (``nd.save``) and optimizer states files (``save_optimizer_states``)
both go through here, and both end with mxkv's checksum trailer
(:data:`TRAILER` and a CRC-32 of every byte before it), which MXNet's
readers never reach (its nd reader stops after the names, ``pickle`` after
its STOP opcode): :func:`check_trailer` verifies it when a file has one.
"""
from __future__ import annotations

import errno
import os
import secrets
import socket
import stat
import struct
import zlib
from typing import Iterable, Iterator, List, Union

from .base import MXNetIOError, MXNetTypeError

__all__ = ["TEMP_MARK", "TRAILER", "atomic_write", "check_trailer", "read_bytes",
           "stale_temporaries", "temp_name", "with_trailer"]

#: What every temporary's name carries after the target's name.
TEMP_MARK = ".mxkv-tmp."

#: mxkv's checksum trailer: these 8 bytes, then the CRC-32 (u32, little-endian).
TRAILER = b"MXKVCRC1"
TRAILER_LEN = len(TRAILER) + 4

PathLike = Union[str, "os.PathLike[str]"]
#: A piece of a file's contents: any bytes-like object (``f.write`` and
#: ``zlib.crc32`` take each as it is).
Chunk = Union[bytes, bytearray, memoryview]
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
    getattr(os, "O_CLOEXEC", 0)


def _path(fname: object, what: str) -> str:
    if not isinstance(fname, (str, os.PathLike)):
        raise MXNetTypeError(f"{what}: the file name must be a str or os.PathLike, got "
                             f"{type(fname).__name__} ({fname!r})")
    path = os.fspath(fname)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    if not path:
        raise MXNetIOError(f"{what}: the file name is empty")
    if "\0" in path:
        raise MXNetIOError(f"{what}: the file name {path!r} contains a NUL byte")
    return path


def _host() -> str:
    return socket.gethostname().replace(os.sep, "_") or "localhost"


def temp_name(path: str) -> str:
    """A fresh temporary name for ``path`` (same directory; see the module doc)."""
    return f"{path}{TEMP_MARK}{os.getpid()}.{secrets.token_hex(6)}.{_host()}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def stale_temporaries(path: str) -> list:
    """The temporaries of ``path`` left by processes of this host that are gone."""
    directory, name = os.path.split(path)
    prefix = name + TEMP_MARK
    host = _host()
    stale: List[str] = []
    try:
        entries = os.scandir(directory or ".")
    except OSError:
        return stale
    with entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            parts = entry.name[len(prefix):].split(".", 2)
            if len(parts) != 3 or not parts[0].isdigit() or parts[2] != host:
                continue
            if not _alive(int(parts[0])):
                stale.append(os.path.join(directory, entry.name))
    return stale


def _remove_stale(path: str) -> None:
    for tmp in stale_temporaries(path):
        try:
            os.unlink(tmp)
        except OSError:  # another saver removed it first, or it is not ours to remove
            pass


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # not every file system can sync a directory
        pass
    finally:
        os.close(fd)


def _mode_of(path: str) -> int | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def atomic_write(fname: PathLike, chunks: Iterable[Chunk], what: str = "file") -> None:
    """Write the bytes of ``chunks`` to ``fname`` atomically (see the module doc).

    Parameters
    ----------
    fname : str or os.PathLike
        The file to create or replace. A symbolic link at that name is
        replaced by the file, not followed.
    chunks : iterable of bytes-like
        The contents, in order (a generator is consumed once, while writing).
    what : str
        How errors name the file (``"NDArray file"``...).

    Raises
    ------
    MXNetIOError
        (an ``OSError``) when the file cannot be written; the previous file,
        if any, is unchanged and no temporary is left.
    MXNetTypeError
        when ``fname`` is not a path.
    """
    path = _path(fname, what)
    directory = os.path.dirname(path)
    _remove_stale(path)
    mode = _mode_of(path)
    tmp = None
    try:
        for _ in range(8):
            tmp = temp_name(path)
            try:
                fd = os.open(tmp, _FLAGS, 0o666)
                break
            except FileExistsError:
                tmp = None
        else:
            raise OSError(errno.EEXIST, "could not create a fresh temporary name")
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(directory)
    except OSError as exc:
        raise MXNetIOError(f"cannot write {what} {path!r}: "
                           f"{exc.strerror or exc}") from None
    finally:
        if tmp is not None:  # every failure, KeyboardInterrupt included
            try:
                os.unlink(tmp)
            except OSError:
                pass


def read_bytes(fname: PathLike, what: str = "file") -> bytes:
    """The whole contents of ``fname``; an :class:`MXNetIOError` naming it when
    it cannot be read."""
    path = _path(fname, what)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise MXNetIOError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None


def with_trailer(chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """``chunks``, then the checksum trailer over all of them (computed as they pass)."""
    crc = 0
    for c in chunks:
        crc = zlib.crc32(c, crc)
        yield c
    yield TRAILER + struct.pack("<I", crc & 0xFFFFFFFF)


def check_trailer(buf: memoryview, where: str) -> int:
    """Verify the checksum trailer when ``buf`` ends with one; return where the
    contents end (``len(buf)`` when there is no trailer).

    Raises :class:`MXNetIOError` naming ``where`` when the checksum differs."""
    n = len(buf)
    if n >= TRAILER_LEN and bytes(buf[n - TRAILER_LEN:n - 4]) == TRAILER:
        (stored,) = struct.unpack("<I", buf[n - 4:])
        if zlib.crc32(buf[:n - TRAILER_LEN]) & 0xFFFFFFFF != stored:
            raise MXNetIOError(f"{where}: checksum mismatch: the file is corrupted")
        return n - TRAILER_LEN
    return n
