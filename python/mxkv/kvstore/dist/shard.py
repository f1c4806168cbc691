"""A server shard: MXNet's ``KVStoreDistServer`` as an async Ray actor.

A shard holds the parts of keys that :mod:`.sharding` assigns to it, in a
local :class:`~mxkv.kvstore.local.KVStore` (so storing, summing, row-sparse
handling and the optimizer's updater are the local store's own). Each push
carries the worker's rank and a sequence number per part (:mod:`.rounds`):

* ``dist_sync``: a part's round completes when every worker's push has
  arrived; the pushes are then summed in rank order and the updater runs
  once (or the sum is stored), exactly as a local store given all the
  values at once.
* ``dist_async``: each push is applied on arrival; an updater is required.

Pulls wait for the round the puller has pushed (sync) or for its own pushes
(async), then answer with a reference to one snapshot in Ray's object store,
shared by every worker asking for the same parts at the same round.

Faults: every call names the shard *incarnation* the worker last synced
with; after a restart (Ray restarts a killed shard) the new incarnation
restores its last checkpoint (:mod:`.checkpoint`) and replays the commands
logged since; calls naming an old incarnation get :class:`ShardRestarted`,
telling the worker to re-send the pushes the checkpoint did not cover.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import os
import pickle
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError, MXNetIOError, ShardFailedError
from ...bridge.private import private_directory
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ...optimizer.states_file import restricted_loads
from ..compression import GradientCompression
from ..local import KVStore
from .bulk import BulkLost, BulkRef, BulkServer
from .checkpoint import CheckpointLog, checkpoint_path
from .checkpoint_dir import IDENTITY, adopt, claim, holds_logs, read_identity
from .config import DistConfig
from .durability import Durability
from .job import NAMESPACE, coordinator_name, host_label, import_ray
from .messages import (
    CMD_COMPRESSION,
    CMD_LOAD_STATES,
    CMD_MULTI_PRECISION,
    CMD_OPTIMIZER,
    CMD_PROFILER,
    CMD_STOP,
    CMD_SYNC_MODE,
    CMD_UPDATER,
    Init,
    Pull,
    PullReply,
    Push,
    Rank,
    RowSparse,
    ShardRestarted,
    export,
    to_nd,
)
from .publication import Publication, Round
from .replica import Replica, fetch
from .rounds import RoundBook
from .shard_state import record, restore
from .shm import Publisher, Reader, ShmBatch, data_dir, node_id, remove_stale

log = logging.getLogger("mxkv.kvstore.dist")

__all__ = ["ServerShard", "ShardRestarted", "CMD_OPTIMIZER", "CMD_UPDATER",
           "CMD_LOAD_STATES", "CMD_COMPRESSION", "CMD_SYNC_MODE"]


def _same_settings(a: Any, b: Any) -> bool:
    """Whether optimizers ``a`` and ``b`` are the same but for their update
    counts (a resumed job sets the optimizer its state was made with)."""
    def settings(o: Any) -> bytes:
        return pickle.dumps({k: (type(v) if k == "lr_scheduler" else v)
                             for k, v in o.__getstate__().items() if "update" not in k})
    return type(a) is type(b) and settings(a) == settings(b)


class ServerShard:
    """One server shard of a job (used as an async Ray actor).

    Parameters
    ----------
    job : str
    index : int
        This shard's number, 0 .. num_shards-1.
    num_workers : int
    checkpoint_dir : str
        Where the log ``shard-<index>.ckpt`` lives (:mod:`.checkpoint`).
    config : DistConfig
        The store's knobs, as the shards' environment sets them
        (:func:`~.cluster.create_job` reads them once, with ``environ``):
        checkpoint rounds and slack, ``MXKV_KEEP_BYTES``, pull segments'
        bytes, the heartbeat interval.
    environ : dict, optional
        Environment variables set in this process first (the job's
        ``--env`` / ``--env-server``; the process is this actor's alone).
    identity : dict, optional
        The run's ``mxkv-job.json`` (:func:`~.checkpoint_dir.claim`): written
        into a directory of this host that has none and holds no log (the
        job's own directory is per host unless shared).
    replicate : bool
        Copy the log to another node's agent, and restore from that copy
        when there is no log here (:mod:`.replica`).
    num_shards : int
        The job's shards (``MXKV_KEEP_BYTES`` is a worker's, over all of them).
    """

    def __init__(self, job: str, index: int, num_workers: int, checkpoint_dir: str,
                 config: DistConfig, environ: Optional[Dict[str, str]] = None,
                 identity: Optional[dict] = None, replicate: bool = False,
                 num_shards: int = 1) -> None:
        os.environ.update(environ or {})   # (for the user's code: updaters, optimizers)
        self.ray = import_ray()
        self.job = job
        self.index = int(index)
        self.config = config
        self.heartbeat_s = config.timeouts.heartbeat
        self.incarnation = uuid.uuid4().hex
        self.kv = KVStore("local")
        # dist_sync until the first worker says (MXNet's kSyncMode command)
        self.book = RoundBook(num_workers, sync=True)
        self.shapes: Dict[Any, Tuple[int, ...]] = {}
        self.gc: Optional[GradientCompression] = None
        self.updater_blob: Optional[bytes] = None
        self.cmd_seq = 0
        self.arrivals: collections.deque = collections.deque(maxlen=100000)
        # what changed since the last checkpoint, when one is due, what is durable
        self.dur = Durability(config.checkpoint_rounds, config.keep_bytes, num_shards)
        self.coordinator = self.ray.get_actor(coordinator_name(job), namespace=NAMESPACE)
        self.host = host_label()
        # a storage fault stops the shard for good: every call raises this
        self.failure: Optional[ShardFailedError] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.run: Optional[str] = None   # this run of the job (checkpoint_dir.py)
        self._resumed_optimizer: Any = None
        self.writer = CheckpointLog(checkpoint_path(checkpoint_dir, self.index),
                                    self.dur.on_durable, config.checkpoint_slack_bytes,
                                    on_error=self._on_write_error)
        self._beat_task: Optional[asyncio.Task] = None
        self.restored = False
        #: the copy of the log on another node (None: not kept); the host
        #: this incarnation's log was fetched from, when it was
        self.replica = Replica(self.ray, self.coordinator, self.index, node_id(self.ray)) \
            if replicate else None
        self.restored_from: Optional[str] = None
        try:
            self.restored = self._open(checkpoint_dir, identity)
            if self.replica is not None and self.failure is None:
                self.replica.start(self.writer)
        except Exception as exc:  # noqa: BLE001 - the shard stops, saying why
            self._fail(getattr(exc, "path", None) or self.writer.path, exc)
        self._joined: Optional[asyncio.Task] = None
        # the same-host data path (shm.py): workers' push segments, our pull segments
        self.node = node_id(self.ray)
        self.data_dir = data_dir(job)
        remove_stale(self.data_dir, f"shard{self.index}-")   # an earlier incarnation's
        self.reader = Reader()
        self._keep_done: Optional[asyncio.Future] = None
        # the log write of the last init: no value of it is answered before
        # it is on disk (a failed write reaches the puller as the failure)
        self._init_done: Optional[asyncio.Future] = None
        # where pulls are answered from; dist_sync sums without an updater are
        # written straight into a pull segment (no copy to publish)
        self.pub = Publication(self.kv, Publisher(
            self.data_dir, f"shard{self.index}-{self.incarnation[:8]}",
            config.shm_publish_bytes), self.ray.put)
        # dist_sync rounds are summed (and updated) on this thread, off the
        # event loop; while one runs, checkpoints wait (they read values)
        self._summer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mxkv-sum")
        self._summing = 0
        self._deferred: List[Any] = []   # checkpoint callbacks held meanwhile
        self._idle: Optional[asyncio.Event] = None
        # dense rounds' bytes from workers on other nodes (bulk.py): a
        # listener on this node's address, for the job's processes alone
        self.bulk: Optional[BulkServer] = None
        self._bulk_sends = concurrent.futures.ThreadPoolExecutor(
            8, thread_name_prefix="mxkv-bulk-answer")
        if config.bulk_transport == "tcp":
            try:
                secret = self.ray.get(self.coordinator.bulk_secret.remote(),
                                      timeout=config.timeouts.fail)
                self.bulk = BulkServer(self.ray.util.get_node_ip_address(), secret,
                                       keep_s=config.timeouts.fail,
                                       congestion=config.bulk_congestion)
            except Exception as exc:  # noqa: BLE001 - the object store carries them
                log.warning("mxkv: server shard %d has no bulk listener (%s); chunks from "
                            "other nodes come through Ray's object store", self.index, exc)

    # ------------------------------------------------------------ state
    def _open(self, directory: str, identity: Optional[dict] = None) -> bool:
        """Check the checkpoint directory (private, this job's) and restore
        the log (fetched from its copy on another node when there is none
        here); whether there was one."""
        private_directory(directory, "checkpoint directory")
        try:
            ident = read_identity(directory)
            if ident is None and identity is not None:
                ident = adopt(directory, identity)
        except MXNetIOError as exc:   # (named as the file at fault)
            self._fail(os.path.join(directory, IDENTITY), exc)
            return False
        if ident is None and not holds_logs(directory):
            # a host of its own and no identity given (create_job gives the
            # run's, adopted above, so that a log fetched from its copy on
            # another host is this run's): this shard claims its copy here
            ident = claim(directory, self.job)
        if ident is None or ident["job"] != self.job:
            whose = "no job" if ident is None else f"job {ident['job']!r}"
            raise MXNetError(f"checkpoint directory {directory!r} belongs to {whose}, not to "
                             f"job {self.job!r}")
        self.run = ident["run"]
        if self.replica is not None:
            self.restored_from = fetch(self.ray, self.coordinator, self.index,
                                       self.writer.path)
        return self._restore()

    def _restore(self) -> bool:
        state = self.writer.load()
        if state is None:
            return False
        got = restore(state, self.kv, self.book)
        self.shapes, self.gc, self.cmd_seq = got.shapes, got.gc, got.cmd_seq
        self.dur.durable = dict(got.rounds)
        if got.updater_blob is not None:
            self._apply_updater_blob(got.updater_blob)
        if state["meta"].get("run") != self.run:
            self._resumed(state["meta"].get("updater"))
        return True

    def _resumed(self, updater: Any) -> None:
        """The log is an earlier run's (the job resumes it): its values,
        optimizer and states go on, its rounds and commands were that run's.
        Written at once as one record of this run."""
        zero = {name: 0 for name in self.shapes}
        self.book.restore({"rounds": zero, "seen": {}})
        self.dur.durable = dict(zero)
        self.cmd_seq = 0
        if updater is not None and updater[0] == "optimizer":
            # as the run set it (each worker of the new run sends it again)
            self._resumed_optimizer = pickle.loads(updater[1])
        for name in self.shapes:
            self.dur.mark(name, "value", "state")
        self.dur.mark_meta()
        self.writer.write_now(self._record(self.dur.take()))

    def _record(self, taken: Any) -> dict:
        delta = record(taken, self.kv, self.book, self.shapes, updater_blob=self.updater_blob,
                       gc=self.gc, cmd_seq=self.cmd_seq)
        delta["meta"]["run"] = self.run
        return delta

    def _fail(self, path: str, exc: BaseException) -> None:
        """Stop for good: every call (and every wait in one) raises a
        :class:`ShardFailedError` naming ``path`` and the cause, and the
        coordinator tells the other shards, so every worker hears it."""
        if self.failure is not None:
            return
        cause = str(exc) if isinstance(exc, MXNetError) else f"{type(exc).__name__}: {exc}"
        self.failure = ShardFailedError(self.index, self.host, path, cause, self.job)
        print(f"mxkv: {self.failure}", flush=True)
        self._stopped(self.failure)
        try:
            self.coordinator.shard_failed.remote(self.index, self.failure)
        except Exception:  # noqa: BLE001 - the job is over already
            pass

    def _stopped(self, failure: ShardFailedError) -> None:
        """Make every call, and every waiting one, raise ``failure`` (any thread)."""
        self.failure = failure
        self.book.failure = failure
        if self._loop is not None:
            self._loop.call_soon_threadsafe(
                lambda: asyncio.ensure_future(self.book.changed()))

    def _on_write_error(self, exc: BaseException) -> None:
        self._fail(self.writer.path, MXNetError(f"could not write its checkpoint: {exc}"))

    async def fail(self, failure: ShardFailedError) -> None:
        """Another shard stopped for good (the coordinator says): the job is
        over, and this shard's calls raise that shard's error too."""
        if self.failure is None:
            self._stopped(failure)

    def _mark_update(self, name: Any) -> None:
        """A push changed part ``name``'s value (and optimizer state, with one)."""
        if self.kv.keeps_states:
            self.dur.mark(name, "value", "state")
            self.dur.mark_meta()      # the optimizer's update counts
        else:
            self.dur.mark(name, "value")

    def _changed(self, force: bool = False, names: Sequence[Any] = ()) -> None:
        """Count a state change (a round of each of ``names``); checkpoint
        when the book says so."""
        if self.dur.changed(force, names):
            self._checkpoint()

    def _checkpoint(self, callback: Any = None) -> None:
        if self._summing:
            # a round is being summed into stored values: the record would read
            # them half written; it is taken once the sums are done
            self._deferred.append(callback)
            return
        taken = self.dur.take()
        if taken.pinned:   # pull segments the record may read: let go once it is written
            loop = asyncio.get_running_loop()
            inner = callback

            def callback(error: Optional[BaseException]) -> None:
                loop.call_soon_threadsafe(self.pub.unpin, taken.pinned)
                if inner is not None:
                    inner(error)
        if not taken.empty() or callback is not None:
            self.writer.submit(self._record(taken), callback)

    def _durable_future(self) -> "asyncio.Future":
        """Checkpoint what changed now; the future is done once it is on disk."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def settle(error: Optional[BaseException]) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(None)

        def finished(error: Optional[BaseException]) -> None:
            loop.call_soon_threadsafe(settle, error)
        self._checkpoint(finished)
        return done

    async def _wait_durable(self, done: "asyncio.Future") -> None:
        try:
            await done
        except Exception as err:  # noqa: BLE001 - named, as _check names it
            self.writer.error = None
            if self.failure is not None:
                raise self.failure from None
            raise MXNetError(f"server shard {self.index} could not write its checkpoint "
                             f"{self.writer.path}: {err}") from err

    async def _join(self) -> None:
        """Before the first call: replay the commands logged since the
        checkpoint, learn which workers are dead, start the heartbeats."""
        if self._joined is None:
            self._joined = asyncio.get_running_loop().create_task(self._do_join())
        await asyncio.shield(self._joined)

    async def _do_join(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._replay_commands(await self.coordinator.command_log.remote(self.cmd_seq))
        dead = await self.coordinator.dead_workers.remote()
        if dead:
            self.book.mark_dead(dead)
        self._beat_task = asyncio.get_running_loop().create_task(self._beat())

    async def _check(self, incarnation: Optional[str], names: Sequence[Any]) -> None:
        if self.failure is not None:
            raise self.failure
        await self._join()
        if self.writer.error is not None:
            err, self.writer.error = self.writer.error, None
            raise MXNetError(f"server shard {self.index} could not write its checkpoint "
                             f"{self.writer.path}: {err}")
        if incarnation is not None and incarnation != self.incarnation:
            raise ShardRestarted(self.incarnation, self._rounds_of(names))

    def _rounds_of(self, names: Sequence[Any]) -> Dict[Any, int]:
        return {n: self.book.rounds.get(n, -1) for n in names}

    async def _beat(self) -> None:
        while True:
            try:
                self.coordinator.shard_beat.remote(self.index)
            except Exception:  # the coordinator is gone: the job is over
                return
            await asyncio.sleep(self.heartbeat_s)

    # ------------------------------------------------------------ calls
    async def hello(self, names: Sequence[Any] = ()) -> dict:
        """The incarnation, process and restored rounds (for resyncing)."""
        await self._check(None, names)
        return {"incarnation": self.incarnation, "pid": os.getpid(), "node": self.node,
                "bulk": None if self.bulk is None else self.bulk.address,
                "restored": self.restored, "restored_from": self.restored_from,
                "rounds": self._rounds_of(names)}

    async def init(self, incarnation: str, parts: Init, payloads: Any) -> List[int]:
        """Store the initial values of parts (rank 0's); known parts are kept.
        ``payloads``: a list (:mod:`.messages`), or a :class:`~.shm.ShmBatch`
        where they lie."""
        names = parts.names
        await self._check(incarnation, names)
        if isinstance(payloads, ShmBatch):   # (init copies what it stores)
            payloads = self.reader.views(payloads)
        fresh = [(n, s, p) for (n, s), p in zip(parts.pairs(), payloads)
                 if not self.book.has(n)]
        if fresh:
            for name, shape, payload in fresh:
                self.shapes[name] = tuple(shape)
                self.book.add_part(name)
                # the payload is immutable (the object store's): written as it is
                self.dur.mark(name, "value", fresh=payload if isinstance(payload, RowSparse)
                              else payload.reshape(shape))
            # the new parts alone go to the log, on the writer thread, while
            # this one copies them into the store
            durable = self._init_done = self._durable_future()
            for name, shape, payload in fresh:
                self.kv.init(name, to_nd(payload, tuple(shape), None))
            await self.book.changed()
            # the answer says they are durable, so rank 0 lets go of the payload now
            # (its segment, on the same-host path: the log was written from it)
            await self._wait_durable(durable)
        return self.dur.durable_of(names)

    async def wait_init(self, incarnation: str, names: Sequence[Any]) -> None:
        """Wait until rank 0 has initialized every part in ``names``."""
        await self._check(incarnation, names)
        await self.book.wait(lambda: self.book.pull_ready(-1, [(n, 0) for n in names]))

    async def push(self, incarnation: str, rank: Rank, parts: Push,
                   payloads: Any) -> List[int]:
        """Accept push ``seq`` of ``rank`` for each (part, seq); returns the
        parts' durable rounds (pushes up to them need not be kept). ``rank``
        may be a tuple of ranks: a host's relay (:mod:`.relay`) sending the
        sum of those workers' pushes (``dist_sync``). ``payloads``: a list
        (:mod:`.messages`), or a :class:`~.shm.ShmBatch` where they lie."""
        names = parts.names
        items = list(parts.pairs())
        await self._check(incarnation, names)
        if isinstance(payloads, BulkRef):   # its bytes come on the worker's connection
            if self.bulk is None:
                raise BulkLost(f"server shard {self.index} has no bulk listener")
            payloads = await self.bulk.take(payloads, max(5.0, self.config.timeouts.dead))
        from_shm = isinstance(payloads, ShmBatch)
        if from_shm:
            # read-only views of the worker's segment: it is not reused until
            # this push is durable, so the views may wait in a pending round
            payloads = self.reader.views(payloads)
        if not self.book.ready_to_accept(rank, items):
            await self.book.wait(lambda: self.book.ready_to_accept(rank, items))
            await self._check(incarnation, names)
        if not self.book.sync and self.kv.updater is None:
            raise MXNetError("dist_async applies every push with the optimizer, and none is "
                             "set: call kv.set_optimizer(...) before pushing")
        complete = []
        applied = []
        summed = None
        for (name, seq), payload in zip(items, payloads):
            what = self.book.accept(rank, name, seq, payload)
            if what is None:
                continue
            self.arrivals.append((rank, name))
            if what == "apply":
                self.pub.privatize([name])
                self.kv.push(name, to_nd(payload, self.shapes[name], self.gc))
                self._mark_update(name)
                applied.append(name)
            elif what == "complete":
                complete.append(name)
        if complete:
            # No pull can read these parts until book.complete (their round is
            # not done), no push of their next round is accepted before it, and
            # checkpoints wait: the event loop goes on with other calls.
            summed = await self._sum_rounds(complete, from_shm)
            for name in complete:
                self.book.complete(name)
                self._mark_update(name)
            for names, batch in summed or ():
                self.pub.note_summed(names, batch, tuple(self.book.rounds[n] for n in names))
        changed = applied + complete   # the parts this push moved a round on
        past_keep = self.dur.pushed(sum(p.nbytes for p in payloads
                                        if isinstance(p, np.ndarray)), rank)
        if changed:
            if past_keep:
                # the workers keep every push until a checkpoint covers it:
                # once one pusher's bytes here reach its share of
                # MXKV_KEEP_BYTES, checkpoint now (a big key's
                # pushes are not kept round after round; the checkpoint
                # restarts the count)
                if self._keep_done is None or self._keep_done.done():
                    self._keep_done = self._durable_future()
                else:
                    self._checkpoint()
            else:
                for names_summed, batch in summed or ():
                    if self.dur.wanted(names_summed):   # a due checkpoint reads them there
                        self._take_published(names_summed, batch)
                self._changed(names=changed)
            await self.book.changed()
        return self.dur.durable_of(names)

    def _sum(self, rounds: Sequence[Round], from_shm: bool
             ) -> Optional[List[Tuple[tuple, ShmBatch]]]:
        """Sum (or update with) complete rounds (on the summer). Returns
        (names, batch) for each pull segment the sums were written into
        (:meth:`.Publication.sum_published`), else None."""
        if self.pub.can_sum(rounds, self.book.sync, self.gc):
            try:
                return self.pub.sum_published(rounds)
            except OSError:    # the job's directory is gone (it is ending)
                pass
        self.pub.privatize([n for n, _, _ in rounds])
        for name, shape, pushes in rounds:
            vals = [to_nd(p, shape, self.gc) for p in pushes]
            if from_shm and len(vals) == 1 and self.kv.updater is None:
                # the store would keep this buffer by reference, and the
                # worker reuses it once durable: store a copy
                vals = [NDArray(np.array(vals[0]._array), vals[0].context)]
            self.kv.push(name, vals)
        return None

    async def _sum_rounds(self, names: Sequence[Any], from_shm: bool
                          ) -> Optional[List[Tuple[tuple, ShmBatch]]]:
        rounds = [(n, self.shapes[n], self.book.contributions(n)) for n in names]
        self._summing += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._summer, self._sum,
                                                                    rounds, from_shm)
        finally:
            self._summing -= 1
            if not self._summing:
                if self._idle is not None:
                    self._idle.set()
                    self._idle = None
                if self._deferred:
                    callbacks, self._deferred = self._deferred, []
                    self._run_deferred(callbacks)

    def _run_deferred(self, callbacks: List[Any]) -> None:
        """The checkpoints asked for while sums ran: one, with every callback."""
        real = [cb for cb in callbacks if cb is not None]
        if not real:
            self._checkpoint()
            return

        def all_of(error: Optional[BaseException]) -> None:
            for cb in real:
                cb(error)
        self._checkpoint(all_of)

    async def _quiet(self) -> None:
        """Wait until no round is being summed (before reading states or
        changing the optimizer)."""
        while self._summing:
            if self._idle is None:
                self._idle = asyncio.Event()
            await self._idle.wait()

    async def pull(self, incarnation: str, rank: int, parts: Pull,
                   shm: bool = False, bulk: Optional[BulkRef] = None) -> PullReply:
        """Wait until the (part, seq) pairs are served, then answer with an
        object-store reference to their values (a list, in item order), or
        with ``shm`` (a worker on this node) a :class:`~.shm.ShmBatch`
        where they lie when they are all dense, or with ``bulk`` (a worker
        on another node connected to :attr:`bulk`) ``bulk`` itself, once the
        values were sent on that connection (:mod:`.bulk`)."""
        names = parts.names
        items = list(parts.pairs())
        await self._check(incarnation, names)
        if not self.book.pull_ready(rank, items):
            await self.book.wait(lambda: self.book.pull_ready(rank, items))
            await self._check(incarnation, names)
        if self._init_done is not None:
            await self._wait_durable(self._init_done)
        # a checkpoint is due and this pull publishes changed parts: the
        # checkpoint is written from the published values (pinned until it
        # is durable) instead of from a copy of them
        take = self.dur.wanted(names)
        by_bulk = bulk is not None and self.bulk is not None and self.bulk.connected(bulk.client)
        reply = self.pub.reply(names, tuple(self.book.rounds[n] for n in names),
                               shm or by_bulk)
        if take and reply.source in ("summed", "segment"):
            self._take_published(names, reply.ref)
        elif take and reply.source == "store":
            await self._publish_fresh(names, reply.ref)
        keep = self._keep_done
        if keep is not None:
            # a checkpoint forced by MXKV_KEEP_BYTES: answer once it is written,
            # so the workers learn now that they may reuse this round's pushes;
            # every worker's pull of the round waits for it (had only the
            # first waited, the others would keep their push segments and
            # make new ones next round: another copy of a big key each)
            try:
                await self._wait_durable(keep)
            finally:
                if keep.done() and self._keep_done is keep:
                    self._keep_done = None
        ref = reply.ref
        if by_bulk and bulk is not None and isinstance(ref, ShmBatch):
            ref = await self._send_bulk(bulk, names, ref)
        return PullReply(ref, tuple(self.dur.durable_of(names)))

    async def _send_bulk(self, bulk: BulkRef, names: Sequence[Any], batch: ShmBatch) -> Any:
        """Send a pull segment's values (``names``') on ``bulk``'s connection
        (pinned meanwhile): ``bulk`` when they went, else an object-store copy."""
        assert self.bulk is not None
        try:
            views = self.pub.pin(batch)
        except KeyError:   # (its segment was let go: the stored values, as put does)
            return self.ray.put([export(self.kv.stored_value(n)) for n in names])
        try:
            sent = await asyncio.get_running_loop().run_in_executor(
                self._bulk_sends, self.bulk.send, bulk.client, bulk.token, views)
            return bulk if sent else self.ray.put([np.array(v) for v in views])
        finally:
            self.pub.unpin([batch.path])

    async def row_sparse_pull(self, incarnation: str, rank: int, parts: Pull,
                              row_ids: Sequence[np.ndarray]) -> List[RowSparse]:
        """The rows ``row_ids`` (part-relative, sorted, unique) of row-sparse parts."""
        names = parts.names
        items = list(parts.pairs())
        await self._check(incarnation, names)
        if not self.book.pull_ready(rank, items):
            await self.book.wait(lambda: self.book.pull_ready(rank, items))
            await self._check(incarnation, names)
        if self._init_done is not None:
            await self._wait_durable(self._init_done)
        out = []
        for name, ids in zip(names, row_ids):
            shape = self.shapes[name]
            dst = RowSparseNDArray(np.zeros((0,) + tuple(shape[1:]),
                                            self.kv.stored_value(name).dtype),
                                   np.zeros(0, np.int64), shape, cpu(0))
            self.kv.row_sparse_pull(name, out=dst, row_ids=NDArray(np.asarray(ids), cpu(0)))
            out.append(RowSparse(dst._data, dst._indices))
        return out

    def _take_published(self, names: Sequence[Any], batch: ShmBatch) -> None:
        """A due checkpoint's values from a pull segment, pinned until it is durable."""
        views = self.pub.pin(batch)
        self.dur.pin(batch.path)
        if self.dur.adopt(zip(names, views)):
            self._checkpoint()

    async def _publish_fresh(self, names: Sequence[Any], ref: Any) -> None:
        """A due checkpoint's values from a pull's snapshot in the object store."""
        versions = [self.dur.version(n) for n in names]
        values = await ref
        # only the parts unchanged since the snapshot was taken
        if self.dur.adopt((n, v) for n, ver, v in zip(names, versions, values)
                          if self.dur.version(n) == ver):
            self._checkpoint()

    # ------------------------------------------------------------ commands
    def _apply_updater_blob(self, blob: bytes) -> None:
        self.kv._set_updater(self.ray.cloudpickle.loads(blob))
        self.updater_blob = blob

    def _apply_command(self, head: int, body: Any) -> None:
        self.dur.mark_meta()
        if head == CMD_OPTIMIZER:
            optimizer = pickle.loads(body) if isinstance(body, bytes) else \
                pickle.loads(body.encode("latin-1"))
            kept = self._resumed_optimizer
            if kept is not None and _same_settings(kept, optimizer):
                # a resumed job's optimizer (each worker sends it): the restored one goes on
                return
            self._resumed_optimizer = None
            self.kv.set_optimizer(optimizer)
            self.updater_blob = None
            self.dur.mark_meta(reset_states=True)   # a new updater starts without states
        elif head == CMD_UPDATER:
            self._apply_updater_blob(body)
            self.dur.mark_meta(reset_states=True)
        elif head == CMD_LOAD_STATES:
            self._load_states(body)
            self.dur.mark_states(self.shapes)   # every state changed: that is the change
        elif head == CMD_COMPRESSION:
            self.gc = GradientCompression.create(dict(body))
        elif head == CMD_SYNC_MODE:
            # MXNet's kSyncMode has an empty body and means sync; mxkv sends the mode
            self.book.sync = body != "async"
        elif head in (CMD_MULTI_PRECISION, CMD_STOP, CMD_PROFILER):
            pass  # multi-precision is the optimizer's; stopping is the job's
        else:
            print(f"server shard {self.index}: unknown command ({head}, {body!r})")

    def _load_states(self, blob: bytes) -> None:
        loaded = restricted_loads(blob)  # (MXNet's format: names MXNet's classes)
        if isinstance(loaded, tuple) and len(loaded) == 2:
            self.kv.set_optimizer(loaded[1])
            self.updater_blob = None
        if not self.kv.keeps_states:
            raise MXNetError("load_optimizer_states: no optimizer is set on the servers "
                             "(call set_optimizer, or save the states with dump_optimizer=True)")
        self.kv.set_updater_states(blob)

    def _replay_commands(self, log: Sequence[Tuple[int, int, Any, Optional[int]]]) -> None:
        for seq, head, body, target in log:
            if seq > self.cmd_seq:
                if target is None or target == self.index:
                    self._apply_command(head, body)
                self.cmd_seq = seq

    async def command(self, seq: int, head: int, body: Any) -> None:
        """Apply command ``seq`` (logged at the coordinator) once.

        Commands apply in log order: an earlier one still on its way (sent
        to this shard only, or lost in a restart) is fetched from the log.
        """
        await self._check(None, ())
        await self._quiet()   # (a new optimizer must not swap under a running update)
        if seq <= self.cmd_seq:
            return
        if seq > self.cmd_seq + 1:
            self._replay_commands(await self.coordinator.command_log.remote(self.cmd_seq))
        if seq > self.cmd_seq:
            self._apply_command(head, body)
            self.cmd_seq = seq
        self._changed(force=True)

    async def get_states(self) -> Optional[bytes]:
        """The updater's states with the optimizer, or None without one."""
        await self._quiet()
        if not self.kv.keeps_states:
            return None
        return self.kv.get_updater_states(dump_optimizer=True)

    # ------------------------------------------------------------ faults
    async def mark_dead(self, ranks: Dict[int, str]) -> None:
        self.book.mark_dead(ranks)
        await self.book.changed()

    async def stalled(self) -> List[Tuple[Any, int, List[int]]]:
        """Rounds in progress: (part, round, ranks missing)."""
        return self.book.stalled()

    async def checkpoint(self) -> Dict[Any, int]:
        """Write what changed now and wait for it; returns the durable rounds
        (:meth:`Job.close <.cluster.Job.close>` leaves a resumable state so)."""
        await self._check(None, ())
        await self._quiet()   # (a round being summed is in the record, whole)
        await self._wait_durable(self._durable_future())
        return dict(self.dur.durable)

    async def stats(self) -> dict:
        return {"index": self.index, "incarnation": self.incarnation, "pid": os.getpid(),
                "node": self.ray.get_runtime_context().get_node_id(),
                "parts": len(self.shapes), "rounds": dict(self.book.rounds),
                "durable": dict(self.dur.durable), "arrivals": list(self.arrivals),
                "checkpoints": self.writer.written, "compactions": self.writer.compactions,
                "restored": self.restored, "restored_from": self.restored_from,
                "replica": None if self.replica is None else self.replica.host,
                "bulk": None if self.bulk is None else self.bulk.address,
                "bulk_received": 0 if self.bulk is None else self.bulk.received,
                "bulk_congestion": {} if self.bulk is None else dict(self.bulk.congestions),
                "bulk_buffers": {} if self.bulk is None else {
                    "made": self.bulk.pool.made, "reused": self.bulk.pool.reused,
                    "bytes": self.bulk.pool.bytes},
                **self.pub.stats()}

