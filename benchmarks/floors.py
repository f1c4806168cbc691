"""The machine's floors, measured with plain numpy in the worker's interpreter.

* ``copy``: ``np.copyto(dst, src)`` on a large array.
* ``add``: ``np.add(a, b, out=c)`` on a large array.
* ``reduce_step`` (per row that asks for one): the best a push+pull of keys
  of the given sizes from k devices can do in plain numpy, one thread: for
  each key sum the k arrays into its stored buffer (k-1 adds, the first one
  out-of-place), then for each key copy the buffer to k outputs. With one
  device the push keeps the pushed array, so the floor is one copy per key. The driver
  times it interleaved with the row's repetitions, in the mxkv worker.

Bandwidth is given two ways: ``gbps`` counts the memory traffic (STREAM's
convention: a copy reads and writes, 2 bytes per byte; an add moves 3), and
``payload_gbps`` counts the bytes of the result per second (what memcpy
"delivers"; the unit a data transfer such as Clojure's ``->vec`` is compared in).
"""
from __future__ import annotations

import gc
import statistics
import time
from functools import partial
from typing import Any, Callable, Dict, List


def _times(fn: Callable[[], None], reps: int, warmup: int = 2) -> List[float]:
    for _ in range(warmup):
        fn()
    out = []
    gc.disable()
    try:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return out


def _summary(times: List[float], nbytes: int, traffic: int) -> Dict[str, Any]:
    med = statistics.median(times)
    return {"min_s": min(times), "median_s": med, "n": len(times), "bytes": nbytes,
            "gbps": traffic / med / 1e9, "gbps_best": traffic / min(times) / 1e9,
            "payload_gbps": nbytes / med / 1e9}


def step_traffic(sizes: List[int], k: int, itemsize: int = 4) -> int:
    """Memory traffic of the floor's push+pull: k-1 adds and k copies per key."""
    return itemsize * sum(sizes) * (3 * (k - 1) + 2 * k)


def reduce_step(np: Any, sizes: List[int], k: int) -> Callable[[], None]:
    """The floor of a push+pull of keys of ``sizes`` elements from ``k`` devices."""
    srcs = [[np.ones(n, np.float32) for _ in range(k)] for n in sizes]
    outs = [[np.zeros(n, np.float32) for _ in range(k)] for n in sizes]
    bufs = [np.empty(n, np.float32) for n in sizes]

    def push_pull() -> None:
        if k == 1:  # one device: the push keeps the array, the pull copies it once
            for src, out in zip(srcs, outs):
                np.copyto(out[0], src[0])
            return
        for src, buf in zip(srcs, bufs):
            np.add(src[0], src[1], out=buf)
            for s in src[2:]:
                np.add(buf, s, out=buf)
        for out, buf in zip(outs, bufs):
            for o in out:
                np.copyto(o, buf)
    return push_pull


def measure(np: Any, big_bytes: int, reps: int) -> Dict[str, Any]:
    """Copy and add bandwidth on arrays of ``big_bytes``."""
    n = big_bytes // 4
    a = np.ones(n, np.float32)
    b = np.ones(n, np.float32)
    c = np.zeros(n, np.float32)
    copy = _summary(_times(partial(np.copyto, c, a), reps), 4 * n, 8 * n)
    add = _summary(_times(partial(np.add, a, b, out=c), reps), 4 * n, 12 * n)
    return {"numpy": np.__version__, "copy": copy, "add": add}
