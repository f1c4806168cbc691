"""CommDevice: values are reduced on the devices they live on (MXNet's
``device`` store).

Each key gets a merge buffer on one of the devices that push it. Buffers are
placed by load, as MXNet's CommDevice does: all keys waiting for a buffer,
largest first, each onto the device with the fewest bytes placed so far
(the first such device in push order on a tie). Values on other devices are
copied to the merge device (peer copies between GPUs where P2P is allowed,
staged through the host otherwise: :mod:`.peer`) and summed there.

With gradient compression set, every source is quantized on its own device
with its own residual (error feedback), the packed words are copied to the
merge device and dequantized there before the sum, even when there is a
single source, so that no device is favoured (MXNet's ``ReduceCompressed``).

Threads: the store reduces different keys at once. A key's buffers are
touched only by the thread holding that key's lock; placement, which looks
at every waiting key and the devices' loads, runs under the comm's own lock.

The algorithms only use the arrays' own module (numpy or cupy), so the same
code runs on simulated GPUs (numpy memory, ``MXKV_SIMULATE_GPUS``) and on
``cpu(i)`` contexts on a machine without a GPU.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ... import ndarray as nd
from ...context import Context
from ...ndarray import NDArray
from ...ndarray._util import device_scope
from ..compression import GradientCompression
from .base import Comm
from .peer import Copier

__all__ = ["CommDevice"]

# Elements per chunk of a compressed reduction (1 MiB of float32).
_GC_CHUNK = 1 << 18


def _empty_on(ctx: Context, shape: tuple, dtype: Any) -> NDArray:
    return nd.empty(shape, ctx=ctx, dtype=dtype)


def _zeros_on(ctx: Context, shape: tuple, dtype: Any) -> NDArray:
    return nd.zeros(shape, ctx=ctx, dtype=dtype)


def _on_host(ctx: Context) -> bool:
    return not ctx.is_gpu


@Comm.register
class CommDevice(Comm):
    """Reduces values on the devices they live on (MXNet's ``device`` store): each key's merge
    buffer is placed by load on one of the devices that push it, the other values are copied
    there (peer or staged) and summed; see the module docstring."""
    name = "device"

    def __init__(self) -> None:
        super().__init__()
        self.copier = Copier()
        self._attrs: Dict[Any, Tuple[tuple, Any]] = {}
        self._pending: List[Any] = []
        self._merge_ctx: Dict[Any, Context] = {}
        self._merge: Dict[Any, NDArray] = {}
        self._load: Dict[Context, int] = {}
        self._copy_buf: Dict[Any, List[Optional[NDArray]]] = {}
        self._residual: Dict[Any, List[Optional[NDArray]]] = {}
        self._place_lock = threading.Lock()  # _pending, _load, _merge_ctx's placement

    def init(self, key: Any, shape: tuple, dtype: Any, stype: str) -> None:
        """Record key ``key``'s shape and dtype; its merge buffer is placed at its first reduce,
        with the other keys then waiting, largest first."""
        with self._place_lock:
            self._attrs[key] = (tuple(shape), np.dtype(dtype))
            self._pending.append(key)

    # -- merge buffer placement --------------------------------------------
    def _nbytes(self, key: Any) -> int:
        shape, dtype = self._attrs[key]
        return int(np.prod(shape)) * dtype.itemsize

    def _place(self, srcs: List[NDArray]) -> None:
        devs: List[Context] = []
        for s in srcs:
            if s.context not in devs:
                devs.append(s.context)
        for d in devs:
            self._load.setdefault(d, 0)
        pending = sorted(self._pending, key=lambda k: -self._nbytes(k))
        for key in pending:
            ctx = min(devs, key=lambda d: self._load[d])
            self._merge_ctx[key] = ctx
            self._load[ctx] += self._nbytes(key)
        self._pending = []

    def _merge_buf(self, key: Any, srcs: List[NDArray]) -> NDArray:
        if key not in self._merge_ctx:
            if key not in self._attrs:  # reduce without init: size it from the sources
                self.init(key, srcs[0].shape, srcs[0]._array.dtype, "default")
            with self._place_lock:
                if key not in self._merge_ctx:  # (another thread may have placed it)
                    self._place(srcs)
        buf = self._merge.get(key)
        if buf is None:
            shape, dtype = self._attrs[key]
            buf = _empty_on(self._merge_ctx[key], shape, dtype)
            self._merge[key] = buf
        return buf

    def _slot(self, table: Dict[Any, list], key: Any, i: int, ctx: Context, shape: tuple,
              dtype: Any, zeros: bool = False) -> NDArray:
        """Buffer ``i`` of ``key`` in ``table``, (re)made on ``ctx`` when needed."""
        bufs = table.setdefault(key, [])
        while len(bufs) <= i:
            bufs.append(None)
        b = bufs[i]
        if b is None or b.context != ctx or b.shape != tuple(shape):
            b = (_zeros_on if zeros else _empty_on)(ctx, shape, dtype)
            bufs[i] = b
        return b

    def _on_merge_device(self, key: Any, srcs: List[NDArray], merge: NDArray) -> List[Any]:
        """The sources' arrays, copied to the merge device where they are not
        already addressable there (host arrays are, on any host context)."""
        arrays = []
        mctx = merge._ctx
        m_host = not mctx.is_gpu
        for i, s in enumerate(srcs):
            sctx = s._ctx
            if (m_host and not sctx.is_gpu) or sctx == mctx:  # same_memory, inlined
                arrays.append(s._array)
                continue
            buf = self._slot(self._copy_buf, key, i, merge.context, merge.shape,
                             merge._array.dtype)
            self.copier.copy(buf, s)
            arrays.append(buf._array)
        return arrays

    # -- reduce --------------------------------------------------------------
    def _reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        if self.gc is not None:
            return self._reduce_compressed(key, srcs, out)
        if len(srcs) == 1:
            if out is None:
                return srcs[0]
            self.copier.copy(out, srcs[0])
            return out
        merge = self._merge_buf(key, srcs)
        arrays = self._on_merge_device(key, srcs, merge)
        if out is not None and not out._ctx.is_gpu and not merge._ctx.is_gpu:
            self.reducer.sum_into(out._array, arrays)  # host devices: sum straight into out
            return out
        with device_scope(merge.context):
            self.reducer.sum_into(merge._array, arrays)
        if out is None:
            return merge
        self.copier.copy(out, merge)
        return out

    def _reduce_compressed(self, key: Any, srcs: List[NDArray],
                           out: Optional[NDArray]) -> NDArray:
        merge = self._merge_buf(key, srcs)
        residuals = [self._slot(self._residual, key, i, s.context, s.shape, np.float32,
                                zeros=True) for i, s in enumerate(srcs)]
        target = merge
        if out is not None and _on_host(out.context) and out._array.dtype == np.float32:
            target = out
        if _on_host(target.context) and all(_on_host(s.context) for s in srcs):
            self._host_compressed(srcs, residuals, target)
        else:
            target = merge
            self._device_compressed(key, srcs, residuals, merge)
        if out is None:
            return target
        if target is not out:
            self.copier.copy(out, target)
        return out

    def _compression(self) -> GradientCompression:
        """The gradient compression a compressed reduce uses (set: the caller checked)."""
        if self.gc is None:
            raise RuntimeError("a compressed reduce without gradient compression set")
        return self.gc

    def _host_compressed(self, srcs, residuals, target) -> None:
        """Host memory only: quantize+dequantize fused, accumulated straight into
        the target in push order (left to right, as MXNet sums)."""
        gc = self._compression()
        tgt = target._array.reshape(-1)
        grads = [s._array.reshape(-1) for s in srcs]
        res = [r._array.reshape(-1) for r in residuals]

        def work(lo: int, hi: int) -> None:
            # chunks outside and devices inside, so the target's chunk stays in cache
            for a in range(lo, hi, _GC_CHUNK):
                b = min(a + _GC_CHUNK, hi)
                for i, g in enumerate(grads):
                    gc.roundtrip(g[a:b], res[i][a:b], tgt[a:b], accumulate=i > 0)

        self.reducer.split(work, tgt.size)

    def _device_compressed(self, key, srcs, residuals, merge) -> None:
        """Quantize on each source's device, move the packed words to the merge
        device, dequantize there, sum."""
        gc = self._compression()
        words = gc.packed_size(merge.size)
        parts = []
        for i, s in enumerate(srcs):
            send = self._slot(self._copy_buf, ("send", key), i, s.context, (words,), np.float32)
            with device_scope(s.context):
                gc.quantize(s._array, residuals[i]._array, send._array)
            recv = send
            if s.context != merge.context:
                recv = self._slot(self._copy_buf, ("recv", key), i, merge.context, (words,),
                                  np.float32)
                self.copier.copy(recv, send)
            values = self._slot(self._copy_buf, ("values", key), i, merge.context, merge.shape,
                                np.float32)
            with device_scope(merge.context):
                gc.dequantize(recv._array, values._array)
            parts.append(values._array)
        with device_scope(merge.context):
            self.reducer.sum_into(merge._array, parts)

    # -- broadcast -----------------------------------------------------------
    def _broadcast(self, key: Any, src: NDArray, dsts: List[NDArray]) -> None:
        """Copy ``src`` into every ``dst``: host outs straight from ``src``; GPU
        outs through one upload to a first device (the merge device when it
        is among them), then device-to-device copies from there."""
        sctx = src._ctx
        gpu = [d for d in dsts if d._ctx.is_gpu and d._ctx != sctx]
        if not gpu:
            super()._broadcast(key, src, dsts)
            return
        rest = [d for d in dsts if not d._ctx.is_gpu or d._ctx == sctx]
        if rest:
            super()._broadcast(key, src, rest)
        merge_ctx = self._merge_ctx.get(key)
        first = next((d for d in gpu if d.context == merge_ctx), gpu[0])
        self.copier.copy(first, src)
        for d in gpu:
            if d is not first:
                self.copier.copy(d, first)


    # -- lifetime -----------------------------------------------------------------
    def _free(self) -> None:
        with self._place_lock:
            self._merge.clear()
            self._copy_buf.clear()
            self._residual.clear()
        self.copier.close()
        super()._free()
