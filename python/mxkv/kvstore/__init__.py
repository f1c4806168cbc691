"""Key-value stores for parameter exchange (MXNet's ``mx.kv``)."""
from .base import KVStoreBase, create
from .kvstore_server import KVStoreServer
from .local import KVStore

__all__ = ["KVStoreBase", "KVStore", "KVStoreServer", "create"]
