"""Copy-on-write sharing of host buffers.

A holder (the KVStore, for a one-device push) may keep a reference to a
buffer that also belongs to someone else (the user's NDArray) instead of
copying it, provided it hears about every write into that buffer before the
write lands. :func:`share` registers such a buffer with a callback; every
path by which mxkv writes into an NDArray's memory calls
:func:`before_write` first, which runs (once) and forgets the callbacks of
every share of that buffer. The holder copies what it needs and lets go, so
its copy is never changed by the writer. A holder that no longer needs the
buffer calls :meth:`Share.release`. A holder never writes into a buffer it
shares (that is the holder's side of the contract).

Buffers are identified by their root numpy array (the array owning the
memory, reached through ``.base``), so views made before or after the share
(``a[1:3]``, ``a.reshape(...)``) count as writes to the same buffer. Only
host (numpy) memory is shared; ``before_write`` on anything else is a no-op.

The cost when nothing is shared is one dict truthiness test per write.

Any thread may share, write or release. The first writer into a shared
buffer marks it as being told (under the registry's lock) and runs the
callbacks; another writer into the same buffer waits until they are done,
and a new share of that buffer is refused meanwhile (the holder copies).
The callbacks run without the registry's lock held, so they may take the
holder's own locks.

Writes that bypass mxkv's NDArray methods (numpy code writing into an array
wrapped with ``NDArray(arr)`` or ``from_xp``) are not seen: code that wraps
its own buffers must not write into them behind mxkv's back.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

__all__ = ["Share", "any_shared", "before_write", "root_of", "share", "shared_count"]

_lock = threading.Lock()
# id(root array) -> the active shares of that root, or, while a writer is
# telling them, an Event the writer sets when they have their copies. Each
# Share holds its root (and the writer holds the array), so an id here always
# belongs to a live array.
_shares: Dict[int, Union[List["Share"], threading.Event]] = {}


def root_of(arr: np.ndarray) -> np.ndarray:
    """The numpy array owning ``arr``'s memory (``arr`` itself when it owns it)."""
    root = arr
    base = root.base
    while isinstance(base, np.ndarray):
        root = base
        base = root.base
    return root


class Share:
    """One holder's claim on a buffer; see :func:`share`."""

    __slots__ = ("_root", "_on_write", "active")
    # (both None once the share is released or its holder told)
    _root: Optional[np.ndarray]
    _on_write: Optional[Callable[[], None]]

    def __init__(self, root: np.ndarray, on_write: Callable[[], None]) -> None:
        self._root = root
        self._on_write = on_write
        self.active = True

    def release(self) -> None:
        """Forget this share (the holder no longer references the buffer)."""
        with _lock:
            if not self.active:
                return
            self.active = False
            key = id(self._root)
            entries = _shares.get(key)
            if isinstance(entries, list):
                try:
                    entries.remove(self)
                except ValueError:
                    pass
                if not entries:
                    del _shares[key]
            self._root = None
            self._on_write = None


def share(arr: np.ndarray, on_write: Callable[[], None]) -> Any:
    """Register that a holder references ``arr``'s buffer without owning it.

    ``on_write()`` runs in the writer's thread before the first write into
    the buffer (through any view), after which the share is gone. It must
    leave the holder with its own copy of what it needs. Returns the
    :class:`Share`, or None when a writer is writing into the buffer right
    now (the holder must copy instead: the buffer is not stable).
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"only host (numpy) buffers are shared, got {type(arr).__name__}")
    root = root_of(arr)
    s = Share(root, on_write)
    with _lock:
        entries = _shares.get(id(root))
        if entries is None:
            _shares[id(root)] = [s]
        elif isinstance(entries, list):
            entries.append(s)
        else:
            return None
    return s


def before_write(arr: Any) -> None:
    """Call before writing into ``arr``: every holder sharing its buffer lets go first.

    Thread-safe: the holders are told once, by the first writer; a second
    writer to the same buffer waits until they have their copies.
    """
    if not _shares or not isinstance(arr, np.ndarray):
        return
    key = id(root_of(arr))
    while True:
        with _lock:
            entries = _shares.get(key)
            if entries is None:
                return
            if isinstance(entries, list):
                done = threading.Event()
                _shares[key] = done
                for s in entries:
                    s.active = False
                break
        entries.wait()  # another writer is telling the holders
    try:
        for s in entries:
            callback, s._on_write, s._root = s._on_write, None, None
            if callback is not None:  # (always: a released share has left the list)
                callback()
    finally:
        with _lock:
            if _shares.get(key) is done:
                del _shares[key]
        done.set()


def any_shared() -> bool:
    """Whether any buffer is shared now (a cheap test before many writes)."""
    return bool(_shares)


def shared_count() -> int:
    """How many buffers are shared right now (for tests and diagnostics)."""
    with _lock:
        return sum(1 for v in _shares.values() if isinstance(v, list))
