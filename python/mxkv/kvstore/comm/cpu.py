"""CommCPU: every value is reduced in host memory (MXNet's ``local`` store).

Values on host contexts are summed where they are, straight into the
output; values on GPUs are first copied to a host staging buffer.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ...context import empty_host
from ...ndarray import NDArray
from .base import Comm, copy_array
from .reduce import disjoint

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
        self._staging: Dict[Any, List[Optional[np.ndarray]]] = {}

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
            buf = stage[i]
            if buf is None or buf.shape != a.shape or buf.dtype != a.dtype:
                buf = stage[i] = empty_host(self.store_ctx, a.shape, a.dtype)  # pinned: DMA
            copy_array(buf, a)
            out.append(buf)
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

    def reduce_many(self, jobs: Sequence[Tuple[Any, List[NDArray], NDArray]]) -> None:
        """Every job's sum into its ``out``; when all are independent host
        arrays of one dtype per job, as one batch cut into equal shares for the
        reducer's threads (``Reducer.sum_many``), else one job at a time."""
        plain = self._worth_batching(len(jobs), (out._array.size for _, _, out in jobs)) and \
            _host_jobs([(out, srcs) for _, srcs, out in jobs])
        if not plain:
            super().reduce_many(jobs)
        else:
            self.reducer.sum_many(plain)

    def broadcast_many(self, jobs: Sequence[Tuple[Any, NDArray, List[NDArray]]]) -> None:
        """Every job's copies, as :meth:`reduce_many` (``Reducer.copy_many``)."""
        plain = self._worth_batching(len(jobs), (src._array.size for _, src, _ in jobs)) and \
            _host_jobs([(src, dsts) for _, src, dsts in jobs], reads_first=True)
        if not plain:
            super().broadcast_many(jobs)
        else:
            self.reducer.copy_many(plain)

    def _worth_batching(self, njobs: int, sizes: Iterable[int]) -> bool:
        """Whether ``njobs`` jobs of ``sizes`` elements are worth the threads:
        below the big-array bound in all, one job at a time costs less than
        checking the batch (and one job splits on its own)."""
        r = self.reducer
        if r.nthreads == 1 or njobs < 2:
            return False
        total = 0
        for n in sizes:
            total += n
            if total >= r.bigarray_bound:
                return True
        return False

    def _free(self) -> None:
        self._merge.clear()
        self._staging.clear()
        super()._free()


def _host_jobs(jobs: Sequence[Tuple[Any, Any]], reads_first: bool = False) -> Optional[list]:
    """``jobs`` (``(one, many)`` NDArrays: ``(out, srcs)``, or ``(src, dsts)``
    when ``reads_first``) as the same pairs of numpy arrays, when all are
    contiguous host arrays (no GPU context, simulated ones included) of one
    dtype per job and no job writes memory another touches; None otherwise."""
    plain, access = [], []
    for one, many in jobs:
        a = one._array
        if one._ctx.device_typeid == 2 or type(a) is not np.ndarray:
            return None
        dtype, arrays = a.dtype, []
        for m in many:
            b = m._array
            if m._ctx.device_typeid == 2 or type(b) is not np.ndarray or b.dtype != dtype:
                return None
            arrays.append(b)
        plain.append((a, arrays))
        access.append(([a], arrays) if reads_first else (arrays, [a]))
    for _, written in access:
        for w in written:
            if not w.flags.c_contiguous:
                return None  # (flattening it would copy: the write would be lost)
    return plain if disjoint(access) else None
