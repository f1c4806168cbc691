"""CommDevice: values are reduced on the devices they live on (MXNet's
``device`` store).

Each key gets a merge buffer on one of the devices that push it. Buffers are
placed by load, as MXNet's CommDevice does: all keys waiting for a buffer,
largest first, each onto the device with the fewest elements placed so far.
With gradient compression set, every source is quantized with its own
residual (error feedback) and dequantized on the merge device before the sum,
even when there is a single source, so that no device is favoured.

The algorithms only use the arrays' own module (numpy or cupy), so the same
code runs with simulated devices (``cpu(i)`` contexts) on a machine without
a GPU.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...context import Context
from ...ndarray import NDArray
from .base import Comm, copy_array

__all__ = ["CommDevice"]

# Elements per chunk of a compressed reduction (1 MiB of float32).
_GC_CHUNK = 1 << 18


def _empty_like_on(ctx: Context, shape: tuple, dtype: Any) -> NDArray:
    from ... import ndarray as nd

    return nd.empty(shape, ctx=ctx, dtype=dtype)


def _zeros_on(ctx: Context, shape: tuple, dtype: Any) -> NDArray:
    from ... import ndarray as nd

    return nd.zeros(shape, ctx=ctx, dtype=dtype)


@Comm.register
class CommDevice(Comm):
    name = "device"

    def __init__(self) -> None:
        super().__init__()
        self._attrs: Dict[Any, Tuple[tuple, Any]] = {}
        self._pending: List[Any] = []
        self._merge_ctx: Dict[Any, Context] = {}
        self._merge: Dict[Any, NDArray] = {}
        self._load: Dict[Context, int] = {}
        self._copy_buf: Dict[Any, List[NDArray]] = {}
        self._residual: Dict[Any, List[NDArray]] = {}

    def init(self, key: Any, shape: tuple, dtype: Any, stype: str) -> None:
        self._attrs[key] = (tuple(shape), np.dtype(dtype))
        self._pending.append(key)

    # -- merge buffer placement --------------------------------------------
    def _place(self, srcs: List[NDArray]) -> None:
        devs: List[Context] = []
        for s in srcs:
            if s.context not in devs:
                devs.append(s.context)
        for d in devs:
            self._load.setdefault(d, 0)
        pending = sorted(self._pending, key=lambda k: -int(np.prod(self._attrs[k][0])))
        for key in pending:
            ctx = min(devs, key=lambda d: self._load[d])
            self._merge_ctx[key] = ctx
            self._load[ctx] += int(np.prod(self._attrs[key][0]))
        self._pending = []

    def merge_context(self, key: Any) -> Optional[Context]:
        """The device holding ``key``'s merge buffer, once placed."""
        return self._merge_ctx.get(key)

    def _merge_buf(self, key: Any, srcs: List[NDArray]) -> NDArray:
        if key not in self._merge_ctx:
            if key not in self._attrs:  # reduce without init: size it from the sources
                self.init(key, srcs[0].shape, srcs[0]._array.dtype, "default")
            self._place(srcs)
        buf = self._merge.get(key)
        if buf is None:
            shape, dtype = self._attrs[key]
            buf = _empty_like_on(self._merge_ctx[key], shape, dtype)
            self._merge[key] = buf
        return buf

    def _on_merge_device(self, key: Any, srcs: List[NDArray], merge: NDArray) -> List[Any]:
        """The sources' arrays, copied to the merge device where they are not
        already addressable there (host arrays are, on any host context)."""
        target_host = isinstance(merge._array, np.ndarray)
        bufs = self._copy_buf.setdefault(key, [])
        arrays = []
        for i, s in enumerate(srcs):
            a = s._array
            same = target_host and isinstance(a, np.ndarray)
            if not same and not target_host and not isinstance(a, np.ndarray):
                same = a.device.id == merge._array.device.id
            if same:
                arrays.append(a)
                continue
            while len(bufs) <= i:
                bufs.append(None)
            if bufs[i] is None:
                bufs[i] = _empty_like_on(merge.context, merge.shape, merge._array.dtype)
            copy_array(bufs[i]._array, a)
            arrays.append(bufs[i]._array)
        return arrays

    # -- reduce --------------------------------------------------------------
    def reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        if self.gc is not None:
            return self._reduce_compressed(key, srcs, out)
        if len(srcs) == 1:
            if out is None:
                return srcs[0]
            copy_array(out._array, srcs[0]._array)
            return out
        merge = self._merge_buf(key, srcs)
        arrays = self._on_merge_device(key, srcs, merge)
        if out is not None and isinstance(out._array, np.ndarray) and \
                isinstance(merge._array, np.ndarray):
            self.reducer.sum_into(out._array, arrays)  # host devices: sum straight into out
            return out
        self.reducer.sum_into(merge._array, arrays)
        if out is None:
            return merge
        copy_array(out._array, merge._array)
        return out

    def _reduce_compressed(self, key: Any, srcs: List[NDArray],
                           out: Optional[NDArray]) -> NDArray:
        gc = self.gc
        merge = self._merge_buf(key, srcs)
        residuals = self._residual.setdefault(key, [])
        while len(residuals) < len(srcs):
            residuals.append(None)
        for i, s in enumerate(srcs):
            if residuals[i] is None or residuals[i].context != s.context:
                residuals[i] = _zeros_on(s.context, s.shape, np.float32)
        # Host devices: quantize+dequantize fused, accumulated straight into
        # the target in push order (left to right, as MXNet sums).
        target = merge
        if out is not None and isinstance(out._array, np.ndarray) and \
                out._array.dtype == np.float32:
            target = out
        all_host = isinstance(target._array, np.ndarray) and \
            all(isinstance(s._array, np.ndarray) for s in srcs)
        if all_host:
            # Element ranges on the threads; inside a range, chunks outside and
            # devices inside, so the chunk of the target stays in cache.
            tgt = target._array.reshape(-1)
            grads = [s._array.reshape(-1) for s in srcs]
            res = [r._array.reshape(-1) for r in residuals[:len(srcs)]]

            def work(lo: int, hi: int) -> None:
                for a in range(lo, hi, _GC_CHUNK):
                    b = min(a + _GC_CHUNK, hi)
                    for i, g in enumerate(grads):
                        gc.roundtrip(g[a:b], res[i][a:b], tgt[a:b], accumulate=i > 0)

            self.reducer.split(work, tgt.size)
        else:  # quantize where the gradient is, move the packed words, dequantize
            recv = self._copy_buf.setdefault(("gc", key), [])
            parts = []
            for i, s in enumerate(srcs):
                while len(recv) <= i:
                    recv.append(None)
                if recv[i] is None:
                    recv[i] = _empty_like_on(merge.context, s.shape, np.float32)
                packed = gc.quantize(s._array, residuals[i]._array)
                landed = _empty_like_on(merge.context, packed.shape, packed.dtype)
                copy_array(landed._array, packed)
                gc.dequantize(landed._array, recv[i]._array)
                parts.append(recv[i]._array)
            target = merge
            self.reducer.sum_into(target._array, parts)
        if out is None:
            return target
        if target is not out:
            copy_array(out._array, target._array)
        return out
