"""The stream discipline of the comms, in one place (docs/gpu.md, "Streams").

Every comm operation (a reduce, a broadcast) runs inside :meth:`StreamOrder.op`:

1. **in:** on each GPU the operation touches, an event is recorded on the
   caller's current stream (the stream that wrote the gradients: CuPy's
   current stream, a non-blocking stream, PyTorch's, the per-thread default
   stream) and the comm's own stream of that device waits on it;
2. **work:** for the length of the operation the comm stream is the current
   stream of its device, so every kernel, copy and NCCL call the comm makes
   runs there; a copy between two GPUs also orders the two comm streams with
   events both ways (the destination waits for the source's data, the source
   for the copy to end before it writes that memory again);
3. **out:** an event is recorded on each comm stream and the caller's stream
   waits on it, so whatever the caller enqueues next sees the results; when
   the operation read or wrote host memory (stored values, host outputs) the
   host waits for the comm streams too, since host memory has no stream to
   hand the order to.

:func:`synchronize` (used by ``NDArray.wait_to_read`` and ``nd.waitall``)
waits for the comm streams as well as the caller's.

Two backends do the work: :class:`CudaStreams` (CuPy streams and events on
real or virtual GPUs) and the event model of :mod:`.stream_model` on
simulated GPUs, which checks every access so a missing wait fails a test.
Operations on host memory only take none of these steps.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterable, List, Optional

from ...context import Context, cuda_device, register_stream_owner
from .stream_model import SimulatedStreams, StreamOrderError

__all__ = ["CudaStreams", "StreamOrder", "StreamOrderError", "backend_for", "cuda_backend", "model",
           "reset_model"]


class CudaStreams:
    """The comm streams of real and virtual GPUs, through CuPy's public API.

    One non-blocking stream per CUDA device (virtual GPUs share their
    device's): it neither waits for nor blocks the legacy default stream, so
    the order is exactly the events :class:`StreamOrder` records.
    """

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self._comm: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def key(self, ctx: Context) -> int:
        """The CUDA device a context's work runs on (virtual GPUs share their device's)."""
        return cuda_device(ctx)

    def current(self, dev: int):
        """The calling thread's current CuPy stream on CUDA device ``dev``."""
        with self.cupy.cuda.Device(dev):
            return self.cupy.cuda.get_current_stream()

    def comm(self, dev: int):
        """The comms' own non-blocking stream on CUDA device ``dev``, made on first use."""
        with self._lock:
            s = self._comm.get(dev)
            if s is None:
                with self.cupy.cuda.Device(dev):
                    s = self._comm[dev] = self.cupy.cuda.Stream(non_blocking=True)
            return s

    @contextlib.contextmanager
    def use(self, dev: int, stream: Any):
        """``stream`` is ``dev``'s current stream (for this thread) in the block."""
        with self.cupy.cuda.Device(dev):
            stream.__enter__()
        try:
            yield stream
        finally:
            with self.cupy.cuda.Device(dev):
                stream.__exit__(None, None, None)

    def record(self, stream: Any, dev: Optional[int] = None):
        """A new event recorded on ``stream`` (on device ``dev`` when given: an event belongs to
        its stream's device)."""
        if dev is None:
            return stream.record()
        with self.cupy.cuda.Device(dev):  # an event is recorded on its stream's device
            return stream.record()

    def wait(self, stream: Any, event: Any, dev: Optional[int] = None) -> None:
        """Make later work on ``stream`` wait for ``event`` (``dev``: the device whose null stream
        ``stream`` may be)."""
        if dev is None:
            stream.wait_event(event)
            return
        with self.cupy.cuda.Device(dev):  # the null stream means the current device's
            stream.wait_event(event)

    @staticmethod
    def synchronize(stream: Any) -> None:
        """The host waits until everything enqueued on ``stream`` has run."""
        stream.synchronize()

    @staticmethod
    def sync_event(event: Any) -> None:
        """The host waits for ``event``."""
        event.synchronize()

    def collective(self, streams: Iterable[Any]) -> None:
        """NCCL orders a group's streams itself."""

    def access(self, stream: Any, reads: Iterable[Any] = (), writes: Iterable[Any] = (),
               what: str = "") -> None:
        """Real streams order real memory: nothing to check."""

    def retire(self, a: Any) -> None:
        """``a``'s memory goes back to its pool (nothing to check here)."""


_backends: Dict[str, Any] = {}
_backends_lock = threading.Lock()


def model() -> SimulatedStreams:
    """The event model every simulated GPU's work is checked against."""
    with _backends_lock:
        m = _backends.get("simulated")
        if m is None:
            m = _backends["simulated"] = SimulatedStreams()
        return m


def reset_model() -> SimulatedStreams:
    """Start a fresh event model (tests: one per test)."""
    with _backends_lock:
        m = _backends["simulated"] = SimulatedStreams()
        return m


def backend_for(ctx: Context) -> Any:
    """The stream backend of a GPU context, None for host contexts."""
    if not ctx.is_gpu:
        return None
    if not ctx.uses_cupy:
        return model()
    return cuda_backend()


def cuda_backend() -> CudaStreams:
    """The CUDA backend (one per process: one comm stream per device)."""
    with _backends_lock:
        b = _backends.get("cuda")
        if b is None:
            b = _backends["cuda"] = CudaStreams()
        return b


class StreamOrder:
    """Orders a comm's work against its callers' streams (the module doc's rules).

    One per comm. Re-entrant: an operation nested in another (a comm calling
    another comm's method, a fallback to a parent class) joins the outer one.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._used: Dict[Any, Any] = {}  # device -> its backend, for synchronize
        self._lock = threading.Lock()
        register_stream_owner(self)

    # -- the discipline -------------------------------------------------------
    @contextlib.contextmanager
    def op(self, reads: Iterable[Any], writes: Iterable[Any]):
        """Run the block as one comm operation on NDArrays ``reads`` -> ``writes``."""
        written: List[Any] = []  # the body appends results it made (merge buffers)
        if getattr(self._local, "depth", 0):
            self._local.depth += 1
            try:
                yield written
            finally:
                self._local.depth -= 1
            return
        reads, writes = list(reads), list(writes)
        devs: Dict[Any, Any] = {}
        host = False
        for a in reads + writes:
            ctx = a._ctx
            if ctx.is_gpu:
                be = backend_for(ctx)
                devs.setdefault(be.key(ctx), be)
            else:
                host = True
        if not devs:
            yield written
            return
        with self._lock:
            self._used.update(devs)
        callers: Dict[Any, Any] = {}
        try:
            with contextlib.ExitStack() as stack:
                for dev, be in devs.items():
                    theirs, mine = be.current(dev), be.comm(dev)
                    callers[dev] = theirs
                    if theirs is not mine:
                        be.wait(mine, be.record(theirs, dev), dev)  # 1. in
                    stack.enter_context(be.use(dev, mine))  # 2. work on the comm stream
                self._local.depth = 1
                try:
                    for a in reads:
                        if a._ctx.is_gpu:
                            be = devs[backend_for(a._ctx).key(a._ctx)]
                            be.access(be.comm(be.key(a._ctx)), reads=[a], what="comm input")
                    yield written
                    for a in writes + [w for w in written if all(w is not x for x in writes)]:
                        if a._ctx.is_gpu and backend_for(a._ctx).key(a._ctx) in devs:
                            be = devs[backend_for(a._ctx).key(a._ctx)]
                            be.access(be.comm(be.key(a._ctx)), writes=[a], what="comm output")
                finally:
                    self._local.depth = 0
        finally:  # 3. out, also after an error: the caller never races the comm's work
            for dev, theirs in callers.items():
                be, mine = devs[dev], devs[dev].comm(dev)
                if theirs is not mine:
                    be.wait(theirs, be.record(mine, dev), dev)
                if host:
                    be.synchronize(mine)

    def synchronize(self, ctx: Optional[Context] = None) -> None:
        """The host waits for this comm's streams (on ``ctx``'s device, or all)."""
        with self._lock:
            used = list(self._used.items())
        for dev, be in used:
            if ctx is None or (ctx.is_gpu and backend_for(ctx) is be and be.key(ctx) == dev):
                be.synchronize(be.comm(dev))

    def close(self) -> None:
        """Wait for every stream this comm used (before its buffers are freed)."""
        self.synchronize()
        with self._lock:
            self._used.clear()

