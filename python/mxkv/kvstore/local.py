"""The local KVStore: MXNet's ``KVStoreLocal`` over a Comm.

Every call first flattens and validates all of its (key, value) pairs
(``_validate_*``); only when the whole call is valid does it touch the store
(``_apply_*``), so a failing call leaves the store exactly as it was. Both
steps run holding the locks of the call's keys (``locks.py``), so each call
is atomic per key while calls on other keys run in parallel, from any number
of threads; operations on the whole store (optimizer, states, compression)
hold every lock.

Stored values live on the store context (``cpu_pinned(0)``) and never
change when the caller writes to its arrays: ``init`` copies; a one-device
dense push is kept by reference, copy-on-write (``stored.py``); ``pull``
copies out. Without an updater a push makes the merged value the stored
value; with one, the updater runs once per key per push as
``updater(key, merged, stored)``. The merged value has the storage type of
the first pushed value (as MXNet), and is summed in the key's dtype.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from .. import optimizer as opt
from ..base import MXNetError
from ..context import cpu_pinned, free_pinned_blocks
from ..fileio import atomic_write, read_bytes
from ..ndarray import NDArray
from ..ndarray.cow import any_shared, before_write
from ..ndarray.sparse import RowSparseNDArray
from ..optimizer import Updater
from ..optimizer.states_file import read_states, sealed
from .base import KVStoreBase, _local_comm, mark_closed, register_family
from .comm import create_comm
from .comm.nccl import check_nccl_available
from .compression import GradientCompression
from .keys import check_priority, flatten, group, key_name, pair_row_ids
from .locks import KeyLocks
from .small import SmallKeys
from .stored import SHARE_MIN_BYTES, StoredValues

__all__ = ["KVStore", "KeyLayout"]


def _stype(a: Any) -> str:
    return "row_sparse" if isinstance(a, RowSparseNDArray) else "default"


def _dtype_name(a: Any) -> str:
    return np.dtype(a.dtype).name


class KeyLayout(NamedTuple):
    """A key's shape, dtype (numpy's) and storage type (``'default'`` or
    ``'row_sparse'``), as :meth:`KVStore.layouts` lists them."""

    shape: Tuple[int, ...]
    dtype: np.dtype
    stype: str


class KVStore(KVStoreBase):
    """A key-value store on one machine.

    Parameters
    ----------
    name : str
        The type string it was created with (``kv.type`` returns it).
    comm : str
        ``'cpu'`` (reduce in host memory) or ``'device'`` (reduce on the
        devices the values live on).
    """

    def __init__(self, name: str = "local", comm: str = "cpu") -> None:
        self._type = name
        self._comm = create_comm(comm)
        self._store_ctx = cpu_pinned(0)  # MXNet's pinned_ctx_
        self._comm.store_ctx = self._store_ctx
        reducer = self._comm.reducer  # (not a bound method: no cycle through the store)
        self._data = StoredValues(self._store_ctx,
                                  lambda dst, src: reducer.copy_to_all(src, [dst]))
        self._init_stype: Dict[Any, str] = {}
        self._order: Dict[Any, int] = {}
        self._key_is_str: Optional[bool] = None
        self._updater: Optional[Callable] = None
        self._compression: Optional[GradientCompression] = None
        self._locks = KeyLocks()
        # Calls over small keys in one pass (small.py), for a store that keeps
        # the steps it stands in for; told below what changes.
        self._small: Optional[SmallKeys] = None
        if SmallKeys.applies(type(self), KVStore, self._comm):
            self._small = SmallKeys(self._data, self._comm, self._init_stype, self._order)
        self._store_closed = False

    # -- properties --------------------------------------------------------
    @property
    def type(self) -> str:
        """The type string, lower-cased (``'local'``, ``'device'``...)."""
        return self._type

    @property
    def rank(self) -> int:
        """0: a local store is one worker."""
        return 0

    @property
    def num_workers(self) -> int:
        """1: a local store is one worker."""
        return 1

    def is_capable(self, capability: str) -> bool:
        """True for ``'optimizer'`` (:meth:`set_optimizer` runs the updates here).

        Raises
        ------
        ValueError
            Any other capability, as MXNet.
        """
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def __repr__(self) -> str:
        return f"<KVStore type={self._type} keys={len(self._data)}>"

    # -- validation helpers ---------------------------------------------------
    def _check_key_type(self, is_str: bool, op: str, pairs: list) -> None:
        # (an empty key list counts as int keys, as in MXNet)
        if self._key_is_str is not None and self._key_is_str != (is_str and bool(pairs)):
            have = "str" if self._key_is_str else "int"
            what = f"key {key_name(pairs[0][0])} is {'str' if is_str else 'int'}" if pairs \
                else "an empty key list counts as int keys"
            raise MXNetError(
                f"{op}: mixed key types are not allowed: {what} but this store uses {have} keys"
            )

    def _stored(self, key: Any, op: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise MXNetError(f"{op}: key {key_name(key)} has not been initialized") from None

    @staticmethod
    def _check_shape(key: Any, stored: Any, value: Any, op: str, verb: str) -> None:
        if value.shape != stored.shape:
            raise MXNetError(
                f"{op}: key {key_name(key)} was {verb} shape {value.shape} but was "
                f"initialized with shape {stored.shape}"
            )

    def _sorted_keys(self, keys) -> List[Any]:
        if self._key_is_str:
            return sorted(keys, key=lambda k: self._order.get(k, 0))
        return sorted(keys)

    def _optimizer_updater(self) -> bool:
        if self._updater is None:
            return False
        return isinstance(self._updater, Updater)

    # -- init ------------------------------------------------------------------
    def _validate_init(self, key: Any, value: Any, op: str):
        pairs, is_str = flatten(key, value, op)
        self._check_key_type(is_str, op, pairs)
        seen = set()
        for k, _ in pairs:
            if k in self._data or k in seen:
                raise MXNetError(
                    f"{op}: duplicate init of key {key_name(k)}. Please double check if you "
                    "called kv.init or kv.broadcast with this key multiple times"
                )
            seen.add(k)
        return pairs, is_str

    def _apply_init(self, pairs: list, is_str: bool) -> None:
        for k, v in pairs:
            stored = v.copyto(self._store_ctx)
            self._data.set(k, stored)
            self._init_stype[k] = _stype(stored)
            self._order[k] = len(self._order)
            self._comm.init(k, stored.shape, stored.dtype, _stype(stored))
        if pairs:
            self._key_is_str = is_str
            if self._small is not None:
                self._small.set_key_kind(is_str)

    def init(self, key: Any, value: Any) -> None:
        """Initialize one key or a list of keys with values (copied).

        Parameters
        ----------
        key : int or str, or a list of them
            The keys; a store takes int keys or str keys, not both.
        value : NDArray, or a list of NDArrays
            One value per key; the store keeps a copy.

        Raises
        ------
        MXNetError
            A key initialized before (or twice in the call), or of the other
            kind than the store's keys; nothing is initialized then.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init('3', mx.nd.ones((2, 3)) * 2)
        >>> kv.init(['5', '7'], [mx.nd.ones((2, 3))] * 2)
        >>> a = mx.nd.zeros((2, 3))
        >>> kv.pull('3', out=a)
        >>> a.asnumpy()
        array([[2., 2., 2.],
               [2., 2., 2.]], dtype=float32)
        """
        locks = self._locks
        with locks.init_lock:
            pairs, is_str = self._validate_init(key, value, "init")
            keys = [k for k, _ in pairs]
            locks.add(keys)
            with locks.hold(keys):
                self._apply_init(pairs, is_str)

    # -- push -----------------------------------------------------------------
    def _validate_push(self, key: Any, value: Any, op: str) -> dict:
        pairs, is_str = flatten(key, value, op)
        self._check_key_type(is_str, op, pairs)
        grouped = group(pairs)
        stored_values = self._data.values
        optimizer = self._optimizer_updater()
        for k, vals in grouped.items():
            stored = stored_values.get(k)
            if stored is None:
                stored = self._stored(k, op)
            if type(stored) is NDArray:  # the common case, checked cheaply
                shape = stored._array.shape
                for v in vals:
                    if type(v) is not NDArray or v._array.shape != shape:
                        self._check_shape(k, stored, v, op, "pushed")
            else:
                for v in vals:
                    self._check_shape(k, stored, v, op, "pushed")
            if optimizer:
                self._check_optimizer_push(k, stored, vals, op)
                updater: Any = self._updater
                if getattr(updater, "_unchecked", None):  # states loaded before init
                    updater.check_state(k, stored.shape)
            if self._compression is not None and (
                    np.dtype(stored.dtype) != np.float32
                    or any(v.dtype != np.float32 for v in vals)):
                raise MXNetError(
                    f"{op}: key {key_name(k)} has dtype {_dtype_name(stored)}; "
                    f"{self._compression.type} gradient compression needs float32 values"
                )
        self._comm.validate_push(grouped)
        return grouped

    @staticmethod
    def _check_optimizer_push(k: Any, stored: Any, vals: list, op: str) -> None:
        if len(vals) == 1 and type(vals[0]) is NDArray and vals[0].dtype != stored.dtype:
            # MXNet hands the optimizer this value as the gradient; its
            # update fails inside the callback and is silently dropped.
            raise MXNetError(
                f"{op}: key {key_name(k)} was pushed dtype {_dtype_name(vals[0])} but "
                f"holds dtype {_dtype_name(stored)}; the optimizer needs a gradient of "
                f"the weight's dtype (cast it with astype, or push from several devices)"
            )
        if isinstance(stored, RowSparseNDArray) and \
                stored._indices.shape[0] != stored.shape[0]:
            raise MXNetError(
                f"{op}: key {key_name(k)} holds {stored._indices.shape[0]} of its "
                f"{stored.shape[0]} rows; the optimizers update row_sparse weights only "
                "when all rows are present (init it with every row)"
            )

    def _apply_push(self, grouped: dict) -> None:
        sums: list = []  # dense sums into stored buffers, run as one batch
        try:
            self._push_keys(grouped, sums)
        finally:  # (also after an error: a buffer made private is filled)
            self._comm.reduce_many(sums)

    def _push_keys(self, grouped: dict, sums: list) -> None:
        """Push every key of ``grouped``; the dense sums without an updater are
        appended to ``sums`` as ``(key, values, stored buffer)`` for the caller."""
        stored_values, shared = self._data.values, self._data.shared_keys
        no_updater = self._updater is None
        for k in self._sorted_keys(grouped):
            vals = grouped[k]
            stored = stored_values[k]
            if no_updater and len(vals) == 1 and type(stored) is NDArray and \
                    type(vals[0]) is NDArray and k not in shared:
                a, s = vals[0]._array, stored._array
                if a.dtype == s.dtype and a.nbytes < SHARE_MIN_BYTES:
                    sums.append((k, vals, stored))  # the common small case: one copy
                    continue
            rows = isinstance(vals[0], RowSparseNDArray) or (
                self._updater is None and self._init_stype[k] == "row_sparse")
            if self._updater is None:
                if rows:
                    self._store_rows(k, self._merge_rows(k, vals, stored.dtype))
                else:
                    self._store_sum(k, vals, sums)
                continue
            merged = self._merge_rows(k, vals, stored.dtype) if rows else \
                self._merge_dense(k, vals, stored.dtype)
            stored = self._data.writable(k)
            if type(stored) is NDArray and type(merged) is NDArray \
                    and type(merged._array) is not type(stored._array):
                # As MXNet: a gradient merged on a GPU moves the weight there.
                stored = stored.copyto(merged.context)
                self._data.set(k, stored)
            self._updater(k, merged, stored)

    def _merge_rows(self, k: Any, vals: list, dtype: Any) -> RowSparseNDArray:
        """The row-sparse sum of ``vals`` (dense ones as their nonzero rows), in ``dtype``."""
        rsp = [v if isinstance(v, RowSparseNDArray) else v.tostype("row_sparse") for v in vals]
        return self._comm.reduce_row_sparse(k, self.cast(rsp, dtype))

    def _merge_dense(self, k: Any, vals: list, dtype: Any) -> NDArray:
        """The dense sum of ``vals`` for an updater: one value is passed as it is
        (as MXNet), several are summed into a merge buffer in ``dtype``."""
        dense = [v.tostype("default") if isinstance(v, RowSparseNDArray) else v for v in vals]
        return self._comm.reduce(k, dense if len(dense) == 1 else self.cast(dense, dtype))

    def _store_rows(self, k: Any, merged: RowSparseNDArray) -> None:
        stored = self._data[k]
        if isinstance(stored, RowSparseNDArray):
            stored._data, stored._indices = merged._data, merged._indices
        else:  # as MXNet: the key takes the pushed value's storage type
            self._data.set(k, merged)

    def _store_sum(self, k: Any, vals: list, sums: list) -> None:
        """Make ``k``'s stored value the sum of ``vals``: shared (one value,
        copy-on-write), or a ``(key, values, out)`` job appended to ``sums``
        for the comm's ``reduce_many``."""
        dense = [v.tostype("default") if isinstance(v, RowSparseNDArray) else v for v in vals]
        if len(dense) == 1 and self._compression is None and \
                self._data.can_share(k, dense[0]) and self._data.share(k, dense[0]):
            return  # copy-on-write: no copy now, none later unless written
        stored = self._data[k]
        if isinstance(stored, RowSparseNDArray):
            out = NDArray(np.empty(stored.shape, stored.dtype), self._store_ctx)
            self._data.set(k, out)
        else:
            out = self._data.writable(k, keep=False)
        sums.append((k, self.cast(dense, out.dtype), out))

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Push values: several values for one key are summed first.

        Without an updater the stored value becomes the sum; with one,
        ``updater(key, merged, stored)`` runs once per key. Values of
        another dtype than the key's are cast to it.

        Parameters
        ----------
        key : int or str, or a list of them
            Initialized keys.
        value : NDArray, a list of NDArrays, or a list of lists
            For one key, a value or a list of values (one per device,
            summed); for a list of keys, one value or one list per key.
        priority : int, default 0
            Accepted as MXNet's; calls are synchronous here.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init(3, mx.nd.zeros((2, 3)))
        >>> kv.push(3, [mx.nd.ones((2, 3), ctx=mx.cpu(i)) for i in range(4)])
        >>> a = mx.nd.zeros((2, 3))
        >>> kv.pull(3, out=a)
        >>> a.asnumpy()[0]
        array([4., 4., 4.], dtype=float32)
        """
        check_priority(priority, "push")
        with self._locks.hold(key):
            if self._small is not None and self._small.push(key, value):
                return
            grouped = self._validate_push(key, value, "push")
            self._apply_push(grouped)

    # -- pull -----------------------------------------------------------------
    def _validate_pull(self, key: Any, out: Any, op: str, ignore_sparse: bool,
                   pending: Optional[dict] = None):
        if out is None:
            raise MXNetError(f"{op}: out is required (the arrays to pull into)")
        pairs, is_str = flatten(key, out, op, what="out")
        self._check_key_type(is_str, op, pairs)
        stored_values = self._data.values
        grouped: dict = {}
        for k, o in pairs:
            stored = pending.get(k) if pending is not None else None
            if stored is None:
                stored = stored_values.get(k)
                if stored is None:
                    stored = self._stored(k, op)
            if type(o) is NDArray and type(stored) is NDArray and \
                    o._array.shape == stored._array.shape:
                pass  # the common case, checked cheaply
            elif isinstance(o, RowSparseNDArray) and ignore_sparse:
                continue  # MXNet ignores row_sparse outs unless ignore_sparse=False
            else:
                self._check_shape(k, stored, o, op, "pulled into")
            lst = grouped.get(k)
            if lst is None:
                grouped[k] = [o]
            else:
                lst.append(o)
        return grouped

    def _apply_pull(self, grouped: dict) -> None:
        if any_shared():  # someone shares a buffer: outs may need telling first
            shared = self._data.shared_keys
            for k in self._sorted_keys(grouped):
                outs = self._writable_outs(k, grouped[k], shared)
                if k in shared:  # copying from a pushed buffer: no write may land meanwhile
                    with self._data.guard(k):
                        self._pull_keys({k: outs})
                else:
                    self._pull_keys({k: outs})
            return
        self._pull_keys(grouped)

    def _pull_keys(self, grouped: dict) -> None:
        copies: list = []  # dense copies, run as batches
        try:
            self._pull_each(grouped, copies)
        finally:
            self._comm.broadcast_many(copies)

    def _pull_each(self, grouped: dict, copies: list) -> None:
        """Pull every key of ``grouped``; the common dense copies are appended to
        ``copies`` as ``(key, stored, outs)``, run here before any other key's
        pull (outs may overlap) and by the caller at the end."""
        stored_values = self._data.values
        for k in self._sorted_keys(grouped):
            outs = grouped[k]
            stored = stored_values[k]  # (read here: it may have gone private meanwhile)
            if type(stored) is NDArray and ((len(outs) == 1 and type(outs[0]) is NDArray) or
                                            all(type(o) is NDArray for o in outs)):
                if outs:
                    copies.append((k, stored, outs))
                continue
            self._comm.broadcast_many(copies)  # in key order: outs may overlap
            copies.clear()
            if isinstance(stored, RowSparseNDArray):
                for o in outs:
                    stored.copyto(o)
                continue
            dense = [o for o in outs if not isinstance(o, RowSparseNDArray)]
            if dense:
                self._comm.broadcast(k, stored, dense)
            if len(dense) != len(outs):  # row_sparse outs, with ignore_sparse=False
                as_rsp = stored.tostype("row_sparse")
                for o in outs:
                    if isinstance(o, RowSparseNDArray):
                        as_rsp.copyto(o)

    def _writable_outs(self, k: Any, outs: list, shared: dict) -> list:
        """``outs`` ready to be written: holders sharing their buffers are told
        (``before_write``); an out that is exactly key ``k``'s shared value
        (pulling a one-device push back into its array) needs no write at all."""
        ready = []
        for o in outs:
            if isinstance(o, RowSparseNDArray):
                ready.append(o)
            elif not (k in shared and _same_buffer(o, self._data.values[k])):
                before_write(o._array)
                ready.append(o)
        return ready

    def pull(self, key: Any, out: Any = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Pull the stored values into ``out`` (one array, a list, or a list
        of lists), each on its own context and cast to its dtype. Row-sparse
        outs are skipped unless ``ignore_sparse=False``.

        Parameters
        ----------
        key : int or str, or a list of them
            Initialized keys.
        out : NDArray, a list of NDArrays, or a list of lists
            Where the values go, each of its key's shape.
        priority : int, default 0
            Accepted as MXNet's; calls are synchronous here.
        ignore_sparse : bool, default True
            Skip row-sparse outs (MXNet's default); ``False`` fills them too.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init('w', mx.nd.full((3,), 7.0))
        >>> outs = [mx.nd.zeros((3,), ctx=mx.cpu(i)) for i in range(2)]
        >>> kv.pull('w', out=outs)
        >>> [o.asnumpy().tolist() for o in outs]
        [[7.0, 7.0, 7.0], [7.0, 7.0, 7.0]]
        """
        check_priority(priority, "pull")
        with self._locks.hold(key):
            if self._small is not None and self._small.pull(key, out):
                return
            grouped = self._validate_pull(key, out, "pull", ignore_sparse)
            self._apply_pull(grouped)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Push then pull in one call; ``out`` defaults to ``value``.

        Parameters
        ----------
        key, value, priority
            As :meth:`push`.
        out : as :meth:`pull`'s, optional
            Where the result goes; by default into ``value`` itself.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init(0, mx.nd.zeros((2,)))
        >>> grads = [mx.nd.ones((2,)), mx.nd.ones((2,)) * 2]
        >>> kv.pushpull(0, grads)            # both now hold the sum
        >>> grads[1].asnumpy()
        array([3., 3.], dtype=float32)
        """
        check_priority(priority, "pushpull")
        with self._locks.hold(key):
            if self._small is not None and \
                    self._small.pushpull(key, value, out, self._apply_pull):
                return
            grouped = self._validate_push(key, value, "pushpull")
            pulls = self._validate_pull(key, value if out is None else out, "pushpull", True)
            self._apply_push(grouped)
            self._apply_pull(pulls)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """Initialize ``key`` with ``value`` and pull it into ``out``."""
        check_priority(priority, "broadcast")
        locks = self._locks
        with locks.init_lock:
            pairs, is_str = self._validate_init(key, value, "broadcast")
            pending = dict(pairs)
            pulls = self._validate_pull(key, out, "broadcast", True, pending=pending)
            keys = [k for k, _ in pairs]
            locks.add(keys)
            with locks.hold(keys):
                self._apply_init(pairs, is_str)
                self._apply_pull(pulls)

    # -- row_sparse_pull --------------------------------------------------------
    def _validate_row_sparse_pull(self, key: Any, out: Any, row_ids: Any) -> tuple:
        """Check a whole row_sparse_pull; returns ``([(key, out, sorted unique
        ids)], outs to copy the first out into)``."""
        op = "row_sparse_pull"
        if out is None:
            raise MXNetError(f"{op}: out is required")
        if row_ids is None:
            raise MXNetError(f"{op}: row_ids is required")
        pairs, rids, copies = pair_row_ids(key, out, row_ids, op)
        is_str = bool(pairs) and isinstance(pairs[0][0], str)
        self._check_key_type(is_str, op, pairs)
        plan = []
        for (k, o), rid in zip(pairs, rids):
            stored = self._stored(k, op)
            if not isinstance(stored, RowSparseNDArray):
                raise MXNetError(f"{op}: key {key_name(k)} holds a dense value; "
                                 "row_sparse_pull expects a row_sparse stored value")
            if not isinstance(o, RowSparseNDArray):
                raise MXNetError(f"{op}: out for key {key_name(k)} must be row_sparse, "
                                 f"got stype {getattr(o, 'stype', type(o).__name__)}")
            self._check_shape(k, stored, o, op, "pulled into")
            if not isinstance(rid, NDArray) or isinstance(rid, RowSparseNDArray):
                raise MXNetError(f"{op}: row_ids for key {key_name(k)} must be a dense "
                                 f"NDArray, got {getattr(rid, 'stype', type(rid).__name__)}")
            ids = np.unique(np.asarray(rid.asnumpy(), dtype=np.int64).reshape(-1))
            if ids.size and (ids[0] < 0 or ids[-1] >= stored.shape[0]):
                bad = ids[0] if ids[0] < 0 else ids[-1]
                raise MXNetError(f"{op}: row id {int(bad)} is out of range for key "
                                 f"{key_name(k)} of shape {stored.shape}")
            plan.append((k, o, ids))
        if copies:  # (they come with exactly one out pulled into: pair_row_ids)
            first = pairs[0][1]
            for c in copies:
                if not isinstance(c, NDArray) or c.shape != first.shape:
                    raise MXNetError(f"{op}: every out must have shape {first.shape}, got "
                                     f"{getattr(c, 'shape', type(c).__name__)}")
        return plan, copies

    def row_sparse_pull(self, key: Any, out: Any = None, priority: int = 0,
                        row_ids: Any = None) -> None:
        """Pull only the rows ``row_ids`` of row-sparse values into row-sparse ``out``.

        ``row_ids`` has the nesting of ``out`` (one NDArray per out: for
        several keys with several outs each, a list of lists), or is a single
        NDArray (or a list of one) for one key: the first out is pulled and
        copied into the others. Duplicated or unsorted ids are allowed.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init('emb', mx.nd.array([[1, 1], [2, 2], [3, 3]]).tostype('row_sparse'))
        >>> out = mx.nd.sparse.zeros('row_sparse', (3, 2))
        >>> kv.row_sparse_pull('emb', out=out, row_ids=mx.nd.array([2, 0]))
        >>> out.indices.asnumpy(), out.data.asnumpy()
        (array([0, 2]), array([[1., 1.],
               [3., 3.]], dtype=float32))
        """
        check_priority(priority, "row_sparse_pull")
        with self._locks.hold(key):
            plan, copies = self._validate_row_sparse_pull(key, out, row_ids)
            self._apply_row_sparse_pull(plan)
            for c in copies:
                plan[0][1].copyto(c)

    def _apply_row_sparse_pull(self, plan: list) -> None:
        for k, o, ids in plan:
            # As MXNet's sparse_retain: exactly the requested rows, zero where
            # the stored value has none.
            stored = self._data[k]
            have = stored._indices
            if not have.shape[0]:
                ids = ids[:0]  # as MXNet: a value with no rows retains none
            data = np.zeros((ids.shape[0],) + tuple(stored.shape[1:]), stored._data.dtype)
            if have.shape[0] and ids.shape[0]:
                pos = np.minimum(np.searchsorted(have, ids), have.shape[0] - 1)
                hit = have[pos] == ids
                data[hit] = stored._data[pos[hit]]
            RowSparseNDArray(data, ids, stored.shape, self._store_ctx).copyto(o)

    # -- updaters and optimizers ---------------------------------------------------
    def _set_updater(self, updater: Callable) -> None:
        """Set ``updater(key, merged, stored)``, run once per key on every push."""
        if not callable(updater):
            raise MXNetError(f"_set_updater: updater must be callable, got "
                             f"{type(updater).__name__}")
        with self._locks.hold_all():  # no push sees half of the change
            self._updater = updater
            if self._small is not None:
                self._small.set_updater(updater, self._optimizer_updater())

    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` on the store: every push updates the stored weights.

        Parameters
        ----------
        optimizer : mx.optimizer.Optimizer
            Its update runs once per key per push, with the pushed sum as
            the gradient.

        Examples
        --------
        >>> kv = mx.kv.create('local')
        >>> kv.init(0, mx.nd.ones((2,)))
        >>> kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
        >>> kv.push(0, mx.nd.ones((2,)))     # the gradient
        >>> w = mx.nd.zeros((2,))
        >>> kv.pull(0, out=w)
        >>> w.asnumpy()
        array([0.9, 0.9], dtype=float32)
        """
        if not isinstance(optimizer, opt.Optimizer):
            raise MXNetError(f"set_optimizer: expected an mx.optimizer.Optimizer, got "
                             f"{type(optimizer).__name__}")
        self._set_updater(opt.get_updater(optimizer))

    def _states_updater(self, op: str):
        if self._updater is None:
            raise MXNetError(f"{op}: no optimizer is set on this store (call set_optimizer)")
        if not hasattr(self._updater, "get_states"):
            raise MXNetError(f"{op}: the updater set with _set_updater has no states to save")
        return self._updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Save the updater's states (and the optimizer when ``dump_optimizer``).

        The states are taken between pushes (no push is half applied in
        them), and the file is replaced atomically: it holds the previous
        states or the new ones, whatever happens (``mxkv.fileio``). It is
        MXNet's pickle followed by a CRC-32 trailer that pickle ignores.

        Parameters
        ----------
        fname : str
            The file to write.
        dump_optimizer : bool, default False
            Also save the optimizer (its class and hyper-parameters).

        Examples
        --------
        >>> import os, tempfile
        >>> kv = mx.kv.create('local')
        >>> kv.init(0, mx.nd.ones((2,)))
        >>> kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        >>> kv.push(0, mx.nd.ones((2,)))
        >>> path = os.path.join(tempfile.mkdtemp(), 'sgd.states')
        >>> kv.save_optimizer_states(path)
        >>> kv.load_optimizer_states(path)   # the momentum as it was saved
        """
        with self._locks.hold_all():
            states = self._states_updater("save_optimizer_states").get_states(dump_optimizer)
        atomic_write(fname, sealed(states), "optimizer states file")

    def load_optimizer_states(self, fname: str) -> None:
        """Load states saved by :meth:`save_optimizer_states` (or by MXNet).

        The file is read with a restricted unpickler (arrays, numbers,
        tuples, dicts and optimizers only) and checked whole, shapes against
        this store's keys included, before anything changes: on any error the
        updater, its states and its optimizer are exactly as before.

        Raises
        ------
        MXNetIOError
            The file cannot be read or is not a valid states file.
        MXNetValueError
            A state's shape differs from its key's.
        """
        self._states_updater("load_optimizer_states")
        data = read_bytes(fname, "optimizer states file")
        loaded = read_states(data, f"load_optimizer_states: {os.fspath(fname)!r}")
        with self._locks.hold_all(with_init=True):
            updater = self._states_updater("load_optimizer_states")
            if not hasattr(updater, "install"):  # a user's updater with its own set_states
                updater.set_states(data)
                return
            updater.install(loaded, {k: tuple(v.shape) for k, v in self._data.items()})

    # -- compression ------------------------------------------------------------------
    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress pushed gradients (``{'type': '2bit', 'threshold': 0.5}``).

        Accepted on ``device`` and ``dist`` types only, as in MXNet.
        """
        if "device" not in self._type and "dist" not in self._type:
            raise MXNetError("Gradient compression is not supported for this type of kvstore")
        gc = GradientCompression.create(compression_params)
        with self._locks.hold_all(with_init=True):
            for k, v in self._data.items():
                if np.dtype(v.dtype) != np.float32:
                    raise MXNetError(f"set_gradient_compression: key {key_name(k)} has dtype "
                                     f"{np.dtype(v.dtype).name}; compression needs float32")
            self._compression = gc
            if self._small is not None:
                self._small.set_compression(True)
            self._comm.set_gradient_compression(gc)

    # -- for code that embeds a store (docs/architecture.md) -------------------------
    # A distributed server shard keeps its parts in a local store, and the
    # states code reads a worker's keys: they use these, never the fields.
    # Those that change the store hold the key's lock (updater states: every lock).
    def stored_value(self, key: Any) -> Any:
        """The value stored under ``key`` (NDArray or RowSparseNDArray), not
        copied: the caller reads it and never writes into it. Taken without
        a lock (it is a reference): reading it while a push of ``key`` runs
        is the caller's to prevent.

        Raises
        ------
        MXNetError
            ``key`` has not been initialized.
        """
        return self._stored(key, "stored_value")

    def layouts(self) -> Dict[Any, KeyLayout]:
        """Every key's shape, dtype and storage type, in init order."""
        with self._locks.hold_all():
            return {k: KeyLayout(tuple(v.shape), np.dtype(v.dtype), _stype(v))
                    for k, v in self._data.items()}

    def replace_value(self, key: Any, value: NDArray) -> None:
        """Make dense ``value`` (``key``'s shape and dtype, host memory) the
        stored value of ``key``, kept without a copy: from now on the store
        owns it, and nothing else writes into it."""
        with self._locks.hold(key):
            stored = self._stored(key, "replace_value")
            if value.shape != stored.shape or np.dtype(value.dtype) != np.dtype(stored.dtype):
                raise MXNetError(f"replace_value: key {key_name(key)} holds shape "
                                 f"{stored.shape} {_dtype_name(stored)}, got "
                                 f"{value.shape} {_dtype_name(value)}")
            self._data.set(key, value)

    def sum_into(self, key: Any, values: List[Any], out: NDArray) -> None:
        """Store the sum of ``values`` (dense, each cast to ``out``'s dtype,
        summed in order, as a push without an updater sums them) as the value
        of ``key``, written into ``out``, which the store then keeps (as
        :meth:`replace_value`). No updater runs: a store with one raises."""
        with self._locks.hold(key):
            if self._updater is not None:
                raise MXNetError(f"sum_into: key {key_name(key)}: this store has an "
                                 "updater; push the values instead")
            self._stored(key, "sum_into")
            self._comm.reduce(key, self.cast(values, out.dtype), out=out)
            self._data.set(key, out)

    @staticmethod
    def cast(values: List[Any], dtype: Any) -> List[Any]:
        """``values`` in ``dtype``: those of another dtype converted
        (``astype``), the others as they are (the store's cast rule)."""
        return [v if v.dtype == dtype else v.astype(dtype) for v in values]

    @property
    def updater(self) -> Any:
        """The updater pushes run (set by :meth:`set_optimizer` or
        ``_set_updater``), or None."""
        return self._updater

    @property
    def keeps_states(self) -> bool:
        """Whether the updater keeps per-key states that can be saved (an
        optimizer's :class:`~mxkv.optimizer.Updater`)."""
        return self._updater is not None and hasattr(self._updater, "get_states")

    def updater_state(self, key: Any) -> Any:
        """The updater's state of ``key`` (not copied: the updater goes on
        writing into it), or None (no state yet, or no states kept)."""
        states = getattr(self._updater, "states", None)
        return None if states is None else states.get(key)

    def get_updater_states(self, dump_optimizer: bool = False) -> bytes:
        """The updater's states as a states file's bytes (with the optimizer
        when ``dump_optimizer``), taken between pushes."""
        with self._locks.hold_all():
            return self._states_updater("get_updater_states").get_states(dump_optimizer)

    def set_updater_states(self, data: bytes) -> None:
        """Give the updater the states (and optimizer, if there is one) of a
        states file's bytes; each state's shape is checked at its key's
        next update."""
        with self._locks.hold_all(with_init=True):
            updater = self._states_updater("set_updater_states")
            if not hasattr(updater, "set_states"):
                raise MXNetError("set_updater_states: the updater set with _set_updater "
                                 "cannot load states")
            updater.set_states(data)

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        """Release the store: wait for its GPU streams, destroy its NCCL
        communicator, free its merge and staging buffers and stored values.

        Idempotent. Any other operation on a closed store raises an
        MXNetError naming it. ``with mx.kv.create(...) as kv:`` closes on
        leaving the block.

        Examples
        --------
        >>> with mx.kv.create('local') as kv:
        ...     kv.init(0, mx.nd.ones((2,)))
        """
        with self._locks.hold_all(with_init=True):
            if self._store_closed:
                return
            self._store_closed = True
            try:
                self._comm.close()
            finally:
                self._data.clear()
                self._order.clear()
                self._init_stype.clear()
                self._updater = None
                mark_closed(self)
        free_pinned_blocks()  # the pool's unused page-locked blocks go back to the system

    # -- cluster-only operations (no-ops on one machine) ---------------------------------
    def _barrier(self) -> None:
        """A global barrier among workers: nothing to wait for locally."""

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """Send a command to the servers: a local store has none."""

    def num_dead_node(self, node_id: int, timeout: int = 60) -> int:
        """Number of dead nodes in a group: always 0 on one machine."""
        return 0

    def set_barrier_before_exit(self, barrier_before_exit: bool = True) -> None:
        """Whether closing the store first meets the other workers at a
        barrier: a local store has no other workers, so there is nothing to
        set (a distributed store overrides this)."""


def _make_nccl(name: str) -> KVStore:
    check_nccl_available()
    return KVStore(name, comm="nccl")


# The stores create() makes: "nccl" types over the NCCL comm, every other
# (non-dist) type a local store over the comm its name asks for.
register_family("nccl", _make_nccl)
register_family("", lambda name: KVStore(name, comm=_local_comm(name)))


def _same_buffer(out: NDArray, stored: Any) -> bool:
    """Whether dense ``out`` is exactly the memory of dense ``stored`` (same
    start, shape and dtype): copying one into the other would change nothing."""
    if isinstance(stored, RowSparseNDArray):
        return False
    a, b = out._array, stored._array
    if a is b:
        return True
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
        return False
    return (a.shape == b.shape and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])
