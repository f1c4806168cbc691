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
import os
import pickle
import uuid
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError, ShardFailedError, env
from ...bridge.private import private_directory
from ...context import cpu
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ...optimizer.states_file import restricted_loads
from ...optimizer.states_writer import dumps as dump_states
from ..compression import GradientCompression
from ..local import KVStore
from .checkpoint import CheckpointLog, checkpoint_path, copy_state
from .checkpoint_dir import read_identity
from .job import NAMESPACE, coordinator_name, host_label, import_ray
from .rounds import RoundBook
from .shm import Publisher, Reader, ShmBatch, as_arrays, data_dir, node_id, remove_stale

__all__ = ["ServerShard", "ShardRestarted", "CMD_OPTIMIZER", "CMD_UPDATER",
           "CMD_LOAD_STATES", "CMD_COMPRESSION", "CMD_SYNC_MODE"]

# MXNet's CommandType ids (kvstore.py's _get_kvstore_server_command_type)
CMD_OPTIMIZER, CMD_MULTI_PRECISION, CMD_STOP, CMD_SYNC_MODE, CMD_COMPRESSION, \
    CMD_PROFILER = range(6)
#: mxkv's own: a cloudpickled ``_set_updater`` callable; optimizer states to load
CMD_UPDATER, CMD_LOAD_STATES = -1, -2


class ShardRestarted(MXNetError):
    """The shard restarted since the caller last synced with it.

    Attributes
    ----------
    incarnation : str
        The new incarnation.
    rounds : dict
        Completed rounds of the parts the call named, as restored.
    """

    def __init__(self, incarnation: str, rounds: Dict[Any, int]) -> None:
        super().__init__(f"server shard restarted (incarnation {incarnation[:8]})")
        self.incarnation = incarnation
        self.rounds = rounds

    def __reduce__(self):
        return (ShardRestarted, (self.incarnation, self.rounds))


def _to_nd(payload: Any, shape: Tuple[int, ...], gc: Optional[GradientCompression]):
    """A pushed payload as the NDArray the local store sums."""
    ctx = cpu(0)
    if isinstance(payload, tuple):
        kind = payload[0]
        if kind == "rsp":
            return RowSparseNDArray(payload[1], payload[2], shape, ctx)
        if kind == "gc":
            if gc is None:
                raise MXNetError("a compressed push reached a shard that has no gradient "
                                 "compression set")
            out = np.empty(shape, np.float32)
            gc.dequantize(payload[1], out)
            return NDArray(out, ctx)
        raise MXNetError(f"unknown payload kind {kind!r}")
    return NDArray(payload.reshape(shape), ctx)


def _same_settings(a: Any, b: Any) -> bool:
    """Whether optimizers ``a`` and ``b`` are the same but for their update
    counts (a resumed job sets the optimizer its state was made with)."""
    def settings(o: Any) -> bytes:
        return pickle.dumps({k: (type(v) if k == "lr_scheduler" else v)
                             for k, v in o.__getstate__().items() if "update" not in k})
    return type(a) is type(b) and settings(a) == settings(b)


def _export(stored: Any) -> Any:
    """The stored value of a part as plain arrays (not copied)."""
    if isinstance(stored, RowSparseNDArray):
        return ("rsp", stored._data, stored._indices)
    return stored._array


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
    checkpoint_rounds : int
        State-changing messages between checkpoints.
    heartbeat : float
        Seconds between heartbeats to the coordinator.
    environ : dict, optional
        Environment variables set in this process first (the job's
        ``--env`` / ``--env-server``; the process is this actor's alone).
    """

    def __init__(self, job: str, index: int, num_workers: int, checkpoint_dir: str,
                 checkpoint_rounds: int = 4, heartbeat: float = 1.0,
                 environ: Optional[Dict[str, str]] = None) -> None:
        os.environ.update(environ or {})
        self.ray = import_ray()
        self.job = job
        self.index = int(index)
        self.heartbeat_s = float(heartbeat)
        self.incarnation = uuid.uuid4().hex
        self.kv = KVStore("local")
        # dist_sync until the first worker says (MXNet's kSyncMode command)
        self.book = RoundBook(num_workers, sync=True)
        self.shapes: Dict[Any, Tuple[int, ...]] = {}
        self.gc: Optional[GradientCompression] = None
        self.updater_blob: Optional[bytes] = None
        self.cmd_seq = 0
        self.durable: Dict[Any, int] = {}
        self.arrivals: collections.deque = collections.deque(maxlen=100000)
        self._snapshots: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()
        self._since_ckpt = 0
        self._due = 0
        self.checkpoint_rounds = max(1, int(checkpoint_rounds))
        # What changed since the last checkpoint (part -> {'value', 'state'}),
        # values of those parts nothing will write to (an init's payload, a
        # pull's snapshot), and whether the optimizer changed.
        self._dirty: Dict[Any, set] = {}
        self._fresh: Dict[Any, Any] = {}
        self._versions: Dict[Any, int] = {}
        self._meta_dirty = False
        self._reset_states = False
        self.coordinator = self.ray.get_actor(coordinator_name(job), namespace=NAMESPACE)
        self.host = host_label()
        # a storage fault stops the shard for good: every call raises this
        self.failure: Optional[ShardFailedError] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.run: Optional[str] = None
        self._resumed_optimizer: Any = None
        self.writer = CheckpointLog(checkpoint_path(checkpoint_dir, self.index),
                                    self._on_durable, on_error=self._on_write_error)
        self._beat_task: Optional[asyncio.Task] = None
        self.restored = False
        try:
            self.restored = self._open(checkpoint_dir)
        except Exception as exc:  # noqa: BLE001 - the shard stops, saying why
            self._fail(getattr(exc, "path", None) or self.writer.path, exc)
        self._joined: Optional[asyncio.Task] = None
        # the same-host data path (shm.py): workers' push segments, our pull segments
        self.node = node_id(self.ray)
        self.data_dir = data_dir(job)
        remove_stale(self.data_dir, f"shard{self.index}-")   # an earlier incarnation's
        self.reader = Reader()
        self.keep_bytes = env("MXKV_KEEP_BYTES", 512 << 20, int, minimum=1)
        self._pushed = 0
        self._keep_done: Optional[asyncio.Future] = None
        self.publisher = Publisher(self.data_dir, f"shard{self.index}-{self.incarnation[:8]}",
                                   env("MXKV_SHM_PUBLISH_BYTES", 4 << 30, int, minimum=1))
        self._pinned: List[str] = []   # pull segments the next checkpoint reads
        # dist_sync sums without an updater are written straight into a pull
        # segment, which then holds the stored values (no copy to publish):
        # names -> (their rounds, the batch); part -> the names it went with
        self._summed: Dict[tuple, Tuple[tuple, ShmBatch]] = {}
        self._backing: Dict[Any, tuple] = {}
        self.sums_published = 0
        # dist_sync rounds are summed (and updated) on this thread, off the
        # event loop; while one runs, checkpoints wait (they read values)
        self._summer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mxkv-sum")
        self._summing = 0
        self._deferred: List[Any] = []   # checkpoint callbacks held meanwhile
        self._idle: Optional[asyncio.Event] = None

    # ------------------------------------------------------------ state
    def _open(self, directory: str) -> bool:
        """Check the checkpoint directory (private, this job's) and restore
        the log; whether there was one."""
        private_directory(directory, "checkpoint directory")
        ident = read_identity(directory)
        if ident is None or ident["job"] != self.job:
            whose = "no job" if ident is None else f"job {ident['job']!r}"
            raise MXNetError(f"checkpoint directory {directory!r} belongs to {whose}, not to "
                             f"job {self.job!r}")
        self.run = ident["run"]
        return self._restore()

    def _restore(self) -> bool:
        state = self.writer.load()
        if state is None:
            return False
        # a log of an earlier run (the job was resumed): its values, optimizer
        # and states are taken up, its rounds and commands are that run's
        resumed = state["meta"].get("run") != self.run
        rounds, seen, states = {}, {}, {}
        for name, entry in state["parts"].items():
            value, shape = entry["value"], tuple(entry["shape"])
            if isinstance(value, tuple):
                self.kv.init(name, RowSparseNDArray(value[1], value[2], shape, cpu(0)))
            else:
                self.kv.init(name, NDArray(value, cpu(0)))   # copies out of the log
            self.shapes[name] = shape
            rounds[name], seen[name] = (0, {}) if resumed else (entry["round"], entry["seen"])
            if entry.get("state") is not None:
                states[name] = entry["state"]
        meta = state["meta"]
        self.book.sync = meta.get("sync", True)
        self.book.restore({"rounds": rounds, "seen": seen})
        self.durable = dict(rounds)
        if meta.get("gc"):
            self.gc = GradientCompression.create(meta["gc"])
        updater = meta.get("updater")
        if updater is not None and updater[0] == "blob":
            self._apply_updater_blob(updater[1])
        elif updater is not None and updater[0] == "optimizer":
            optimizer = pickle.loads(updater[1])
            self.kv.set_optimizer(optimizer)
            thawed = {name: pickle.loads(st) for name, st in states.items()}
            self.kv.set_updater_states(dump_states((thawed, optimizer)))
            if resumed:
                self._resumed_optimizer = optimizer
        self.cmd_seq = 0 if resumed else meta.get("cmd_seq", 0)
        if resumed:   # one record of this run, with the rounds restarted
            for name in self.shapes:
                self._mark(name, "value", "state")
            self._meta_dirty = True
            self.writer.write_now(self._delta())
        return True

    def _fail(self, path: str, exc: BaseException) -> None:
        """Stop for good: every call (and every wait in one) raises a
        :class:`ShardFailedError` naming ``path`` and the cause, and the
        coordinator tells the other shards and the workers."""
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
        """Make every waiting call raise ``failure`` (any thread)."""
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

    def _mark(self, name: Any, *fields: str, fresh: Any = None) -> None:
        """Note that ``fields`` ('value', 'state') of part ``name`` changed;
        ``fresh``: the new value, when nothing will ever write into it."""
        self._dirty.setdefault(name, set()).update(fields)
        self._versions[name] = self._versions.get(name, 0) + 1
        if fresh is not None:
            self._fresh[name] = fresh
        else:
            self._fresh.pop(name, None)

    def _mark_update(self, name: Any) -> None:
        """A push changed part ``name``'s value (and optimizer state, with one)."""
        if self.kv.keeps_states:
            self._mark(name, "value", "state")
            self._meta_dirty = True      # the optimizer's update counts
        else:
            self._mark(name, "value")

    def _delta(self) -> dict:
        """What changed since the last checkpoint, safe to write while the
        shard goes on: values nothing writes to are taken as they are, the
        others copied (only those of changed parts)."""
        parts = {}
        for name, fields in self._dirty.items():
            entry: Dict[str, Any] = {"round": self.book.rounds[name],
                                     "seen": dict(self.book.seen[name]),
                                     "shape": self.shapes[name]}
            if "value" in fields:
                fresh = self._fresh.get(name)
                entry["value"] = fresh if fresh is not None else \
                    copy_state(_export(self.kv.stored_value(name)))
            if "state" in fields:
                st = self.kv.updater_state(name) if self.updater_blob is None else None
                # (a pickle is a copy: the updater goes on writing into st)
                entry["state"] = None if st is None else pickle.dumps(st, protocol=5)
            parts[name] = entry
        meta: Dict[str, Any] = {"sync": self.book.sync, "cmd_seq": self.cmd_seq, "run": self.run,
                                "gc": self.gc.get_params() if self.gc else None,
                                "reset_states": self._reset_states}
        if self._meta_dirty:
            if self.updater_blob is not None:
                meta["updater"] = ("blob", self.updater_blob)
            elif self.kv.keeps_states:
                meta["updater"] = ("optimizer", pickle.dumps(self.kv.updater.optimizer))
            else:
                meta["updater"] = None
        self._dirty, self._fresh = {}, {}
        self._meta_dirty = self._reset_states = False
        return {"parts": parts, "meta": meta}

    def _on_durable(self, rounds: Dict[Any, int]) -> None:
        self.durable.update(rounds)

    def _changed(self, force: bool = False) -> None:
        """Count a state change; every ``checkpoint_rounds`` changes a
        checkpoint is due. A due checkpoint waits one message for a pull
        that publishes the changed parts (then their values are not copied)."""
        self._since_ckpt += 1
        if force or self._due:
            self._checkpoint()
        elif self._since_ckpt >= self.checkpoint_rounds:
            self._due = 1

    def _checkpoint(self, callback: Any = None) -> None:
        if self._summing:
            # a round is being summed into stored values: the delta would read
            # them half written; it is taken once the sums are done
            self._deferred.append(callback)
            return
        self._since_ckpt = 0
        self._due = 0
        self._pushed = 0   # the pushes so far are covered once this is written
        pinned, self._pinned = self._pinned, []
        if pinned:   # pull segments the delta may read: let go once it is written
            loop = asyncio.get_running_loop()
            inner = callback

            def callback(error: Optional[BaseException]) -> None:
                loop.call_soon_threadsafe(self._unpin, pinned)
                if inner is not None:
                    inner(error)
        if self._dirty or self._meta_dirty or callback is not None:
            self.writer.submit(self._delta(), callback)

    def _unpin(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.publisher.unpin(path)

    def _durable_future(self) -> "asyncio.Future":
        """Checkpoint what changed now; the future is done once it is on disk."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def finished(error: Optional[BaseException]) -> None:
            loop.call_soon_threadsafe(
                lambda: done.done() or (done.set_exception(error) if error else
                                        done.set_result(None)))
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
                "restored": self.restored, "rounds": self._rounds_of(names)}

    async def init(self, incarnation: str, items: Sequence[Tuple[Any, Tuple[int, ...]]],
                   payloads: Sequence[Any]) -> List[int]:
        """Store the initial values of parts (rank 0's); known parts are kept."""
        names = [n for n, _ in items]
        await self._check(incarnation, names)
        if isinstance(payloads, ShmBatch):   # (init copies what it stores)
            payloads = self.reader.views(payloads)
        fresh = [(n, s, p) for (n, s), p in zip(items, payloads) if not self.book.has(n)]
        if fresh:
            for name, shape, payload in fresh:
                self.shapes[name] = tuple(shape)
                self.book.add_part(name)
                # the payload is immutable (the object store's): written as it is
                self._mark(name, "value", fresh=payload if isinstance(payload, tuple)
                           else payload.reshape(shape))
            # the new parts alone go to the log, on the writer thread, while
            # this one copies them into the store
            durable = self._durable_future()
            for name, shape, payload in fresh:
                self.kv.init(name, _to_nd(payload, tuple(shape), None))
            await self.book.changed()
            # the answer says they are durable, so rank 0 lets go of the payload now
            # (its segment, on the same-host path: the log was written from it)
            await self._wait_durable(durable)
        return [self.durable.get(n, -1) for n in names]

    async def wait_init(self, incarnation: str, names: Sequence[Any]) -> None:
        """Wait until rank 0 has initialized every part in ``names``."""
        await self._check(incarnation, names)
        await self.book.wait(lambda: self.book.pull_ready(-1, [(n, 0) for n in names]))

    async def push(self, incarnation: str, rank: Any, items: Sequence[Tuple[Any, int]],
                   payloads: Sequence[Any]) -> List[int]:
        """Accept push ``seq`` of ``rank`` for each (part, seq); returns the
        parts' durable rounds (pushes up to them need not be kept). ``rank``
        may be a tuple of ranks: a host's relay (:mod:`.relay`) sending the
        sum of those workers' pushes (``dist_sync``)."""
        names = [n for n, _ in items]
        await self._check(incarnation, names)
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
        changed = False
        complete = []
        summed = None
        for (name, seq), payload in zip(items, payloads):
            what = self.book.accept(rank, name, seq, payload)
            if what is None:
                continue
            self.arrivals.append((rank, name))
            if what == "apply":
                self._privatize([name])
                self.kv.push(name, _to_nd(payload, self.shapes[name], self.gc))
                self._mark_update(name)
                changed = True
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
            if summed is not None:
                self._note_summed(*summed)
            changed = True
        self._pushed += sum(p.nbytes for p in payloads if isinstance(p, np.ndarray))
        if changed:
            if self._pushed >= self.keep_bytes:
                # the workers keep every push until a checkpoint covers it:
                # past MXKV_KEEP_BYTES of them, checkpoint now (a big key's
                # pushes are not kept round after round; the checkpoint
                # restarts the count)
                if self._keep_done is None or self._keep_done.done():
                    self._keep_done = self._durable_future()
                else:
                    self._checkpoint()
            else:
                if summed is not None and self._wanted(summed[0]):
                    self._take_published(*summed)   # a due checkpoint reads them there
                self._changed()
            await self.book.changed()
        return [self.durable.get(n, -1) for n in names]

    def _sum(self, rounds: Sequence[Tuple[Any, Tuple[int, ...], List[Any]]],
             from_shm: bool) -> Optional[Tuple[tuple, ShmBatch]]:
        """Sum (or update with) complete rounds, (part, shape, pushes) each (on
        the summer). Returns (names, batch) when the sums were written into a
        pull segment (:meth:`_sum_published`), else None."""
        if self._publishes_sums(rounds):
            try:
                return self._sum_published(rounds)
            except OSError:    # the job's directory is gone (it is ending)
                pass
        self._privatize([n for n, _, _ in rounds])
        for name, shape, pushes in rounds:
            vals = [_to_nd(p, shape, self.gc) for p in pushes]
            if from_shm and len(vals) == 1 and self.kv.updater is None:
                # the store would keep this buffer by reference, and the
                # worker reuses it once durable: store a copy
                vals = [NDArray(np.array(vals[0]._array), vals[0].context)]
            self.kv.push(name, vals)
        return None

    def _publishes_sums(self, rounds: Sequence[Tuple[Any, Tuple[int, ...], List[Any]]]) -> bool:
        """Whether complete rounds can be summed straight into a pull segment:
        dense host values and pushes, no updater (which writes the stored
        value in place), no compression."""
        if self.kv.updater is not None or self.gc is not None or not self.book.sync:
            return False
        for name, _shape, pushes in rounds:
            st = self.kv.stored_value(name)
            if type(st) is not NDArray or type(st._array) is not np.ndarray:
                return False
            if any(type(p) is not np.ndarray for p in pushes):
                return False
        return True

    def _sum_published(self, rounds: Sequence[Tuple[Any, Tuple[int, ...], List[Any]]]
                       ) -> Tuple[tuple, ShmBatch]:
        """Sum each round into the next pull segment of these parts, which
        then holds their stored values: published without a copy (copy 3 of
        the data path, docs/distributed.md). Nothing writes into a stored
        value that lies there (other writes go to a private copy first,
        :meth:`_privatize`), and a publication that comes back to that
        segment copies each value onto itself."""
        names = tuple(n for n, _, _ in rounds)
        stored = [self.kv.stored_value(n)._array for n in names]
        seg, parts, gen = self.publisher.begin(names, stored)
        ctx = cpu(0)
        for (name, shape, pushes), part in zip(rounds, parts):
            self.kv.sum_into(name, [_to_nd(p, shape, None) for p in pushes],
                             NDArray(seg.view(*part), ctx))
        self.sums_published += 1
        return names, self.publisher.end(seg, parts, gen)

    def _note_summed(self, names: tuple, batch: ShmBatch) -> None:
        """Pulls of ``names`` at their new rounds are answered with ``batch``."""
        for n in names:
            old = self._backing.get(n)
            if old is not None and old != names:
                self._summed.pop(old, None)   # (its other parts: a pull publishes them)
            self._backing[n] = names
        self._summed[names] = (tuple(self.book.rounds[n] for n in names), batch)

    def _privatize(self, names: Iterable[Any]) -> None:
        """Stored values that lie in a pull segment move to a buffer of their
        own (before anything writes into them in place)."""
        for name in names:
            owner = self._backing.pop(name, None)
            if owner is None:
                continue
            self._summed.pop(owner, None)
            self.kv.replace_value(name, NDArray(copy_state(self.kv.stored_value(name)._array),
                                                cpu(0)))

    async def _sum_rounds(self, names: Sequence[Any], from_shm: bool
                          ) -> Optional[Tuple[tuple, ShmBatch]]:
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

    async def pull(self, incarnation: str, rank: int, items: Sequence[Tuple[Any, int]],
                   shm: bool = False):
        """Wait until the (part, seq) pairs are served, then answer with an
        object-store reference to their values (a list, in item order), or
        with ``shm`` (a worker on this node) a :class:`~.shm.ShmBatch`
        where they lie when they are all dense."""
        names = tuple(n for n, _ in items)
        await self._check(incarnation, names)
        if not self.book.pull_ready(rank, items):
            await self.book.wait(lambda: self.book.pull_ready(rank, items))
            await self._check(incarnation, names)
        # a checkpoint is due and this pull publishes changed parts: the
        # checkpoint is written from the published values (pinned until it
        # is durable) instead of from a copy of them
        take = self._wanted(names)
        key = (names, tuple(self.book.rounds[n] for n in names), shm)
        ref = self._snapshots.get(key)
        if ref is None and shm:
            summed = self._summed.get(names)
            if summed is not None and summed[0] == key[1]:   # summed there: no copy
                ref = self._snapshots[key] = summed[1]
                if take:
                    self._take_published(names, ref)
        if ref is None and shm:
            arrays = as_arrays([_export(self.kv.stored_value(n)) for n in names])
            try:
                ref = self.publisher.publish(names, arrays) if arrays is not None else None
            except OSError:   # the job's directory is gone (it is ending)
                ref = None
            if ref is not None:
                self._snapshots[key] = ref
                if take:
                    self._take_published(names, ref)
            else:
                key = key[:2] + (False,)
                ref = self._snapshots.get(key)
        if ref is None:
            # ray.put copies now, in this coroutine: no later update can reach it
            ref = self.ray.put([_export(self.kv.stored_value(n)) for n in names])
            self._snapshots[key] = ref
            if take:
                await self._publish_fresh(names, ref)
        while len(self._snapshots) > 4:  # workers ask for the same round together
            self._snapshots.popitem(last=False)
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
        return [ref, [self.durable.get(n, -1) for n in names]]

    async def row_sparse_pull(self, incarnation: str, rank: int,
                              items: Sequence[Tuple[Any, int]],
                              row_ids: Sequence[np.ndarray]) -> List[Tuple[np.ndarray, np.ndarray]]:
        """The rows ``row_ids`` (part-relative, sorted, unique) of row-sparse parts."""
        names = [n for n, _ in items]
        await self._check(incarnation, names)
        if not self.book.pull_ready(rank, items):
            await self.book.wait(lambda: self.book.pull_ready(rank, items))
            await self._check(incarnation, names)
        out = []
        for name, ids in zip(names, row_ids):
            shape = self.shapes[name]
            dst = RowSparseNDArray(np.zeros((0,) + tuple(shape[1:]),
                                            self.kv.stored_value(name).dtype),
                                   np.zeros(0, np.int64), shape, cpu(0))
            self.kv.row_sparse_pull(name, out=dst, row_ids=NDArray(np.asarray(ids), cpu(0)))
            out.append((dst._data, dst._indices))
        return out

    def _wanted(self, names: Iterable[Any]) -> bool:
        """Whether a due checkpoint still needs the values of some of
        ``names`` (changed, and not yet taken from a publication)."""
        return bool(self._due) and any(n in self._dirty and n not in self._fresh
                                       for n in names)

    def _adopt(self, published: Iterable[Tuple[Any, Any]]) -> None:
        """A due checkpoint takes changed parts' values as a pull published
        them (nothing writes to those) instead of copying them; once every
        changed value is there, it is written."""
        for name, value in published:
            fields = self._dirty.get(name)
            if fields and "value" in fields and name not in self._fresh:
                self._fresh[name] = value
        if self._due and all(n in self._fresh for n, f in self._dirty.items() if "value" in f):
            self._checkpoint()

    def _take_published(self, names: Sequence[Any], batch: ShmBatch) -> None:
        """From a pull segment, pinned until the checkpoint is durable."""
        views = self.publisher.pin(batch)
        self._pinned.append(batch.path)
        self._adopt(zip(names, views))

    async def _publish_fresh(self, names: Sequence[Any], ref: Any) -> None:
        """From a pull's snapshot in the object store (immutable)."""
        versions = [self._versions.get(n) for n in names]
        values = await ref
        # only the parts unchanged since the snapshot was taken
        self._adopt((n, v) for n, ver, v in zip(names, versions, values)
                    if self._versions.get(n) == ver)

    # ------------------------------------------------------------ commands
    def _apply_updater_blob(self, blob: bytes) -> None:
        self.kv._set_updater(self.ray.cloudpickle.loads(blob))
        self.updater_blob = blob

    def _apply_command(self, head: int, body: Any) -> None:
        self._meta_dirty = True
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
            self._reset_states = True    # a new updater starts without states
        elif head == CMD_UPDATER:
            self._apply_updater_blob(body)
            self._reset_states = True
        elif head == CMD_LOAD_STATES:
            self._load_states(body)
            for name in self.shapes:     # every state changed: that is the change
                self._mark(name, "state", fresh=self._fresh.get(name))
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
        """Write what changed now and wait for it; returns the durable rounds."""
        await self._wait_durable(self._durable_future())
        return dict(self.durable)

    async def stats(self) -> dict:
        return {"index": self.index, "incarnation": self.incarnation, "pid": os.getpid(),
                "node": self.ray.get_runtime_context().get_node_id(),
                "parts": len(self.shapes), "rounds": dict(self.book.rounds),
                "durable": dict(self.durable), "arrivals": list(self.arrivals),
                "checkpoints": self.writer.written, "compactions": self.writer.compactions,
                "restored": self.restored, "sums_published": self.sums_published,
                "publish_copies": self.publisher.copies, "in_segments": len(self._backing)}

