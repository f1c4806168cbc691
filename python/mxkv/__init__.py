"""mxkv: Apache MXNet's KVStore as a Python engine.

Reads like MXNet::

    import mxkv as mx
    kv = mx.kv.create('local')
    kv.init(3, mx.nd.ones((2, 3)))
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import base
from .base import MXNetError
from . import context
from .context import Context, cpu, gpu, cpu_pinned, current_context
from . import ndarray
from . import ndarray as nd
from . import optimizer
from . import lr_scheduler
from . import kvstore
from . import kvstore as kv

__all__ = [
    "MXNetError", "Context", "cpu", "gpu", "cpu_pinned", "current_context",
    "nd", "ndarray", "kv", "kvstore", "optimizer", "lr_scheduler", "base", "context",
]
