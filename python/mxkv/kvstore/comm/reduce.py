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

from ...base import env

__all__ = ["Reducer"]

# Bytes per chunk of a blocked sum. Measured on the 2-core EPYC here (1 MiB
# L2 per core, 32 MiB L3): 256 KiB chunks cost 2.5x more than 1-2 MiB ones
# in per-call overhead; beyond 2 MiB the partial sum falls out of L2.
_CHUNK_BYTES = 2 << 20


class Reducer:
    """Sums lists of same-shaped host arrays into an output array.

    Reads ``MXNET_KVSTORE_BIGARRAY_BOUND`` (default 1e6 elements) and
    ``MXNET_KVSTORE_REDUCTION_NTHREADS`` (default 4, capped at the number of
    cores) when it is made.
    """

    def __init__(self) -> None:
        self.bigarray_bound = env("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000, minimum=1)
        nthreads = env("MXNET_KVSTORE_REDUCTION_NTHREADS", 4, minimum=1)
        self.nthreads = max(1, min(nthreads, os.cpu_count() or 1))
        self.chunk_bytes = _CHUNK_BYTES
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
        chunk = max(1, self.chunk_bytes // o.itemsize)
        if n >= self.bigarray_bound and self.nthreads > 1:
            self._parallel(self._sum_range, o, flat, n, chunk)
        else:
            self._sum_range(o, flat, 0, n, chunk)
        return out

    def _parallel(self, fn, a, b, n: int, chunk: int) -> None:
        """Run ``fn(a, b, lo, hi, chunk)`` over ``nthreads`` equal ranges."""
        self.split(lambda lo, hi: fn(a, b, lo, hi, chunk), n)

    def split(self, fn, n: int) -> None:
        """Run ``fn(lo, hi)`` over ``[0, n)``: in equal ranges on the threads
        when ``n`` reaches the big-array bound, else in one call."""
        if n < self.bigarray_bound or self.nthreads == 1:
            fn(0, n)
            return
        step = -(-n // self.nthreads)
        bounds = [(lo, min(lo + step, n)) for lo in range(0, n, step)]
        pool = self._executor()
        futures = [pool.submit(fn, lo, hi) for lo, hi in bounds[1:]]
        fn(*bounds[0])
        for f in futures:
            f.result()

    def _sum_range(self, o: np.ndarray, flat: List[np.ndarray], lo: int, hi: int,
                   chunk: int) -> None:
        add = np.add
        first, second, rest = flat[0], flat[1], flat[2:]
        for a in range(lo, hi, chunk):
            b = min(a + chunk, hi)
            oo = o[a:b]
            add(first[a:b], second[a:b], out=oo)
            for s in rest:
                add(oo, s[a:b], out=oo)

    def copy_to_all(self, src: np.ndarray, dsts: Sequence[np.ndarray]) -> None:
        """``d[...] = src`` for every host array ``d``.

        Whole-array copies let memcpy use streaming stores (no read of the
        destination first), which beats copying cache-sized chunks to every
        destination. Big arrays spread over the threads: whole destinations
        per thread when there are enough of them, else halves of one.
        """
        s = src.reshape(-1)
        flat = [d.reshape(-1) for d in dsts]
        n = s.size
        if n < self.bigarray_bound or self.nthreads == 1:
            for d in flat:
                np.copyto(d, s)
            return
        if len(flat) >= self.nthreads:
            pool = self._executor()
            groups = [flat[i::self.nthreads] for i in range(self.nthreads)]
            futures = [pool.submit(_copy_all, s, g) for g in groups[1:]]
            _copy_all(s, groups[0])
            for f in futures:
                f.result()
            return
        self._parallel(_copy_range, s, flat, n, max(1, -(-n // self.nthreads)))

    def close(self) -> None:
        """Stop its worker threads (those running finish their slice); a later large sum starts new
        ones."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None


def _copy_all(s: np.ndarray, dsts: List[np.ndarray]) -> None:
    for d in dsts:
        np.copyto(d, s)


def _copy_range(s: np.ndarray, dsts: List[np.ndarray], lo: int, hi: int, chunk: int) -> None:
    for d in dsts:
        np.copyto(d[lo:hi], s[lo:hi])


def _sum_generic(out, o, flat):
    """Device arrays (cupy): in-place adds on the current stream, no temporary."""
    import cupy

    for i, s in enumerate(flat):
        if i and s.data.ptr == o.data.ptr:
            flat[0], flat[i] = flat[i], flat[0]
            break
    if len(flat) == 1:
        if flat[0] is not o:
            cupy.copyto(o, flat[0])
        return out
    cupy.add(flat[0], flat[1], out=o)
    for s in flat[2:]:
        cupy.add(o, s, out=o)
    return out
