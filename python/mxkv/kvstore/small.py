"""Batched calls over many small keys, in one pass over the batch.

A push, pull or pushpull naming a list of keys with one small dense host
array per key (a model's biases, a table of counters; ``small_keys_1000`` and
the key-count sweep in ``docs/benchmarks.md``) would otherwise pay the general
path's per-key work: a dict of one-element lists, checks one property at a
time, a comm call per key. Here the checks run over the whole batch in
C-level loops (``map`` over attribute getters, set and list comparisons) and
the copies in one tight loop, so a key costs the same in a batch of 100 or
of 100,000.

What the checks learn about the stored side of a batch (which keys, in which
order, their stored arrays, shapes and dtypes) is kept per store for a few
key lists and reused while ``StoredValues.version`` is unchanged, so a
training loop's repeated batches check only the call's own arrays. No
object is made per key that outlives its check: a big batch gives the
garbage collector nothing new to trace.

The path is an object, :class:`SmallKeys`, that a local store owns. It sees
the store through a small interface: the store's ``StoredValues``, its comm,
its two dicts of key facts (each key's init storage type and init order), all
given when it is made, and three setters the store calls when the key kind,
the updater or the gradient compression change. It reads nothing else of the
store.

The results are exactly the general path's. Each method first checks that
the call is such a batch and valid, and returns False, having changed
nothing, when it is not; the store then takes the general path, which also
raises the errors. The copies are the ones the general path makes
(``dst[...] = src``, cast to the destination's dtype) in the same key order
(ascending int keys, init order for str keys), and an updater is called as
there, once per key. The store calls these methods holding the call's key
locks (``locks.py``), as it does its own steps.

Taken when: the store is a plain local ``KVStore`` (a subclass that
overrides one of the steps in ``REPLACES`` has none) over a comm whose small
host copies are plain copies (``Comm.batch_copies``: the ``cpu`` comm);
the call names a list or tuple of at least ``MIN_KEYS`` distinct initialized
keys with one ``NDArray`` each, in host memory, of the key's
shape, and stored values of under ``SHARE_MIN_BYTES``; no gradient
compression is set; a push's keys are not shared copy-on-write and an
optimizer's gradients have the weights' dtype; a pull needs no copy-on-write
bookkeeping (``cow.any_shared()`` is false).

A push or pull naming one key (an int or str, not a list) with one array
takes the same checks and copy for a batch of one, when no updater is set:
the Clojure bridge's calls are mostly of this kind, and the general path's
grouping costs more than the copy (``kvstore/push`` of a 2x3 array over
JPype: ``docs/bridge.md``).
"""
from __future__ import annotations

from itertools import islice
from operator import attrgetter, eq, lt
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ..ndarray import NDArray
from ..ndarray.cow import any_shared
from .stored import SHARE_MIN_BYTES, StoredValues

__all__ = ["MIN_KEYS", "REPLACES", "SmallKeys"]

# Below this many keys the general path costs no more than the checks here.
MIN_KEYS = 8
# Key lists whose stored side is remembered, per store.
_REMEMBERED = 8

#: The store's steps this path stands in for: a store class that overrides
#: one of them (the distributed worker sends pushes to servers) keeps the
#: general path (the store checks, ``local.py``).
REPLACES = ("_validate_push", "_apply_push", "_check_optimizer_push", "_store_sum",
            "_validate_pull", "_apply_pull", "_pull_keys", "_sorted_keys")

_array = attrgetter("_array")
_shape = attrgetter("shape")
_dtype = attrgetter("dtype")
_nbytes = attrgetter("nbytes")
_NDARRAY = {NDArray}
_HOST = {np.ndarray}


class _Keys:
    """The stored side of a batch of keys, valid while the store's
    ``StoredValues.version`` is ``version``."""

    __slots__ = ("version", "given", "keys", "perm", "sarrays", "shapes", "dtypes", "rows")

    def __init__(self, version: int, given: List[Any], keys: List[Any],
                 perm: Optional[List[int]], sarrays: List[Any], rows: bool) -> None:
        self.version = version
        self.given = given        # the keys as the call named them
        self.keys = keys          # in the general path's order
        self.perm = perm          # given -> that order (None: the same)
        self.sarrays = sarrays    # the stored numpy arrays, in that order
        self.shapes = list(map(_shape, sarrays))
        self.dtypes = list(map(_dtype, sarrays))
        self.rows = rows          # some key was initialized row_sparse


class _Batch:
    """A checked call: its keys' stored side and its own arrays, in order."""

    __slots__ = ("side", "nds", "arrays")

    def __init__(self, side: _Keys, nds: List[Any], arrays: List[Any]) -> None:
        self.side = side
        self.nds = nds
        self.arrays = arrays


class SmallKeys:
    """The one-pass path of one local store for calls over small keys.

    Parameters
    ----------
    data : StoredValues
        The store's stored values (read, and written through its own
        ``writable``/``set``).
    comm : Comm
        The store's comm; its ``copy_each`` makes the copies.
    init_stype : dict
        Each key's storage type at init (``'default'`` or ``'row_sparse'``),
        kept up to date by the store.
    order : dict
        Each key's init order (str keys are handled in that order).

    Notes
    -----
    The store tells it what else changes: :meth:`set_key_kind` after the
    first init, :meth:`set_updater` and :meth:`set_compression`. Every
    method that does a call returns True when it did it, or False having
    changed nothing (the store then takes its general path).
    """

    __slots__ = ("_data", "_comm", "_init_stype", "_order", "_seen",
                 "key_is_str", "updater", "optimizer", "compressed")

    def __init__(self, data: StoredValues, comm: Any, init_stype: Dict[Any, str],
                 order: Dict[Any, int]) -> None:
        self._data = data
        self._comm = comm
        self._init_stype = init_stype
        self._order = order
        self._seen: Dict[Any, _Keys] = {}
        self.key_is_str: Optional[bool] = None
        self.updater: Optional[Callable] = None
        self.optimizer = False       # the updater is an optimizer's (its checks apply)
        self.compressed = False

    @staticmethod
    def applies(store_cls: type, base_cls: type, comm: Any) -> bool:
        """Whether a store of ``store_cls`` over ``comm`` may have this path:
        the comm's small host copies are plain copies and the class keeps
        ``base_cls``'s steps listed in ``REPLACES``."""
        return bool(getattr(comm, "batch_copies", False)) and \
            all(getattr(store_cls, name) is getattr(base_cls, name) for name in REPLACES)

    # -- what the store tells it -------------------------------------------------
    def set_key_kind(self, is_str: bool) -> None:
        """The store's keys are str (True) or int (False)."""
        self.key_is_str = is_str

    def set_updater(self, updater: Optional[Callable], optimizer: bool) -> None:
        """The store's updater (``optimizer``: it is an optimizer's ``Updater``)."""
        self.updater = updater
        self.optimizer = optimizer

    def set_compression(self, compressed: bool) -> None:
        """Whether the store compresses pushed gradients (then no push is taken here)."""
        self.compressed = compressed

    # -- checks ------------------------------------------------------------------
    def _stored_side(self, keys: List[Any]) -> Optional[_Keys]:
        """The stored side of ``keys`` (a list of at least MIN_KEYS int or str
        keys of the store's kind), remembered or checked now; None when they
        are not distinct initialized keys stored as small host NDArrays."""
        data = self._data
        version = data.version
        seen = self._seen
        tag = (len(keys), keys[0])
        hit = seen.get(tag)
        if hit is not None:
            if hit.version == version and hit.given == keys:
                return hit
            seen.pop(tag, None)  # (stale: let go of the old stored objects)
        values = data.values
        try:
            stored = list(map(values.__getitem__, keys))
        except KeyError:
            return None
        if set(map(type, stored)) != _NDARRAY:
            return None
        # The general path's order: ascending int keys, str keys in init order.
        ranks = keys if not self.key_is_str else list(map(self._order.__getitem__, keys))
        perm = None
        ordered = keys
        if not all(map(lt, ranks, islice(ranks, 1, None))):  # not strictly increasing
            if len(set(ranks)) != len(ranks):
                return None  # a key named twice: its values are summed (general path)
            perm = sorted(range(len(ranks)), key=ranks.__getitem__)
            ordered = [keys[i] for i in perm]
            stored = [stored[i] for i in perm]
        sarrays = list(map(_array, stored))
        # Small: below the size a push would share, which needs the stored
        # dtype and shape (so the stored side says it for the pushed one too).
        if set(map(type, sarrays)) != _HOST or max(map(_nbytes, sarrays)) >= SHARE_MIN_BYTES:
            return None
        rows = "row_sparse" in map(self._init_stype.__getitem__, ordered)
        side = _Keys(version, list(keys), ordered, perm, sarrays, rows)
        if len(seen) >= _REMEMBERED:
            seen.clear()
        seen[tag] = side
        return side

    def _batch(self, keys: Any, nds: Any) -> Optional[_Batch]:
        """The call as a batch, or None when it is not a batch of distinct
        initialized keys with one small host NDArray each of the key's shape."""
        if type(keys) is not list:
            if type(keys) is not tuple:
                return None
            keys = list(keys)
        n = len(keys)
        if n < MIN_KEYS or (type(nds) is not list and type(nds) is not tuple) \
                or len(nds) != n or self.key_is_str is None:
            return None
        if set(map(type, keys)) != ({str} if self.key_is_str else {int}):
            return None  # (mixed or other key types: the general path says which)
        if set(map(type, nds)) != _NDARRAY:
            return None
        side = self._stored_side(keys)
        if side is None:
            return None
        if side.perm is not None:
            nds = [nds[i] for i in side.perm]
        arrays = list(map(_array, nds))
        if set(map(type, arrays)) != _HOST or \
                not all(map(eq, map(_shape, arrays), side.shapes)):
            return None
        return _Batch(side, nds, arrays)

    def _push_batch(self, keys: Any, values: Any) -> Optional[_Batch]:
        if self.compressed:
            return None
        b = self._batch(keys, values)
        if b is None:
            return None
        shared = self._data.shared_keys
        if shared and not shared.keys().isdisjoint(b.side.keys):
            return None  # copy-on-write bookkeeping: the general path
        updater = self.updater
        # (list equality tries identity first: one dtype object per builtin type)
        if updater is None:
            if b.side.rows and list(map(_dtype, b.arrays)) != b.side.dtypes:
                # A cast into a key initialized row_sparse stores rows (general
                # path); every other key takes the cast copy made here.
                return None
        elif self.optimizer:
            # The optimizer's checks (_check_optimizer_push): a gradient of the
            # weight's dtype; states loaded before init are checked on first push.
            if getattr(updater, "_unchecked", None) or \
                    list(map(_dtype, b.arrays)) != b.side.dtypes:
                return None
        return b

    def _apply_push(self, b: _Batch) -> None:
        updater = self.updater
        if updater is None:
            self._comm.copy_each(b.side.sarrays, b.arrays)
            return
        # As the general path: the one pushed value is the merged value, and
        # the updater gets the key's writable stored value, read when its turn
        # comes (an updater may call back into the store).
        writable, set_value = self._data.writable, self._data.set
        for k, merged in zip(b.side.keys, b.nds):
            stored = writable(k)
            if type(stored._array) is not type(merged._array):  # (as the general path)
                stored = stored.copyto(merged.context)
                set_value(k, stored)
            updater(k, merged, stored)

    def _pull_batch(self, keys: Any, outs: Any) -> Optional[_Batch]:
        if any_shared():
            return None  # outs may need telling before they are written: general path
        return self._batch(keys, outs)

    def _one(self, key: Any, nd: Any) -> Optional[tuple]:
        """A call naming one int or str key with one array, as the pair
        (stored numpy array, the call's numpy array), or None when it is not
        an initialized key stored as a small host NDArray, with a host NDArray
        of its shape (the checks of ``_batch``, for one key; a key of the
        other kind than the store's is never stored, so it is not found)."""
        if type(nd) is not NDArray:
            return None
        stored = self._data.values.get(key)
        if type(stored) is not NDArray:
            return None
        sa, a = stored._array, nd._array
        if type(sa) is not np.ndarray or type(a) is not np.ndarray or a.shape != sa.shape \
                or sa.nbytes >= SHARE_MIN_BYTES:
            return None
        return sa, a

    def _push_one(self, key: Any, value: Any) -> bool:
        """``push(key, value)`` for one small key and no updater (the batch
        path's rules for a batch of one; an updater takes the general path)."""
        if self.compressed or self.updater is not None:
            return False
        pair = self._one(key, value)
        if pair is None:  # (a key shared copy-on-write holds SHARE_MIN_BYTES or more: not here)
            return False
        sa, a = pair
        if a.dtype != sa.dtype and self._init_stype[key] == "row_sparse":
            return False  # (a cast into a key initialized row_sparse stores rows)
        self._comm.copy_each((sa,), (a,))
        return True

    # -- the calls -----------------------------------------------------------------
    def push(self, keys: Any, values: Any) -> bool:
        """``store.push(keys, values)`` for a batch of small keys, or one small
        key; False when the call is not one (nothing changed: the store takes
        the general path)."""
        if type(keys) is int or type(keys) is str:
            return self._push_one(keys, values)
        b = self._push_batch(keys, values)
        if b is None:
            return False
        self._apply_push(b)
        return True

    def pull(self, keys: Any, outs: Any) -> bool:
        """``store.pull(keys, out=outs)`` for a batch of small keys, or one
        small key into one out; False when the call is not one (nothing changed)."""
        if type(keys) is int or type(keys) is str:
            pair = None if any_shared() else self._one(keys, outs)
            if pair is None:
                return False
            self._comm.copy_each((pair[1],), (pair[0],))
            return True
        b = self._pull_batch(keys, outs)
        if b is None:
            return False
        self._comm.copy_each(b.arrays, b.side.sarrays)
        return True

    def pushpull(self, keys: Any, values: Any, outs: Any,
                 general_pull: Callable[[dict], None]) -> bool:
        """``store.pushpull(keys, values, out=outs)`` for a batch of small keys;
        False when the call is not one (nothing changed). ``general_pull``
        (the store's pull step, given ``{key: [out]}``) pulls when an updater
        left the stored side in a state this path does not take."""
        pushed = self._push_batch(keys, values)
        if pushed is None:
            return False
        pulls = self._pull_batch(keys, values if outs is None else outs)
        if pulls is None:
            return False
        self._apply_push(pushed)
        if self.updater is not None:
            # An updater may have changed stored objects or shared a buffer:
            # check the pull again, or let the general path pull.
            again = self._pull_batch(pulls.side.keys, pulls.nds)
            if again is None:
                general_pull({k: [o] for k, o in zip(pulls.side.keys, pulls.nds)})
                return True
            pulls = again
        self._comm.copy_each(pulls.arrays, pulls.side.sarrays)
        return True
