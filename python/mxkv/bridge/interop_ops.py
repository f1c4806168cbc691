"""Objects handed between a Python program and the JVM, and arrays whose
memory both sides share.

*Handing over.* A Python program that hosts or serves the JVM names its
objects (:meth:`InteropOps.publish`); Clojure asks for one by name
(``obj.published``) and gets a handle to the **same** object: a store pushed
from Clojure is the store the Python loop pulls from. :meth:`describe` is
what both directions send: ``{"kind": "ndarray", "meta": [...]}`` or
``{"kind": "kvstore", "id": h, "type": "local"}``.

*Sharing memory.* In the JVM's own process (JPype) every CPU array is
shareable: :meth:`share_array` is the numpy buffer the JVM wraps in a direct
buffer. Across processes (Py4J) only memory both processes map can be
shared: :func:`shared_host_array` (``nd.create_shared`` from the JVM,
:func:`mxkv.bridge.shared_array` from Python) makes an array whose buffer is a
file in the shared-memory directory, and ``nd.share`` tells the JVM where
(file, offset, length) such an array, or a view of one, lives. The file is
removed when the array's last view is gone.
"""
from __future__ import annotations

import mmap
import os
import threading
import weakref
from typing import Any, Callable, Dict

import numpy as np

from .arena import shm_dir
from .private import create_private
from .registry import op

__all__ = ["InteropOps", "shared_host_array", "shared_file_of"]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _mmap_of(arr: np.ndarray):
    """The mmap object at the bottom of ``arr``'s base chain, or None."""
    base: Any = arr  # (then each base in turn: arrays, memoryviews, the mmap)
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base
        if isinstance(base, memoryview):
            base = base.obj
            continue
        base = getattr(base, "base", None)
    return None


#: id(mmap) -> (weak reference to the mmap, file path): the shared-memory
#: files of this process's shared arrays, whichever engine (or Python code) made them
_SHARED: Dict[int, tuple] = {}


def _forget(key: int, path: str) -> None:
    _SHARED.pop(key, None)
    _unlink(path)


def shared_host_array(shape, dtype="float32") -> np.ndarray:
    """A zero-filled numpy array over a new file in the shared-memory
    directory, which another process (a JVM over Py4J) can map. The file is
    private (:func:`~mxkv.bridge.private.create_private`: random name, mode
    0600) and removed when the array's last view is gone (or the process
    exits)."""
    shape = tuple(int(d) for d in shape)
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = max(1, count * dt.itemsize)
    path, fd = create_private(shm_dir(), "share")
    try:
        os.ftruncate(fd, nbytes)
        mm = mmap.mmap(fd, nbytes)
    except BaseException:
        _unlink(path)
        raise
    finally:
        os.close(fd)
    key = id(mm)
    _SHARED[key] = (weakref.ref(mm), path)
    weakref.finalize(mm, _forget, key, path)
    return np.frombuffer(mm, dtype=dt, count=count).reshape(shape)


def shared_file_of(host: np.ndarray):
    """(path, offset) of ``host``'s memory in a shared-memory file made by
    :func:`shared_host_array`, or None."""
    mm = _mmap_of(host)
    entry = _SHARED.get(id(mm)) if mm is not None else None
    if entry is None or entry[0]() is not mm:
        return None
    base = np.frombuffer(mm, dtype=np.uint8)
    offset = host.ctypes.data - base.ctypes.data
    del base
    return entry[1], int(offset)


class InteropOps:
    """Mixin of EngineFacade: needs ``mx``, ``memory``, ``put``, ``nd``, ``meta``."""

    # What EngineFacade provides, declared for the type checker (annotations
    # only: nothing here is an attribute of the mixin)
    _lock: threading.RLock
    put: Callable[[Any], int]
    nd: Callable[[int], Any]
    meta: Callable[..., list]
    host: Callable[[Any], np.ndarray]

    def _init_interop(self) -> None:
        #: published objects; a host shares one table among its engines (use_names)
        self._names: Dict[str, Any] = {}

    def use_names(self, names: Dict[str, Any]) -> None:
        """Publish from ``names`` (a table the host shares among its engines)."""
        self._names = names

    def _close_interop(self) -> None:
        self._names = {}

    # ------------------------------------------------------------ handing over
    def publish(self, name: str, obj: Any) -> None:
        """Make ``obj`` (an NDArray or a KVStore) reachable from the JVM as ``name``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a published name is a non-empty string, not {name!r}")
        self._kind(obj)
        with self._lock:
            self._names[name] = obj

    def unpublish(self, name: str) -> None:
        """Forget the object published as ``name`` (no error when none is)."""
        with self._lock:
            self._names.pop(name, None)

    @staticmethod
    def _kind(obj: Any) -> str:
        if hasattr(obj, "push") and hasattr(obj, "pull"):
            return "kvstore"
        if hasattr(obj, "shape") and hasattr(obj, "context"):
            return "ndarray"
        raise TypeError(f"only NDArrays and KVStores cross to the JVM, not "
                        f"{type(obj).__name__}")

    def describe(self, obj: Any) -> dict:
        """A new handle to ``obj`` and what the JVM needs to wrap it."""
        kind = self._kind(obj)
        with self._lock:
            if kind == "kvstore":
                return {"kind": kind, "id": self.put(obj), "type": obj.type}
            return {"kind": kind, "meta": self.meta(obj)}

    @op("obj.published")
    def _published(self, name):
        try:
            obj = self._names[name]
        except KeyError:
            known = ", ".join(sorted(self._names)) or "none"
            raise KeyError(f"no object is published as {name!r} (published: {known})") from None
        return self.describe(obj)

    @op("obj.names")
    def _names_op(self):
        return sorted(self._names)

    # ------------------------------------------------------------ shared memory
    @op("nd.create_shared")
    def _nd_create_shared(self, shape, dtype="float32"):
        """A zero-filled array on ``cpu_shared(0)`` whose memory the JVM can map."""
        if self.memory:
            host = np.zeros(tuple(int(d) for d in shape), dtype=np.dtype(dtype))
        else:
            host = shared_host_array(shape, dtype)
        arr = self.mx.nd.NDArray(host, ctx=self.mx.Context("cpu_shared", 0))
        return self.meta(arr)

    @op("nd.share")
    def _nd_share(self, h):
        """Where array ``h``'s memory lives for another process: [path, offset, nbytes]."""
        host = self.share_array(h)
        if self.memory:
            raise ValueError("this engine runs in the JVM's process: the JVM shares its arrays "
                             "through direct buffers, not files")
        where = shared_file_of(host)
        if where is None:
            raise ValueError(
                f"array {h} lives in the engine process's private memory: across processes "
                "(Py4J) only arrays made in shared memory can be shared (Clojure: "
                "(mxkv.interop/shared-array shape); Python: mxkv.bridge.shared_array(shape)); "
                "over JPype every CPU array can be")
        return [where[0], where[1], int(host.nbytes)]

    def view_array(self, h, dtype: str) -> np.ndarray:
        """Array ``h``'s contents as ``dtype`` ("raw": its own): its own buffer
        when it is a CPU array of that dtype (no copy), else a converted
        host copy."""
        arr = self.nd(h)
        host = self.host(arr)
        if dtype == "raw" or host.dtype == np.dtype(dtype):
            return host
        return np.asarray(host, dtype=dtype)

    @op("close")
    def _close_op(self):
        """Drop every object and free the memory (an attached JVM leaving)."""
        self.close()

    def share_array(self, h) -> np.ndarray:
        """The numpy buffer of CPU array ``h`` itself (no copy), for sharing."""
        arr = self.nd(h)
        if getattr(arr, "stype", "default") != "default":
            raise TypeError(f"array {h} is {arr.stype}: only dense arrays share their memory")
        host = getattr(arr, "_array", None)
        if not isinstance(host, np.ndarray):
            raise TypeError(f"array {h} lives on {arr.context}, not in host memory: copy it "
                            "to the CPU (as-in-context) to share it")
        return host
