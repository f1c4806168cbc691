"""The KVStore interface, its registry and the factory (MXNet's ``kvstore/base.py``).

``create(name)`` lower-cases the name, looks it up in the registry of plugin
stores first, then parses it as MXNet does: by substring, ``dist`` selects a
distributed store, ``nccl`` the NCCL store, ``device`` the device comm, and
anything else is a local store over the CPU comm.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Type

from ..base import MXNetError, MXNetTypeError, MXNetValueError, env

__all__ = ["KVStoreBase", "create", "mark_closed"]


class KVStoreBase:
    """An abstract key-value store for data-parallel training.

    Subclass it and decorate with :meth:`KVStoreBase.register` to plug a
    store in: ``mx.kv.create('mystore')`` then builds it.
    """

    OPTIMIZER = "optimizer"

    kv_registry: Dict[str, Type["KVStoreBase"]] = {}

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """Broadcast ``value`` for ``key`` to every array in ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """Push ``value`` then pull the result into ``out`` (or ``value``)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer) -> None:
        """Register an optimizer that runs on every push."""
        raise NotImplementedError()

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (e.g. ``'optimizer'``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Save the optimizer's states (its momenta, moments...) to file ``fname``.

        Parameters
        ----------
        fname : str
            The file to write (replaced whole).
        dump_optimizer : bool, default False
            Also save the optimizer itself, so that loading restores it too.
        """
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        """Load optimizer states saved by :meth:`save_optimizer_states`.

        Parameters
        ----------
        fname : str
            The file to read.
        """
        raise NotImplementedError()

    @property
    def type(self) -> str:
        """The store's type string, as given to :func:`create` (lower-cased)."""
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        """This worker's rank among the job's workers (0 on one machine)."""
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        """How many workers share the store (1 on one machine)."""
        raise NotImplementedError()

    def close(self) -> None:
        """Free what the store holds (thread pools, device resources); a
        store with nothing to free does nothing. Closing twice is harmless."""

    def __enter__(self) -> "KVStoreBase":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def register(klass: Type["KVStoreBase"]) -> Type["KVStoreBase"]:
        """Register a store class under its lower-cased class name.

        Examples
        --------
        >>> @mx.kvstore.KVStoreBase.register
        ... class MyKVStore(mx.kvstore.KVStoreBase):
        ...     pass
        >>> type(mx.kv.create('MyKVStore')).__name__
        'MyKVStore'
        """
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register expects a class, got {klass!r}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(
                f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding "
                f"existing kvstore {old.__module__}.{old.__name__}", stacklevel=2
            )
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store for testing plugins: broadcast copies, pushpull sums (as MXNet's)."""

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """Copy ``value`` into ``out`` (an array or a list of them); ``key`` and ``priority`` are
        not used."""
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o in outs:
            o[:] = value

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """Sum ``value`` (an array or a list of them) on the first value's context, then write the
        sum into ``out``, or back into the values when ``out`` is None."""
        values = value if isinstance(value, (list, tuple)) else [value]
        ctx = values[0].context
        total = values[0].as_in_context(ctx).copy()
        for v in values[1:]:
            total += v.as_in_context(ctx)
        targets = values if out is None else (out if isinstance(out, (list, tuple)) else [out])
        for o in targets:
            o[:] = total

    @staticmethod
    def is_capable(capability: str) -> bool:
        """False for ``'optimizer'``: this store runs no optimizer.

        Raises
        ------
        ValueError
            Any other capability.
        """
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        """The store's type name: ``'teststore'``."""
        return "teststore"

    @property
    def rank(self) -> int:
        """0: the only worker."""
        return 0

    @property
    def num_workers(self) -> int:
        """1: a test store is one process."""
        return 1

    def set_optimizer(self, optimizer) -> None:
        """Not supported: always raises NotImplementedError."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Not supported: always raises NotImplementedError."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        """Not supported: always raises NotImplementedError."""
        raise NotImplementedError()


# The operations a closed store refuses (close itself stays callable: idempotent).
CLOSED_OPERATIONS = frozenset({
    "init", "push", "pull", "pushpull", "broadcast", "row_sparse_pull", "set_optimizer",
    "set_gradient_compression", "save_optimizer_states", "load_optimizer_states",
    "_set_updater", "_barrier", "_send_command_to_servers", "num_dead_node",
    "set_barrier_before_exit"})
_closed_classes: Dict[type, type] = {}


def mark_closed(store: KVStoreBase) -> None:
    """Make every operation of ``store`` but ``close`` raise an error naming it.

    The store's class becomes a subclass whose operations raise, so a live
    store pays nothing for the check.
    """
    cls = type(store)
    if getattr(cls, "_is_closed_class", False):
        return
    closed = _closed_classes.get(cls)
    if closed is None:
        def refuse(name: str):
            def method(self, *args: Any, **kwargs: Any) -> None:
                raise MXNetError(f"{name}: kvstore '{self.type}' ({type(self).__mro__[1].__name__}"
                                 f" at {id(self):#x}) is closed; create a new store")
            method.__name__ = name
            return method
        attrs: Dict[str, Any] = {n: refuse(n) for n in CLOSED_OPERATIONS if hasattr(cls, n)}
        attrs["_is_closed_class"] = True
        closed = _closed_classes[cls] = type(cls.__name__, (cls,), attrs)
        closed.__qualname__ = f"{cls.__qualname__} (closed)"
    store.__class__ = closed


# Store families, chosen by substring of the lower-cased type name, tried in
# the order they were registered; the family of pattern "" (the local store,
# registered by local.py) takes every other name. A maker takes the name and
# returns a store. dist is the Ray store (kvstore/dist/); local.py registers
# nccl (the NCCL comm) and the local store itself, so this module needs no
# import of the stores it makes.
_FAMILIES: Dict[str, Callable[[str], Any]] = {}


def register_family(pattern: str, maker: Callable[[str], Any]) -> None:
    """Build the stores whose lower-cased type name contains ``pattern``.

    Parameters
    ----------
    pattern : str
        A substring of type names (``'dist'``, ``'nccl'``); ``''`` registers
        the family that takes every name no other family matches.
    maker : callable
        ``maker(name)`` returns the store for the lower-cased ``name``.

    Notes
    -----
    Families are tried in the order they were registered, after the plugin
    stores of :meth:`KVStoreBase.register` (matched by whole name).
    """
    _FAMILIES[pattern] = maker


def _make_dist(name: str) -> Any:
    from .dist import create_dist

    return create_dist(name)


register_family("dist", _make_dist)


#: The type names MXNet 1.9.1 documents; ``create`` reads others containing
#: these words as MXNet does, and refuses the rest (a typo such as 'lcoal'
#: would otherwise make a local store without a word: docs/parity.md).
KNOWN_TYPES = ("local", "device", "local_update_cpu", "local_allreduce_cpu",
               "local_allreduce_device", "nccl", "dist_sync", "dist_async",
               "dist_sync_device", "dist_async_device")
_LOCAL_WORDS = ("local", "device")


def create(name: str = "local") -> KVStoreBase:
    """Create a KVStore.

    Parameters
    ----------
    name : str
        ``'local'`` (reduce on the CPU), ``'device'`` (reduce on the devices
        the values live on), a registered plugin name, or one of the
        distributed/NCCL types. Matched lower-cased, by substring, as MXNet;
        a name with none of 'local', 'device', 'dist', 'nccl' (and no
        registered store or family) raises ``MXNetValueError`` naming the
        known types, where MXNet makes a local store.

    Returns
    -------
    KVStoreBase

    Examples
    --------
    >>> kv = mx.kv.create('local')
    >>> kv.type
    'local'
    """
    if not isinstance(name, str):
        raise MXNetTypeError(f"create: the kvstore type must be a str, got "
                             f"{type(name).__name__} ({name!r})")
    tname = name.lower()
    if tname in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[tname]()
    for pattern, maker in _FAMILIES.items():
        if pattern and pattern in tname:
            return maker(tname)
    if not any(word in tname for word in _LOCAL_WORDS):
        known = sorted({*KNOWN_TYPES, *KVStoreBase.kv_registry})
        raise MXNetValueError(
            f"create: unknown kvstore type {name!r}: known types are "
            f"{', '.join(repr(k) for k in known)} (any name containing 'local', 'device', "
            f"'dist' or 'nccl' is read as MXNet reads it; unlike MXNet, mxkv refuses other "
            f"names rather than make a local store)")
    if "" not in _FAMILIES:  # (mxkv.kvstore imports local.py, which registers it)
        raise MXNetValueError(f"create: no store family takes {name!r} and no local store "
                              "is registered (import mxkv.kvstore)")
    return _FAMILIES[""](tname)


def _local_comm(tname: str) -> str:
    """The comm of a local store: ``device`` types reduce on the devices (along
    trees with ``MXNET_KVSTORE_USETREE=1``, as MXNet), the rest on the host."""
    if "device" not in tname:
        return "cpu"
    return "tree" if env("MXNET_KVSTORE_USETREE", False, bool) else "device"
