"""Memory-bound summation kernels shared by the comms.

The sum of ``k`` arrays into ``out`` reads ``k`` arrays and writes one: that
is the floor. Big arrays are cut into cache-sized chunks so that the partial
sum of a chunk stays in cache while every source streams through it, and
arrays above ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements are split across
``MXNET_KVSTORE_REDUCTION_NTHREADS`` threads (numpy releases the GIL inside
its loops, so the threads run in parallel).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence

import numpy as np

from ...base import env_int

__all__ = ["Reducer"]

# Elements per chunk: 64 Ki float32 = 256 KiB, which sits in L2 on any x86.
_CHUNK = 1 << 16


class Reducer:
    """Sums lists of same-shaped host arrays into an output array.

    Reads ``MXNET_KVSTORE_BIGARRAY_BOUND`` (default 1e6 elements) and
    ``MXNET_KVSTORE_REDUCTION_NTHREADS`` (default 4, capped at the number of
    cores) when it is made.
    """

    def __init__(self) -> None:
        self.bigarray_bound = env_int("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000)
        nthreads = env_int("MXNET_KVSTORE_REDUCTION_NTHREADS", 4)
        self.nthreads = max(1, min(nthreads, os.cpu_count() or 1))
        self.chunk = _CHUNK
        self._pool: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.nthreads, thread_name_prefix="mxkv-reduce")
            return self._pool

    def sum_into(self, out: np.ndarray, srcs: Sequence[np.ndarray]) -> np.ndarray:
        """``out[...] = sum(srcs)``; ``out`` may be one of ``srcs``."""
        o = out.reshape(-1)
        flat = [s.reshape(-1) for s in srcs]
        if not isinstance(o, np.ndarray):  # device arrays (cupy): the device is fast enough
            return _sum_generic(out, o, flat)
        # If out is also a source, it must be summed first: it is overwritten.
        ptr = o.__array_interface__["data"][0]
        for i, s in enumerate(flat):
            if i and s.__array_interface__["data"][0] == ptr:
                flat[0], flat[i] = flat[i], flat[0]
                break
        n = o.size
        if len(flat) == 1:
            if flat[0] is not o:
                np.copyto(o, flat[0])
            return out
        if n >= self.bigarray_bound and self.nthreads > 1:
            step = -(-n // self.nthreads)
            step = -(-step // self.chunk) * self.chunk
            bounds = [(b, min(b + step, n)) for b in range(0, n, step)]
            pool = self._executor()
            futures = [pool.submit(self._sum_range, o, flat, lo, hi) for lo, hi in bounds[1:]]
            self._sum_range(o, flat, *bounds[0])
            for f in futures:
                f.result()
        else:
            self._sum_range(o, flat, 0, n)
        return out

    def _sum_range(self, o: np.ndarray, flat: List[np.ndarray], lo: int, hi: int) -> None:
        chunk = self.chunk
        add = np.add
        first, second, rest = flat[0], flat[1], flat[2:]
        for a in range(lo, hi, chunk):
            b = min(a + chunk, hi)
            oo = o[a:b]
            add(first[a:b], second[a:b], out=oo)
            for s in rest:
                add(oo, s[a:b], out=oo)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None


def _sum_generic(out, o, flat):
    for i, s in enumerate(flat):
        if i and s.data.ptr == o.data.ptr:
            flat[0], flat[i] = flat[i], flat[0]
            break
    if len(flat) == 1:
        if flat[0] is not o:
            o[...] = flat[0]
        return out
    o[...] = flat[0] + flat[1] if flat[0].data.ptr != o.data.ptr else o + flat[1]
    for s in flat[2:]:
        o += s
    return out
