"""mxkv: Apache MXNet's KVStore as a Python engine.

Reads like MXNet::

    import mxkv as mx
    kv = mx.kv.create('local')
    kv.init(3, mx.nd.ones((2, 3)))
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import base, context, kvstore, lr_scheduler, ndarray, optimizer
from . import kvstore as kv
from . import ndarray as nd
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu
from .ndarray import random

__all__ = [
    "MXNetError", "Context", "cpu", "gpu", "cpu_pinned", "current_context",
    "nd", "ndarray", "kv", "kvstore", "optimizer", "lr_scheduler", "base", "context", "random",
]
