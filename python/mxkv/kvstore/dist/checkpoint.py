"""Shard checkpoints: one file per shard, replaced atomically.

A shard's state (its parts' values and completed rounds, the accepted
sequence numbers, the updater with its optimizer states, the last command it
applied) is pickled to ``<dir>/shard-<i>.ckpt``: written to a temporary file
in the same directory, flushed, then renamed over the old one, so a kill at
any moment leaves the previous or the new checkpoint, both loadable.

Writing happens on a background thread; the shard hands over a snapshot
(values copied, or immutable) and learns when it is on disk, which is when
workers may forget the pushes it covers (:class:`CheckpointWriter.durable`).

``MXKV_CHECKPOINT_DIR`` chooses the directory (the launcher sets one per job
under the system's temporary directory and removes it at the end);
``MXKV_CHECKPOINT_ROUNDS`` (default 4) is how many state-changing messages
a shard handles between checkpoints: workers keep that many rounds of their
pushes to re-send after a shard restart.
"""
from __future__ import annotations

import os
import pickle
import threading
from typing import Any, Callable, Optional

from ...base import MXNetIOError

__all__ = ["CheckpointWriter", "load_checkpoint", "checkpoint_path"]


def checkpoint_path(directory: str, index: int) -> str:
    return os.path.join(directory, f"shard-{index}.ckpt")


def load_checkpoint(path: str) -> Optional[dict]:
    """The state saved at ``path``, or None when there is none yet."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except (pickle.UnpicklingError, EOFError, OSError, AttributeError) as exc:
        raise MXNetIOError(f"shard checkpoint {path} cannot be read: {exc}") from exc


def _write_atomic(path: str, state: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
    os.replace(tmp, path)


class CheckpointWriter:
    """Writes snapshots of one shard in the background, one at a time.

    Parameters
    ----------
    path : str
        The checkpoint file.
    on_durable : callable
        Called on the writer thread with the snapshot once it is on disk.
    """

    def __init__(self, path: str, on_durable: Callable[[dict], None]) -> None:
        self.path = path
        self.on_durable = on_durable
        self._lock = threading.Lock()
        self._next: Optional[dict] = None
        self._busy = False
        self.error: Optional[BaseException] = None
        self.written = 0
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
        """Write ``snapshot`` on this thread (for a final or forced checkpoint)."""
        _write_atomic(self.path, snapshot)
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
