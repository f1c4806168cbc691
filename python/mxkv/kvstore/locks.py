"""The locks that make a store's operations atomic per key (decision 10 of docs/architecture.md).

Every public operation of a local store holds the locks of the keys it
names while it validates and applies the call, so a pull sees the whole of
a push or none of it, and a batched call is atomic per key. Operations on
different keys run in parallel: a key's lock is one of ``stripes`` locks,
handed out round-robin in init order, so the first ``stripes`` keys each
have a lock of their own and later keys share one with ``1/stripes`` of the
others. A call takes the distinct locks of its keys in ascending order
(one global order: no deadlock), or all of them when it names at least
``stripes`` keys, which keeps a 1000-key batch at a few dozen lock
operations instead of a thousand (measured in ``docs/reliability.md``).
Operations on the whole store (``set_optimizer``, saving and loading
optimizer states, compression) take every lock.

Keys are added under the store's init lock (``KeyLocks.init_lock``), which
is always taken before any key lock: an ``init`` validates, gives its new
keys their locks and takes them, and only then makes the keys appear. A call naming a key that
has no lock yet also takes the init lock first, so no ``init`` can publish
that key while the call runs (it then fails its validation: the key is not
initialized).

The locks are reentrant, so an updater that calls back into its store on a
key of the same lock does not deadlock on itself.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List

from ..base import env

__all__ = ["KeyLocks", "DEFAULT_STRIPES"]

# Enough that a few dozen threads working on their own keys rarely meet, few
# enough that a call over every key takes them all in a few microseconds.
DEFAULT_STRIPES = 64


class _Held:
    """A ``with`` block holding a list of locks, taken in the list's order
    (which callers make the global one) and released in reverse."""

    __slots__ = ("_locks",)

    def __init__(self, locks: List[Any]) -> None:
        self._locks = locks

    def __enter__(self) -> None:
        taken = 0
        try:
            for lk in self._locks:
                lk.acquire()
                taken += 1
        except BaseException:  # KeyboardInterrupt while waiting: hold nothing
            for lk in reversed(self._locks[:taken]):
                lk.release()
            raise

    def __exit__(self, *exc: Any) -> None:
        for lk in reversed(self._locks):
            lk.release()


class KeyLocks:
    """The per-key locks of one store.

    Parameters
    ----------
    stripes : int, optional
        How many locks the keys share; by default ``MXKV_KVSTORE_LOCKS``
        (64). 1 makes every operation exclusive (a single store lock).
    """

    def __init__(self, stripes: int | None = None) -> None:
        n = stripes if stripes is not None else env("MXKV_KVSTORE_LOCKS", DEFAULT_STRIPES,
                                                   minimum=1)
        self._locks = [threading.RLock() for _ in range(int(n))]
        self._n = len(self._locks)
        self._of: Dict[Any, int] = {}  # key -> index of its lock
        self.init_lock = threading.RLock()
        self._all = _Held(self._locks)

    @property
    def stripes(self) -> int:
        """How many locks the keys share."""
        return self._n

    def add(self, keys: Iterable[Any]) -> None:
        """Give each new key a lock (round-robin in init order). Call with
        ``init_lock`` held; a key that already has one keeps it."""
        of = self._of
        for k in keys:
            if k not in of:
                of[k] = len(of) % self._n

    def _index(self, key: Any) -> Any:
        try:
            return self._of.get(key)
        except TypeError:  # unhashable: not a key; the call's validation says so
            return None

    def hold(self, key: Any) -> Any:
        """The locks of ``key`` (one key, or a list/tuple of keys, as a store
        call names them), for a ``with`` block. A call naming a key without
        a lock also holds the init lock (taken first)."""
        if type(key) in (list, tuple):
            if len(key) >= self._n:
                return self._all
            index = self._index
            known = {index(k) for k in key}
            if None in known:
                known.discard(None)
                return _Held([self.init_lock] + [self._locks[i] for i in sorted(known)])
            if len(known) == 1:
                return self._locks[known.pop()]
            return _Held([self._locks[i] for i in sorted(known)])
        try:
            i = self._of.get(key)
        except TypeError:  # unhashable: not a key
            i = None
        # one key: its lock itself (a C-level context manager, the cheapest)
        return self.init_lock if i is None else self._locks[i]

    def hold_all(self, with_init: bool = False) -> _Held:
        """Every key lock, in order (an operation on the whole store);
        ``with_init``: the init lock first, so no key is added meanwhile."""
        return _Held(([self.init_lock] if with_init else []) + self._locks)
