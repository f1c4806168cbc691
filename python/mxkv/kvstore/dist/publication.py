"""A shard's sum publication: rounds summed into pull segments, and where a
pull's answer comes from (no Ray: the object store is a ``put`` function).

A pull of some parts at some rounds is answered from one of four sources,
tried in this order (:meth:`Publication.reply`):

``cached``
    a snapshot made for an earlier pull of the same parts at the same
    rounds (workers ask for a round together; the last four are kept);
``summed``
    a ``dist_sync`` round summed without an updater straight into a pull
    segment (:meth:`Publication.sum_published`): that segment holds the
    stored values, so the answer costs no copy (also for a pull of some of
    the parts summed there together);
``segment``
    the stored values copied into the next pull segment of the publisher's
    ring (:class:`~.shm.Publisher`), for a worker on the shard's node;
``store``
    a copy in Ray's object store (``put``), for every other worker, or when
    no segment can be made.

A stored value that lies in a pull segment is never written in place: a
write first moves it to a buffer of its own (:meth:`Publication.privatize`).
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ...context import cpu
from ...ndarray import NDArray
from ..local import KVStore
from .checkpoint import copy_state
from .messages import export, to_nd
from .shm import Publisher, ShmBatch, as_arrays

__all__ = ["Publication", "Reply", "Round"]

#: a complete round of a part: (name, shape, the pushes in rank order)
Round = Tuple[Any, Tuple[int, ...], List[Any]]


class Reply(NamedTuple):
    """A pull's answer: ``ref`` (a :class:`~.shm.ShmBatch` or what ``put``
    returned) and where it came from (``'cached'``, ``'summed'``,
    ``'segment'`` or ``'store'``)."""

    ref: Any
    source: str


class Publication:
    """The pull answers of one shard.

    Parameters
    ----------
    kv : KVStore
        The shard's local store (its stored values).
    publisher : Publisher
        The shard's ring of pull segments.
    put : callable
        ``put(list of payloads) -> ref``: a copy in the object store
        (``ray.put``), taken at once.
    keep : int
        How many snapshots are kept for pulls of the same round (a round
        pulled in chunks, :mod:`.transport`, asks for one per chunk; a
        snapshot goes as soon as the same parts are asked for at a later
        round).
    """

    def __init__(self, kv: KVStore, publisher: Publisher, put: Callable[[list], Any],
                 keep: int = 64) -> None:
        self.kv = kv
        self.publisher = publisher
        self.put = put
        self.keep = keep
        self._snapshots: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()
        # names -> (their rounds, the batch they were summed into); part -> those names
        self._summed: Dict[tuple, Tuple[tuple, ShmBatch]] = {}
        self._backing: Dict[Any, tuple] = {}
        #: rounds summed straight into a pull segment
        self.sums_published = 0

    @property
    def in_segments(self) -> int:
        """Parts whose stored value lies in a pull segment."""
        return len(self._backing)

    # ------------------------------------------------------------ summing
    def can_sum(self, rounds: Sequence[Round], sync: bool, gc: Any) -> bool:
        """Whether complete rounds can be summed straight into a pull segment:
        ``dist_sync``, dense host values and pushes, no updater (which writes
        the stored value in place), no compression."""
        if self.kv.updater is not None or gc is not None or not sync:
            return False
        for name, _shape, pushes in rounds:
            st = self.kv.stored_value(name)
            if type(st) is not NDArray or type(st._array) is not np.ndarray:
                return False
            if any(type(p) is not np.ndarray for p in pushes):
                return False
        return True

    def sum_published(self, rounds: Sequence[Round]) -> List[Tuple[tuple, ShmBatch]]:
        """Sum each round into the next pull segment of these parts, which
        then holds their stored values: published without a copy (copy 3 of
        the data path, docs/distributed.md). Nothing writes into a stored
        value that lies there (other writes go to a private copy first,
        :meth:`privatize`), and a publication that comes back to that
        segment copies each value onto itself. Parts that are published
        together already go where they are (:meth:`.Publisher.groups`).
        Returns (names, batch) for each segment written.

        Raises
        ------
        OSError
            No segment can be made (the job's directory is gone).
        """
        by_name = {r[0]: r for r in rounds}
        out = []
        ctx = cpu(0)
        for names in self.publisher.groups([n for n, _, _ in rounds]):
            stored = [self.kv.stored_value(n)._array for n in names]
            seg, parts, gen = self.publisher.begin(names, stored)
            for name, part in zip(names, parts):
                _, shape, pushes = by_name[name]
                self.kv.sum_into(name, [to_nd(p, shape, None) for p in pushes],
                                 NDArray(seg.view(*part), ctx))
            self.sums_published += 1
            out.append((names, self.publisher.end(seg, parts, gen)))
        return out

    def note_summed(self, names: tuple, batch: ShmBatch, rounds: tuple) -> None:
        """Pulls of ``names`` at ``rounds`` (their new ones) are answered with ``batch``."""
        for n in names:
            old = self._backing.get(n)
            if old is not None and old != names:
                self._summed.pop(old, None)   # (its other parts: a pull publishes them)
            self._backing[n] = names
        self._summed[names] = (rounds, batch)

    def privatize(self, names: Iterable[Any]) -> None:
        """Stored values that lie in a pull segment move to a buffer of their
        own (before anything writes into them in place)."""
        for name in names:
            owner = self._backing.pop(name, None)
            if owner is None:
                continue
            self._summed.pop(owner, None)
            self.kv.replace_value(name, NDArray(copy_state(self.kv.stored_value(name)._array),
                                                cpu(0)))

    # ------------------------------------------------------------ answers
    def reply(self, names: tuple, rounds: tuple, shm: bool) -> Reply:
        """The answer to a pull of ``names`` at ``rounds`` (the parts' rounds
        now); ``shm``: the puller is on this node and reads pull segments."""
        key = (names, rounds, shm)
        ref = self._snapshots.get(key)
        source = "cached"
        if ref is None and shm:
            summed = self._summed_batch(names, rounds)
            if summed is not None:   # summed there: no copy
                ref = self._snapshots[key] = summed
                source = "summed"
        if ref is None and shm:
            arrays = as_arrays([export(self.kv.stored_value(n)) for n in names])
            try:
                ref = self.publisher.publish(names, arrays) if arrays is not None else None
            except OSError:   # the job's directory is gone (it is ending)
                ref = None
            if ref is not None:
                self._snapshots[key] = ref
                source = "segment"
            else:
                key = key[:2] + (False,)
                ref = self._snapshots.get(key)
        if ref is None:
            # put copies now, in this call: no later update can reach it
            ref = self._snapshots[key] = self.put([export(self.kv.stored_value(n))
                                                   for n in names])
            source = "store"
        for old in [k for k in self._snapshots if k[0] == names and k[1] != rounds]:
            del self._snapshots[old]    # an earlier round's: no pull asks for it again
        while len(self._snapshots) > self.keep:  # workers ask for the same round together
            self._snapshots.popitem(last=False)
        return Reply(ref, source)

    def _summed_batch(self, names: tuple, rounds: tuple) -> Optional[ShmBatch]:
        """Where ``names`` at ``rounds`` lie in the segment they were summed
        into together, if they were: that batch, or those of its parts (a
        round completed by one message, pulled in chunks: transport.py)."""
        summed = self._summed.get(names)
        if summed is not None:
            return summed[1] if summed[0] == rounds else None
        owner = self._backing.get(names[0]) if names else None
        if owner is None or owner not in self._summed \
                or any(self._backing.get(n) != owner for n in names):
            return None
        summed = self._summed[owner]
        where = {n: i for i, n in enumerate(owner)}
        if any(summed[0][where[n]] != r for n, r in zip(names, rounds)):
            return None
        batch = summed[1]
        return ShmBatch(batch.path, batch.gen, [batch.parts[where[n]] for n in names])

    def pin(self, batch: ShmBatch) -> List[np.ndarray]:
        """The values in ``batch``, kept there until :meth:`unpin`."""
        return self.publisher.pin(batch)

    def unpin(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.publisher.unpin(path)

    def stats(self) -> Dict[str, Optional[int]]:
        return {"sums_published": self.sums_published,
                "publish_copies": self.publisher.copies, "in_segments": self.in_segments}
