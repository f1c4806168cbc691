"""CUDA's ordering rules for simulated GPUs: streams, events, and a checker.

Simulated GPUs (``MXKV_SIMULATE_GPUS``) keep numpy memory and run every
operation at once, so no race can corrupt a result there. What can still be
wrong is the *plan*: which events a comm records and which streams wait on
them. :class:`SimulatedStreams` keeps that plan honest. It follows CUDA's
rules with vector clocks:

* work on one stream is ordered; work on two streams is not, unless one
  waits on an event recorded on the other (``record`` / ``wait``);
* work the host enqueues is ordered after everything the host did before
  (host program order), but the host knows about a stream's work only after
  synchronising it (``synchronize``, ``sync_event``);
* the streams of one NCCL group are ordered with each other (``collective``).

Every memory access is reported with the stream it runs on (``access``).
A read must come after the last write of the same bytes, a write after the
last write and every read since; otherwise :class:`StreamOrderError` says
which stream touched which array without waiting. So a missing event wait
in a comm fails a test on any machine, while the arrays themselves stay
correct.

Streams: each simulated GPU has a default stream (the caller's), and any
stream a test makes with :meth:`SimulatedStreams.new_stream` can be made
the current one of a device for the calling thread (:meth:`use`), as
``with cupy.cuda.Stream():`` does.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ...base import MXNetError
from .reduce import byte_bounds

__all__ = ["SimEvent", "SimStream", "SimulatedStreams", "StreamOrderError"]


class StreamOrderError(MXNetError):
    """Two streams touched the same memory with no event between them."""


_ids = itertools.count(1)


class SimStream:
    """A simulated stream: a name and a vector clock."""

    def __init__(self, name: str) -> None:
        self.id = next(_ids)
        self.name = name
        self.vc: Dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<stream {self.name}>"


class SimEvent:
    """What a stream had done when the event was recorded."""

    def __init__(self, vc: Dict[int, int], stream: SimStream) -> None:
        self.vc = dict(vc)
        self.stream = stream


def _merge(into: Dict[int, int], other: Dict[int, int]) -> None:
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


class _Region:
    __slots__ = ("lo", "hi", "write", "reads")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.write: Optional[Tuple[SimStream, int]] = None
        self.reads: List[Tuple[SimStream, int]] = []


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class SimulatedStreams:
    """Streams and events with CUDA's semantics over simulated GPUs.

    One instance models the whole process (:func:`mxkv.kvstore.comm.streams.model`).
    ``violations`` lists every error raised, for tests that want to read them.
    """

    def __init__(self) -> None:
        self.host = SimStream("host")
        self._defaults: Dict[Any, SimStream] = {}
        self._comm: Dict[Any, SimStream] = {}
        self._local = threading.local()
        self._lock = threading.RLock()
        self._regions: Dict[int, List[_Region]] = {}
        self.violations: List[str] = []
        self.counts = {"record": 0, "wait": 0, "synchronize": 0}

    # -- streams --------------------------------------------------------------
    def key(self, ctx: Any) -> Any:
        """The device a context's work runs on (each simulated GPU is one)."""
        return ctx

    def new_stream(self, name: str) -> SimStream:
        """A stream of the caller's (a non-blocking CuPy stream, PyTorch's...)."""
        return SimStream(name)

    def _current_table(self) -> Dict[Any, SimStream]:
        table = getattr(self._local, "current", None)
        if table is None:
            table = self._local.current = {}
        return table

    def current(self, dev: Any) -> SimStream:
        """The calling thread's current stream on ``dev`` (its default stream unless set)."""
        s = self._current_table().get(dev)
        if s is not None:
            return s
        with self._lock:
            s = self._defaults.get(dev)
            if s is None:
                s = self._defaults[dev] = SimStream(f"default {dev}")
            return s

    def comm(self, dev: Any) -> SimStream:
        """The comms' own stream on ``dev``."""
        with self._lock:
            s = self._comm.get(dev)
            if s is None:
                s = self._comm[dev] = SimStream(f"comm {dev}")
            return s

    @contextlib.contextmanager
    def use(self, dev: Any, stream: SimStream):
        """Make ``stream`` the calling thread's current stream on ``dev`` in the block."""
        table = self._current_table()
        prev = table.get(dev)
        table[dev] = stream
        try:
            yield stream
        finally:
            if prev is None:
                table.pop(dev, None)
            else:
                table[dev] = prev

    # -- events -------------------------------------------------------------------
    def record(self, stream: SimStream, dev: Any = None) -> SimEvent:
        """An event on ``stream``: it marks the work enqueued so far (and what the host did
        before). ``dev`` is not used (CUDA's device)."""
        with self._lock:
            self.counts["record"] += 1
            _merge(stream.vc, self.host.vc)  # enqueued by the host, after what it did
            return SimEvent(stream.vc, stream)

    def wait(self, stream: SimStream, event: SimEvent, dev: Any = None) -> None:
        """Make later work on ``stream`` wait for ``event`` (``cudaStreamWaitEvent``); ``dev`` is
        not used."""
        with self._lock:
            self.counts["wait"] += 1
            _merge(stream.vc, event.vc)

    def synchronize(self, stream: SimStream) -> None:
        """The host waits for everything enqueued on ``stream``."""
        with self._lock:
            self.counts["synchronize"] += 1
            _merge(stream.vc, self.host.vc)
            _merge(self.host.vc, stream.vc)

    def sync_event(self, event: SimEvent) -> None:
        """The host waits for ``event`` (``cudaEventSynchronize``)."""
        with self._lock:
            _merge(self.host.vc, event.vc)

    def collective(self, streams: Iterable[SimStream]) -> None:
        """The streams of one NCCL group meet: each ends after all of their work."""
        streams = list(streams)
        with self._lock:
            vc: Dict[int, int] = {}
            for s in streams:
                _merge(s.vc, self.host.vc)
                _merge(vc, s.vc)
            for s in streams:
                _merge(s.vc, vc)

    # -- memory -------------------------------------------------------------------
    def access(self, stream: SimStream, reads: Iterable[Any] = (),
               writes: Iterable[Any] = (), what: str = "") -> None:
        """Work on ``stream`` reads ``reads`` and writes ``writes`` (numpy arrays
        or NDArrays); raise :class:`StreamOrderError` if it is not ordered after
        the accesses it depends on."""
        with self._lock:
            if stream is not self.host:
                _merge(stream.vc, self.host.vc)
            n = stream.vc.get(stream.id, 0) + 1
            stream.vc[stream.id] = n
            stamp = (stream, n)
            for a in reads:
                for r in self._regions_of(a):
                    if r.write is not None and not self._before(r.write, stream):
                        self._fail(stream, "reads", a, r.write, what)
                    r.reads.append(stamp)
            for a in writes:
                for r in self._regions_of(a):
                    if r.write is not None and not self._before(r.write, stream):
                        self._fail(stream, "writes", a, r.write, what)
                    for rd in r.reads:
                        if rd[0] is not stream and not self._before(rd, stream):
                            self._fail(stream, "overwrites", a, rd, what, read=True)
                    r.write, r.reads = stamp, []

    def host_read(self, a: Any) -> None:
        """The host reads ``a`` (``asnumpy`` after a pull, say)."""
        self.access(self.host, reads=[a], what="host read")

    def retire(self, a: Any) -> None:
        """``a``'s memory returns to its pool: the next owner may write it at
        once, so every stream must be done with it (as a host write)."""
        self.access(self.host, writes=[a], what="freed")

    @staticmethod
    def _before(stamp: Tuple[SimStream, int], stream: SimStream) -> bool:
        s, n = stamp
        return stream.vc.get(s.id, 0) >= n

    def _fail(self, stream, verb, a, stamp, what, read=False) -> None:
        other = "read" if read else "written"
        shape = tuple(getattr(a, "shape", ()))
        msg = (f"{stream.name} {verb} an array of shape {shape}{' (' + what + ')' if what else ''}"
               f" {other} on {stamp[0].name} without waiting for it (a missing event wait)")
        self.violations.append(msg)
        raise StreamOrderError(msg)

    def _regions_of(self, a: Any) -> List[_Region]:
        """The tracked regions overlapping ``a``'s bytes, ``a``'s own region among them."""
        arr = getattr(a, "_array", a)
        if not isinstance(arr, np.ndarray) or arr.nbytes == 0:
            return []
        root = _root(arr)
        base = root.__array_interface__["data"][0]
        lo, hi = byte_bounds(arr)
        lo, hi = lo - base, hi - base
        rid = id(root)
        regions = self._regions.get(rid)
        if regions is None:
            regions = self._regions[rid] = []
            try:
                weakref.finalize(root, self._forget, rid)
            except TypeError:  # not weak-referenceable: tracked for the model's life
                pass
        found = [r for r in regions if r.lo < hi and lo < r.hi]
        if not any(r.lo == lo and r.hi == hi for r in found):
            mine = _Region(lo, hi)
            # a new region inherits what overlapping ones saw
            for r in found:
                if r.write is not None and (mine.write is None or r.write[1] > mine.write[1]):
                    mine.write = r.write
                mine.reads.extend(r.reads)
            regions.append(mine)
            found.append(mine)
        return found

    def _forget(self, rid: int) -> None:
        with self._lock:
            self._regions.pop(rid, None)
