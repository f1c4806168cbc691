"""A running Python program serves engines; JVMs attach to it over Py4J.

The reverse of ``python -m mxkv.bridge`` (where the JVM starts first and
spawns the engine)::

    import mxkv as mx
    from mxkv.bridge import serve

    kv = mx.kv.create("local")
    server = serve()                 # loopback, ephemeral port, random secret
    server.publish("kv", kv)
    print(server.path)               # the attach file, readable by this user only

and in a JVM (``mxkv repl``, or any JVM with ``mxkv classpath``)::

    (def conn (bridge/attach "/run/user/1000/mxkv/engine-1234.json"))
    (bridge/use-connection! conn)
    (def kv (mxkv.interop/published "kv"))   ; the program's store itself

The program's Py4J callback server listens on loopback only and admits a
connection only with the secret, a 256-bit random token written with the
address and port to the attach file, created with mode 0600 in a directory
of mode 0700 (``$XDG_RUNTIME_DIR/mxkv``, else ``~/.mxkv``; a directory
others may write to is refused). The JVM refuses an attach file that others
may read, that is a link, or that is not its user's. Attach files of
programs that were killed are removed by the next ``serve()``. Each attaching JVM gets an engine of
its own (handles, arena, region file), over which the objects the program
published are the same objects.
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

from .. import Context, nd
from ..base import MissingDependencyError, MXNetIOError, env
from .facade import EngineFacade
from .interop_ops import InteropOps, shared_host_array
from .private import private_directory, remove_files_of_dead

__all__ = ["Server", "serve", "shared_array", "attach_dir", "listening_gateway",
           "remove_stale_attach_files"]


def attach_dir() -> Path:
    """Where attach files go: ``MXKV_ATTACH_DIR``, else ``$XDG_RUNTIME_DIR/mxkv``,
    else ``~/.mxkv``; created with mode 0700. One that is not yours, or that
    others may write to, is refused (:func:`~mxkv.bridge.private.private_directory`)."""
    d = env("MXKV_ATTACH_DIR", "")
    if not d:
        runtime = env("XDG_RUNTIME_DIR", "")
        d = os.path.join(runtime, "mxkv") if runtime else os.path.join(Path.home(), ".mxkv")
    return Path(private_directory(d, "the attach directory"))


_ATTACH_NAME = re.compile(r"^engine-(\d+)-\d+\.json$")


def remove_stale_attach_files(directory: Path) -> list:
    """Remove the attach files of serving programs that are gone (killed
    before :meth:`Server.close`); return their paths."""
    return remove_files_of_dead(str(directory), _ATTACH_NAME)


def listening_gateway(**params: Any):
    """A Py4J ``JavaGateway(**params)`` whose callback server listens when
    this returns. Py4J binds the callback server's socket in the constructor
    but listens in the server's own thread: a JVM told the port before that
    could be refused (``ConnectException: Connection refused``)."""
    from py4j.java_gateway import JavaGateway, server_started

    started_servers: list = []

    def started(sender, **kwargs):
        started_servers.append(sender)

    uid = f"mxkv-listening-{id(started_servers)}"
    server_started.connect(started, unique_id=uid)
    try:
        gateway = JavaGateway(**params)
        server = gateway.get_callback_server()
        while server not in started_servers:
            time.sleep(0.002)
            if server.is_shutdown:
                gateway.shutdown()
                raise RuntimeError("the Py4J callback server stopped before it listened")
    finally:
        server_started.disconnect(started, unique_id=uid)
    return gateway


class Server:
    """Engines for JVMs that attach; see the module docstring.

    Parameters
    ----------
    path : str, optional
        The attach file to write (default: ``engine-<pid>-<n>.json`` in
        :func:`attach_dir`). It must not exist.
    address : str
        The interface to listen on (default loopback).
    """

    _count = 0

    def __init__(self, path: Optional[str] = None, address: str = "127.0.0.1") -> None:
        try:
            from py4j.java_gateway import CallbackServerParameters, GatewayParameters
        except ImportError:
            raise MissingDependencyError("serving JVMs needs py4j: "
                                         "pip install 'mxkv[bridge]'") from None
        if not env("MXKV_BRIDGE_DEBUG", False):
            logging.getLogger("py4j").setLevel(logging.CRITICAL)
        self._names: Dict[str, Any] = {}
        self._engines: list = []
        self._lock = threading.Lock()
        self.secret = secrets.token_hex(32)
        self.address = address
        # The attach file is written only once the callback server listens.
        self._gateway = listening_gateway(
            # No JVM is contacted: the gateway only hosts the callback server.
            gateway_parameters=GatewayParameters(address=address, port=1,
                                                 auth_token=self.secret,
                                                 auto_field=False, auto_close=True),
            callback_server_parameters=CallbackServerParameters(
                address=address, port=0, auth_token=self.secret,
                daemonize=True, daemonize_connections=True),
            python_server_entry_point=self)
        server = self._gateway.get_callback_server()
        self.port = server.get_listening_port()
        Server._count += 1
        if path:
            self.path = Path(path)
        else:
            directory = attach_dir()
            remove_stale_attach_files(directory)
            self.path = directory / f"engine-{os.getpid()}-{Server._count}.json"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            self._gateway.shutdown()
            raise MXNetIOError(f"refusing to write the attach file {self.path}: something "
                               "already exists there") from None
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"address": server.get_listening_address(), "port": self.port,
                       "secret": self.secret, "pid": os.getpid()}, f)

    class Java:
        """Py4J: an attaching JVM sees this object as a ``Supplier`` of engines."""

        implements = ["java.util.function.Supplier"]

    # ------------------------------------------------------------ JVM side
    def get(self):
        """A new engine for an attaching JVM (the entry point's one method)."""

        facade = EngineFacade()
        facade.use_names(self._names)
        with self._lock:
            self._engines.append(facade)
        return facade

    # ------------------------------------------------------------ Python side
    def publish(self, name: str, obj: Any) -> None:
        """Make ``obj`` (an NDArray or KVStore) reachable from attached JVMs as
        ``(mxkv.interop/published name)``: the same object, not a copy."""

        if not isinstance(name, str) or not name:
            raise ValueError(f"a published name is a non-empty string, not {name!r}")
        InteropOps._kind(obj)
        self._names[name] = obj

    def unpublish(self, name: str) -> None:
        """Stop offering the object published as ``name`` (no error when none is)."""
        self._names.pop(name, None)

    def close(self) -> None:
        """Stop serving: remove the attach file, close every engine."""
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self._gateway.shutdown()
        with self._lock:
            for facade in self._engines:
                facade.close()
            self._engines.clear()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(path: Optional[str] = None, address: str = "127.0.0.1") -> Server:
    """Serve engines to JVMs that attach (``bridge/attach``); see :class:`Server`."""
    return Server(path, address)


def shared_array(shape, dtype="float32"):
    """A zero-filled NDArray on ``cpu_shared(0)`` whose memory a JVM attached
    over Py4J can share (``mxkv.interop/as-buffer``): it lives in a file in
    the shared-memory directory, removed when the array is gone."""

    return nd.NDArray(shared_host_array(shape, dtype), ctx=Context("cpu_shared", 0))
