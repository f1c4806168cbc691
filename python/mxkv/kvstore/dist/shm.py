"""The same-host data path: push and pull payloads through reused shared memory.

When a worker and a server shard run on the same Ray node, dense pushes and
pulls do not go through Ray's object store. Measured here (ResNet-50's 102
MB gradient set), a ``ray.put`` of a fresh object paid about 25,000 page
faults (one per 4 KB page of the store's ``/dev/shm`` file) on most rounds:
60-90 ms where a copy into warm memory takes 7 ms. So:

* **Push.** A worker keeps, per shard, a pool of segments (files in the
  job's data directory, ``/dev/shm/mxkv-<job>-data``, mapped once). A push
  message copies its parts into one free segment (the only copy a push
  makes) and sends the shard a :class:`ShmBatch` naming the file and where
  each part lies. The shard maps the file read-only once and sums straight
  from it. A segment goes back to the pool when the message is durable (the
  shard's checkpoint covers it, :mod:`.channel`): until then it is what a
  restarted shard is re-sent, so exactly-once delivery is unchanged.
* **Pull.** A shard publishes a round's values once into a segment of its
  own (a ring of two per set of parts pulled together), and answers every
  worker asking for the same parts at the same round with the same
  :class:`ShmBatch`; each worker copies from there into its outs (the only
  copy on its side). A header generation, odd while the shard writes,
  tells a worker whose copy raced with a rewrite of the segment (possible
  only when the shard has published two newer rounds of those parts
  meanwhile): the worker then asks again through the object store.

``MXKV_SHM=0`` turns the path off (everything through Ray's object store,
as between hosts). Compressed and row-sparse payloads, P3 slices and inits
always travel through the object store.
"""
from __future__ import annotations

import collections
import glob
import math
import mmap
import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["ShmBatch", "Segment", "PushPool", "Publisher", "Reader", "data_dir"]

#: Bytes before the first part: the generation (uint64) and padding.
HEADER = 64
_ALIGN = 64
#: A pulled batch at least this big is unmapped from the worker once read
#: (:meth:`Segment.forget`): big keys are not counted in the worker's memory.
FORGET_BYTES = 128 << 20


def data_dir(job: str) -> str:
    """The job's directory of shared segments (removed with the job)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else os.environ.get("TMPDIR", "/tmp")
    return os.path.join(base, f"mxkv-{job}-data")


class ShmBatch:
    """Where the parts of one message lie in a shared segment (sent by value).

    Attributes
    ----------
    path : str
    gen : int
        The segment's generation when written (checked by pull readers).
    parts : list of (offset, dtype str, shape)
    """

    __slots__ = ("path", "gen", "parts")

    def __init__(self, path: str, gen: int, parts: List[Tuple[int, str, Tuple[int, ...]]]):
        self.path = path
        self.gen = gen
        self.parts = parts

    def __reduce__(self):
        return (ShmBatch, (self.path, self.gen, self.parts))

    @property
    def nbytes(self) -> int:
        return sum(math.prod(s) * np.dtype(d).itemsize for _, d, s in self.parts)


def layout(arrays: Sequence[np.ndarray]) -> Tuple[List[Tuple[int, str, Tuple[int, ...]]], int]:
    """Offsets (64-byte aligned, after the header) for ``arrays``; total size."""
    parts, off = [], HEADER
    for a in arrays:
        parts.append((off, a.dtype.str, tuple(a.shape)))
        off += -(-a.nbytes // _ALIGN) * _ALIGN
    return parts, off


class Segment:
    """One shared file mapped in this process.

    Parameters
    ----------
    path : str
    size : int
        Bytes, when ``create`` (the file is made; its pages are allocated
        by the first write, and reused by every later one).
    create : bool
    writable : bool
    """

    def __init__(self, path: str, size: int = 0, create: bool = False,
                 writable: bool = True) -> None:
        self.path = path
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL if create else \
            (os.O_RDWR if writable else os.O_RDONLY)
        fd = os.open(path, flags, 0o600)
        try:
            if create:
                os.ftruncate(fd, size)
            else:
                size = os.fstat(fd).st_size
            prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED, prot)
        finally:
            os.close(fd)
        self.size = size
        self.buf = np.frombuffer(self._mm, np.uint8)   # read-only when the map is
        self._gen = self.buf[:8].view(np.uint64)

    @property
    def gen(self) -> int:
        return int(self._gen[0])

    def set_gen(self, gen: int) -> None:
        self._gen[0] = gen

    def view(self, offset: int, dtype: str, shape: Tuple[int, ...]) -> np.ndarray:
        dt = np.dtype(dtype)
        return self.buf[offset:offset + math.prod(shape) * dt.itemsize].view(dt).reshape(shape)

    def views(self, batch: ShmBatch) -> List[np.ndarray]:
        return [self.view(o, d, s) for o, d, s in batch.parts]

    def forget(self, batch: ShmBatch) -> None:
        """Drop this process's page mappings of a batch's bytes (the file
        keeps them): a big pulled value is then not counted twice, in the
        shard and in every worker that read it. The next read maps them
        again (minor faults, no copy)."""
        if not batch.parts:
            return
        # (a batch may be some of a segment's parts: from its first to its last)
        lo = min(o for o, _, _ in batch.parts) // mmap.PAGESIZE * mmap.PAGESIZE
        hi = min(self.size, max(o + math.prod(s) * np.dtype(d).itemsize
                                for o, d, s in batch.parts))
        if hi > lo:
            self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def close(self, unlink: bool = False) -> None:
        self.buf = None
        self._gen = None
        try:
            self._mm.close()
        except (BufferError, ValueError):
            pass   # a view is still alive: the mapping goes with it
        if unlink:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def take_fitting(segments: List[Segment], size: int) -> Optional[Segment]:
    """Remove and return the smallest of ``segments`` that holds ``size``
    bytes (None when none does)."""
    fits = [s for s in segments if s.size >= size]
    if not fits:
        return None
    seg = min(fits, key=lambda s: s.size)
    segments.remove(seg)
    return seg


class PushPool:
    """A worker's push segments for one shard, reused across rounds.

    Parameters
    ----------
    directory : str
    prefix : str
        File name prefix, unique to this worker process and shard.
    """

    #: free segments kept for reuse; one released beyond them is removed,
    #: unless the free ones' bytes stay within ``MAX_FREE_BYTES`` (a round
    #: streamed in chunks, transport.py, holds a segment per chunk until a
    #: checkpoint covers it, then reuses them all: removed and made again,
    #: each would cost its pages' faults every round)
    MAX_FREE = 4
    MAX_FREE_BYTES = 256 << 20

    def __init__(self, directory: str, prefix: str) -> None:
        self.directory = directory
        self.prefix = prefix
        self._made = 0
        # made once: a directory removed at the job's end is not made again
        # by a process still finishing (segments then fail with OSError)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self._free: List[Segment] = []
        self._all: List[Segment] = []
        self._lock = threading.Lock()

    def pack(self, arrays: Sequence[np.ndarray]) -> Tuple[ShmBatch, Any]:
        """Copy ``arrays`` into a free segment; returns the batch and a
        ``release()`` that hands the segment back (once)."""
        parts, size = layout(arrays)
        seg = self._acquire(size)
        for (off, d, s), a in zip(parts, arrays):
            np.copyto(seg.view(off, d, s), a, casting="no")
        done: List[Any] = []

        def release() -> None:
            if not done:
                done.append(True)
                with self._lock:
                    if len(self._free) < self.MAX_FREE or seg.size + sum(
                            f.size for f in self._free) <= self.MAX_FREE_BYTES:
                        self._free.append(seg)
                        return
                    # a burst (many inits in flight) made more than rounds
                    # reuse: the extra segments go, not their memory kept
                    self._all.remove(seg)
                seg.close(unlink=True)
        return ShmBatch(seg.path, 0, parts), release

    def _acquire(self, size: int) -> Segment:
        with self._lock:
            seg = take_fitting(self._free, size)
            if seg is not None:
                return seg
            self._made += 1   # (not len(_all): removed segments free their numbers)
            path = os.path.join(self.directory, f"{self.prefix}-{self._made}")
            seg = Segment(path, max(size, HEADER), create=True)
            self._all.append(seg)
            return seg

    @property
    def segments(self) -> int:
        return len(self._all)

    def close(self) -> None:
        with self._lock:
            for s in self._all:
                s.close(unlink=True)
            self._all, self._free = [], []


class Reader:
    """Segments of other processes, mapped read-only once and kept (LRU)."""

    def __init__(self, limit: int = 512) -> None:
        self._maps: "collections.OrderedDict[str, Segment]" = collections.OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def segment(self, path: str, need: int = 0) -> Segment:
        with self._lock:
            seg = self._maps.get(path)
            if seg is not None and seg.size >= need:
                self._maps.move_to_end(path)
                return seg
            if seg is not None:
                del self._maps[path]
            seg = Segment(path, writable=False)
            self._maps[path] = seg
            while len(self._maps) > self._limit:
                self._maps.popitem(last=False)[1].close()
            return seg

    def views(self, batch: ShmBatch) -> List[np.ndarray]:
        """Read-only views of a batch's parts."""
        end = max((o + math.prod(s) * np.dtype(d).itemsize for o, d, s in batch.parts),
                  default=HEADER)
        return self.segment(batch.path, end).views(batch)

    def still(self, batch: ShmBatch) -> bool:
        """Whether the batch's segment still holds what it held when sent."""
        return self.segment(batch.path).gen == batch.gen

    def done(self, batch: ShmBatch) -> None:
        """The batch was read: forget its pages when it is big (``FORGET_BYTES``)."""
        if batch.nbytes >= FORGET_BYTES:
            self.segment(batch.path).forget(batch)

    def forget(self, prefix: str) -> None:
        with self._lock:
            for p in [p for p in self._maps if os.path.basename(p).startswith(prefix)]:
                self._maps.pop(p).close()

    def close(self) -> None:
        with self._lock:
            for s in self._maps.values():
                s.close()
            self._maps.clear()


class Publisher:
    """A shard's pull segments: a ring of two per set of parts pulled together.

    Parameters
    ----------
    directory : str
    prefix : str
        Unique to the shard's incarnation.
    max_bytes : int
        Segments beyond this many bytes in all are dropped, least recently
        used first (a worker still reading one keeps its mapping).

    A published batch can be *pinned* (:meth:`pin`): its segment is then not
    written over until :meth:`unpin`; a publication that comes to it in the
    ring takes another segment instead, and the pinned one, once unpinned,
    is kept for the next publication that finds its segment pinned. The
    shard pins what its checkpoint writer reads, every few rounds: a new
    segment each time faulted in a page per 4 KB on the round's path, a
    round's values per checkpoint (51 MB for each of ResNet-50's 2 shards;
    0.65 ms per MB on an idle core, 3-13 ms with a job's 8 processes on the
    emulated hosts' VM). The cost: one more segment per set of parts pulled
    together stays between checkpoints (within ``max_bytes``: these go
    first when over).

    A shard may also write a round's values straight into the next segment
    (:meth:`begin`, then :meth:`end`): its summing thread sums there, so the
    values are published without a copy. A lock keeps the rings whole
    between that thread and the event loop.
    """

    def __init__(self, directory: str, prefix: str, max_bytes: int) -> None:
        self.directory = directory
        self.prefix = prefix
        self.max_bytes = max_bytes
        os.makedirs(directory, mode=0o700, exist_ok=True)   # once (see PushPool)
        self._rings: "collections.OrderedDict[Any, list]" = collections.OrderedDict()
        self._segments: Dict[str, Segment] = {}
        self._pins: Dict[str, int] = {}
        self._detached: Dict[str, Segment] = {}   # out of their ring, still pinned
        self._spares: List[Segment] = []          # out of their ring, unpinned since
        self._bytes = 0
        self._count = 0
        self._gen = 0
        self._lock = threading.RLock()
        self.copies = 0   # publications copied (not written in place by begin/end)

    def groups(self, names: Sequence[Any]) -> List[tuple]:
        """``names`` cut into sets that have a ring already, most recent
        first, and the rest together (none left out, none twice). A round
        that one message completed for parts other messages brought in
        chunks (a same-node worker's whole push, after some of another
        node's chunks) is then written where those chunks are published: a
        ring per combination that happened to complete together made two
        new segments each time, their pages faulted afresh, and kept them."""
        key = tuple(names)
        with self._lock:
            if key in self._rings:
                return [key]
            left = set(key)
            out = []
            for ring_key in reversed(self._rings):
                if len(ring_key) <= len(left) and left.issuperset(ring_key):
                    out.append(ring_key)
                    left.difference_update(ring_key)
        rest = tuple(n for n in key if n in left)
        return out + [rest] if rest else out

    def publish(self, names: Any, arrays: Sequence[np.ndarray]) -> ShmBatch:
        """Copy ``arrays`` (the values of ``names``) into the next segment of
        their ring; returns the batch readers copy from."""
        self.copies += 1
        seg, parts, gen = self.begin(names, arrays)
        for (off, d, s), a in zip(parts, arrays):
            np.copyto(seg.view(off, d, s), a, casting="no")
        return self.end(seg, parts, gen)

    def begin(self, names: Any, arrays: Sequence[Any]) -> Tuple[Segment, list, int]:
        """The next segment of ``names``' ring, marked as being written, laid
        out for arrays of ``arrays``' shapes and dtypes: ``(segment, parts,
        generation)``; write each part (``segment.view(*part)``), then
        :meth:`end`."""
        parts, size = layout(arrays)
        with self._lock:
            ring = self._rings.pop(names, None)
            if ring is None or ring[0][0].size < size:
                if ring is not None:
                    self._drop(ring)
                ring = [[self._new(size), self._new(size)], 0]
            self._rings[names] = ring
            seg = ring[0][ring[1]]
            if self._pins.get(seg.path):   # being read by the checkpoint writer
                self._detached[seg.path] = seg
                seg = ring[0][ring[1]] = self._spare(size)
            ring[1] ^= 1
            self._gen += 2
            gen = self._gen
            seg.set_gen(gen - 1)   # odd: being written
        return seg, parts, gen

    def end(self, seg: Segment, parts: list, gen: int) -> ShmBatch:
        """The batch readers copy from, once :meth:`begin`'s segment is written."""
        seg.set_gen(gen)
        with self._lock:
            self._trim()
        return ShmBatch(seg.path, gen, parts)

    def pin(self, batch: ShmBatch) -> List[np.ndarray]:
        """Views of a batch this publisher made, which stay as they are
        until :meth:`unpin` (``batch.path``) is called as often as this."""
        with self._lock:
            seg = self._segments[batch.path]
            self._pins[batch.path] = self._pins.get(batch.path, 0) + 1
        return seg.views(batch)

    def unpin(self, path: str) -> None:
        with self._lock:
            left = self._pins.get(path, 0) - 1
            if left > 0:
                self._pins[path] = left
                return
            self._pins.pop(path, None)
            seg = self._detached.pop(path, None)
            if seg is not None:
                self._spares.append(seg)
                self._trim()

    def _spare(self, size: int) -> Segment:
        """A segment unpinned since, else a new one (under the lock)."""
        seg = take_fitting(self._spares, size)
        return seg if seg is not None else self._new(size)

    def _new(self, size: int) -> Segment:
        self._count += 1
        path = os.path.join(self.directory, f"{self.prefix}-{self._count}")
        self._bytes += size
        seg = self._segments[path] = Segment(path, size, create=True)
        return seg

    def _release(self, seg: Segment) -> None:
        if self._pins.get(seg.path):
            self._detached[seg.path] = seg   # dropped when unpinned
            return
        self._bytes -= seg.size
        self._segments.pop(seg.path, None)
        seg.close(unlink=True)

    def _drop(self, ring: list) -> None:
        for seg in ring[0]:
            self._release(seg)

    def _trim(self) -> None:
        while self._bytes > self.max_bytes and self._spares:
            self._release(self._spares.pop(0))
        while self._bytes > self.max_bytes and len(self._rings) > 1:
            self._drop(self._rings.popitem(last=False)[1])

    def close(self) -> None:
        with self._lock:
            self._pins.clear()
            for ring in self._rings.values():
                self._drop(ring)
            self._rings.clear()
            for seg in list(self._detached.values()) + self._spares:
                self._release(seg)
            self._detached.clear()
            self._spares.clear()


def remove_stale(directory: str, prefix: str) -> None:
    """Unlink files of an earlier incarnation (``prefix*``) in ``directory``."""
    for p in glob.glob(os.path.join(glob.escape(directory), glob.escape(prefix) + "*")):
        try:
            os.unlink(p)
        except OSError:
            pass


def node_id(ray: Any) -> Optional[str]:
    """This process's Ray node (None when it cannot be told)."""
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001
        return None


def as_arrays(payloads: Sequence[Any]) -> Optional[List[np.ndarray]]:
    """The payloads as host arrays when all are plain dense numpy arrays, else None."""
    out = []
    for p in payloads:
        if type(p) is not np.ndarray:
            return None
        out.append(p)
    return out
