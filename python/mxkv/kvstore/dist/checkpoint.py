"""Shard checkpoints: an append-only log of what changed, compacted now and then.

A checkpoint costs what changed since the last one, not what the shard
holds. The shard hands the writer a *delta*: the parts whose value or
optimizer state changed (each with its round and accepted sequence numbers)
and the shard-wide settings (``meta``: sync mode, compression, the command
sequence, the optimizer when it changed). A background thread appends each
delta to ``<dir>/shard-<i>.ckpt`` as one record; loading replays the
records in order, the newest field of each part winning.

Record: ``MXKVLOG1 | seq | length``, the body (a pickle, protocol 5, whose
arrays are written straight from their memory as out-of-band buffers), then
``MXKVEND1 | seq``. A record counts only when its footer is there, so a kill
at any moment leaves a loadable log: at worst its last record is torn, and
it is ignored (and cut off when a restarted shard opens the log again). Each
record is flushed and ``fsync``-ed before the shard learns it is durable,
which is when workers may forget the pushes it covers; on a shared
``MXKV_CHECKPOINT_DIR`` a shard restarted on another host reads the log
from there.

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
how many state-changing messages a shard handles between checkpoints (an
``init`` or a command is written at once): workers keep about that many
rounds of their pushes to re-send after a shard restart.
"""
from __future__ import annotations

import mmap
import os
import pickle
import struct
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...base import MXNetIOError

__all__ = ["CheckpointLog", "checkpoint_path", "copy_state", "merge_deltas", "apply_delta",
           "load_log"]

_MAGIC = b"MXKVLOG1"
_END = b"MXKVEND1"
_HEADER = struct.Struct("<8sQQ")   # magic, sequence, body length
_FOOTER = struct.Struct("<8sQ")    # end magic, sequence
_META = struct.Struct("<QQ")       # meta pickle length, number of buffers
_LEN = struct.Struct("<Q")

#: per-part fields a delta may carry: value, shape, state (frozen optimizer
#: state), round, seen
Delta = Dict[str, Any]


def checkpoint_path(directory: str, index: int) -> str:
    """The log file of shard ``index`` in ``directory``."""
    return os.path.join(directory, f"shard-{index}.ckpt")


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
    with its out-of-band buffers, footer), flushed and fsync'd; its size in bytes."""
    bufs: List[Any] = []
    meta = pickle.dumps(obj, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    length = _META.size + len(meta) + sum(_LEN.size + r.nbytes for r in raws)
    f.write(_HEADER.pack(_MAGIC, seq, length))
    f.write(_META.pack(len(meta), len(raws)))
    f.write(meta)
    for r in raws:
        f.write(_LEN.pack(r.nbytes))
        f.write(r)
    f.write(_FOOTER.pack(_END, seq))
    f.flush()
    os.fsync(f.fileno())
    return _HEADER.size + length + _FOOTER.size


def _records(buf: Any) -> Tuple[List[Tuple[int, Any]], int]:
    """The complete records in ``buf``: [(seq, delta)], and where the last ends."""
    out = []
    pos, size = 0, len(buf)
    while pos + _HEADER.size <= size:
        magic, seq, length = _HEADER.unpack_from(buf, pos)
        body = pos + _HEADER.size
        end = body + length
        if magic != _MAGIC or end + _FOOTER.size > size:
            break
        emagic, eseq = _FOOTER.unpack_from(buf, end)
        if emagic != _END or eseq != seq:
            break
        view = memoryview(buf)[body:end]
        meta_len, nbuf = _META.unpack_from(view, 0)
        p = _META.size
        meta = view[p:p + meta_len]
        p += meta_len
        buffers = []
        for _ in range(nbuf):
            (n,) = _LEN.unpack_from(view, p)
            p += _LEN.size
            buffers.append(view[p:p + n])
            p += n
        out.append((seq, pickle.loads(meta, buffers=buffers)))
        pos = end + _FOOTER.size
    return out, pos


def load_log(path: str) -> Tuple[Optional[Delta], int, int]:
    """Replay the log at ``path``: (state or None, end of its last complete
    record, its sequence number). Arrays in the state are read-only views of
    the mapped file: copy what must outlive it."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None, 0, 0
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None, 0, 0
        buf = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
    try:
        records, end = _records(buf)
    except (pickle.UnpicklingError, EOFError, struct.error, ValueError, AttributeError,
            ImportError) as exc:
        raise MXNetIOError(f"shard checkpoint {path} cannot be read: {exc}") from exc
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
    """

    def __init__(self, path: str, on_durable: Callable[[Dict[Any, int]], None],
                 slack: int = 32 << 20) -> None:
        self.path = path
        self.on_durable = on_durable
        self.slack = int(slack)
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
        #: records written, compactions done, and deltas written as a new log
        #: (they held every part), by this process
        self.written = 0
        self.compactions = 0
        self.rewrites = 0
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)

    # ------------------------------------------------------------ opening
    def load(self) -> Optional[Delta]:
        """The state the log holds (None when there is none); cuts a torn last
        record off so that appending continues from the last complete one."""
        state, end, seq = load_log(self.path)
        self.seq, self._end = seq, end
        if os.path.exists(self.path):
            with open(self.path, "r+b") as f:
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
        self.on_durable({n: e["round"] for n, e in delta["parts"].items() if "round" in e})

    def _append(self, delta: Delta) -> None:
        """Append ``delta`` as one record (caller holds the write lock)."""
        if self._file is None:
            self._file = open(self.path, "ab")
        f = self._file
        try:
            size = _write_record(f, self.seq, delta)
        except BaseException:
            # leave no half record for the next one to follow
            self._file = None
            f.close()
            with open(self.path, "r+b") as g:
                g.truncate(self._end)
            raise
        self._end += size

    def _compact(self) -> None:
        """Rewrite the log as one record of its newest state (caller holds the
        write lock; :meth:`_rewrite` closes the appending handle)."""
        state, _, _ = load_log(self.path)
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
        with open(spare, "r+b" if os.path.exists(spare) else "wb") as f:
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
