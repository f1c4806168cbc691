"""Shard checkpoints: two slot files per shard, overwritten in turn.

A shard's state (its parts' values and completed rounds, the accepted
sequence numbers, the updater with its optimizer states, the last command it
applied) is written to ``<dir>/shard-<i>.ckpt.a`` and ``.b`` alternately,
overwriting the older slot in place (so the file's pages are reused, not
allocated anew on every checkpoint). A slot starts with a header
``MXKVCKP1 | sequence | length``; the header is made invalid before the
body is written and valid again only after it, so a kill at any moment
leaves at least one valid slot, and loading takes the valid slot with the
highest sequence number.

The body is a pickle (protocol 5) whose arrays are written straight from
their memory (out-of-band buffers): no extra copy of the values.

Writing happens on a background thread; the shard hands over a snapshot
(values copied, or immutable) and learns when it is on disk, which is when
workers may forget the pushes it covers (:class:`CheckpointWriter.durable`).

``MXKV_CHECKPOINT_DIR`` chooses the directory (default: a new directory
under ``/dev/shm`` where it exists, else the system's temporary directory;
the job removes it at the end); ``MXKV_CHECKPOINT_ROUNDS`` (default 4) is
how many state-changing messages a shard handles between checkpoints:
workers keep about that many rounds of their pushes to re-send after a
shard restart.
"""
from __future__ import annotations

import os
import pickle
import struct
import threading
from typing import Any, Callable, List, Optional

from ...base import MXNetIOError

__all__ = ["CheckpointWriter", "load_checkpoint", "checkpoint_path", "copy_state"]

_MAGIC = b"MXKVCKP1"
_HEADER = struct.Struct("<8sQQ")   # magic, sequence, body length
_META = struct.Struct("<QQ")       # meta pickle length, number of buffers
_LEN = struct.Struct("<Q")


def checkpoint_path(directory: str, index: int) -> str:
    """The base path of shard ``index``'s slots (``.a`` and ``.b`` are appended)."""
    return os.path.join(directory, f"shard-{index}.ckpt")


def _read_slot(path: str) -> Optional[tuple]:
    """(sequence, state) of a valid slot, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size:
                return None
            magic, seq, length = _HEADER.unpack(head)
            if magic != _MAGIC or seq == 0:
                return None
            body = f.read(length)
    except FileNotFoundError:
        return None
    if len(body) != length:
        return None
    view = memoryview(body)
    meta_len, nbuf = _META.unpack_from(view, 0)
    pos = _META.size
    meta = view[pos:pos + meta_len]
    pos += meta_len
    buffers = []
    for _ in range(nbuf):
        (n,) = _LEN.unpack_from(view, pos)
        pos += _LEN.size
        buffers.append(view[pos:pos + n])
        pos += n
    return seq, pickle.loads(meta, buffers=buffers)


def load_checkpoint(path: str) -> Optional[dict]:
    """The newest valid state of the slots at ``path``, or None when there is none."""
    found = []
    for slot in ("a", "b"):
        try:
            got = _read_slot(f"{path}.{slot}")
        except (pickle.UnpicklingError, EOFError, struct.error, ValueError, AttributeError,
                OSError) as exc:
            raise MXNetIOError(f"shard checkpoint {path}.{slot} cannot be read: {exc}") from exc
        if got is not None:
            found.append(got)
    if not found:
        return None
    return max(found, key=lambda x: x[0])[1]


def _newest_seq(path: str) -> int:
    best = 0
    for slot in ("a", "b"):
        try:
            with open(f"{path}.{slot}", "rb") as f:
                magic, seq, _ = _HEADER.unpack(f.read(_HEADER.size))
            if magic == _MAGIC:
                best = max(best, seq)
        except (FileNotFoundError, struct.error):
            pass
    return best


class CheckpointWriter:
    """Writes snapshots of one shard in the background, one at a time.

    Parameters
    ----------
    path : str
        The slots' base path (:func:`checkpoint_path`).
    on_durable : callable
        Called on the writer thread with the snapshot once it is written.
    """

    def __init__(self, path: str, on_durable: Callable[[dict], None]) -> None:
        self.path = path
        self.on_durable = on_durable
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next: Optional[dict] = None
        self._busy = False
        self.error: Optional[BaseException] = None
        self.written = 0
        self.seq = _newest_seq(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)

    def submit(self, snapshot: dict) -> None:
        """Queue ``snapshot``; a newer one replaces a queued older one."""
        with self._lock:
            self._next = snapshot
            if self._busy:
                return
            self._busy = True
        threading.Thread(target=self._run, name="mxkv-checkpoint", daemon=True).start()

    def write_now(self, snapshot: dict) -> None:
        """Write ``snapshot`` on this thread (for a forced checkpoint)."""
        with self._write_lock:
            self.seq += 1
            slot = f"{self.path}.{'ab'[self.seq % 2]}"
            bufs: List[Any] = []
            meta = pickle.dumps(snapshot, protocol=5, buffer_callback=bufs.append)
            raws = [b.raw() for b in bufs]
            length = _META.size + len(meta) + sum(_LEN.size + r.nbytes for r in raws)
            mode = "r+b" if os.path.exists(slot) else "w+b"
            with open(slot, mode) as f:
                f.write(_HEADER.pack(_MAGIC, 0, length))   # invalid while the body changes
                f.write(_META.pack(len(meta), len(raws)))
                f.write(meta)
                for r in raws:
                    f.write(_LEN.pack(r.nbytes))
                    f.write(r)
                f.truncate()
                f.flush()
                f.seek(0)
                f.write(_HEADER.pack(_MAGIC, self.seq, length))
            self.written += 1
        self.on_durable(snapshot)

    def _run(self) -> None:
        while True:
            with self._lock:
                snap, self._next = self._next, None
                if snap is None:
                    self._busy = False
                    return
            try:
                self.write_now(snap)
            except BaseException as exc:  # reported on the next shard call
                self.error = exc

    def busy(self) -> bool:
        with self._lock:
            return self._busy


def copy_state(obj: Any) -> Any:
    """A deep copy of numpy arrays inside tuples, lists and dicts."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, tuple):
        return tuple(copy_state(o) for o in obj)
    if isinstance(obj, list):
        return [copy_state(o) for o in obj]
    if isinstance(obj, dict):
        return {k: copy_state(v) for k, v in obj.items()}
    return obj
