"""The Python side of the JVM bridge.

``python -m mxkv.bridge`` is the engine process the Clojure API spawns: it
connects to the JVM's Py4J gateway, registers an :class:`EngineFacade`
(implementing ``org.apache.clojure_mxnet.bridge.Engine``) and serves calls
until its stdin closes. :func:`serve` is the other way round: a running
Python program serves engines to JVMs that attach to it. See
``docs/bridge.md`` and ``docs/interop.md``.
"""
from .arena import Arena, remove_stale, shm_dir
from .facade import OPS, EngineFacade
from .serve import Server, serve, shared_array

__all__ = ["Arena", "EngineFacade", "OPS", "Server", "remove_stale", "serve", "shared_array",
           "shm_dir"]
