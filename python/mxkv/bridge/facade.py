"""The Engine facade: what the JVM calls, translated into mxkv calls.

This file holds the dispatch, the handle table and errors; the operations
are in ndarray_ops.py and kvstore_ops.py, registered by name in registry.py.

The JVM sees one method, ``call(op, args)``: ``op`` names an operation
(with its deadline and ticket: ``kv.push@<deadline>#<ticket>``) and ``args``
is a compact JSON value. The facade keeps a handle
table (integer ids to the NDArray and KVStore objects the JVM refers to),
looks the handles up, calls the engine exactly as a Python user of MXNet 1.9
would, and answers ``"o"`` (done), ``"o" + JSON`` (a value) or ``"e" + JSON``
(an error map with ``type``, ``message``, ``python_class`` and
``traceback``). ``type`` is ``mxnet-error`` for anything the engine raised,
``engine-timeout`` (with ``may_have_run``) for a call dropped unrun because
its deadline passed before it could start, and ``engine-dead`` for a call
that found the engine closed.

An array is described to the JVM by its *meta*: ``[id, shape, dtype,
device_type, device_id, stype]``; the JVM caches it, so asking an array's
shape costs no round trip.

Example (in Python, what the JVM does over Py4J)::

    f = EngineFacade()
    kv = f.call("kv.create", '["local"]')        # 'o[1,"local"]'
    a = f.call("nd.create", '["ones",[2,3],"cpu",0,"float32",null]')
"""
from __future__ import annotations

import importlib
import itertools
import os
import sys
import threading
import time
import traceback
import weakref
from typing import Any, Dict

import numpy as np

from ..base import MXNetTypeError, MXNetValueError, env
from . import random_ops  # noqa: F401 (registers random.seed, random.draw)
from .arena import FOLLOW_SUPPORTED, HEADER, Arena
from .interop_ops import InteropOps
from .kvstore_ops import KVStoreOps
from .ndarray_ops import NDArrayOps
from .registry import OPS, op
from .registry import dumps as _dumps
from .registry import loads as _loads

__all__ = ["EngineFacade", "OPS"]

#: The error type the JVM sees for anything the engine raises; the
#: exception's class travels in ``python_class`` (e.g. mxkv.base.MXNetValueError).
ENGINE_ERROR = "mxnet-error"


class EngineFacade(NDArrayOps, KVStoreOps, InteropOps):
    """Implements ``org.apache.clojure_mxnet.bridge.Engine`` in Python.

    Parameters
    ----------
    backend : str, optional
        The module providing MXNet's Python API (default ``mxkv``, or the
        ``MXKV_BRIDGE_BACKEND`` environment variable; ``mxnet`` works too).
    arena : Arena, optional
        The shared-memory scratch arena; one is created when omitted. The
        region file (``regions``) is created next to it.
    memory : bool, optional
        The JVM runs in this process (the JPype transport): the arena and the
        region space are anonymous memory the JVM reaches through direct
        buffers, not files.
    """

    class Java:
        """Py4J: this object implements the JVM's ``Engine`` interface."""

        implements = ["org.apache.clojure_mxnet.bridge.Engine"]

    def __init__(self, backend: str | None = None, arena: Arena | None = None,
                 memory: bool = False) -> None:
        self.backend = backend or env("MXKV_BRIDGE_BACKEND", "mxkv")
        self.mx = importlib.import_module(self.backend)
        self.memory = memory
        if memory:
            self.arena = arena if arena is not None else Arena(memory=True)
            self.regions = Arena(name="regions", memory=True)
        else:
            self.arena = arena if arena is not None else Arena()
            self.regions = Arena(os.path.dirname(self.arena.path), name="regions")
        self._objects: Dict[int, Any] = {}
        #: stores this engine made (kv.create): the only ones a release may close
        self._made_stores: "weakref.WeakSet[Any]" = weakref.WeakSet()
        #: set by the host when the JVM must tell this engine from others in the process
        self.engine_id: int | None = None
        self._init_interop()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self.calls = 0
        self.closed = False

    # ------------------------------------------------------------ Engine
    def call(self, name: str, args: str, deadline: int = 0, ticket: int = 0) -> str:
        """Run operation ``name`` with JSON ``args``; see the module docstring.

        ``deadline`` (ms since the epoch, 0 for none) is when the caller stops
        waiting: a call that cannot start before it (the engine was stopped,
        or busy with other calls) is dropped, never run, and answered with an
        ``engine-timeout`` error map whose ``may_have_run`` is false.
        ``ticket`` (a positive number, unique per caller; 0 for none) is
        written on the arena's call board when the call starts (see
        :meth:`Arena.claim`), so that a caller that gave up can tell whether
        it started; a ticket delivered twice runs once. The JVM sends both in
        the name: ``"kv.push@<deadline>#<ticket>"``.
        """
        try:
            name, at, stamp = name.partition("@")
            if at:
                dl, hsh, tk = stamp.partition("#")
                deadline = int(dl)
                if hsh:
                    ticket = int(tk)
            fn = OPS.get(name)
            if fn is None:
                raise MXNetValueError(f"unknown engine operation {name!r}")
            a = _loads(args) if args else []
            lock = self._lock
            if not deadline:
                lock.acquire()
            elif not lock.acquire(False):
                wait = deadline / 1000.0 - time.time()
                if wait <= 0 or not lock.acquire(True, wait):
                    return "e" + _dumps(self._late(name, deadline, "the engine was busy"))
            try:
                if self.closed:
                    return "e" + _dumps({
                        "type": "engine-dead", "may_have_run": False, "python_class": None,
                        "traceback": "",
                        "message": f"{name} could not run: this engine was closed while the "
                                   "call waited for it; its objects are gone"})
                if ticket and not self.arena.claim(ticket):
                    return "e" + _dumps(self._late(name, deadline, "it was delivered twice",
                                                   repeated=True))
                # After the claim: a caller that saw no claim knows this drops it.
                if deadline and time.time() * 1000.0 >= deadline:
                    return "e" + _dumps(self._late(name, deadline, "the engine got to it late"))
                self.calls += 1
                result = fn(self, *a) if isinstance(a, list) else fn(self, a)
            finally:
                self._lock.release()
            return "o" if result is None else "o" + _dumps(result)
        except BaseException as exc:  # everything reaches the JVM as data
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return "e" + _dumps(self.error(exc))

    @staticmethod
    def _late(name: str, deadline: int, why: str, repeated: bool = False) -> dict:
        """The answer to a call dropped unrun: past its deadline, or repeated."""
        if repeated:
            message = f"{name} was not run again: {why} (the first delivery ran)"
        else:
            late = time.time() * 1000.0 - deadline
            message = (f"{name} was not run: its deadline passed {max(0.0, late):.0f} ms before "
                       f"it could start ({why}); nothing was applied, it is safe to retry")
        return {"type": "engine-timeout", "message": message, "may_have_run": repeated,
                "python_class": None, "traceback": ""}

    def info(self) -> str:
        """The engine's static facts as JSON: pid, backend and versions, the
        arena's and region file's paths and sizes, the shared-memory file
        system's size, and whether the JVM shares this process (``memory``)."""
        return _dumps({
            "pid": os.getpid(),
            "backend": self.backend,
            "version": getattr(self.mx, "__version__", "?"),
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "arena": self.arena.path,
            "arena_size": self.arena.size,
            "arena_header": HEADER,
            "regions": self.regions.path,
            "shm_bytes": self.regions.fs_bytes(),
            "follow": FOLLOW_SUPPORTED,
            "memory": self.memory,
            "engine_id": self.engine_id,
        })

    def toString(self) -> str:  # noqa: N802  (Java's name: printing the proxy in a REPL)
        """What the JVM prints for this engine (Java's ``toString``)."""
        return f"mxkv engine (pid {os.getpid()}, {self.backend})"

    @staticmethod
    def error(exc: BaseException) -> dict:
        """The error map the JVM turns into ex-info: every engine exception has
        type ``mxnet-error`` (as clojure-mxnet's errors were all MXNetError);
        ``python_class`` names the class, ``traceback`` the Python stack."""
        cls = type(exc)
        return {
            "type": ENGINE_ERROR,
            "message": str(exc) if str(exc) else cls.__name__,
            "python_class": f"{cls.__module__}.{cls.__qualname__}",
            "traceback": "".join(traceback.format_exception(cls, exc, exc.__traceback__)),
        }

    # ------------------------------------------------------------ handles
    def put(self, obj: Any) -> int:
        """Enter ``obj`` in the handle table; returns its new handle (never reused)."""
        h = next(self._ids)
        self._objects[h] = obj
        return h

    def get(self, h: int) -> Any:
        """The object of handle ``h``; MXNetValueError for a disposed or foreign handle."""
        try:
            return self._objects[h]
        except KeyError:
            raise MXNetValueError(f"unknown handle {h}: the object was disposed or belongs "
                                  "to another engine") from None

    def nd(self, h: int):
        """The NDArray of handle ``h``; MXNetTypeError when it is another object."""
        obj = self.get(h)
        if not hasattr(obj, "shape") or not hasattr(obj, "context"):
            raise MXNetTypeError(f"handle {h} is a {type(obj).__name__}, not an NDArray")
        return obj

    def kv(self, h: int):
        """The KVStore of handle ``h``; MXNetTypeError when it is another object."""
        obj = self.get(h)
        if not hasattr(obj, "push"):
            raise MXNetTypeError(f"handle {h} is a {type(obj).__name__}, not a KVStore")
        return obj

    def ctx(self, device_type: str, device_id: int):
        """The backend's Context for the JVM's ``(device_type, device_id)``."""
        return self.mx.Context(device_type, int(device_id))

    def meta(self, arr, h: int | None = None) -> list:
        """What the JVM keeps of an array: ``[handle, shape, dtype name, device
        type, device id, stype]``; enters ``arr`` in the table unless ``h`` is given."""
        if h is None:
            h = self.put(arr)
        ctx = arr.context
        return [h, list(arr.shape), np.dtype(arr.dtype).name, ctx.device_type, ctx.device_id,
                getattr(arr, "stype", "default")]

    @staticmethod
    def host(arr) -> np.ndarray:
        """The array's contents as numpy: the wrapped buffer itself for CPU
        arrays (no copy), a host copy otherwise."""
        a = getattr(arr, "_array", None)
        if isinstance(a, np.ndarray):
            return a
        if getattr(arr, "stype", "default") != "default":
            arr = arr.tostype("default")
        return arr.asnumpy()

    # ------------------------------------------------------------ misc ops
    @op("noop")
    def _noop(self, *args):
        return None

    @op("sleep")
    def _sleep(self, seconds=0.0):
        """Hold the engine for ``seconds`` (at most 60): what callers see
        while the engine is busy, for tests of deadlines and timeouts."""
        time.sleep(min(60.0, max(0.0, float(seconds))))
        return None

    @op("stats")
    def _stats(self):
        kinds: Dict[str, int] = {}
        for o in self._objects.values():
            k = type(o).__name__
            kinds[k] = kinds.get(k, 0) + 1
        return {"handles": len(self._objects), "by_type": kinds, "calls": self.calls,
                "arena_size": self.arena.size, "regions_size": self.regions.size,
                "regions_resident": self.regions.resident()}

    @op("memory")
    def _memory(self, reset_peak=False):
        """The engine's memory, in bytes: ``held`` (the arrays in the handle
        table, as dense), and ``rss`` and ``rss_peak`` of this process (the
        peak since the last reset; with JPype the process holds the JVM too;
        0 where unknown). ``reset_peak`` starts a new peak after answering."""
        held = 0
        for o in list(self._objects.values()):
            if hasattr(o, "shape") and hasattr(o, "dtype"):
                held += int(np.prod(o.shape, dtype=np.int64)) * np.dtype(o.dtype).itemsize
        status = {}
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(("VmRSS:", "VmHWM:")):
                        status[line.split(":")[0]] = int(line.split()[1]) * 1024
        except OSError:
            pass
        answer = {"held": held, "rss": status.get("VmRSS", 0), "rss_peak": status.get("VmHWM", 0)}
        if reset_peak:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        return answer

    @op("release")
    def _release(self, *ids):
        if len(ids) == 1 and isinstance(ids[0], list):
            ids = ids[0]
        for h in ids:
            self._close_released(self._objects.pop(h, None))
        return None

    def _still_held(self, obj: Any) -> bool:
        """Whether another handle still names ``obj`` (the JVM may hold a
        store by several handles, e.g. one per lookup of a published object)."""
        return any(o is obj for o in self._objects.values())

    @op("arena")
    def _arena(self, min_bytes=0):
        return [self.arena.path, self.arena.ensure(int(min_bytes))]

    @op("context.num_gpus")
    def _num_gpus(self):
        return int(self.mx.context.num_gpus())

    # ------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Close the stores this engine made (``kv.create``: their NCCL
        communicators, pools and buffers are freed now, as a release of their
        last handle does), drop every object, close the arena and region file
        (removing their files) and forget the published names; a call waiting
        for the engine then answers ``engine-dead``. Stores Python made and
        published stay open: they are Python's to close. Idempotent. When a
        store's close raises, the rest are still closed and the files removed,
        then the first error is raised."""
        with self._lock:
            self.closed = True
            made, self._made_stores = list(self._made_stores), weakref.WeakSet()
            failed: BaseException | None = None
            for kv in made:
                try:
                    kv.close()
                except Exception as exc:  # noqa: BLE001 - close the others first
                    failed = failed or exc
            self._objects.clear()
            self.arena.close()
            self.regions.close()
            self._close_interop()
            if failed is not None:
                raise failed
