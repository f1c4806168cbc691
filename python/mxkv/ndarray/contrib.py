"""``mx.nd.contrib``: the table's ``_contrib_*`` operators by their short names
(``boolean_mask`` is ``_contrib_boolean_mask``)."""
from __future__ import annotations

from .optable import functions as _functions

_CONTRIB = {n[len("_contrib_"):] if n.startswith("_contrib_") else n: f
            for n, f in _functions("contrib").items()}
globals().update(_CONTRIB)
__all__ = sorted(_CONTRIB)
