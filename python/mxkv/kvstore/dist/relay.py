"""One aggregation per host: a relay sums its host's pushes for a remote shard.

Without it, W workers on one host each send their push of a round to a
shard on another host: W copies of the gradient cross the network. With a
relay (one Ray actor on each host that runs two or more of the job's
workers), those workers hand their pushes for remote shards to the relay
through shared memory (the same push segments a same-host shard reads,
:mod:`.shm`; each by a Ray call that a datagram on the relay's doorbell
precedes, :mod:`.doorbell`); once every worker of the host has pushed a part's round, the
relay sums them (in rank order) and sends the shard one push that stands
for all of them (a tuple of ranks, :meth:`.rounds.RoundBook.accept`). One
copy per host crosses the network, and the shard sums one value per host.
The relay's sums go to the shard over its own TCP connection
(``MXKV_BULK_TRANSPORT=tcp``) or through the object store.

Pulls: a shard answers every worker of a round with the same snapshot.
With ``MXKV_BULK_TRANSPORT=tcp`` the host's workers ask the relay
(:meth:`HostRelay.pull`): the first to ask for a chunk of a round has the
relay fetch it from the shard once, over the relay's TCP connection, into
a pull segment of its own (:class:`~.shm.Publisher`, a ring of two per
chunk); every worker of the host is answered with that segment and copies
from it (and, if the segment was rewritten while it read, pulls again
through the object store). So a chunk crosses the link once per host, as
Ray's object transfer moves it, without that transfer's copies and
processes. With ``ray``, the workers pull from the shard themselves
through the object store (Ray moves the snapshot to the host once).

Used for ``dist_sync`` (and ``dist_device_sync``) dense pushes without P3;
``dist_async`` applies each push alone, and compressed or row-sparse
payloads, P3's slices and shards on the workers' own host go as before.

Exactly once, across restarts of either side:

* a worker keeps what it sent the relay until the *shard* reports it
  durable (the relay answers with the durable rounds it has heard of, and
  pulls tell the worker directly), and re-sends it when the relay restarts;
* the relay keeps what it sent a shard until durable too (its own
  :class:`~.channel.Channel`, whose rank is the group), and re-sends it when
  the shard restarts; a worker that saw the restart first passes the
  shard's new incarnation along and the relay resyncs then;
* a part's round the relay has sent, or that the shard has completed (asked
  when the relay first sees the part: a restarted relay knows nothing), is
  dropped when it comes again, and the shard drops a group's push whose
  ranks it has seen.
"""
from __future__ import annotations

import collections
import logging
import os
import threading
import uuid
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ...base import MXNetTimeoutError
from ...ndarray._util import empty_aligned
from .bulk import BulkRef
from .channel import Call, Channel, Message, _cause
from .config import DistConfig
from .doorbell import Doorbell, bell_socket, ring
from .job import NAMESPACE, coordinator_name, import_ray
from .messages import Pull, PullReply, Push, ShardRestarted
from .p3 import PrioritySender
from .shm import Publisher, Reader, ShmBatch, data_dir, node_id, remove_stale
from .transport import BulkRoutes

__all__ = ["HostRelay", "relay_name"]

log = logging.getLogger("mxkv.kvstore.dist")


def relay_name(job: str, node: str) -> str:
    """The Ray name of job ``job``'s relay on node ``node``."""
    return f"mxkv:{job}:relay:{node[:12]}"


class _Part:
    """What the relay knows of one part: rounds sent on (all up to ``floor``,
    and ``sent`` beyond it) and rounds being gathered (seq -> rank -> array)."""

    __slots__ = ("floor", "sent", "pending")

    def __init__(self, floor: int) -> None:
        self.floor = floor
        self.sent: Set[int] = set()
        self.pending: Dict[int, Dict[int, np.ndarray]] = {}

    def done(self, seq: int) -> bool:
        return seq <= self.floor or seq in self.sent

    def mark_sent(self, seq: int) -> None:
        self.sent.add(seq)
        while self.floor + 1 in self.sent:
            self.floor += 1
            self.sent.discard(self.floor)


class _Meta:
    """A part's dtype and shape, as :func:`.shm.layout` reads an array's."""

    __slots__ = ("dtype", "shape", "nbytes")

    def __init__(self, dtype: np.dtype, shape: Tuple[int, ...]) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize


class _Pulled:
    """A chunk's pull as the relay fetches it once for the host's workers:
    its answer (or error) once :attr:`event` is set, and how many of them
    took it."""

    __slots__ = ("event", "reply", "error", "taken")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: Optional[PullReply] = None
        self.error: Optional[BaseException] = None
        self.taken = 0


#: chunks' pulls remembered for the host's workers that have not asked yet
#: (a worker that pulls other parts than the rest never asks: oldest go first)
MAX_PULLS = 1024


class HostRelay:
    """A job's relay on one host (used as a threaded Ray actor, pinned to its
    node; made by the coordinator, :meth:`.coordinator.Coordinator.relay`).

    Parameters
    ----------
    job : str
    num_shards : int
    ranks : sequence of int
        The job's workers on this host: a round of a part is sent on once
        each of them has pushed it.
    config : DistConfig
        The store's knobs (those of the worker that asked for the relay).
    """

    def __init__(self, job: str, num_shards: int, ranks: Sequence[int],
                 config: DistConfig) -> None:
        self.ray = import_ray()
        self.job = job
        self.ranks = tuple(sorted(int(r) for r in ranks))
        self.incarnation = uuid.uuid4().hex
        self.node = node_id(self.ray)
        self.chan = Channel(self.ray, job, num_shards, self.ranks, config.timeouts)
        # sums leave in the order they complete, at most MXKV_STREAM_WINDOW
        # chunks in flight: sent all at once, Ray would move them side by
        # side and the first would arrive no sooner than the last
        self.sender = PrioritySender(self.chan, window=config.stream_window
                                     * config.stream_chunk_bytes)
        # its sums go to the shards over TCP as a worker's chunks do (bulk.py)
        self.links = BulkRoutes(
            self.ray, self.chan, self.ray.get_actor(coordinator_name(job), namespace=NAMESPACE),
            config, self.chan.who) if config.bulk_transport == "tcp" else None
        self.reader = Reader()
        self.lock = threading.Lock()
        self.parts: Dict[Any, _Part] = {}
        self.buffers: Dict[Any, List[np.ndarray]] = {}   # free sum buffers, per part
        self.received = 0
        self.rung_first = 0   # parts' pushes whose doorbell came before their call
        self.sent = 0
        self.fail_s = config.timeouts.fail
        # the host's pulls (tcp): each chunk fetched once over the relay's
        # connection into a pull segment every worker of the host reads
        self.pulls: "collections.OrderedDict[Any, _Pulled]" = collections.OrderedDict()
        self.pub: Optional[Publisher] = None
        prefix = f"relay-{(self.node or 'node')[:12]}-"
        remove_stale(data_dir(job), prefix)   # an earlier incarnation's files
        if self.links is not None:
            self.pub = Publisher(data_dir(job), prefix + self.incarnation[:8],
                                 config.shm_publish_bytes)
        # the host's workers ring before each push call (doorbell.py): a
        # datagram the relay takes at once, the call finding it done
        try:
            self.bell: Optional[Doorbell] = Doorbell(
                os.path.join(data_dir(job), f"{prefix}{self.incarnation[:8]}.bell"),
                self._rung)
        except OSError as exc:
            log.warning("mxkv: the relay has no doorbell (%s); its pushes come by Ray calls", exc)
            self.bell = None
        self._ring = bell_socket()   # (the workers' doorbells for pull answers)
        self.pull_calls = 0      # workers' pull calls answered
        self.pulled = 0          # chunks fetched from shards
        self.pulled_tcp = 0      # of which over the relay's TCP connections

    def hello(self) -> dict:
        """The incarnation, node and doorbell (a worker resyncs when the
        incarnation changes)."""
        return {"incarnation": self.incarnation, "node": self.node, "ranks": self.ranks,
                "bell": "" if self.bell is None else self.bell.path}

    def _rung(self, msg: Any) -> None:
        """A push from the doorbell: taken as :meth:`push` takes it, unless
        it is for another incarnation or names a part not seen yet (its
        call asks the shard about that part first)."""
        incarnation, rank, shard, shard_incarnation, parts, payloads = msg
        if incarnation != self.incarnation or shard_incarnation != self.chan.incarnation[shard] \
                or not isinstance(payloads, ShmBatch):
            return
        with self.lock:
            if any((shard, n) not in self.parts for n in parts.names):
                return
        complete = self._gather(rank, shard, parts, self.reader.views(payloads), True)
        if complete:
            self._send(shard, complete)

    def push(self, incarnation: str, rank: int, shard: int, shard_incarnation: str,
             parts: Push, payloads: Any) -> List[int]:
        """Take worker ``rank``'s push of ``parts`` for ``shard``;
        sends on the rounds it completes. Returns the parts' durable rounds
        as far as the relay has heard (as a shard's push does)."""
        if incarnation != self.incarnation:
            raise ShardRestarted(self.incarnation, {})
        if shard_incarnation != self.chan.incarnation[shard]:
            self.chan.resync(shard)    # the worker saw the shard restart first
        views = self.reader.views(payloads) if isinstance(payloads, ShmBatch) else payloads
        names = parts.names
        # a big key's parts on different shards share its name
        unknown = [n for n in names if (shard, n) not in self.parts]
        if unknown:   # first sight (or a restarted relay): what the shard has completed
            rounds = self.chan.call([Call(shard, lambda _inc: self.chan.shards[shard].hello
                                          .remote(unknown), "relay")], "relay")[0]["rounds"]
        with self.lock:
            self.received += 1
            for name in unknown:
                if (shard, name) not in self.parts:
                    self.parts[(shard, name)] = _Part(max(0, rounds.get(name, 0)))
        complete = self._gather(rank, shard, parts, views)
        if complete:
            self._send(shard, complete)
        self.chan.reap()
        return [self.chan.durable.get((shard, n), -1) for n in names]

    def _gather(self, rank: int, shard: int, parts: Push, views: Sequence[np.ndarray],
                rung: bool = False) -> List[Tuple[Any, int, List[np.ndarray]]]:
        """Add worker ``rank``'s push (``rung``: from the doorbell); returns
        the rounds it completes, each marked sent here (so the same push
        again, by its call after its doorbell or re-sent, is dropped)."""
        complete = []
        with self.lock:
            for (name, seq), arr in zip(parts.pairs(), views):
                part = self.parts[(shard, name)]
                if part.done(seq):
                    continue          # sent on already: a re-sent push
                got = part.pending.setdefault(seq, {})
                if rung and int(rank) not in got:
                    self.rung_first += 1
                got[int(rank)] = arr
                if len(got) == len(self.ranks):
                    del part.pending[seq]
                    part.mark_sent(seq)
                    complete.append((name, seq, [got[r] for r in self.ranks]))
        return complete

    def _send(self, shard: int, complete: List[Tuple[Any, int, List[np.ndarray]]]) -> None:
        """Sum each complete round (rank order) and send them to ``shard`` as one push."""
        sums = []
        for name, _seq, arrs in complete:
            with self.lock:
                free = self.buffers.get((shard, name))
                buf = free.pop() if free else None
            if buf is None or buf.shape != arrs[0].shape or buf.dtype != arrs[0].dtype:
                buf = empty_aligned(arrs[0].shape, arrs[0].dtype)
            if len(arrs) == 1:
                np.copyto(buf, arrs[0])
            else:
                np.add(arrs[0], arrs[1], out=buf)
            for a in arrs[2:]:
                np.add(buf, a, out=buf)
            sums.append(buf)
        def reuse() -> None:
            with self.lock:
                for (name, _, _), buf in zip(complete, sums):
                    self.buffers.setdefault((shard, name), []).append(buf)
        ref = None if self.links is None else self.links.ref(shard, sums)
        release = None
        if ref is not None:
            release = reuse   # (sent from the sums, kept as they are until durable)
        else:
            ref = self.ray.put(sums)   # (a copy: the buffers are used again)
            reuse()
        with self.lock:
            self.sent += 1
        self.sender.submit(0, Message(shard, Push.of([(n, s) for n, s, _ in complete]), ref,
                                      release=release),
                           sum(b.nbytes for b in sums))

    def pull(self, shard: int, shard_incarnation: str, parts: Pull,
             ring_to: Optional[Tuple[str, int]] = None) -> PullReply:
        """A host worker's pull of ``parts`` (a chunk of a round) from
        ``shard``: a :class:`~.shm.ShmBatch` in this relay's pull segment,
        fetched from the shard by the first of the host's workers to ask
        and shared with the others (``MXKV_BULK_TRANSPORT=tcp`` only).
        ``ring_to``: the worker's doorbell and a token, rung with the answer
        before the call returns it (:mod:`.doorbell`)."""
        if self.pub is None:
            raise RuntimeError("the relay pulls only with MXKV_BULK_TRANSPORT=tcp")
        key = (shard, parts)
        with self.lock:
            self.pull_calls += 1
            known = self.pulls.get(key)
            first = known is None
            got = self.pulls[key] = _Pulled() if known is None else known
            if first:
                while len(self.pulls) > MAX_PULLS:
                    self.pulls.popitem(last=False)
        if first:
            try:
                if shard_incarnation != self.chan.incarnation[shard]:
                    self.chan.resync(shard)   # (its new listener)
                got.reply = self._fetch(shard, shard_incarnation, parts)
            except Exception as exc:  # noqa: BLE001 - every waiter raises it
                # a shard restarting: the workers resync and ask again
                got.error = ShardRestarted("", {}) if self.chan.is_restart(exc) \
                    and not isinstance(_cause(exc), ShardRestarted) else _cause(exc)
                with self.lock:
                    if self.pulls.get(key) is got:   # the next asker fetches anew
                        del self.pulls[key]
            finally:
                got.event.set()
        elif not got.event.wait(self.fail_s):
            raise MXNetTimeoutError(f"the relay's pull from server shard {shard} did not "
                                    f"come within {self.fail_s:g} s")
        with self.lock:
            got.taken += 1
            if got.taken >= len(self.ranks) and self.pulls.get(key) is got:
                del self.pulls[key]   # every worker of the host has it
        if got.error is not None:
            raise got.error
        assert got.reply is not None
        if ring_to is not None:
            ring(self._ring, ring_to[0], (ring_to[1], got.reply))
        return got.reply

    def _fetch(self, shard: int, shard_incarnation: str, parts: Pull) -> PullReply:
        """Pull ``parts`` from ``shard`` (over TCP where connected, else
        through the object store) into the next segment of their ring."""
        assert self.links is not None and self.pub is not None
        actor = self.chan.shards[shard]
        pub, ring = self.pub, (shard, parts.names)
        client = self.links.client(shard)
        writing: List[Any] = []

        def into(metas: list) -> Optional[List[np.ndarray]]:
            # (on the connection's receiving thread: the answer's bytes go
            # straight into the next segment of the ring, no copy after)
            try:
                seg, where, gen = pub.begin(ring, [_Meta(d, s) for d, s in metas])
            except OSError:
                return None   # (fresh buffers, published by a copy)
            writing.append((seg, where, gen))
            return [seg.view(*w) for w in where]
        bulk = BulkRef(client.id, client.expect(into)) if client is not None else None
        reply = self.ray.get(actor.pull.remote(shard_incarnation, self.ranks[0], parts, False,
                                               bulk), timeout=self.fail_s)
        arrays = None
        if isinstance(reply.ref, BulkRef):
            arrays = self.links.answer(shard, reply.ref, self.fail_s)
            if arrays is None:   # the connection broke first: through the object store
                reply = self.ray.get(actor.pull.remote(shard_incarnation, self.ranks[0],
                                                       parts, False), timeout=self.fail_s)
            else:
                with self.lock:
                    self.pulled_tcp += 1
        elif client is not None and bulk is not None:
            client.forget(bulk.token)
        if arrays is not None and writing:
            batch = pub.end(*writing[-1])
        else:
            if arrays is None:
                arrays = self.ray.get(reply.ref, timeout=self.fail_s)
            batch = pub.publish(ring, arrays)
        with self.lock:
            self.pulled += 1
        return PullReply(batch, reply.durable)

    def stalled(self) -> List[Tuple[int, Any, int, List[int]]]:
        """Rounds being gathered here: (shard, part, round, ranks of this host missing)."""
        with self.lock:
            return [(shard, name, seq, [r for r in self.ranks if r not in got])
                    for (shard, name), part in self.parts.items()
                    for seq, got in part.pending.items()]

    def stats(self) -> dict:
        """Messages received from the host's workers and sent to shards, and where."""
        return {"incarnation": self.incarnation, "node": self.node, "ranks": self.ranks,
                "received": self.received, "sent": self.sent, "pull_calls": self.pull_calls,
                "pulled": self.pulled, "pulled_tcp": self.pulled_tcp,
                "rung": 0 if self.bell is None else self.bell.taken,
                "rung_first": self.rung_first,
                "pull_copies": 0 if self.pub is None else self.pub.copies}
