"""Memory-bound summation kernels shared by the comms.

The sum of ``k`` arrays into ``out`` reads ``k`` arrays and writes one: that
is the floor. Big arrays are cut into cache-sized chunks so that the partial
sum of a chunk stays in cache while every source streams through it, and
arrays above ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements are split across
``MXNET_KVSTORE_REDUCTION_NTHREADS`` threads (numpy releases the GIL inside
its loops, so the threads run in parallel).
"""
from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ...base import env
from ...ndarray.cow import root_of

__all__ = ["Reducer", "byte_bounds", "disjoint"]

# Bytes per chunk of a blocked sum. Measured on the 2-core EPYC here (1 MiB
# L2 per core, 32 MiB L3): 256 KiB chunks cost 2.5x more than 1-2 MiB ones
# in per-call overhead; beyond 2 MiB the partial sum falls out of L2.
_CHUNK_BYTES = 2 << 20

#: Shares of a batch per thread (``Reducer.run_shares``): a few, so the
#: threads that run take over the work of one the machine does not.
SHARES_PER_THREAD = 4
#: Pieces of a batch below this many elements stay on the calling thread
#: (``Reducer.run_shares``): their numpy calls are mostly call overhead,
#: under the GIL. On this machine a 64K-element float32 copy takes ~10 us
#: against ~1 us of call overhead.
SMALL_PIECE = 65536


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
        _out_first(o, flat)
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

    def sum_many(self, jobs: Sequence[Tuple[np.ndarray, Sequence[np.ndarray]]]) -> None:
        """``out[...] = sum(srcs)`` for every ``(out, srcs)`` of contiguous host
        arrays of one dtype, as :meth:`sum_into` each, but the batch is cut
        into equal shares for the threads (across keys, not only inside big
        ones). The caller makes sure no job writes memory another job touches
        (:func:`disjoint`): the jobs may run in any order."""
        pieces = []
        for out, srcs in jobs:
            o = out.reshape(-1)
            flat = [s.reshape(-1) for s in srcs]
            _out_first(o, flat)
            if len(flat) == 1:
                if flat[0] is not o:
                    pieces.append((o.size, 2, partial(_copy_range, flat[0], [o], chunk=0)))
                continue
            chunk = max(1, self.chunk_bytes // o.itemsize)
            pieces.append((o.size, len(flat) + 1, partial(self._sum_range, o, flat,
                                                           chunk=chunk)))
        self.run_shares(pieces)

    def copy_many(self, jobs: Sequence[Tuple[np.ndarray, Sequence[np.ndarray]]]) -> None:
        """``d[...] = src`` for every ``d`` of every ``(src, dsts)`` of contiguous
        host arrays of one dtype, the batch cut into equal shares for the
        threads; the jobs must be independent, as for :meth:`sum_many`. One
        job is :meth:`copy_to_all`."""
        if len(jobs) == 1:
            self.copy_to_all(*jobs[0])
            return
        pieces = []
        for src, dsts in jobs:
            s = src.reshape(-1)
            pieces.append((s.size, 2 * len(dsts),
                           partial(_copy_range, s, [d.reshape(-1) for d in dsts], chunk=0)))
        self.run_shares(pieces)

    def run_shares(self, pieces: Sequence[Tuple[int, int, Callable[[int, int], None]]]) -> None:
        """Run ``fn(lo, hi)`` over ``[0, n)`` for every ``(n, weight, fn)``.

        Pieces of at least ``SMALL_PIECE`` elements, when they reach the
        big-array bound in all, are cut into ``SHARES_PER_THREAD`` shares per
        thread of equal ``n * weight`` (memory traffic: a piece is cut where
        a share ends), which this thread and the pool's take one at a time,
        so a thread the machine does not schedule holds up only the share it
        has. Smaller pieces run on this thread first: numpy holds the GIL
        for most of such a call, so on the pool they would mostly wait for
        it. Everything else runs on this thread, in order.
        """
        big = [p for p in pieces if p[0] >= SMALL_PIECE]
        if self.nthreads == 1 or sum(n for n, _, _ in big) < self.bigarray_bound:
            for n, _, fn in pieces:
                if n:
                    fn(0, n)
            return
        shares = iter(_cut(big, self.nthreads * SHARES_PER_THREAD))

        def work() -> None:
            for share in shares:  # (next() on a list iterator is atomic)
                _run_ranges(share)
        pool = self._executor()
        futures = [pool.submit(work) for _ in range(self.nthreads - 1)]
        try:
            for n, _, fn in pieces:
                if 0 < n < SMALL_PIECE:
                    fn(0, n)
            work()
        finally:
            for f in futures:
                f.result()

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


def _out_first(o: np.ndarray, flat: List[np.ndarray]) -> None:
    """If ``o`` is also a source, put it first: it is read before it is overwritten.
    (Addresses are compared only where the memory may be the same: one
    numpy allocation, or memory numpy did not allocate.)"""
    ro = root_of(o)
    ptr = None
    for i, s in enumerate(flat):
        if i:
            rs = root_of(s)
            if rs is ro or rs.base is not None or ro.base is not None:
                if ptr is None:
                    ptr = o.__array_interface__["data"][0]
                if s.__array_interface__["data"][0] == ptr:
                    flat[0], flat[i] = flat[i], flat[0]
                    break


def _cut(pieces, nthreads: int) -> List[List[Tuple[Callable, int, int]]]:
    """``pieces`` (``(n, weight, fn)``) as ``nthreads`` lists of ``(fn, lo, hi)``
    of equal weight, in order: the concatenated ranges cut at the shares' bounds
    (on 16-element bounds: one cache line of float32)."""
    total = sum(n * w for n, w, _ in pieces)
    shares: List[List[Tuple[Callable, int, int]]] = [[] for _ in range(nthreads)]
    t, done, bound = 0, 0, total / nthreads
    for n, w, fn in pieces:
        lo = 0
        while lo < n:
            if t == nthreads - 1:
                hi = n
            else:
                hi = min(n, lo + max(16, (int((bound - done) / w) + 15) // 16 * 16))
            shares[t].append((fn, lo, hi))
            done += (hi - lo) * w
            lo = hi
            if t < nthreads - 1 and done >= bound:
                t += 1
                bound = total * (t + 1) / nthreads
    return shares


def _run_ranges(share: List[Tuple[Callable, int, int]]) -> None:
    for fn, lo, hi in share:
        fn(lo, hi)


def disjoint(jobs: Sequence[Tuple[Sequence[np.ndarray], Sequence[np.ndarray]]]) -> bool:
    """Whether no job's written arrays share memory with another job's arrays,
    for ``(read, written)`` lists of host arrays per job: then the jobs may
    run in any order, on any threads. Arrays whose memory was allocated by
    numpy are told apart by that allocation (cheap); when one is not, or two
    jobs use one allocation, by their byte ranges."""
    owner: dict = {}
    mine = owner.setdefault
    for j, (reads, writes) in enumerate(jobs):
        for a in itertools.chain(writes, reads):
            if a.base is not None:
                a = root_of(a)
                if a.base is not None:  # memory from elsewhere (pinned, shared): ranges
                    return _disjoint_ranges(jobs)
            if mine(id(a), j) != j:
                return _disjoint_ranges(jobs)
    return True


def _disjoint_ranges(jobs) -> bool:
    spans = []
    for j, (reads, writes) in enumerate(jobs):
        for a in writes:
            if a.size:
                spans.append(byte_bounds(a) + (j, True))
        for a in reads:
            if a.size:
                spans.append(byte_bounds(a) + (j, False))
    spans.sort(key=lambda s: s[0])
    # Per kind (written, read only), the furthest end of the spans begun so
    # far and the job it came from, and the furthest end among the other
    # jobs: the furthest end of any job but j's is one of the two. A span
    # that starts before the furthest end of another job's overlaps it,
    # which matters unless both are only read.
    ends = {True: [0, -1, 0], False: [0, -1, 0]}  # [end, its job, end of another job]
    for lo, hi, j, w in spans:
        for kind in ((True, False) if w else (True,)):
            end, job, other = ends[kind]
            if lo < (end if job != j else other):
                return False
        e = ends[w]
        if e[1] == j:
            e[0] = max(e[0], hi)
        elif hi > e[0]:
            e[0], e[1], e[2] = hi, j, e[0]
        elif hi > e[2]:
            e[2] = hi
    return True


def byte_bounds(a: np.ndarray) -> Tuple[int, int]:
    """First and one-past-last byte addresses ``a`` touches."""
    lo = hi = a.__array_interface__["data"][0]
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += st * (n - 1)
        else:
            hi += st * (n - 1)
    return lo, hi + a.itemsize


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
