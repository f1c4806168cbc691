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

The copies themselves (asynchronous, ordered by events, staged through a
pinned buffer owned by each device pair) are :mod:`.copies`'.
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Dict, Tuple

import numpy as np

from ...base import env
from ...context import Context, cuda_device
from .copies import Staging, copy_array, copy_peer, copy_staged, enable_peer_access, move_async
from .streams import backend_for
from .topology import synthetic_links_for_all

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
        self._stages: Dict[Tuple[Any, Any], Tuple[Staging, Any]] = {}
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
            ok = enable_peer_access(cuda_device(src), cuda_device(dst))
        else:
            ok = bool(synthetic_links_for_all().p2p[dst.device_id][src.device_id])
        with self._lock:
            self._peer[key] = ok
        return ok

    # -- copies ---------------------------------------------------------------
    def copy(self, dst: Any, src: Any) -> str:
        """Copy NDArray ``src`` into NDArray ``dst`` (same size); return the route.

        Copies that involve a GPU run on the devices' current streams (the
        comm's, inside a comm operation) and are ordered by events; a copy
        into host memory is complete when the operation ends.
        """
        sctx, dctx = src._ctx, dst._ctx
        way = self.route(sctx, dctx)
        d, s = dst._array, src._array
        if way == "local":
            if isinstance(d, np.ndarray) and isinstance(s, np.ndarray):
                np.copyto(d, s.reshape(d.shape), casting="unsafe")
            else:
                copy_array(d, s)
            return way
        with self._lock:
            self.bytes[way] += int(s.nbytes)
        if d.dtype != s.dtype and not isinstance(s, np.ndarray) and way != "h2d":
            s = _cast_on_device(s, d.dtype)  # copies move bytes: cast where the source is
        if way in ("peer", "staged", "device"):
            be = backend_for(dctx)
            ddev, sdev = be.key(dctx), be.key(sctx)
            if way == "staged":
                copy_staged(be, self._staging(be, sdev, ddev, sctx.uses_cupy), d, s, ddev, sdev)
            else:
                copy_peer(be, d, s, ddev, sdev)
            return way
        gctx = dctx if way == "h2d" else sctx
        be = backend_for(gctx)
        move_async(be, be.current(be.key(gctx)), d, s, way)
        return way

    def _staging(self, be: Any, sdev: Any, ddev: Any, pinned: bool) -> Staging:
        with self._lock:
            st = self._stages.get((sdev, ddev))
            if st is None:
                st = self._stages[(sdev, ddev)] = (Staging(pinned), be)
            return st[0]

    def close(self) -> None:
        """Free the staging buffers once their last uploads are done."""
        with self._lock:
            stages = list(self._stages.values())
            self._stages.clear()
        for st, be in stages:
            st.release(be)


def _cast_on_device(a: Any, dtype: Any) -> Any:
    """``a`` (cupy) cast to ``dtype`` on its own device's current stream."""
    import cupy

    with cupy.cuda.Device(a.device.id):
        return a.astype(dtype)
