"""The values a local store holds, and which buffers it owns.

Every key maps to one stored NDArray on the store context. Usually the store
owns its buffer. After a one-device dense push without an updater the store
instead *shares* the pushed array's buffer (MXNet keeps a reference there
too), copy-on-write: :mod:`mxkv.ndarray.cow` tells the store before anything
writes into that buffer, and the store then copies the value into a buffer
of its own. The store itself never writes into a buffer it shares: before a
write it asks :meth:`StoredValues.writable` for a private buffer. So a push
costs no copy, and a later write to the pushed array never changes the store.

The private buffer a shared key had is kept as a spare, so switching back
(a write to the pushed array, a multi-device push, an updater) allocates
nothing.

Threads: the store calls these methods holding the key's lock; the
copy-on-write callback runs in whichever thread writes into the pushed
array. Both sides meet on the key's guard (:meth:`StoredValues.guard`),
held by a pull while it copies from a shared buffer, by the callback while
it copies the value out, and by a share while it is being registered, so a
write never lands in the middle of either copy.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Dict, Iterator, Tuple

import numpy as np

from ..ndarray import NDArray, cow
from .foreign import is_foreign

__all__ = ["SHARE_MIN_BYTES", "StoredValues"]

# Below this size a copy costs less than registering a share.
SHARE_MIN_BYTES = 64 * 1024


class StoredValues:
    """Key -> stored NDArray, with copy-on-write sharing of pushed host buffers.

    Parameters
    ----------
    ctx : Context
        The store context the values live on.
    copy : callable
        ``copy(dst, src)`` for two same-shaped host arrays (the comm's
        threaded copy), used when a shared value is made private.
    """

    def __init__(self, ctx: Any, copy: Any) -> None:
        self.ctx = ctx
        self._copy = copy
        self.values: Dict[Any, Any] = {}  # read-only for callers: key -> stored value
        # Changes whenever a key's stored object does (a new key, set, share,
        # made private): what a caller checked about the stored objects of
        # some keys still holds while it is unchanged (kvstore/small.py).
        self._changes = itertools.count(1)
        self.version = 0
        self._spare: Dict[Any, NDArray] = {}     # the private buffer of a shared key
        self._shares: Dict[Any, cow.Share] = {}
        self._lock = threading.Lock()  # the three tables, across a share's changes
        self._guards: Dict[Any, threading.RLock] = {}  # key -> see guard()
        # Let go of every share when the store goes away.
        weakref.finalize(self, _release_all, self._shares)

    def clear(self) -> None:
        """Let go of every value and share (the store is closing)."""
        with self._lock:
            _release_all(self._shares)
            self.values.clear()
            self._spare.clear()
            self._guards.clear()
            self.version = next(self._changes)

    # -- reading --------------------------------------------------------------
    def __contains__(self, key: Any) -> bool:
        return key in self.values

    def __getitem__(self, key: Any) -> Any:
        return self.values[key]

    def __len__(self) -> int:
        return len(self.values)

    def items(self) -> Iterator[Tuple[Any, Any]]:
        """``(key, stored value)`` pairs, over a snapshot (safe while keys are added)."""
        return iter(list(self.values.items()))

    def is_shared(self, key: Any) -> bool:
        """Whether ``key``'s value is a pushed buffer shared copy-on-write."""
        return key in self._shares

    @property
    def shared_keys(self) -> Dict[Any, Any]:
        """The keys whose value is shared now (a mapping; read only)."""
        return self._shares

    def guard(self, key: Any) -> threading.RLock:
        """The lock held while a shared value of ``key`` is read (a pull copying
        from the pushed buffer) and while it is made private, so a writer
        into the pushed buffer waits until the copy is done (made on first use)."""
        g = self._guards.get(key)
        if g is None:
            g = self._guards.setdefault(key, threading.RLock())
        return g

    # -- writing --------------------------------------------------------------
    def set(self, key: Any, value: Any) -> None:
        """Make ``value`` (an array the store owns) the stored value of ``key``."""
        if key not in self._shares:
            self.values[key] = value
            self.version = next(self._changes)
            return
        with self.guard(key), self._lock:
            s = self._shares.pop(key, None)
            self._spare.pop(key, None)
            self.values[key] = value
            self.version = next(self._changes)
        if s is not None:
            s.release()

    def can_share(self, key: Any, src: Any) -> bool:
        """Whether ``src`` may be stored for ``key`` by reference: a dense host
        array of the key's shape and dtype, big enough to be worth it."""
        stored = self.values[key]
        if type(src) is not NDArray or type(stored) is not NDArray or is_foreign(src):
            return False  # (another library may write a foreign buffer unseen)
        a, s = src._array, stored._array
        return (isinstance(a, np.ndarray) and isinstance(s, np.ndarray)
                and a.dtype == s.dtype and a.shape == s.shape
                and a.nbytes >= SHARE_MIN_BYTES)

    def share(self, key: Any, src: NDArray) -> bool:
        """Store ``src``'s buffer for ``key`` without copying it (see
        :meth:`can_share`); False (nothing changed) when the buffer is being
        written right now: the caller copies instead."""
        ref = weakref.ref(self)
        cell: list = []

        def on_write() -> None:
            store = ref()
            if store is not None:
                store._on_write(key, cell)

        with self.guard(key):  # a writer's on_write waits until the share is registered
            s = cow.share(src._array, on_write)
            if s is None:
                return False
            cell.append(s)
            with self._lock:
                old = self._shares.pop(key, None)
                if old is None:
                    self._spare[key] = self.values[key]
                self.values[key] = NDArray(src._array, self.ctx)
                self._shares[key] = s
                self.version = next(self._changes)
        if old is not None:
            old.release()
        return True

    def _on_write(self, key: Any, cell: list) -> None:
        with self.guard(key):
            if cell:
                self._unshare(key, cell[0], keep=True)

    def writable(self, key: Any, keep: bool = True) -> Any:
        """The stored value of ``key`` in a buffer the store owns, ready to be
        written; ``keep=False`` when the caller overwrites all of it."""
        s = self._shares.get(key)
        if s is None:
            return self.values[key]
        return self._unshare(key, s, keep)

    def _unshare(self, key: Any, s: cow.Share, keep: bool) -> Any:
        with self.guard(key):
            with self._lock:
                if self._shares.get(key) is not s:
                    return self.values[key]  # already made private (or re-shared)
                shared, own = self.values[key], self._spare[key]
            if keep:  # still registered as shared: readers hold the guard meanwhile
                self._copy(own._array, shared._array)
            with self._lock:
                del self._shares[key]
                del self._spare[key]
                self.values[key] = own
                self.version = next(self._changes)
        s.release()
        return own


def _release_all(shares: Dict[Any, cow.Share]) -> None:
    for s in list(shares.values()):
        s.release()
    shares.clear()
