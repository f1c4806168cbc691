"""Key-value stores for parameter exchange (MXNet's ``mx.kv``)."""
from .base import KVStoreBase, create
from .local import KVStore

__all__ = ["KVStoreBase", "KVStore", "create"]
