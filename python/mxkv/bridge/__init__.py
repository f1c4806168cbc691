"""The Python side of the JVM bridge.

``python -m mxkv.bridge`` is the engine process the Clojure API spawns: it
connects to the JVM's Py4J gateway, registers an :class:`EngineFacade`
(implementing ``org.apache.clojure_mxnet.bridge.Engine``) and serves calls
until its stdin closes. See ``docs/bridge.md``.
"""
from .arena import Arena, remove_stale, shm_dir
from .facade import OPS, EngineFacade

__all__ = ["Arena", "EngineFacade", "OPS", "remove_stale", "shm_dir"]
