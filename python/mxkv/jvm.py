"""Python hosts the JVM: Clojure in this process, over the JPype transport.

::

    >>> import mxkv.jvm as jvm
    >>> jvm.start()
    >>> jvm.eval("(+ 1 2)")
    3

The Clojure API (``org.apache.clojure-mxnet.*``) runs in this process and its
engine is an :class:`~mxkv.bridge.EngineFacade` here too, behind a JPype
proxy implementing ``org.apache.clojure_mxnet.bridge.DirectEngine``: a call
from Clojure is a JNI call into Python (no socket), and array data crosses
through direct buffers over numpy memory (no /dev/shm file, no ``bytes``).

One live store, two languages: :func:`publish` names a Python NDArray or
KVStore for Clojure (``(mxkv.interop/published "kv")``), :func:`intern`
binds one to a Clojure var, :func:`to_clojure` / :func:`to_python` convert
in either direction. Both sides then hold the same object: a push from one
is seen by a pull from the other, an in-place change is the same memory.

JPype starts one JVM per process and cannot start another after
:func:`stop`; a second :func:`start` is a no-op.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import threading
from typing import Any, Dict, Optional, Sequence

from . import classpath as cp
from .base import MissingDependencyError, MXNetError
from .supervise import quiet_ray_off_main_thread

__all__ = ["start", "stop", "started", "eval", "load_file", "require", "var", "run_main",
           "publish", "unpublish", "intern", "to_clojure", "to_python", "engine"]

_lock = threading.RLock()
_started = False
_stopped = False
#: engine id -> EngineFacade, for every in-process engine not yet closed
_engines: Dict[int, Any] = {}
_engine_ids = itertools.count(1)
#: objects published to Clojure, shared by every in-process engine
_names: Dict[str, Any] = {}
_host: Dict[str, Any] = {}

_ERROR_PREFIX = "mxkv-engine-error:"


def _jpype():
    try:
        import jpype
        import jpype.nio  # noqa: F401  (direct buffers)
    except ImportError:
        raise MissingDependencyError("the JPype transport needs JPype1: "
                                     "pip install 'mxkv[jpype]'") from None
    return jpype


def _jvm_path(jpype) -> Optional[str]:
    try:
        return jpype.getDefaultJVMPath()
    except Exception:  # startJVM says why
        return None


def started() -> bool:
    """True when :func:`start` has run and :func:`stop` has not."""
    return _started and not _stopped


def start(jvm_args: Optional[Sequence[str]] = None,
          extra_classpath: Sequence[str] = ()) -> None:
    """Start the JVM in this process with mxkv's classpath; Clojure's engine
    connections then live in this process (the JPype transport).

    Parameters
    ----------
    jvm_args : sequence of str, optional
        Extra JVM options (``-Xmx4g``...), after ``MXKV_JVM_OPTS`` (or the
        default ``-Xms1g`` on large machines).
    extra_classpath : sequence of str, optional
        Directories or jars added after mxkv's (your own Clojure sources).

    Clojure's core specs come compiled (:func:`mxkv.classpath.startup_classpath`)
    and, with a classpath of jars only (an installed package), the classes
    the JVM loads are kept in a class-data archive for the next start
    (:class:`mxkv.classpath.ClassDataArchive`); ``MXKV_CDS=0``: neither.

    A second call is a no-op. A JVM started by other code in this process is
    used when mxkv's classes are on its classpath; else, and after
    :func:`stop`, a :class:`~mxkv.base.MXNetError` says why not.
    """
    global _started
    with _lock:
        if _stopped:
            raise MXNetError("this process already stopped its JVM and JPype cannot start "
                             "another one: use a new Python process")
        if _started:
            return
        jpype = _jpype()
        if jpype.isJVMStarted():
            try:
                jpype.JClass("org.apache.clojure_mxnet.bridge.JPypeTransport")
            except Exception:
                raise MXNetError("a JVM is already running in this process without mxkv's "
                                 "classes: call mxkv.jvm.start() before other code starts one, "
                                 "or start it with `mxkv classpath` on its classpath") from None
        else:
            path = cp.startup_classpath(
                os.pathsep.join([cp.classpath(require_py4j=False), *extra_classpath]))
            args = [*cp.jvm_opts(), "-Dmxkv.transport=jpype", *(jvm_args or [])]
            archive = cp.ClassDataArchive(path, _jvm_path(jpype), args, kind="jpype")
            jpype.startJVM(*args, *archive.options(), classpath=path.split(os.pathsep),
                           convertStrings=False)
            _host["archive"] = archive
        _install(jpype)
        quiet_ray_off_main_thread()   # the engine's calls come on the JVM's threads
        _started = True
        atexit.register(_at_exit)


def _install(jpype) -> None:
    """Define the proxies and hand the engine factory to the JVM."""
    from jpype import JImplements, JOverride

    from .bridge.facade import EngineFacade

    to_buffer = jpype.nio.convertToDirectBuffer
    IllegalArgument = jpype.JClass("java.lang.IllegalArgumentException")

    def fail(exc: BaseException):
        return IllegalArgument(_ERROR_PREFIX + json.dumps(EngineFacade.error(exc)))

    @JImplements("org.apache.clojure_mxnet.bridge.DirectEngine")
    class InProcessEngine:
        """One engine: a facade over anonymous memory, reached by JNI."""

        def __init__(self) -> None:
            self.id = next(_engine_ids)
            self.facade = EngineFacade(memory=True)
            self.facade.use_names(_names)
            self.facade.engine_id = self.id
            self.closed = False
            _engines[self.id] = self.facade

        def _check(self) -> None:
            if self.closed:
                raise MXNetError(f"mxkv engine {self.id} (in this process) was closed")

        @JOverride
        def call(self, op, args):
            self._check()
            return self.facade.call(str(op), str(args))

        @JOverride
        def info(self):
            self._check()
            return self.facade.info()

        @JOverride
        def memory(self, name):
            self._check()
            name = str(name)
            if name not in ("arena", "regions"):
                raise fail(ValueError(f"no engine memory named {name!r}"))
            return to_buffer(getattr(self.facade, name).buffer())

        @JOverride
        def view(self, h, dtype):
            self._check()
            try:
                return to_buffer(self.facade.view_array(int(h), str(dtype)))
            except Exception as exc:
                raise fail(exc) from None

        @JOverride
        def share(self, h):
            self._check()
            try:
                return to_buffer(self.facade.share_array(int(h)))
            except Exception as exc:
                raise fail(exc) from None

        @JOverride
        def close(self):
            if not self.closed:
                self.closed = True
                _engines.pop(self.id, None)
                self.facade.close()

    @JImplements("java.util.function.Supplier")
    class Factory:
        @JOverride
        def get(self):
            return InProcessEngine()

    _host["factory"] = Factory()  # kept alive here as long as the JVM holds it
    jpype.JClass("org.apache.clojure_mxnet.bridge.JPypeTransport").install(_host["factory"])
    clojure = jpype.JClass("clojure.java.api.Clojure")
    clojure.var("clojure.core", "require").invoke(clojure.read("mxkv.host"))
    clojure.var("clojure.core", "require").invoke(clojure.read("mxkv.interop"))
    for name in ("eval-string", "load-file*", "require*", "plain-json", "shutdown", "run-main",
                 "default-engine-id"):
        _host[name] = clojure.var("mxkv.host", name)
    for name in ("wrap-json", "engine-ref"):
        _host[name] = clojure.var("mxkv.interop", name)
    _host["intern"] = clojure.var("clojure.core", "intern")
    _host["symbol"] = clojure.var("clojure.core", "symbol")
    _host["create-ns"] = clojure.var("clojure.core", "create-ns")
    _host["JString"] = jpype.JString


def _need() -> Dict[str, Any]:
    if not started():
        raise MXNetError("the JVM is not running in this process: call mxkv.jvm.start() first")
    return _host


def _plain(value: Any) -> Any:
    if value is None:
        return None
    text = _host["plain-json"].invoke(value)
    return value if text is None else json.loads(str(text))


def eval(code: str) -> Any:  # noqa: A001  (the name says what it does, as Clojure's)
    """Evaluate Clojure source (every form, in order, as at a REPL starting in
    ``user``); return the last value: plain data (nil, booleans, numbers,
    strings, keywords as their names, vectors, lists, sets and maps of them)
    as Python values, anything else as the Java object."""
    h = _need()
    return _plain(h["eval-string"].invoke(h["JString"](code)))


def load_file(path: str | os.PathLike) -> Any:
    """Load a Clojure file (as ``load-file``); return its last value as :func:`eval` does."""
    h = _need()
    return _plain(h["load-file*"].invoke(h["JString"](os.fspath(path))))


def require(ns: str) -> None:
    """Require the Clojure namespace ``ns`` (e.g. ``"org.apache.clojure-mxnet.kvstore"``)."""
    h = _need()
    h["require*"].invoke(h["JString"](ns))


def run_main(args: Sequence[str]) -> None:
    """Run ``clojure.main`` with ``args`` in this JVM (what ``java clojure.main ARGS`` does)."""
    h = _need()
    jpype = _jpype()
    h["run-main"].invoke(jpype.JArray(jpype.JString)([str(a) for a in args]))


def var(name: str):
    """The Clojure var ``name`` (``"ns/name"``, its namespace required first)
    as a Python function: arguments as JPype converts them, the result as
    :func:`eval` returns it."""
    _need()
    ns, _, sym = name.rpartition("/")
    if not ns or not sym:
        raise MXNetError(f"a var is named namespace/name, not {name!r}")
    require(ns)
    v = _jpype().JClass("clojure.java.api.Clojure").var(ns, sym)

    def call(*args):
        return _plain(v.invoke(*args))

    call.__name__ = sym
    call.__doc__ = f"The Clojure function {name}."
    return call


def engine() -> Any:
    """The EngineFacade behind Clojure's default connection (started when needed)."""
    h = _need()
    eid = h["default-engine-id"].invoke()
    facade = _engines.get(int(eid)) if eid is not None else None
    if facade is None:
        raise MXNetError("Clojure's default connection is not an engine in this process "
                         "(it uses the py4j transport): objects cannot be handed over")
    return facade


def publish(name: str, obj: Any) -> None:
    """Make ``obj`` (a Python NDArray or KVStore) reachable from Clojure as
    ``(mxkv.interop/published name)``: the same object, not a copy."""
    from .bridge.interop_ops import InteropOps

    InteropOps._kind(obj)
    if not isinstance(name, str) or not name:
        raise MXNetError(f"a published name is a non-empty string, not {name!r}")
    _names[name] = obj


def unpublish(name: str) -> None:
    """Forget the name (Clojure objects already made from it stay valid)."""
    _names.pop(name, None)


def to_clojure(obj: Any) -> Any:
    """The Clojure object (a Java object) for a Python NDArray or KVStore: a
    new handle to the same object, in the engine of Clojure's default
    connection."""
    h = _need()
    desc = engine().describe(obj)
    return h["wrap-json"].invoke(h["JString"](json.dumps(desc)))


def to_python(obj: Any) -> Any:
    """The Python object behind a Clojure NDArray or KVStore of an engine in
    this process (the same object, not a copy)."""
    h = _need()
    ref = json.loads(str(h["engine-ref"].invoke(obj)))
    facade = _engines.get(ref["engine"])
    if facade is None:
        raise MXNetError("that object belongs to an engine that is closed or in another "
                         "process")
    return facade.get(int(ref["id"]))


def intern(name: str, obj: Any, ns: str = "user") -> None:
    """Bind Clojure var ``ns/name`` to ``obj``: NDArrays and KVStores as
    their Clojure objects (:func:`to_clojure`), anything else as JPype
    converts it."""
    h = _need()
    from .bridge.interop_ops import InteropOps

    try:
        InteropOps._kind(obj)
        value = to_clojure(obj)
    except TypeError:
        value = obj
    namespace = h["create-ns"].invoke(h["symbol"].invoke(h["JString"](ns)))
    h["intern"].invoke(namespace, h["symbol"].invoke(h["JString"](name)), value)


def stop() -> None:
    """Close Clojure's connections and shut the JVM down (``shutdown-agents``
    first, so that no agent thread holds the exit). The JVM cannot be started
    again in this process."""
    global _stopped
    with _lock:
        if not started():
            return
        jpype = _jpype()
        try:
            _host["shutdown"].invoke()
        except Exception:
            pass
        for facade in list(_engines.values()):
            facade.close()
        _engines.clear()
        _stopped = True
        archive = _host.get("archive")
        _host.clear()
        if jpype.isJVMStarted():
            jpype.shutdownJVM()
            if archive is not None:
                archive.finish()  # the class-data archive it wrote at exit, if any


def _at_exit() -> None:
    try:
        stop()
    except Exception:
        pass
