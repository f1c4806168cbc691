"""P3: priority decides which pushed bytes move first (MXNet's ``P3StoreDist``).

With ``DMLC_PS_VAN_TYPE=p3`` a worker slices every value into pieces of
``MXNET_KVSTORE_SLICE_THRESHOLD`` elements spread over the shards
(:mod:`.sharding`), and its pushes go through a priority queue. Training
loops push the last layers' gradients first but give the first layers the
highest priority, so the parameters needed first in the next forward pass
are summed first.

A Ray call returns at once, so queueing calls alone would order only their
submission: every queued push would be on its way at once, and a slice
pushed later with a higher priority would wait behind all of them. So the
sender keeps a bounded *window* of bytes in flight per worker
(``MXKV_P3_WINDOW_BYTES``, default 8 MiB; 0 means no bound): a push leaves
only when its bytes fit beside the pushes the shards have not yet answered
(or nothing is in flight), and the queued push that leaves is always the one
of the highest ``priority`` (ties in the order they were pushed), so a
high-priority slice pushed late overtakes the low-priority ones still
queued, as MXNet's P3 holds lower-priority slices back while higher-priority
ones are on the wire.

Two rules keep the window from ever stalling a job: pushes of one part
leave in the order they were made (so a shard never holds a later round of a
part while its earlier round waits in this queue), and when the window has
been full for ``MXKV_STALL_TIMEOUT`` seconds with nothing answered, the next
push leaves anyway (with a warning).

A pull first waits until this worker's queued pushes of the keys it pulls
have left (so it sees them, and a pull of the first layers need not wait for
the last layers' pushes); a barrier or state call waits until the whole
queue has left.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import logging
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .config import DEFAULT_P3_WINDOW

__all__ = ["PrioritySender", "DEFAULT_WINDOW"]

log = logging.getLogger("mxkv.kvstore.dist")

#: bytes in flight per worker when ``MXKV_P3_WINDOW_BYTES`` is not set
DEFAULT_WINDOW = DEFAULT_P3_WINDOW


class PrioritySender:
    """Sends push messages through ``channel`` in priority order, at most a
    window of bytes in flight.

    Parameters
    ----------
    channel : Channel
        Where messages go (``channel.send(msg)`` returns the call's ref).
    window : int, optional
        Bytes in flight at most (0: no bound); the store passes its
        ``config.p3_window_bytes`` (``MXKV_P3_WINDOW_BYTES``).
    stall : float, optional
        Seconds a full window may go unanswered before the next push leaves
        anyway; default the channel's stall timeout.
    """

    def __init__(self, channel: Any, window: int = DEFAULT_WINDOW,
                 stall: Optional[float] = None) -> None:
        self.channel = channel
        self.window = int(window)
        self.stall = float(stall if stall is not None else channel.timeouts.stall)
        self._heap: List[Tuple[int, int, Any, int]] = []
        self._order = itertools.count()
        self._queued: Dict[Any, Deque[int]] = {}     # part -> orders of its queued pushes
        self._cv = threading.Condition()
        self._busy = 0
        self._sending: Dict[Any, int] = {}    # parts of messages being sent right now
        self._held = False
        self._error: Optional[BaseException] = None
        self.inflight_bytes = 0
        self.inflight = 0
        self._progress = time.monotonic()    # when a push last left or was answered
        #: The part names of the last messages sent, oldest first.
        self.sent: collections.deque = collections.deque(maxlen=1000)
        self._thread = threading.Thread(target=self._run, name="mxkv-p3-sender", daemon=True)
        self._thread.start()

    def submit(self, priority: int, msg: Any, nbytes: int = 0) -> None:
        """Queue ``msg`` (``nbytes`` of payload); higher ``priority`` leaves earlier."""
        with self._cv:
            order = next(self._order)
            heapq.heappush(self._heap, (-int(priority), order, msg, int(nbytes)))
            for name in msg.parts.names:
                self._queued.setdefault(name, collections.deque()).append(order)
            self._cv.notify_all()

    def hold(self, held: bool = True) -> None:
        """Stop (or resume) sending; queued messages wait, in priority order."""
        with self._cv:
            self._held = held
            self._cv.notify_all()

    def flush(self, names: Optional[Sequence[Any]] = None) -> None:
        """Wait until every queued message (with ``names``, those holding one
        of these parts) has been sent; re-raise a send error."""
        with self._cv:
            if self._held and self._heap:
                self._held = False
                self._cv.notify_all()
            if names is None:
                self._cv.wait_for(lambda: not self._heap and not self._busy)
            else:
                wanted = set(names)
                self._cv.wait_for(lambda: wanted.isdisjoint(self._queued)
                                  and wanted.isdisjoint(self._sending))
            err, self._error = self._error, None
        if err is not None:
            raise err

    # ------------------------------------------------------------ the sender thread
    def _eligible(self, entry: tuple) -> bool:
        """Whether no earlier push of any of the message's parts is still queued."""
        order = entry[1]
        return all(self._queued[name][0] == order for name in entry[2].parts.names)

    def _best(self) -> Optional[tuple]:
        """The queued message to send next (left in the heap), or None."""
        if self._held or not self._heap:
            return None
        if self._eligible(self._heap[0]):
            return self._heap[0]
        for entry in sorted(self._heap):      # rare: a part pushed twice, out of priority
            if self._eligible(entry):
                return entry
        return None

    def _fits(self, entry: tuple) -> bool:
        if self.window <= 0 or self.inflight == 0:
            return True
        return self.inflight_bytes + entry[3] <= self.window

    def _take(self) -> tuple:
        """Wait for a message that may leave now; remove it from the queue."""
        with self._cv:
            while True:
                entry = self._best()
                if entry is not None:
                    if self._fits(entry):
                        break
                    waited = time.monotonic() - self._progress
                    if waited >= self.stall:
                        log.warning("mxkv P3: no push answered for %.1f s with %d bytes in "
                                    "flight (MXKV_P3_WINDOW_BYTES=%d); sending the next one "
                                    "anyway", waited, self.inflight_bytes, self.window)
                        break
                    self._cv.wait(self.stall - waited)
                else:
                    self._cv.wait()
            self._heap.remove(entry)
            heapq.heapify(self._heap)
            for name in entry[2].parts.names:
                q = self._queued[name]
                q.popleft()
                if not q:
                    del self._queued[name]
            self._busy += 1
            for name in entry[2].parts.names:
                self._sending[name] = self._sending.get(name, 0) + 1
            self.inflight += 1
            self.inflight_bytes += entry[3]
            self._progress = time.monotonic()
            self.sent.append(list(entry[2].parts.names))
            return entry

    def _answered(self, nbytes: int) -> None:
        with self._cv:
            self.inflight -= 1
            self.inflight_bytes -= nbytes
            self._progress = time.monotonic()
            self._cv.notify_all()

    def _run(self) -> None:
        while True:
            _, _, msg, nbytes = self._take()
            sent = False
            try:
                ref = self.channel.send(msg)
                ref.future().add_done_callback(lambda _f, n=nbytes: self._answered(n))
                sent = True
            except BaseException as exc:  # noqa: BLE001 - handed to the next flush
                with self._cv:
                    self._error = self._error or exc
            finally:
                if not sent:
                    self._answered(nbytes)
                with self._cv:
                    self._busy -= 1
                    for name in msg.parts.names:
                        if self._sending[name] == 1:
                            del self._sending[name]
                        else:
                            self._sending[name] -= 1
                    self._cv.notify_all()
