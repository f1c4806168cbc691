"""MXNet's server entry: importing it in a ``DMLC_ROLE=server`` process runs
the server and exits, as ``mxnet.kvstore.kvstore_server`` does at import.

Use ``python -m mxkv.kvstore_server`` (or ``import mxkv.kvstore_server`` at
the top of a training script, before any other work) in the server
processes of a job; in worker processes it does nothing. ``import mxkv``
alone never turns a process into a server (MXNet's ``import mxnet`` does),
so that a JVM's engine or ``mxkv`` command run with ``DMLC_ROLE=server``
stays what it is until asked.
"""
from .kvstore.kvstore_server import KVStoreServer, _init_kvstore_server_module

__all__ = ["KVStoreServer"]

_init_kvstore_server_module()
