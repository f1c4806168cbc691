"""``mx.nd.linalg``: the ``linalg_*`` operators of the table by their short
names (``gemm`` is ``linalg_gemm``)."""
from __future__ import annotations

from .optable import functions as _functions

globals().update(_functions("linalg"))
__all__ = sorted(_functions("linalg"))
