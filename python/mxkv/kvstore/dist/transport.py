"""A worker's data path: how its payloads reach the shards and pulled values
come back.

Three routes, chosen per shard:

* **shared memory** (:mod:`.shm`) to a shard on this worker's Ray node
  (``MXKV_SHM``, not with P3, which orders messages on the wire): pushes
  and inits are packed into this worker's push segments, pulls answered
  with the shard's pull segments and read in place;
* **the host's relay** (:mod:`.relay`) for dense ``dist_sync`` pushes to a
  shard on another node, when this node runs other workers of the job
  (``MXKV_HOST_AGGREGATION``): handed over through the same push segments;
  and, over TCP, for the pulls of chunks from such shards: the relay
  fetches each once for the host's workers, who read its pull segment;
* **a TCP connection per remote shard** (:mod:`.bulk`, ``MXKV_BULK_TRANSPORT=tcp``,
  the default) for the chunks of a dense ``dist_sync`` round streamed to a
  shard on another node: packed into a push segment (kept until durable,
  like every push), sent from there, and pulled back on the same socket;
* **Ray's object store** for everything else (``ray.put``): inits,
  row-sparse and compressed payloads, P3, ``dist_async``, a shard whose
  connection cannot be made.

:class:`Transport` makes the messages (:class:`~.channel.Message`, which
the channel sends, keeps and re-sends) and runs the pulls; the store above
it (:class:`~.worker.DistKVStore`) decides what to send. Changing how bytes
travel between hosts is a change here.
"""
from __future__ import annotations

import concurrent.futures
import functools
import itertools
import logging
import os
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .bulk import BulkClient, BulkRef
from .channel import Call, Channel, Message
from .config import DistConfig
from .doorbell import Doorbell
from .job import RELAY_PULLS
from .messages import Init, Pull, PullReply, Push
from .shm import PushPool, Reader, ShmBatch, as_arrays, data_dir

__all__ = ["Transport", "BulkRoutes", "Groups", "chunks"]

log = logging.getLogger("mxkv.kvstore.dist")

#: shard -> (its (part name, tag) items, their payloads); the tag is a
#: sequence number (push, pull) or a shape (init)
Groups = Dict[int, Tuple[List[Tuple[Any, Any]], List[Any]]]


def chunks(sizes: Sequence[int], limit: int) -> List[Tuple[int, int]]:
    """Ranges ``(lo, hi)`` of consecutive items whose ``sizes`` (bytes) add
    up to about ``limit`` each: whole items (a bigger one is a chunk of its
    own), in order; one range with ``limit`` 0."""
    out: List[Tuple[int, int]] = []
    lo, acc = 0, 0
    for i, n in enumerate(sizes):
        if i > lo and limit > 0 and acc + n > limit:
            out.append((lo, i))
            lo, acc = i, 0
        acc += n
    if lo < len(sizes):
        out.append((lo, len(sizes)))
    return out


class BulkRoutes:
    """A sender's bulk connections (:mod:`.bulk`), one per shard, made at the
    first use, for the pushes of a channel (a worker's, or a relay's).

    Parameters
    ----------
    ray : module
    chan : Channel
        Its pushes' bulk bytes are sent when they are submitted (again):
        :attr:`~.channel.Channel.before_submit` is set here.
    coord : actor handle
        The job's coordinator (the job's secret).
    config : DistConfig
    who : str
        The sender, in messages.
    """

    def __init__(self, ray: Any, chan: Channel, coord: Any, config: DistConfig,
                 who: str) -> None:
        self.ray = ray
        self.chan = chan
        self.coord = coord
        self.config = config
        self.who = who
        self._lock = threading.Lock()
        self._clients: Dict[int, Optional[BulkClient]] = {}
        self._secret: Optional[bytes] = None
        chan.before_submit = self.before_submit

    def client(self, shard: int) -> Optional[BulkClient]:
        """The connection to ``shard``'s listener; None: its chunks go through
        the object store (no connection could be made, said once, or it
        broke for good)."""
        with self._lock:
            if shard in self._clients:
                client = self._clients[shard]
                return None if client is None or client.dead else client
            client = None
            try:
                if self._secret is None:
                    self._secret = self.ray.get(self.coord.bulk_secret.remote(),
                                                timeout=self.config.timeouts.fail)
                client = BulkClient(lambda: self.chan.bulk_addr[shard], self._secret,
                                    retry_s=max(5.0, self.config.timeouts.dead),
                                    congestion=self.config.bulk_congestion)
            except Exception as exc:  # noqa: BLE001 - the object store carries them
                log.warning("mxkv: %s cannot connect to server shard %d's bulk listener %s "
                            "(%s); its chunks go through Ray's object store", self.who, shard,
                            self.chan.bulk_addr[shard], exc)
            self._clients[shard] = client
            return client

    def ref(self, shard: int, arrays: List[np.ndarray]) -> Optional[BulkRef]:
        """A push's payload ``arrays`` (kept as they are until durable) as a
        chunk on ``shard``'s connection; None when there is none."""
        client = self.client(shard)
        return None if client is None else BulkRef(client.id, client.token(), arrays)

    def before_submit(self, msg: Message) -> None:
        """A push is submitted (again): its bulk bytes go on the shard's
        connection, or into the object store when there is none now."""
        ref = msg.ref
        if not isinstance(ref, BulkRef):
            return
        client = self.client(msg.shard)
        if client is not None and client.id == ref.client:
            client.send(ref)
            return
        msg.ref = self.ray.put([np.array(v) for v in ref.arrays or ()])
        if msg.release is not None:
            msg.release()
            msg.release = None

    def answer(self, shard: int, ref: BulkRef, timeout: float) -> Optional[List[np.ndarray]]:
        """A pull's answer ``ref`` from ``shard``'s connection; None when it
        broke first (the pull is made again through the object store)."""
        with self._lock:
            client = self._clients.get(shard)
        if client is None or client.id != ref.client:
            return None
        try:
            return client.wait(ref.token, timeout)
        except (ConnectionError, TimeoutError):
            return None

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            if client is not None:
                client.close()


class Transport:
    """One worker's routes to the shards of its job.

    Parameters
    ----------
    ray : module
    chan : Channel
        The worker's channel (its relay is set here when one is used).
    coord : actor handle
        The job's coordinator (asked for this host's relay).
    job : str
    rank : int
    node : str or None
        This worker's Ray node; None turns the shared-memory path off.
    sync : bool
        ``dist_sync`` (a relay sums rounds: sync only).
    ordered : bool
        Pushes must leave in the order they are sent (P3): no shared memory,
        no relay.
    config : DistConfig
    """

    #: an init's segments are filled on several threads from this many bytes
    PARALLEL_PACK_BYTES = 64 << 20

    def __init__(self, ray: Any, chan: Channel, coord: Any, job: str, rank: int,
                 node: Optional[str], sync: bool, ordered: bool, config: DistConfig) -> None:
        self.ray = ray
        self.chan = chan
        self.coord = coord
        self.job = job
        self.rank = rank
        self.node = node
        self.sync = sync
        self.ordered = ordered
        self.config = config
        # pushes to shards on other hosts through this host's relay, decided
        # at the first push (None: not yet)
        self.relayed: Optional[bool] = None
        self.pools: Dict[int, PushPool] = {}
        self.reader = Reader()
        self._lock = threading.Lock()
        #: a round's chunk to a shard on another node (0: one message)
        self.chunk_bytes = 0 if ordered else config.stream_chunk_bytes
        self._pull_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._fetch_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        #: the doorbell the host's relay rings when a chunk this worker pulls
        #: through it is ready (:mod:`.doorbell`; made at the first such pull),
        #: and what each token's ring does
        self._bell: Optional[Doorbell] = None
        self._bell_made = False
        self._rung: Dict[int, Callable[[Any], bool]] = {}
        self._bell_tokens = itertools.count(1)
        self.pulls_rung = 0   # chunks taken from the relay's ring before its reply
        chan.relocate = self.relocate
        #: a bulk connection per remote shard (:mod:`.bulk`)
        self.links = BulkRoutes(ray, chan, coord, config, f"worker rank {rank}") \
            if config.bulk_transport == "tcp" and sync else None

    # ------------------------------------------------------------ routes
    def fast(self, shard: int) -> bool:
        """Whether payloads to ``shard`` go through shared memory: it runs on
        this worker's Ray node, and messages need not keep their order (P3)."""
        return self.node is not None and self.chan.nodes[shard] == self.node \
            and not self.ordered

    def via_relay(self, shard: int) -> bool:
        """Whether dense pushes to ``shard`` go through this host's relay: the
        shard is on another node and this node runs other workers of the job
        too (``dist_sync``, no P3). Asked of the coordinator at the first
        push (it waits until every worker joined)."""
        with self._lock:
            if self.relayed is None:
                self.relayed = self._find_relay()
        return self.relayed and self.chan.nodes[shard] != self.node

    def _find_relay(self) -> bool:
        """Ask the coordinator for this host's relay; set it on the channel."""
        if not (self.sync and not self.ordered and self.node is not None
                and any(n != self.node for n in self.chan.nodes)):
            return False
        fail = self.config.timeouts.fail
        relay = self.ray.get(self.coord.relay.remote(self.node, self.config), timeout=fail)
        if relay is None:
            return False
        self.chan.relay, self.chan.relay_ranks = relay[0], tuple(relay[1])
        hello = self.ray.get(relay[0].hello.remote(), timeout=fail)
        self.chan.relay_incarnation = hello["incarnation"]
        self.chan.relay_bell = hello.get("bell", "")
        return True

    # ------------------------------------------------------------ push segments
    def _pool(self, shard: int) -> PushPool:
        pool = self.pools.get(shard)
        if pool is None:
            pool = self.pools[shard] = PushPool(
                data_dir(self.job), f"w{self.rank}-{os.getpid()}-s{shard}")
        return pool

    def _pack(self, shard: int, arrays: list) -> Optional[Tuple[ShmBatch, Callable[[], None]]]:
        """(batch, release) in a push segment, or None when no segment can be
        made (the job's directory is gone: it is ending): the object store then."""
        try:
            return self._pool(shard).pack(arrays)
        except OSError:
            return None

    def _pack_each(self, arrays: Dict[int, Optional[list]]) -> Dict[int, Any]:
        """:meth:`_pack` for each shard's arrays (None: not by shared memory).

        A big init's values go to fresh segments, whose pages the kernel
        allocates as the copy first touches them; that, not the copy, is
        most of the time (256 MB: about 170 ms of page faults, 20 ms of
        copying). Separate files fault in parallel (on one file the threads
        contend), so from ``PARALLEL_PACK_BYTES`` the segments of different
        shards are filled on a thread each: 2 x 256 MB took 242 ms instead of
        491 ms on the 2-core machine."""
        todo = {s: a for s, a in arrays.items() if a is not None}
        out: Dict[int, Any] = {s: None for s in arrays}
        threads = min(len(todo), os.cpu_count() or 1)
        if threads > 1 and sum(x.nbytes for a in todo.values() for x in a) \
                >= self.PARALLEL_PACK_BYTES:
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                out.update(zip(todo, pool.map(self._pack, todo, todo.values())))
        else:
            out.update({s: self._pack(s, a) for s, a in todo.items()})
        return out

    def relocate(self, msg: Message) -> None:
        """A kept push whose shard moved to another node: into the object store."""
        if isinstance(msg.ref, ShmBatch) and not msg.relayed and not self.fast(msg.shard):
            views = Reader(limit=1).views(msg.ref)
            msg.ref = self.ray.put([np.array(v) for v in views])
            if msg.release is not None:
                msg.release()
                msg.release = None

    # ------------------------------------------------------------ messages
    def init_messages(self, groups: Groups) -> List[Message]:
        """Rank 0's init of ``groups`` (items: (part, shape)), a message per shard."""
        batches = self._pack_each({s: as_arrays(payloads) if self.fast(s) else None
                                   for s, (_, payloads) in groups.items()})
        out = []
        for shard, (items, payloads) in groups.items():
            batch = batches[shard]
            if batch is not None:
                out.append(Message(shard, Init.of(items), batch[0], release=batch[1]))
            else:
                out.append(Message(shard, Init.of(items), self.ray.put(payloads)))
        return out

    def streamed(self, shard: int) -> bool:
        """Whether a round's pushes and pulls to ``shard`` go in chunks
        (:func:`chunks`): it is on another node, and messages need not keep
        their order (P3)."""
        return self.chunk_bytes > 0 and not self.ordered and not self.fast(shard)

    def push_messages(self, shard: int, items: Sequence[Tuple[Any, int]],
                      payloads: List[Any]) -> Iterator[Tuple[Message, int]]:
        """A push of (part, seq) ``items`` to ``shard``, by the route it
        takes: (message, payload bytes) for each chunk, in order, each made
        when asked for (so the first can leave while the next is copied)."""
        relayed = self.via_relay(shard)
        sizes = [getattr(p, "nbytes", 0) for p in payloads]
        if not self.streamed(shard):
            yield self._push_message(shard, relayed, items, payloads), sum(sizes)
            return
        for lo, hi in chunks(sizes, self.chunk_bytes):
            yield (self._push_message(shard, relayed, items[lo:hi], payloads[lo:hi]),
                   sum(sizes[lo:hi]))

    def _push_message(self, shard: int, relayed: bool, items: Sequence[Tuple[Any, int]],
                      payloads: List[Any]) -> Message:
        links = self.links if not relayed and self.streamed(shard) else None
        if links is not None and links.client(shard) is None:
            links = None
        arrays = as_arrays(payloads) if relayed or self.fast(shard) or links else None
        batch = self._pack(shard, arrays) if arrays is not None else None
        if batch is not None and links is not None:
            # sent from the segment, kept there until durable
            ref = links.ref(shard, self.reader.views(batch[0]))
            if ref is not None:
                return Message(shard, Push.of(items), ref, release=batch[1])
        if batch is not None:
            return Message(shard, Push.of(items), batch[0], release=batch[1], relayed=relayed)
        return Message(shard, Push.of(items), self.ray.put(payloads))

    # ------------------------------------------------------------ pulls
    def pull(self, groups: Groups, consume: Callable[[Dict[Any, Any], bool], None]) -> None:
        """Pull (part, seq) ``groups`` (payloads: each part's bytes) from
        their shards and hand the values, by (shard, part), to
        ``consume(values, transient)``; ``transient``: they are views of a
        pull segment, to be copied out during the call.

        Shards on other nodes are pulled in chunks (:meth:`streamed`), each
        fetched as soon as the shard answers it, on this transport's threads,
        while the shards on this node are pulled here: ``consume`` is called
        once per chunk then (never twice at once), and a part it is given
        may come again (a segment rewritten while it was read is pulled
        again, through the object store)."""
        remote = {s: g for s, g in groups.items() if self.streamed(s)}
        local = {s: g for s, g in groups.items() if s not in remote}
        if not remote:
            self._pull_here(local, consume)
            return
        lock = threading.Lock()

        def serial(values: Dict[Any, Any], transient: bool) -> None:
            with lock:
                consume(values, transient)
        streaming = self._threads().submit(self._stream_pull, remote, serial)
        try:
            if local:
                self._pull_here(local, serial)
        finally:
            streaming.result()

    def _pull_here(self, groups: Groups, consume: Callable[[Dict[Any, Any], bool], None]
                   ) -> None:
        """One pull call per shard; from a pull segment where it can."""
        fast = {s: self.fast(s) for s in groups}
        while True:
            values, batches = self._fetch(groups, fast)
            if values is not None:
                consume(values, bool(batches))
                stale = [s for s, b in batches.items() if not self.reader.still(b)]
                for b in batches.values():
                    self.reader.done(b)
            else:
                stale = list(batches)   # a segment was gone before it was read
            if not stale:
                return
            for s in stale:
                fast[s] = False

    def _threads(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pull_pool is None:
                self._pull_pool = concurrent.futures.ThreadPoolExecutor(
                    8, thread_name_prefix="mxkv-pull")   # (a pull each: calls of other threads)
            return self._pull_pool

    def _stream_pull(self, groups: Groups, consume: Callable[[Dict[Any, Any], bool], None]
                     ) -> None:
        """Pull ``groups`` chunk by chunk: every chunk's call at once, and
        each answer fetched from the object store as it comes (at most
        ``MXKV_STREAM_WINDOW`` at once), handed to ``consume``."""
        chan = self.chan
        pieces = [(shard, items[lo:hi]) for shard, (items, sizes) in groups.items()
                  for lo, hi in chunks(sizes, self.chunk_bytes)]

        # a host with a relay pulls through it: it fetches each chunk over
        # its TCP connection once for all of the host's workers, into a
        # segment they read (relay.py); without TCP, through the object
        # store, which Ray moves to the host once
        relay = chan.relay if self.relayed and self.links is not None else None
        bell = self._pull_bell() if relay is not None else None
        # a chunk's answer is taken once: from the relay's doorbell or from
        # its call's reply, whichever comes first (the call's is the one that
        # retries and raises)
        taken: set = set()
        taking = threading.Lock()
        fetching: List[concurrent.futures.Future] = []
        tokens: List[int] = []

        def take(i: int, reply: PullReply) -> bool:
            with taking:   # (so that the pull waits for what a ring started)
                if i in taken:
                    return False
                taken.add(i)
                shard, items = pieces[i]
                fetching.append(self._fetchers().submit(fetch, shard, items, reply.ref))
            chan.note_durable(shard, [n for n, _ in items], reply.durable)
            return True

        def call(i: int, shard: int, items: list) -> Call:
            if relay is not None:
                ring_to = None
                if bell is not None:
                    token = next(self._bell_tokens)
                    tokens.append(token)
                    self._rung[token] = functools.partial(take, i)
                    ring_to = (bell.path, token)
                return Call(shard, lambda inc: relay.pull.options(
                    concurrency_group=RELAY_PULLS).remote(shard, inc, Pull.of(items), ring_to),
                    "pull")
            client = self.links.client(shard) if self.links is not None \
                and not self.relayed else None

            def make(inc: str) -> Any:
                # (a token per call: one made again after a restart is answered anew)
                bulk = BulkRef(client.id, client.expect()) if client is not None \
                    and not client.dead else None
                return chan.shards[shard].pull.remote(inc, self.rank, Pull.of(items), False,
                                                      bulk)
            return Call(shard, make, "pull")

        def fetch(shard: int, items: list, ref: Any) -> None:
            if isinstance(ref, ShmBatch):
                self._relay_answer(shard, items, ref, consume)
                return
            if isinstance(ref, BulkRef):
                arrays = self._bulk_answer(shard, items, ref)
            else:
                arrays = self.ray.get(ref)
            consume({(shard, name): arr for (name, _), arr in zip(items, arrays)}, False)
        try:
            for i, reply in chan.stream([call(i, s, items) for i, (s, items)
                                         in enumerate(pieces)], "pull"):
                take(i, reply)
        finally:
            for t in tokens:
                self._rung.pop(t, None)
            with taking:
                waits = list(fetching)
            for f in waits:
                f.result()

    def _pull_bell(self) -> Optional[Doorbell]:
        """This worker's doorbell for its relay's pull answers (None when it
        cannot be made: the answers come by the calls' replies alone)."""
        with self._lock:
            if not self._bell_made:
                self._bell_made = True
                try:
                    self._bell = Doorbell(os.path.join(
                        data_dir(self.job), f"w{self.rank}-{os.getpid()}-pulls.bell"), self._ring)
                except OSError as exc:
                    log.warning("mxkv: worker rank %d has no doorbell for its relay's answers "
                                "(%s)", self.rank, exc)
            return self._bell

    def _ring(self, msg: Any) -> None:
        token, reply = msg
        rung = self._rung.pop(token, None)
        if rung is not None and isinstance(reply, PullReply) and rung(reply):
            self.pulls_rung += 1

    def _bulk_answer(self, shard: int, items: list, ref: BulkRef) -> List[np.ndarray]:
        """A pull's answer from the shard's connection (sent before the
        call returned); pulled again through the object store when the
        connection broke first."""
        got = None if self.links is None else \
            self.links.answer(shard, ref, self.config.timeouts.fail)
        return got if got is not None else self._pull_stored(shard, items)

    def _relay_answer(self, shard: int, items: list, batch: ShmBatch,
                      consume: Callable[[Dict[Any, Any], bool], None]) -> None:
        """A chunk the host's relay fetched, read from its pull segment; the
        chunk comes again through the object store when the segment was
        rewritten (a later round) or gone while this worker read it."""
        try:
            views = self.reader.views(batch)
        except OSError:
            views = None
        if views is not None:
            consume({(shard, name): v for (name, _), v in zip(items, views)}, True)
            fresh = self.reader.still(batch)
            self.reader.done(batch)
            if fresh:
                return
        arrays = self._pull_stored(shard, items)
        consume({(shard, name): arr for (name, _), arr in zip(items, arrays)}, False)

    def _pull_stored(self, shard: int, items: list) -> List[np.ndarray]:
        """``items`` pulled from ``shard`` again, through the object store."""
        chan = self.chan
        reply, = chan.call([Call(shard, lambda inc: chan.shards[shard].pull.remote(
            inc, self.rank, Pull.of(items), False), "pull")], "pull")
        chan.note_durable(shard, [n for n, _ in items], reply.durable)
        return self.ray.get(reply.ref)

    def _fetchers(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._fetch_pool is None:
                # as many as the pushes in flight: Ray's object transfer
                # shares a link between the objects it moves at once, and a
                # host's link carries its workers' pushes beside its shards'
                # answers; an equal share keeps both ends of a round in step
                self._fetch_pool = concurrent.futures.ThreadPoolExecutor(
                    self.config.stream_window, thread_name_prefix="mxkv-fetch")
            return self._fetch_pool

    def _fetch(self, groups: Groups, fast: Dict[int, bool]
               ) -> Tuple[Optional[Dict[Any, Any]], Any]:
        """Pull calls to every shard: (values by (shard, part), shm batches by
        shard), or (None, shards whose segment could not be mapped)."""
        chan = self.chan

        def call(shard: int, items: list) -> Call:
            return Call(shard, lambda inc: chan.shards[shard].pull.remote(
                inc, self.rank, Pull.of(items), fast[shard]), "pull")
        replies: List[PullReply] = chan.call([call(s, items) for s, (items, _) in groups.items()],
                                             "pull")
        values: Dict[Any, Any] = {}
        batches: Dict[int, ShmBatch] = {}
        in_store = []
        for (shard, (items, _)), reply in zip(groups.items(), replies):
            chan.note_durable(shard, [n for n, _ in items], reply.durable)
            if isinstance(reply.ref, ShmBatch):
                batches[shard] = reply.ref
            else:
                in_store.append((shard, items, reply.ref))
        gone = []
        for shard, snap in batches.items():
            try:
                arrs = self.reader.views(snap)
            except OSError:
                gone.append(shard)
                continue
            for (name, _), arr in zip(groups[shard][0], arrs):
                values[(shard, name)] = arr
        if gone:
            return None, gone
        arrays = self.ray.get([r for _, _, r in in_store])
        for (shard, items, _), arrs in zip(in_store, arrays):
            for (name, _), arr in zip(items, arrs):
                values[(shard, name)] = arr
        return values, batches

    def close(self) -> None:
        """Let go of the push segments and pull mappings (the shards are done
        with them: drained, or the job failed), and of the pull threads."""
        for threads in (self._pull_pool, self._fetch_pool):
            if threads is not None:
                threads.shutdown(wait=False)
        if self.links is not None:
            self.links.close()
        if self._bell is not None:
            self._bell.close()
        for pool in self.pools.values():
            pool.close()
        self.reader.close()
