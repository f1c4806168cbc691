"""Shard checkpoints: an append-only log of what changed, compacted now and then.

A checkpoint costs what changed since the last one, not what the shard
holds. The shard hands the writer a *delta*: the parts whose value or
optimizer state changed (each with its round and accepted sequence numbers)
and the shard-wide settings (``meta``: sync mode, compression, the command
sequence, the optimizer when it changed). A background thread appends each
delta to ``<dir>/shard-<i>.ckpt`` as one record; loading replays the
records in order, the newest field of each part winning.

Record: a header ``MXKVLOG3 | seq | length | crc32 of those``, the body (a
pickle, protocol 5, whose arrays are written straight from their memory as
out-of-band buffers), then a footer ``MXKVEND3 | seq | xxh3-64 of the body``.
A record counts only when its footer is there, so a kill at any moment
leaves a loadable log: at worst its last record is torn (it ends past the
end of the file), and it is ignored (and cut off when a restarted shard
opens the log again). Every other flaw is *corruption*, never cut off and
never loaded: a header or body whose checksum fails, a footer that does not
match its header, a body that does not unpickle. :func:`load_log` raises
:class:`CorruptCheckpoint` naming the file, the record and the offset, and
:meth:`CheckpointLog.load` first renames the file aside
(``shard-<i>.ckpt.corrupt-<why>-at-<offset>``) so that the evidence stays
and no restart can mistake the directory for an empty one. Each record is
flushed and ``fsync``-ed before the shard learns it is durable, which is
when workers may forget the pushes it covers; on a shared
``MXKV_CHECKPOINT_DIR`` a shard restarted on another host reads the log
from there. The body's checksum is computed as it is written, a chunk at a
time (xxh3-64, the ``xxhash`` package: 2.5 ms per 51 MB here, against
13 ms for zlib's crc32 and 110 ms per 100 MB for blake2b; with crc32 the
checksums were 14% of a shard's CPU samples in a ResNet-50 2x2 job, 4 ms
a step).

Files are created 0600; the directory is the job's (:mod:`.ckpt_dir`).

When a delta holds every field of every part the log holds (dense training
changes every value each round, so most deltas do), it is not appended: it
is written, with the shard-wide settings, as the one record of a new log,
into the spare file ``shard-<i>.ckpt.spare`` overwritten in place, which
then takes the log's name (atomic: a kill leaves the old log or the new
one) while the old log becomes the next spare. Overwriting pages the file
system already holds costs about half of appending fresh ones (tmpfs, 51
MB: 11 ms against 21 ms), and no compaction is needed afterwards.

Otherwise, when the log holds more than twice the live data plus
``MXKV_CHECKPOINT_SLACK_MB`` (default 32), the writer thread compacts it: it
reads the log (mapped, not copied) and writes the newest state the same way.
Compaction rewrites the live data once per at least as many bytes appended,
so its cost, too, follows the change.

``MXKV_CHECKPOINT_DIR`` chooses the directory (default: a new directory
under ``/dev/shm`` where it exists, else the system's temporary directory;
the job removes it at the end); ``MXKV_CHECKPOINT_ROUNDS`` (default 4) is
how many rounds a part goes through between checkpoints (a sync round it
completes, an async push it applies; however many messages brought them:
a round streamed in chunks is one; an ``init`` or a command is written at
once): workers keep about that many rounds of their pushes to re-send
after a shard restart.
"""
from __future__ import annotations

import mmap
import os
import pickle
import struct
import threading
import zlib
from typing import Any, Callable, Dict, List, Optional, Tuple

import xxhash

from ...base import MXNetIOError

__all__ = ["CheckpointLog", "CorruptCheckpoint", "checkpoint_path", "copy_state",
           "merge_deltas", "apply_delta", "load_log", "open_private", "record_spans"]

_MAGIC = b"MXKVLOG3"
_END = b"MXKVEND3"
_HEAD = struct.Struct("<8sQQ")       # magic, sequence, body length
_HEADER = struct.Struct("<8sQQI")    # ... and the crc32 of those
_FOOTER = struct.Struct("<8sQQ")     # end magic, sequence, xxh3-64 of the body
_CHUNK = 8 << 20                     # bytes checksummed then written at a time
_META = struct.Struct("<QQ")       # meta pickle length, number of buffers
_LEN = struct.Struct("<Q")

#: per-part fields a delta may carry: value, shape, state (frozen optimizer
#: state), round, seen
Delta = Dict[str, Any]


def checkpoint_path(directory: str, index: int) -> str:
    """The log file of shard ``index`` in ``directory``."""
    return os.path.join(directory, f"shard-{index}.ckpt")


class CorruptCheckpoint(MXNetIOError):
    """A checkpoint record failed its check: it is never loaded.

    Attributes
    ----------
    path : str
        The log (after :meth:`CheckpointLog.load`, where it was renamed aside).
    record : int
        The record's position in the log (0: the first).
    offset : int
        Where the record starts in the file.
    why : str
        ``header-checksum``, ``body-checksum``, ``footer``, ``format`` or
        ``unreadable``.
    """

    def __init__(self, path: str, record: int, offset: int, why: str, detail: str = "") -> None:
        self.path, self.record, self.offset, self.why = path, record, offset, why
        self.detail = detail
        super().__init__(f"checkpoint {path} is corrupt: record {record} at byte {offset} "
                         f"fails its check ({why}{': ' + detail if detail else ''}); it was "
                         "not loaded")

    def __reduce__(self):
        return (CorruptCheckpoint, (self.path, self.record, self.offset, self.why, self.detail))

    def moved(self, path: str) -> "CorruptCheckpoint":
        """The same error naming the file where the log now is."""
        return CorruptCheckpoint(path, self.record, self.offset, self.why, self.detail)


def open_private(path: str, mode: str) -> Any:
    """``open(path, mode)`` (binary) creating the file 0600 when it is new."""
    flags = {"ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
             "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
             "r+b": os.O_RDWR}[mode]
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def empty_delta() -> Delta:
    return {"parts": {}, "meta": {}}


def merge_deltas(old: Delta, new: Delta) -> Delta:
    """One delta equal to applying ``old`` then ``new`` (``new`` wins per field).

    A ``meta['reset_states']`` in ``new`` drops the optimizer states ``old``
    carried: they were made before the optimizer changed.
    """
    reset = new["meta"].get("reset_states", False)
    parts: Dict[Any, dict] = {}
    for name, entry in old["parts"].items():
        parts[name] = {k: v for k, v in entry.items() if not (reset and k == "state")}
    for name, entry in new["parts"].items():
        parts.setdefault(name, {}).update(entry)
    meta = dict(old["meta"])
    meta.update(new["meta"])
    meta["reset_states"] = reset or old["meta"].get("reset_states", False)
    return {"parts": parts, "meta": meta}


def apply_delta(state: Delta, delta: Delta) -> Delta:
    """``state`` (a merged delta) with ``delta`` applied, in place."""
    if delta["meta"].get("reset_states"):
        for entry in state["parts"].values():
            entry.pop("state", None)
    for name, entry in delta["parts"].items():
        state["parts"].setdefault(name, {}).update(entry)
    state["meta"].update({k: v for k, v in delta["meta"].items() if k != "reset_states"})
    return state


def _nbytes(obj: Any) -> int:
    """Bytes of the arrays inside ``obj`` (what a part costs in the log)."""
    if isinstance(obj, (bytes, bytearray)):      # a pickled optimizer state
        return len(obj)
    n = getattr(obj, "nbytes", None)
    if isinstance(n, int):
        return n
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(o) for o in obj.values())
    inner = getattr(obj, "array", None)          # a frozen optimizer state array
    return _nbytes(inner) if inner is not None else 0


def _write_record(f: Any, seq: int, obj: Any) -> int:
    """Append one record holding ``obj`` to the open file ``f`` (header, pickle
    with its out-of-band buffers, footer with the body's xxh3-64, computed a
    chunk at a time as it is written), flushed and fsync'd; its size in bytes."""
    bufs: List[Any] = []
    meta = pickle.dumps(obj, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    length = _META.size + len(meta) + sum(_LEN.size + r.nbytes for r in raws)
    head = _HEAD.pack(_MAGIC, seq, length)
    f.write(_HEADER.pack(_MAGIC, seq, length, zlib.crc32(head)))
    digest = xxhash.xxh3_64()

    def put(data: Any) -> None:
        digest.update(data)
        f.write(data)

    put(_META.pack(len(meta), len(raws)))
    put(meta)
    for r in raws:
        put(_LEN.pack(r.nbytes))
        view = memoryview(r).cast("B")
        for at in range(0, len(view), _CHUNK):
            put(view[at:at + _CHUNK])
    f.write(_FOOTER.pack(_END, seq, digest.intdigest()))
    f.flush()
    os.fsync(f.fileno())
    return _HEADER.size + length + _FOOTER.size


def _digest(view: Any) -> int:
    digest = xxhash.xxh3_64()
    for at in range(0, len(view), _CHUNK):
        digest.update(view[at:at + _CHUNK])
    return digest.intdigest()


def _records(buf: Any, path: str = "") -> Tuple[List[Tuple[int, Any]], int]:
    """The complete records in ``buf``: [(seq, delta)], and where the last
    ends (a torn last record is not counted). Raises
    :class:`CorruptCheckpoint` at the first record that fails its check."""
    out: List[Tuple[int, Any]] = []
    pos, size = 0, len(buf)
    view = memoryview(buf)
    while pos < size:
        if pos + _HEADER.size > size:
            break   # torn: a kill while the header was written
        magic, seq, length, hcrc = _HEADER.unpack_from(buf, pos)
        if zlib.crc32(view[pos:pos + _HEAD.size]) != hcrc:
            if not bytes(view[pos:]).strip(b"\0"):
                break   # torn: zeros a crash left where the record was written
            raise CorruptCheckpoint(path, len(out), pos, "header-checksum")
        if magic != _MAGIC:
            raise CorruptCheckpoint(path, len(out), pos, "format",
                                    f"magic {bytes(magic)!r}, expected {_MAGIC!r}")
        body = pos + _HEADER.size
        end = body + length
        if end + _FOOTER.size > size:
            break   # torn: the record was being written
        emagic, eseq, bcrc = _FOOTER.unpack_from(buf, end)
        if emagic != _END or eseq != seq:
            raise CorruptCheckpoint(path, len(out), pos, "footer",
                                    f"footer {bytes(emagic)!r} #{eseq} after header #{seq}")
        record = view[body:end]
        if _digest(record) != bcrc:
            raise CorruptCheckpoint(path, len(out), pos, "body-checksum")
        try:
            meta_len, nbuf = _META.unpack_from(record, 0)
            p = _META.size
            meta = record[p:p + meta_len]
            p += meta_len
            buffers = []
            for _ in range(nbuf):
                (n,) = _LEN.unpack_from(record, p)
                p += _LEN.size
                buffers.append(record[p:p + n])
                p += n
            out.append((seq, pickle.loads(meta, buffers=buffers)))
        except (pickle.UnpicklingError, EOFError, struct.error, ValueError, AttributeError,
                ImportError, TypeError, IndexError, KeyError) as exc:
            raise CorruptCheckpoint(path, len(out), pos, "unreadable", str(exc)) from exc
        pos = end + _FOOTER.size
    return out, pos


def record_spans(path: str) -> List[Tuple[int, int, int, int]]:
    """Where each complete record of the log at ``path`` lies: ``(start,
    body start, footer start, end)`` (for tools and tests that inspect or
    damage a log; no check is made)."""
    with open(path, "rb") as f:
        data = f.read()
    spans, pos = [], 0
    while pos + _HEADER.size <= len(data):
        _, _, length, _ = _HEADER.unpack_from(data, pos)
        body = pos + _HEADER.size
        end = body + length + _FOOTER.size
        if end > len(data):
            break
        spans.append((pos, body, body + length, end))
        pos = end
    return spans


def load_log(path: str) -> Tuple[Optional[Delta], int, int]:
    """Replay the log at ``path``: (state or None, end of its last complete
    record, its sequence number). Arrays in the state are read-only views of
    the mapped file: copy what must outlive it. Raises
    :class:`CorruptCheckpoint` when a record fails its check."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None, 0, 0
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None, 0, 0
        buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    records, end = _records(buf, path)
    if not records:
        return None, end, 0
    state = empty_delta()
    for _, delta in records:
        apply_delta(state, delta)
    return state, end, records[-1][0]


class CheckpointLog:
    """Appends a shard's deltas to its log on a background thread, in order.

    Parameters
    ----------
    path : str
        The log file (:func:`checkpoint_path`).
    on_durable : callable
        ``on_durable(rounds)`` on the writer thread once a delta is on disk;
        ``rounds`` maps the parts it holds to their rounds.
    slack : int
        Bytes the log may grow past twice its live data before it is
        compacted (``MXKV_CHECKPOINT_SLACK_MB``, :class:`~.config.DistConfig`).
    on_error : callable, optional
        ``on_error(exc)`` on the writer thread when a delta could not be written.
    """

    def __init__(self, path: str, on_durable: Callable[[Dict[Any, int]], None],
                 slack: int = 32 << 20,
                 on_error: Optional[Callable[[BaseException], None]] = None) -> None:
        self.path = path
        self.on_durable = on_durable
        self.slack = int(slack)
        self.on_error = on_error
        self._lock = threading.Condition()
        self._write_lock = threading.Lock()
        self._next: Optional[Delta] = None
        self._callbacks: List[Callable[[Optional[BaseException]], None]] = []
        self._busy = False
        self._thread: Optional[threading.Thread] = None
        self._file: Any = None
        self._sizes: Dict[Any, List[int]] = {}   # part -> [value bytes, state bytes]
        self._fields: Dict[Any, set] = {}        # part -> the fields the log holds
        self._meta: Dict[str, Any] = {}          # the shard-wide settings, as replayed
        self._live = 0
        self._end = 0
        self.seq = 0
        self.error: Optional[BaseException] = None
        #: ``mirror(kind, offset, data)`` on the writer thread after each
        #: record, before it counts as durable: ``'append'`` (``data`` was
        #: appended at ``offset``) or ``'reset'`` (``data`` is the whole log);
        #: a copy on another host (:mod:`.replica`)
        self.mirror: Optional[Callable[[str, int, bytes], None]] = None
        #: records written, compactions done, and deltas written as a new log
        #: (they held every part), by this process
        self.written = 0
        self.compactions = 0
        self.rewrites = 0
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)

    # ------------------------------------------------------------ opening
    def load(self) -> Optional[Delta]:
        """The state the log holds (None when there is none); cuts a torn last
        record off so that appending continues from the last complete one.

        A log with a corrupt record is renamed aside (its new name says why)
        and :class:`CorruptCheckpoint` names it there; nothing is cut."""
        try:
            state, end, seq = load_log(self.path)
        except CorruptCheckpoint as exc:
            aside = f"{self.path}.corrupt-{exc.why}-at-{exc.offset}"
            os.replace(self.path, aside)
            raise exc.moved(aside) from None
        self.seq, self._end = seq, end
        if os.path.exists(self.path) and os.path.getsize(self.path) > end:
            with open_private(self.path, "r+b") as f:
                f.truncate(end)
        for stale in (".tmp", ".next"):   # a rewrite a kill interrupted
            try:
                os.unlink(self.path + stale)
            except FileNotFoundError:
                pass
        self._sizes, self._fields, self._meta, self._live = {}, {}, {}, 0
        if state is not None:
            self._account(state)
        return state

    def _account(self, delta: Delta) -> None:
        """Keep the live bytes (newest value and state of every part) up to date."""
        if delta["meta"].get("reset_states"):
            for sizes in self._sizes.values():
                self._live -= sizes[1]
                sizes[1] = 0
            for fields in self._fields.values():
                fields.discard("state")
        self._meta.update({k: v for k, v in delta["meta"].items() if k != "reset_states"})
        for name, entry in delta["parts"].items():
            self._fields.setdefault(name, set()).update(entry)
            sizes = self._sizes.setdefault(name, [0, 0])
            for i, field in enumerate(("value", "state")):
                if field in entry:
                    n = _nbytes(entry[field])
                    self._live += n - sizes[i]
                    sizes[i] = n

    # ------------------------------------------------------------ writing
    def submit(self, delta: Delta,
               callback: Optional[Callable[[Optional[BaseException]], None]] = None) -> None:
        """Queue ``delta`` (merged into one still queued); ``callback(error)``
        runs on the writer thread once it is on disk (``error`` None) or failed."""
        with self._lock:
            self._next = delta if self._next is None else merge_deltas(self._next, delta)
            if callback is not None:
                self._callbacks.append(callback)
            self._busy = True
            if self._thread is None:   # one thread for the log's life, woken per delta
                self._thread = threading.Thread(target=self._run, name="mxkv-checkpoint",
                                                daemon=True)
                self._thread.start()
            self._lock.notify()

    def _covers(self, delta: Delta) -> bool:
        """Whether ``delta`` holds every field of every part the log holds
        (so that, with the settings, it is the whole state)."""
        parts = delta["parts"]
        reset = delta["meta"].get("reset_states", False)
        for name, fields in self._fields.items():
            entry = parts.get(name)
            if entry is None:
                return False
            for field in fields:
                if field not in entry and not (reset and field == "state"):
                    return False
        return True

    def write_now(self, delta: Delta) -> None:
        """Write ``delta`` on this thread (after anything queued before it):
        appended to the log, or as a new log when it holds every part."""
        with self._write_lock:
            self.seq += 1
            start = self._end
            rewrite = bool(self._end) and self._covers(delta)
            if rewrite:
                meta = dict(self._meta)
                meta.update(delta["meta"])
                self._rewrite({"parts": delta["parts"], "meta": meta})
                self.rewrites += 1
            else:
                self._append(delta)
            self.written += 1
            self._account(delta)
            if not rewrite and self._end > 2 * self._live + self.slack:
                self._compact()
                rewrite = True
            if self.mirror is not None:   # durable once the copy is too
                if rewrite:
                    self.mirror("reset", 0, self.read(0, self._end))
                else:
                    self.mirror("append", start, self.read(start, self._end - start))
        self.on_durable({n: e["round"] for n, e in delta["parts"].items() if "round" in e})

    def read(self, offset: int = 0, size: Optional[int] = None) -> bytes:
        """``size`` bytes of the log from ``offset`` (default: to its last
        complete record)."""
        size = self._end - offset if size is None else size
        if not size:
            return b""
        with open(self.path, "rb") as f:
            return os.pread(f.fileno(), size, offset)

    def _append(self, delta: Delta) -> None:
        """Append ``delta`` as one record (caller holds the write lock)."""
        if self._file is None:
            self._file = open_private(self.path, "ab")
        f = self._file
        try:
            size = _write_record(f, self.seq, delta)
        except BaseException:
            # leave no half record for the next one to follow
            self._file = None
            f.close()
            with open_private(self.path, "r+b") as g:
                g.truncate(self._end)
            raise
        self._end += size

    def _compact(self) -> None:
        """Rewrite the log as one record of its newest state (caller holds the
        write lock; :meth:`_rewrite` closes the appending handle)."""
        state, _, _ = load_log(self.path)
        if state is None:   # (it was just appended to: gone, or emptied behind our back)
            raise OSError(f"the checkpoint log {self.path} is empty or gone after a write")
        self._rewrite(state)
        self.compactions += 1

    def _rewrite(self, state: Delta) -> None:
        """Make ``state`` the log's one record (caller holds the write lock).

        It is written into the spare file, over what that holds (pages the
        file system keeps, so no fresh ones), cut to size and synced; then
        the spare takes the log's name, and the old log (kept by a second
        name meanwhile) becomes the spare. A kill at any step leaves the
        log's name on a complete log, old or new; ``load`` removes a
        leftover ``.next``.
        """
        if self._file is not None:
            self._file.close()
            self._file = None
        spare, nxt = self.path + ".spare", self.path + ".next"
        with open_private(spare, "r+b" if os.path.exists(spare) else "wb") as f:
            size = _write_record(f, self.seq, state)
            f.truncate(size)
            os.fsync(f.fileno())
        del state   # (a compaction's views of the old log's mapping)
        have_old = os.path.exists(self.path)
        if have_old:
            try:
                os.unlink(nxt)
            except FileNotFoundError:
                pass
            os.link(self.path, nxt)
        os.replace(spare, self.path)
        if have_old:
            os.replace(nxt, spare)
        self._end = size

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._next is None:
                    self._busy = False
                    self._lock.wait()
                delta, self._next = self._next, None
                callbacks, self._callbacks = self._callbacks, []
            error: Optional[BaseException] = None
            try:
                self.write_now(delta)
            except BaseException as exc:  # reported on the next shard call
                self.error = error = exc
                if self.on_error is not None:
                    self.on_error(exc)
            for cb in callbacks:
                cb(error)

    def busy(self) -> bool:
        with self._lock:
            return self._busy

    def close(self) -> None:
        with self._write_lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def copy_state(obj: Any) -> Any:
    """A deep copy of numpy arrays inside tuples, lists and dicts."""
    import numpy as np

    from ...ndarray._util import empty_aligned

    if isinstance(obj, np.ndarray):
        out = empty_aligned(obj.shape, obj.dtype)
        np.copyto(out, obj)
        return out
    if isinstance(obj, tuple):
        return tuple(copy_state(o) for o in obj)
    if isinstance(obj, list):
        return [copy_state(o) for o in obj]
    if isinstance(obj, dict):
        return {k: copy_state(v) for k, v in obj.items()}
    return obj
