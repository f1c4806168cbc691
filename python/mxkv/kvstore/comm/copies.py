"""The copy primitives of the comms: host, device, peer and staged copies.

Every copy between two GPUs is asynchronous and ordered by events
(:mod:`.streams` holds the rules; this module follows them):

* :func:`copy_peer`: ``cudaMemcpyPeerAsync`` on the destination's current
  stream, after it waits for an event recorded on the source's stream; the
  source's stream then waits for the copy, so nothing overwrites the source
  before it has been read.
* :func:`copy_staged`: through a pinned host buffer owned by the device pair
  (:class:`Staging`): an asynchronous download on the source's stream, an
  event, an asynchronous upload on the destination's stream, and an event
  that says when the buffer is free again; the next copy through that
  buffer waits for it, so a copy never overwrites a buffer an upload is
  still reading.

Inside a comm operation the current streams are the comm's own
(:meth:`StreamOrder.op`). On simulated GPUs the same steps run over the
event model, which checks each access; the bytes are moved with numpy.
Only CuPy's public API is used (``cupy.cuda.runtime.deviceEnablePeerAccess``,
``memcpyPeerAsync``, ``ndarray.get``/``set`` with a stream).
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .streams import cuda_backend

__all__ = ["Staging", "copy_array", "copy_peer", "copy_staged", "enable_peer_access",
           "move_async"]

# cudaErrorPeerAccessAlreadyEnabled: someone (CuPy itself, another store) was first
_PEER_ALREADY_ENABLED = 704

_peer_enabled: Dict[Tuple[int, int], bool] = {}
_peer_lock = threading.Lock()


def enable_peer_access(src_dev: int, dst_dev: int) -> bool:
    """Let CUDA device ``dst_dev`` read ``src_dev``'s memory directly, once per
    pair per process (as MXNet's ``EnableP2P``); False when CUDA says it cannot."""
    if src_dev == dst_dev:
        return True
    import cupy

    rt = cupy.cuda.runtime
    with _peer_lock:
        known = _peer_enabled.get((src_dev, dst_dev))
        if known is not None:
            return known
        ok = False
        try:
            if rt.deviceCanAccessPeer(dst_dev, src_dev):
                with cupy.cuda.Device(dst_dev):
                    try:
                        rt.deviceEnablePeerAccess(src_dev)
                    except rt.CUDARuntimeError as exc:
                        if getattr(exc, "status", None) != _PEER_ALREADY_ENABLED:
                            raise
                ok = True
        except rt.CUDARuntimeError:
            ok = False
        _peer_enabled[(src_dev, dst_dev)] = ok
        return ok


def _is_host(a: Any) -> bool:
    return isinstance(a, np.ndarray)


def _dev(a: Any) -> int:
    return a.device.id


def move_async(be: Any, stream: Any, dst: Any, src: Any, kind: str) -> None:
    """One asynchronous move of ``src`` into same-sized ``dst`` on ``stream``:
    ``kind`` is ``'d2h'``, ``'h2d'``, ``'d2d'`` or ``'peer'``."""
    be.access(stream, reads=[src], writes=[dst], what=kind)
    if _is_host(dst) and _is_host(src):  # simulated GPUs: the model above is the point
        np.copyto(dst, src.reshape(dst.shape), casting="unsafe")
        return
    import cupy

    if kind == "d2h":
        with cupy.cuda.Device(_dev(src)):
            src.reshape(dst.shape).get(stream=stream, out=dst, blocking=False)
    elif kind == "h2d":
        with cupy.cuda.Device(_dev(dst)):
            dst.set(np.ascontiguousarray(src.reshape(dst.shape), dtype=dst.dtype), stream=stream)
    elif kind == "d2d":
        with cupy.cuda.Device(_dev(dst)), stream:
            cupy.copyto(dst, src.reshape(dst.shape), casting="unsafe")
    else:
        cupy.cuda.runtime.memcpyPeerAsync(dst.data.ptr, _dev(dst), src.data.ptr, _dev(src),
                                          src.nbytes, stream.ptr)


def _contiguous_on(be: Any, dev: Any, a: Any) -> Any:
    if _is_host(a) or a.flags.c_contiguous:
        return a
    import cupy

    with cupy.cuda.Device(_dev(a)), be.current(dev):
        return cupy.ascontiguousarray(a)


def copy_peer(be: Any, dst: Any, src: Any, dst_dev: Any, src_dev: Any) -> None:
    """Copy ``src`` (on ``src_dev``) into ``dst`` (on ``dst_dev``), same dtype and
    size, asynchronously on ``dst_dev``'s current stream."""
    src = _contiguous_on(be, src_dev, src.reshape(dst.shape))
    s_stream, d_stream = be.current(src_dev), be.current(dst_dev)
    if s_stream is d_stream:  # one device (virtual GPUs): the stream orders it
        move_async(be, d_stream, dst, src, "d2d")
        return
    be.wait(d_stream, be.record(s_stream, src_dev), dst_dev)   # the source's data is there
    move_async(be, d_stream, dst, src, "peer")
    be.wait(s_stream, be.record(d_stream, dst_dev), src_dev)   # and is read before it changes


class Staging:
    """The pinned host buffer of one (source, destination) device pair.

    ``free`` is the event recorded after the last upload from the buffer; the
    next download into it waits for that event. A buffer that must grow is
    replaced only after its last upload finished.
    """

    def __init__(self, pinned: bool) -> None:
        self.pinned = pinned
        self.lock = threading.Lock()
        self.buf: Optional[np.ndarray] = None
        self.free: Any = None
        self.uses = 0

    def take(self, be: Any, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of the buffer, made or grown first (pinned when ``pinned``); a
        grown buffer replaces the old one only after the last upload from it (``be`` waits for
        its event). The caller holds ``lock``."""
        if self.buf is None or self.buf.nbytes < nbytes:
            if self.free is not None:
                be.sync_event(self.free)  # the old block is still being read
                self.free = None
            if self.buf is not None:
                be.retire(self.buf)       # back to the pool: anyone may write it now
            if self.pinned:
                import cupyx

                self.buf = cupyx.empty_pinned((nbytes,), np.uint8)
            else:
                self.buf = np.empty(nbytes, np.uint8)
        return self.buf[:nbytes]

    def release(self, be: Any) -> None:
        """Wait for the last upload, then drop the buffer."""
        with self.lock:
            if self.free is not None and be is not None:
                be.sync_event(self.free)
            if self.buf is not None and be is not None:
                be.retire(self.buf)
            self.free = None
            self.buf = None


def copy_staged(be: Any, stage: Staging, dst: Any, src: Any, dst_dev: Any,
                src_dev: Any) -> None:
    """Copy ``src`` into ``dst`` (two GPUs) through ``stage``'s host buffer,
    asynchronously: download on the source's stream, upload on the destination's."""
    src = _contiguous_on(be, src_dev, src.reshape(dst.shape))
    s_stream, d_stream = be.current(src_dev), be.current(dst_dev)
    with stage.lock:
        buf = stage.take(be, src.nbytes).view(src.dtype).reshape(src.shape)
        if stage.free is not None:
            be.wait(s_stream, stage.free, src_dev)         # the last upload has read it
        move_async(be, s_stream, buf, src, "d2h")
        be.wait(d_stream, be.record(s_stream, src_dev), dst_dev)   # downloaded
        move_async(be, d_stream, dst, buf, "h2d")
        stage.free = be.record(d_stream, dst_dev)         # uploaded: free again
        stage.uses += 1


def copy_array(dst: Any, src: Any) -> None:
    """Copy the contents of ``src`` into the existing buffer ``dst``.

    Both are numpy or cupy arrays of the same size; they may live on
    different devices. Host destinations are complete when it returns;
    device destinations are ordered on the current stream of their device.
    """
    if type(dst) is np.ndarray and type(src) is np.ndarray and dst.shape == src.shape:
        dst[...] = src  # the cheapest numpy copy call for small arrays
        return
    if _is_host(dst):
        if _is_host(src):
            np.copyto(dst, src.reshape(dst.shape), casting="unsafe")
        else:  # cupy -> host, on the source device's current stream, blocking
            import cupy

            with cupy.cuda.Device(_dev(src)):
                src.reshape(dst.shape).get(out=dst)
        return
    import cupy

    if _is_host(src):
        with cupy.cuda.Device(_dev(dst)):
            dst.set(np.ascontiguousarray(src.reshape(dst.shape), dtype=dst.dtype))
    elif _dev(src) == _dev(dst):
        with cupy.cuda.Device(_dev(dst)):
            dst[...] = src.reshape(dst.shape)
    else:  # between two GPUs: ordered on both devices' current streams
        copy_peer(cuda_backend(), dst, src, _dev(dst), _dev(src))
