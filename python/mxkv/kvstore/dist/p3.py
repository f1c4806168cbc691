"""P3: push messages leave in priority order (MXNet's ``P3StoreDist``).

With ``DMLC_PS_VAN_TYPE=p3`` a worker slices every value into pieces of
``MXNET_KVSTORE_SLICE_THRESHOLD`` elements spread over the shards
(:mod:`.sharding`), and its pushes go through a priority queue: a sender
thread always sends the queued message of the highest ``priority`` first
(ties in the order they were pushed). Training loops push the last layers'
gradients first but give the first layers the highest priority, so the
parameters needed first in the next forward pass are summed first.

A pull, barrier or state call first waits until the queue is empty, so it
always sees this worker's earlier pushes.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import threading
from typing import Any, List, Optional, Tuple

__all__ = ["PrioritySender"]


class PrioritySender:
    """Sends push messages through ``channel`` in priority order.

    Parameters
    ----------
    channel : Channel
        Where messages go (``channel.send(msg, 'push')``).
    """

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self._heap: List[Tuple[int, int, Any]] = []
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._busy = 0
        self._held = False
        self._error: Optional[BaseException] = None
        #: The part names of the last messages sent, oldest first: what P3
        #: orders is when messages leave this worker.
        self.sent: collections.deque = collections.deque(maxlen=1000)
        self._thread = threading.Thread(target=self._run, name="mxkv-p3-sender", daemon=True)
        self._thread.start()

    def submit(self, priority: int, msg: Any) -> None:
        """Queue ``msg``; higher ``priority`` leaves earlier."""
        with self._cv:
            heapq.heappush(self._heap, (-int(priority), next(self._order), msg))
            self._cv.notify_all()

    def hold(self, held: bool = True) -> None:
        """Stop (or resume) sending; queued messages wait, in priority order."""
        with self._cv:
            self._held = held
            self._cv.notify_all()

    def flush(self) -> None:
        """Wait until every queued message has been sent; re-raise a send error."""
        with self._cv:
            if self._held and self._heap:
                self._held = False
                self._cv.notify_all()
            self._cv.wait_for(lambda: not self._heap and not self._busy)
            err, self._error = self._error, None
        if err is not None:
            raise err

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._heap and not self._held)
                _, _, msg = heapq.heappop(self._heap)
                self._busy += 1
                self.sent.append([name for name, _ in msg.items])
            try:
                self.channel.send(msg, "push")
            except BaseException as exc:  # noqa: BLE001 - handed to the next flush
                with self._cv:
                    self._error = self._error or exc
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()
