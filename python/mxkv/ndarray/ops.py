"""``waitall`` and ``concatenate`` (MXNet's Python functions), and the
operators other modules call by name (``ops.abs``, ``ops.clip``...), which
are the operator table's generated functions (``optable/``).
"""
from __future__ import annotations

import builtins
import sys
from collections.abc import Sequence

from ..base import MXNetError
from ..context import cupy_or_none, synchronize_streams
from ._util import MXNetTypeError
from .ndarray import NDArray, provide
from .optable import functions as _functions

__all__ = ["concatenate", "waitall"]

_F = _functions("nd")
abs = _F["abs"]  # noqa: A001
clip, concat, negative, norm, sign, sqrt, square = (
    _F[n] for n in ("clip", "concat", "negative", "norm", "sign", "sqrt", "square"))
sum = _F["sum"]  # noqa: A001


def waitall() -> None:
    """Block until all pending work on every device is done (the comms'
    streams included)."""
    synchronize_streams()
    cp = cupy_or_none() if "cupy" in sys.modules else None
    if cp is not None:
        for dev in builtins.range(cp.cuda.runtime.getDeviceCount()):
            cp.cuda.Device(dev).synchronize()


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True,
                out: NDArray | None = None) -> NDArray:
    """Join arrays along ``axis`` (default 0), MXNet's Python ``concatenate``.
    The result is on the first array's context. A csr array is refused along
    ``axis=0`` (MXNet 1.9.1 assigns it to rows of a dense array, which it
    refuses; ``concat(..., dim=0)`` joins csr arrays)."""
    if not arrays:
        raise MXNetError("concatenate needs at least one array")
    if axis == 0 and builtins.any(isinstance(a, NDArray) and a.stype == "csr" for a in arrays):
        raise MXNetTypeError("concatenate along axis 0 does not take csr arrays (as MXNet "
                             "1.9.1): use concat(..., dim=0), which keeps csr storage")
    arrays = [a.tostype("default") if isinstance(a, NDArray) and a.stype != "default" else a
              for a in arrays]
    if not always_copy and len(arrays) == 1 and out is None:
        return arrays[0]
    return concat(*arrays, dim=axis, out=out)


provide(abs=abs, clip=clip, norm=norm, sign=sign, sqrt=sqrt, square=square, sum=sum)
