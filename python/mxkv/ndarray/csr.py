"""A minimal compressed-sparse-row array, so MXNet files holding csr arrays
load whole and save back (``mx.nd.sparse.CSRNDArray``, ``csr_matrix``).

mxkv does not compute with csr (no operators, no csr in a KVStore): a
``CSRNDArray`` holds its ``data``, ``indices`` and ``indptr`` in host memory
and converts (``tostype('default')``, ``asnumpy()``); ``nd.save`` writes it
in MXNet's layout, byte for byte as MXNet does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from ..context import Context
from ._util import MXNetTypeError, MXNetValueError, normalize_dtype, normalize_shape
from .ndarray import NDArray, _ctx_arg

__all__ = ["CSRNDArray", "csr_matrix"]


class CSRNDArray(NDArray):
    """A 2-D csr array: row ``i`` holds ``data[indptr[i]:indptr[i+1]]`` at the
    columns ``indices[indptr[i]:indptr[i+1]]`` (host memory)."""

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 shape: tuple, ctx: Context, full_check: bool = True) -> None:
        self._csr = (data, indices.astype(np.int64, copy=False),
                     indptr.astype(np.int64, copy=False))
        self._shape = tuple(int(d) for d in shape)
        self._ctx = ctx
        self._array = data  # (what dtype and the byte encoder read)
        self.check_format(full_check)

    @property
    def stype(self) -> str:
        return "csr"

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def size(self) -> int:
        return int(np.prod(self._shape))

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> Any:
        return self._csr[0].dtype.type

    @property
    def data(self) -> NDArray:
        """The stored values, as a dense NDArray (a copy)."""
        return NDArray(self._csr[0].copy(), self._ctx)

    @property
    def indices(self) -> NDArray:
        """The column of each stored value (int64, a copy)."""
        return NDArray(self._csr[1].copy(), self._ctx)

    @property
    def indptr(self) -> NDArray:
        """Where each row's values start (int64, rows + 1 entries, a copy)."""
        return NDArray(self._csr[2].copy(), self._ctx)

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError unless the three arrays describe a csr array of this
        shape: their lengths always; with ``full_check`` (MXNet's
        ``kCSRIdxErr``) also indptr starting at 0,
        non-decreasing and ending at the number of values, and each row's
        column indices ascending and in range."""
        data, indices, indptr = self._csr
        rows, cols = self._shape
        if not (data.ndim == 1 and indices.shape == data.shape and indptr.shape == (rows + 1,)):
            raise MXNetValueError(f"csr array of shape {self._shape}: data {data.shape}, "
                                  f"indices {indices.shape}, indptr {indptr.shape} do not "
                                  "describe it")
        if not full_check:
            return
        steps = np.diff(indptr)
        problem = None
        if int(indptr[0]) != 0 or int(indptr[-1]) != data.size or bool(np.any(steps < 0)):
            problem = (f"indptr {indptr.tolist()[:8]} does not run from 0 up to the "
                       f"{data.size} values")
        elif indices.size:
            row_of = np.repeat(np.arange(rows), steps)
            if int(indices.min()) < 0 or int(indices.max()) >= cols or \
                    bool(np.any((np.diff(indices) <= 0) & (row_of[1:] == row_of[:-1]))):
                problem = f"indices {indices.tolist()[:8]}"
        if problem is not None:  # (MXNet 1.9.1 reports every case as kCSRIdxErr)
            raise MXNetError("Check failed: err != kCSRIdxErr (3 vs. 3) : Indices of csr "
                             "NDArray should be non-negative, in ascending order per row  and "
                             f"less than the number of columns ({problem}, shape "
                             f"{self._shape})")

    def asnumpy(self) -> np.ndarray:
        self.check_format()  # (an array built as given may not describe one)
        data, indices, indptr = self._csr
        out = np.zeros(self._shape, data.dtype)
        rows = np.repeat(np.arange(self._shape[0]), np.diff(indptr))
        out[rows, indices] = data
        return out

    def tostype(self, stype: str) -> NDArray:
        if stype == "csr":
            return self.copy()
        if stype == "default":
            return NDArray(self.asnumpy(), self._ctx)
        raise MXNetValueError(f"a csr array converts to 'default' or 'csr', not {stype!r}")

    def copy(self) -> CSRNDArray:
        return CSRNDArray(*(a.copy() for a in self._csr), self._shape, self._ctx)

    def __repr__(self) -> str:
        return f"\n<CSRNDArray {self._shape[0]}x{self._shape[1]} @{self._ctx}>"

    def __reduce__(self) -> Any:
        return NDArray.__reduce__(self)

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise MXNetTypeError("csr arrays are kept for files only: convert with "
                             "tostype('default') to compute")

    __getitem__ = __setitem__ = __add__ = __sub__ = __mul__ = __truediv__ = _unsupported
    copyto = as_in_context = astype = reshape = _unsupported


def csr_matrix(arg1: Any, shape: Any = None, ctx: Context | None = None,
               dtype: Any = None) -> CSRNDArray:
    """A CSRNDArray from ``(data, indices, indptr)`` with ``shape`` (copied).

    As MXNet, the indices and indptr are kept as given when their lengths fit;
    ``check_format`` reports invalid ones.
    """
    if not (isinstance(arg1, tuple) and len(arg1) == 3) or shape is None:
        raise MXNetTypeError("csr_matrix takes (data, indices, indptr) and shape= here")
    src = arg1[0]
    data, indices, indptr = (a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)
                             for a in arg1)
    # as MXNet: the source's dtype for an NDArray or numpy source, else float32
    dt = normalize_dtype(dtype, default=data.dtype if isinstance(src, (NDArray, np.ndarray))
                         else np.float32)
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise MXNetValueError(f"a csr array is 2-D, got shape {shape}")
    return CSRNDArray(np.array(data, dt).reshape(-1), np.array(indices).reshape(-1),
                      np.array(indptr).reshape(-1), shape, _ctx_arg(ctx), full_check=False)
