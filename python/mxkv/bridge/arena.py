"""The engine's side of the shared-memory data plane.

Two files per engine in ``/dev/shm`` (``MXKV_SHM_DIR`` overrides), each
mapped here with :mod:`mmap` and on the JVM with ``FileChannel.map``. They
only grow, so a mapping the JVM already holds stays valid; the JVM remaps
when a result reports a larger size.

* ``mxkv-<pid>-<random>-arena``, the *scratch* arena: a header, then one transfer's
  data at a time (``to-array``, ``array``, ``->raw``, small ``->vec``), under
  the JVM's lock.
* ``mxkv-<pid>-<random>-regions``, the *region* file: each large ``->vec`` result is a
  region of it that the JVM allocated, the engine wrote once
  (``nd.read_region``) and the JVM's vector then owns until it is garbage
  collected. The JVM allocates and frees regions itself; the engine only
  writes where it is told and grows the file when told to write past its end.

Array contents are *copied* into these files or out of them: nothing in them
is shared with a live NDArray. Files of engines that died without cleaning up
are removed by the next engine that starts. Each file is created as
:mod:`.private` says: a name no one can guess, exclusively, never through a
link, mode 0600.

An engine in the JVM's own process (the JPype transport) keeps the same two
memories as anonymous mappings instead (``Arena(memory=True)``): no file, and
the JVM reaches them as direct buffers (:meth:`Arena.buffer`).
"""
from __future__ import annotations

import mmap
import os
import platform
import re
import struct
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from ..base import env
from .private import create_private, remove_files_of_dead

__all__ = ["Arena", "shm_dir", "remove_stale", "PARALLEL_BYTES", "HEADER", "FOLLOW_SUPPORTED",
           "BOARD", "BOARD_SLOTS"]

#: mxkv-<pid>-<random>-<kind> (and the older mxkv-<pid>-<kind>[-n], still cleaned up)
_NAME = re.compile(r"^mxkv-(\d+)-(?:[0-9a-f]{16}-)?(?:arena|regions|share)(?:-\d+)?$")
#: Copies of at least this many bytes are split across threads (numpy
#: releases the GIL while copying; one core does not saturate memory).
PARALLEL_BYTES = 4 << 20
_MIN_SIZE = 1 << 20
#: Bytes at the start of the arena before the data: [0:8] is the progress
#: counter of a followed copy (bytes of data written so far); from BOARD on,
#: the call board (see :meth:`Arena.claim`).
HEADER = 4096
#: The call board: BOARD_SLOTS int64 slots; slot ``t % BOARD_SLOTS`` holds
#: the last ticket ``t`` the engine started.
BOARD = 64
BOARD_SLOTS = (HEADER - BOARD) // 8
#: A followed copy publishes progress after each chunk of this many bytes.
FOLLOW_CHUNK = 2 << 20
#: Followed copies rely on stores becoming visible in program order (x86's
#: TSO; glibc ends non-temporal copies with sfence). Elsewhere the JVM waits
#: for the call to return instead.
FOLLOW_SUPPORTED = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
_SLOT = struct.Struct("=q")


def shm_dir() -> str:
    """Where arena files live: ``MXKV_SHM_DIR``, else ``/dev/shm``, else the temp dir."""
    d = env("MXKV_SHM_DIR", "")
    if d:
        return d
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def remove_stale(directory: Optional[str] = None) -> list:
    """Remove arena files left by engines whose process is gone; return their
    paths. Only regular files of this user are touched (never a link's target)."""
    return remove_files_of_dead(directory or shm_dir(), _NAME)


def _rss_of(mm: Optional[mmap.mmap]) -> int:
    """Resident bytes of an anonymous mapping, from /proc/self/smaps (0 when unknown)."""
    if mm is None:
        return 0
    import ctypes

    try:
        start = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    except (TypeError, ValueError):
        return 0
    try:
        with open("/proc/self/smaps") as f:
            inside = False
            for line in f:
                head = line.split(None, 1)[0]
                if "-" in head and not head.endswith(":"):
                    lo = int(head.split("-")[0], 16)
                    inside = lo == start
                elif inside and head == "Rss:":
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class Arena:
    """A growable memory mapped into this process, shared with the JVM.

    ``name`` is the memory's kind: ``arena`` (the scratch arena) or
    ``regions`` (the space holding the JVM's region-backed vectors). By
    default it is a new file in :func:`shm_dir` (``mxkv-<pid>-<random>-<name>``,
    see :func:`~mxkv.bridge.private.create_private`) that the JVM maps too; with
    ``memory=True`` (the JVM runs in this process) an anonymous mapping that
    the JVM reaches through :meth:`buffer`, and ``path`` is ``mem:<name>``.
    """

    def __init__(self, directory: Optional[str] = None, size: int = _MIN_SIZE,
                 name: str = "arena", memory: bool = False) -> None:
        self.memory = memory
        if memory:
            self.path = f"mem:{name}"
            self._fd = -1
        else:
            self.path, self._fd = create_private(directory or shm_dir(), name)
        self.size = 0
        self._mm: Optional[mmap.mmap] = None
        self._pool: Optional[ThreadPoolExecutor] = None
        self.ensure(size)

    def ensure(self, nbytes: int) -> int:
        """Grow (never shrink) to hold at least ``nbytes``; return the size.

        A file keeps its contents; an anonymous memory starts anew (the
        scratch arena holds one transfer at a time, and the region space is
        sized once, before its first region). A buffer the JVM still holds
        keeps the old mapping alive.
        """
        if nbytes <= self.size:
            return self.size
        size = max(_MIN_SIZE, self.size)
        while size < nbytes:
            size *= 2
        old = self._mm
        if self.memory:
            self._mm = mmap.mmap(-1, size)
            # Huge pages where the kernel gives them on request, as numpy asks
            # for its own large arrays: a 64 MB copy into 4 KiB pages spends
            # its time in page walks (JPype ->vec, 0.7 of memcpy -> ~0.9).
            if hasattr(mmap, "MADV_HUGEPAGE"):
                try:
                    self._mm.madvise(mmap.MADV_HUGEPAGE)
                except OSError:
                    pass
        else:
            os.ftruncate(self._fd, size)
            self._mm = mmap.mmap(self._fd, size)
        self.size = size
        if old is not None:
            try:
                old.close()
            except BufferError:  # a view is still alive; the mapping goes with it
                pass
        return size

    def _mapped(self) -> mmap.mmap:
        """The current mapping; RuntimeError once the arena is closed."""
        if self._mm is None:
            raise RuntimeError(f"{self.path}: the arena is closed")
        return self._mm

    def claim(self, ticket: int) -> bool:
        """Mark call ``ticket`` (a positive number the JVM chose) as started:
        write it in its slot of the call board, before the engine looks at the
        call's deadline. A JVM whose call timed out reads the slot: a ticket
        not there yet means the call never started, and never will (the
        engine's deadline check comes after this write). False, and nothing
        written, when the slot already holds ``ticket``: the call was
        delivered twice."""
        off = BOARD + 8 * (ticket % BOARD_SLOTS)
        mm = self._mapped()
        if _SLOT.unpack_from(mm, off)[0] == ticket:
            return False
        _SLOT.pack_into(mm, off, ticket)
        return True

    def buffer(self, limit: int = (1 << 31) - 1) -> memoryview:
        """The whole memory (at most ``limit`` bytes: one Java buffer's most),
        for a direct buffer on the JVM side."""
        return memoryview(self._mapped())[:min(self.size, limit)]

    def resident(self) -> int:
        """Bytes of memory the file (or anonymous memory) uses; it may be sparse."""
        if self.memory:
            return _rss_of(self._mm)
        return os.fstat(self._fd).st_blocks * 512

    def fs_bytes(self) -> int:
        """The size of the file system holding the file (0 when unknown); for
        an anonymous memory, the machine's memory."""
        if self.memory:
            try:
                return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            except (ValueError, OSError, AttributeError):
                return 0
        try:
            st = os.fstatvfs(self._fd)
        except OSError:
            return 0
        return st.f_blocks * st.f_frsize

    def view(self, dtype, count: int, offset: int = 0) -> np.ndarray:
        """A numpy view of ``count`` elements of ``dtype`` at byte ``offset``."""
        return np.frombuffer(self._mapped(), dtype=dtype, count=count, offset=offset)

    def copy_in(self, src: np.ndarray, dtype, follow: bool = False, offset: int = HEADER) -> int:
        """Copy ``src`` (any shape) into the file at byte ``offset`` (default:
        the scratch arena's data area) as ``dtype``, growing the file when it
        ends before the copy does; return the byte count.

        With ``follow``, copy in chunks and publish the bytes written so far
        in the header after each, so that the JVM copies chunk *k* out while
        this copies chunk *k+1* in. The JVM then sized the arena beforehand
        (it must not move while it is being read).
        """
        dtype = np.dtype(dtype)
        offset = int(offset)
        if offset < 0 or offset % dtype.itemsize:
            raise ValueError(f"cannot write {dtype.name} at byte offset {offset}")
        flat = src.reshape(-1)
        n = flat.size
        nbytes = n * dtype.itemsize
        self.ensure(offset + nbytes)
        dst = self.view(dtype, n, offset)
        if follow and FOLLOW_SUPPORTED:
            progress = self.view(np.int64, 1, 0)
            self._copy_followed(dst, flat, progress, dtype.itemsize)
            del progress
        else:
            self._copy(dst, flat, nbytes)
        del dst
        return nbytes

    def _copy_followed(self, dst: np.ndarray, src: np.ndarray, progress: np.ndarray,
                       itemsize: int) -> None:
        """Copy in chunks, on the pool's threads, publishing after each chunk
        the bytes of the longest completed prefix."""
        n = src.size
        step = max(1, FOLLOW_CHUNK // itemsize)
        bounds = [(i, min(n, i + step)) for i in range(0, n, step)]
        if not bounds:
            progress[0] = 0
            return
        done = [False] * len(bounds)
        lock = threading.Lock()
        prefix = [0]

        def work(first: int, stride: int) -> None:
            for k in range(first, len(bounds), stride):
                i, j = bounds[k]
                np.copyto(dst[i:j], src[i:j], casting="unsafe")
                with lock:
                    done[k] = True
                    p = prefix[0]
                    while p < len(done) and done[p]:
                        p += 1
                    if p != prefix[0]:
                        prefix[0] = p
                        progress[0] = bounds[p - 1][1] * itemsize

        pool = self._threads()
        parts = min(pool._max_workers, len(bounds))
        futures = [pool.submit(work, t, parts) for t in range(1, parts)]
        work(0, parts)
        for f in futures:
            f.result()

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None:
            # In the JVM's own process (JPype) one thread: the JVM's threads
            # share the cores, and on a busy machine a second copying thread
            # mostly waits (64 MB ->vec at 2-6 runnable tasks per core: 0.80-0.86
            # of memcpy on one thread, 0.43-0.72 on two).
            default = 1 if self.memory else min(4, os.cpu_count() or 1)
            n = env("MXKV_ARENA_THREADS", default, minimum=1)
            self._pool = ThreadPoolExecutor(max(1, n), thread_name_prefix="mxkv-arena")
        return self._pool

    def view_in(self, dtype, shape) -> np.ndarray:
        """A view (no copy) of data the JVM wrote into the data area."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
        return self.view(dtype, n, HEADER).reshape(shape)

    def _copy(self, dst: np.ndarray, src: np.ndarray, nbytes: int) -> None:
        if nbytes < PARALLEL_BYTES:
            np.copyto(dst, src, casting="unsafe")
            return
        pool = self._threads()
        parts = pool._max_workers
        n = dst.size
        step = (n + parts - 1) // parts
        futures = [pool.submit(np.copyto, dst[i:i + step], src[i:i + step], casting="unsafe")
                   for i in range(step, n, step)]
        np.copyto(dst[:step], src[:step], casting="unsafe")
        for f in futures:
            f.result()

    def close(self) -> None:
        """Unmap and remove the file."""
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass
            self._mm = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not self.memory:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
