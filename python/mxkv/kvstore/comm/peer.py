"""Copies between devices, and which way each one goes.

Every copy a comm makes between two contexts goes through a
:class:`Copier`, which picks the route and counts the bytes sent on it:

============  ==============================================================
``local``     same memory: the same context, or two host contexts (cpu,
              cpu_pinned, cpu_shared share the host's memory)
``h2d``       host to a GPU
``d2h``       a GPU to the host
``device``    two virtual GPUs on one physical device (a device-to-device copy)
``peer``      GPU to GPU over a direct (P2P) link
``staged``    GPU to GPU through host memory: P2P turned off
              (``MXNET_ENABLE_GPU_P2P=0``) or not possible between the two
============  ==============================================================

On real GPUs peer access is enabled once per pair, as MXNet's
``CommDevice::EnableP2P`` does, when ``MXNET_ENABLE_GPU_P2P`` is not 0 and
``cudaDeviceCanAccessPeer`` allows it. On simulated GPUs (numpy memory) the
copy is a host copy and the route comes from the synthetic link topology,
so the counts show what a real machine with that topology would send where.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Dict, Tuple

import numpy as np

from ...base import env
from ...context import Context

__all__ = ["Copier", "same_memory"]


def same_memory(a: Context, b: Context) -> bool:
    """True when arrays on ``a`` are addressable on ``b`` without a copy."""
    return a == b or (not a.is_gpu and not b.is_gpu)


class Copier:
    """Copies arrays between contexts by the best route, counting bytes per route.

    Reads ``MXNET_ENABLE_GPU_P2P`` (default 1) when made.
    """

    def __init__(self) -> None:
        self.p2p = env("MXNET_ENABLE_GPU_P2P", True, bool)
        self.bytes: Counter = Counter()
        self._peer: Dict[Tuple[int, int], bool] = {}
        self._lock = threading.Lock()

    # -- routes ---------------------------------------------------------------
    def route(self, src: Context, dst: Context) -> str:
        """The route a copy from ``src`` to ``dst`` takes (see the module doc)."""
        if same_memory(src, dst):
            return "local"
        if not src.is_gpu:
            return "h2d"
        if not dst.is_gpu:
            return "d2h"
        if src.uses_cupy and src.cuda_id == dst.cuda_id:
            return "device"
        return "peer" if self.p2p and self.can_access(src, dst) else "staged"

    def can_access(self, src: Context, dst: Context) -> bool:
        """Whether ``dst``'s device can read ``src``'s memory directly (peer access
        enabled on real GPUs; the synthetic topology's P2P flag on simulated ones)."""
        key = (src.device_id, dst.device_id)
        with self._lock:
            known = self._peer.get(key)
        if known is not None:
            return known
        if src.uses_cupy:
            ok = _enable_cuda_peer(src.cuda_id, dst.cuda_id)
        else:
            from .topology import synthetic_links_for_all
            ok = bool(synthetic_links_for_all().p2p[dst.device_id][src.device_id])
        with self._lock:
            self._peer[key] = ok
        return ok

    # -- copies ---------------------------------------------------------------
    def copy(self, dst: Any, src: Any) -> str:
        """Copy NDArray ``src`` into NDArray ``dst`` (same size); return the route."""
        way = self.route(src.context, dst.context)
        d, s = dst._array, src._array
        if way != "local":
            with self._lock:
                self.bytes[way] += int(s.nbytes)
        if isinstance(d, np.ndarray) and isinstance(s, np.ndarray):
            np.copyto(d, s.reshape(d.shape), casting="unsafe")
        elif way in ("peer", "staged"):
            copy_between_gpus(d, s, staged=way == "staged")
        else:
            from .base import copy_array
            copy_array(d, s)
        return way

    def reset_counts(self) -> None:
        with self._lock:
            self.bytes.clear()


def _enable_cuda_peer(src_dev: int, dst_dev: int) -> bool:
    """Let ``dst_dev`` read ``src_dev``'s memory; False when CUDA says it cannot."""
    import cupy

    rt = cupy.cuda.runtime
    try:
        if not rt.deviceCanAccessPeer(dst_dev, src_dev):
            return False
        with cupy.cuda.Device(dst_dev):
            rt._deviceEnsurePeerAccess(src_dev)
        return True
    except rt.CUDARuntimeError:
        return False


def copy_between_gpus(dst: Any, src: Any, staged: bool = False) -> None:
    """Copy cupy ``src`` into cupy ``dst`` on another device.

    ``staged``: through a pinned host buffer (two copies over PCIe); else
    ``cudaMemcpyPeer``, which is ordered after pending work on both devices.
    """
    import cupy

    src = src.reshape(dst.shape)
    if staged:
        with cupy.cuda.Device(src.device.id):
            host = cupy.cuda.alloc_pinned_memory(src.nbytes)
            buf = np.frombuffer(host, src.dtype, src.size).reshape(src.shape)
            src.get(out=buf)
        with cupy.cuda.Device(dst.device.id):
            dst.set(buf)
        return
    if not src.flags.c_contiguous:
        with cupy.cuda.Device(src.device.id):
            src = cupy.ascontiguousarray(src)
    cupy.cuda.runtime.memcpyPeer(dst.data.ptr, dst.device.id, src.data.ptr, src.device.id,
                                 src.nbytes)
