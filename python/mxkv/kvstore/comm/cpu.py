"""CommCPU: every value is reduced in host memory (MXNet's ``local`` store).

Values on host contexts are summed where they are, straight into the
output; values on GPUs are first copied to a host staging buffer.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ...context import empty_host
from ...ndarray import NDArray
from .base import Comm, copy_array

__all__ = ["CommCPU"]


@Comm.register
class CommCPU(Comm):
    """Reduces every value in host memory (MXNet's ``local`` store): host values are summed where
    they are, GPU values through a host staging buffer; small host copies may be batched
    (``batch_copies``)."""
    name = "cpu"
    batch_copies = True  # small host values: reduce(key, [src], out) and broadcast copy

    def __init__(self) -> None:
        super().__init__()
        self._merge: Dict[Any, NDArray] = {}
        self._staging: Dict[Any, List[np.ndarray]] = {}

    def _host(self, key: Any, srcs: List[NDArray]) -> List[np.ndarray]:
        arrays = [s._array for s in srcs]
        if all(isinstance(a, np.ndarray) for a in arrays):
            return arrays
        stage = self._staging.setdefault(key, [])
        out = []
        for i, a in enumerate(arrays):
            if isinstance(a, np.ndarray):
                out.append(a)
                continue
            while len(stage) <= i:
                stage.append(None)
            if stage[i] is None or stage[i].shape != a.shape or stage[i].dtype != a.dtype:
                stage[i] = empty_host(self.store_ctx, a.shape, a.dtype)  # pinned: DMA
            copy_array(stage[i], a)
            out.append(stage[i])
        return out

    def _reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        if out is not None and len(srcs) == 1:
            copy_array(out._array, srcs[0]._array)
            return out
        if out is None:
            if len(srcs) == 1:
                return srcs[0]
            out = self._merge.get(key)
            s0 = srcs[0]
            if out is None or out.shape != s0.shape or out._array.dtype != s0._array.dtype:
                out = NDArray(empty_host(self.store_ctx, s0.shape, s0._array.dtype),
                              self.store_ctx)
                self._merge[key] = out
        host = self._host(key, srcs)
        if isinstance(out._array, np.ndarray):
            self.reducer.sum_into(out._array, host)
        else:  # the output lives on a GPU: reduce on the host, then upload
            tmp = np.empty(out.shape, out._array.dtype)
            self.reducer.sum_into(tmp, host)
            copy_array(out._array, tmp)
        return out

    def _free(self) -> None:
        self._merge.clear()
        self._staging.clear()
        super()._free()
