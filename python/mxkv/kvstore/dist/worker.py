"""The worker side of a distributed store: MXNet's ``KVStoreDist`` on Ray.

:class:`DistKVStore` is a local :class:`~mxkv.kvstore.local.KVStore` whose
values live on the server shards. It keeps the local store's validation
(whole call first, errors naming the key) and its comm, which merges the
values of one key over this worker's devices before anything is sent
(``dist_device_sync`` merges on the devices, the others in host memory). A
batched call sends one message per shard, not one per key: the payloads go
to Ray's object store once (``ray.put``) and reach the shards on the same
host without another copy.

Push returns once the messages are submitted, as MXNet's push returns once
queued; the pull that follows waits (on the shards) for the round the
worker pushed, and raises whatever went wrong, naming the key and rank.
"""
from __future__ import annotations

import atexit
import logging
import pickle
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

import numpy as np

from ...base import DeadNodeError, MXNetError, MXNetTimeoutError
from ...fileio import atomic_write, read_bytes
from ...ndarray import NDArray
from ...ndarray.sparse import RowSparseNDArray
from ..base import _local_comm
from ..compression import GradientCompression
from ..keys import check_priority, key_name
from ..local import KeyLayout, KVStore, _stype
from .channel import Call, Channel
from .job import NAMESPACE, JobEnv, connect, coordinator_name, host_label
from .messages import (
    CMD_COMPRESSION,
    CMD_LOAD_STATES,
    CMD_OPTIMIZER,
    CMD_UPDATER,
    Compressed,
    Pull,
    RowSparse,
)
from .sharding import Part, describe_layout, layout_of, plan_key
from .shm import node_id
from .transport import Transport

__all__ = ["DistKVStore"]

log = logging.getLogger("mxkv.kvstore.dist")


def _host(arr: Any) -> np.ndarray:
    """A host numpy view (or copy, from a GPU) of an NDArray's dense contents."""
    a = arr._array
    return a if isinstance(a, np.ndarray) else arr.asnumpy()


class DistKVStore(KVStore):
    """A worker's handle on a distributed store (``dist_sync``, ``dist_async``,
    ``dist_device_sync``...), created by ``mx.kv.create`` in a process
    started by ``mxkv launch``.

    Parameters
    ----------
    name : str
        The lower-cased type string.
    job : JobEnv, optional
        The job to join; read from the environment when not given.
    """

    def __init__(self, name: str, job: Optional[JobEnv] = None) -> None:
        super().__init__(name, comm=_local_comm(name))
        self._sync = "_async" not in name
        self._job = job or JobEnv.from_env(name)
        if self._job.p3 and not self._sync:
            raise MXNetError("Asynchronous update is not supported in P3StoreDist: P3 "
                             "(DMLC_PS_VAN_TYPE=p3) works with dist_sync only")
        cfg = self._config = self._job.config
        self._bound = cfg.bigarray_bound
        self._p3_slice = cfg.slice_threshold if self._job.p3 else 0
        ray = connect(self._job.address)
        self._ray = ray
        self._coord = ray.get_actor(coordinator_name(self._job.job), namespace=NAMESPACE)
        t = self._job.timeouts
        self._node = node_id(ray) if cfg.shm else None
        self._rank = ray.get(self._coord.join.remote(self._job.rank, host_label(), self._node),
                             timeout=t.fail)
        mode = "sync" if self._sync else "async"
        mine = layout_of(self._job.num_servers, self._bound, self._p3_slice)
        job_mode, theirs = ray.get(self._coord.set_mode.remote(mode, mine), timeout=t.fail)
        if job_mode != mode:
            raise MXNetError(f"kvstore '{name}' cannot join job {self._job.job!r}: its workers "
                             f"run dist_{job_mode}, and one job has one mode")
        if theirs != mine:
            raise MXNetError(
                f"kvstore '{name}' cannot join job {self._job.job!r}: worker rank {self._rank} "
                f"would split keys with {describe_layout(mine)}, the job's first worker with "
                f"{describe_layout(theirs)}; give every worker the same "
                "MXNET_KVSTORE_BIGARRAY_BOUND and P3 setting (mxkv launch --env)")
        names: Dict[Any, Any] = {}
        self._names = names
        self._chan = Channel(ray, self._job.job, self._job.num_servers, self._rank, t,
                             describe=lambda name: key_name(names.get(name, name)))
        # how payloads travel: shared memory, this host's relay, the object store
        self._transport = Transport(ray, self._chan, self._coord, self._job.job, self._rank,
                                    self._node, self._sync, self._job.p3, cfg)
        self._plans: Dict[Any, List[Part]] = {}
        self._seq: Dict[Any, int] = {}
        self._residual: Dict[Any, np.ndarray] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._barrier_before_exit = True
        self._optimizer_known = False
        # rank 0's inits in flight (bytes): past MXKV_KEEP_BYTES, init waits
        self._init_bytes = 0
        self._init_bound = cfg.keep_bytes
        self._sender = None
        if self._job.p3:
            from .p3 import PrioritySender
            self._sender = PrioritySender(self._chan, window=cfg.p3_window_bytes)
        self._stream: Any = None   # (made at the first streamed push)
        self._stop = threading.Event()
        self._beat = threading.Thread(
            target=DistKVStore._heartbeat, name="mxkv-heartbeat", daemon=True,
            args=(ray, self._coord, self._rank, t.heartbeat, self._stop))
        self._beat.start()
        ref = weakref.ref(self)

        def close_at_exit() -> None:
            store = ref()
            if store is not None:
                store.close()
        atexit.register(close_at_exit)

    # ------------------------------------------------------------ properties
    @property
    def rank(self) -> int:
        """This worker's rank, in ``[0, num_workers)``."""
        return self._rank

    @property
    def num_workers(self) -> int:
        return self._job.num_workers

    def __repr__(self) -> str:
        return (f"<DistKVStore type={self._type} job={self._job.job} rank={self._rank}/"
                f"{self.num_workers} shards={self._job.num_servers}>")

    @staticmethod
    def _heartbeat(ray: Any, coord: Any, rank: int, every: float,
                   stop: threading.Event) -> None:
        # no reference to the store: dropping the store's last reference closes it
        prev = None
        while not stop.wait(every):
            try:
                if prev is not None:
                    ray.wait([prev], timeout=0)
                prev = coord.heartbeat.remote(rank)
            except Exception:  # noqa: BLE001 - the job is over
                return

    def __del__(self) -> None:
        # As MXNet's KVStoreDist destructor: barrier (unless turned off), then leave.
        # The JVM bridge's engine drops its stores this way when it shuts down.
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    # ------------------------------------------------------------ planning
    def _plan(self, key: Any, stored: Any) -> List[Part]:
        plan = self._plans.get(key)
        if plan is None:
            stype = "row_sparse" if isinstance(stored, RowSparseNDArray) else "default"
            if self._job.p3 and stype != "default":
                raise MXNetError(f"P3 (DMLC_PS_VAN_TYPE=p3) supports dense values only; key "
                                 f"{key_name(key)} is row_sparse")
            plan = plan_key(key, stored.shape, stype, self._job.num_servers,
                            self._bound, self._p3_slice)
            self._plans[key] = plan
            for p in plan:
                self._names[p.name] = key
        return plan

    def _by_shard(self, entries: List[Tuple[Part, Any, Any]]) -> Dict[int, tuple]:
        """Group (part, seq-or-shape, payload) by shard: items and payloads."""
        out: Dict[int, tuple] = {}
        for part, tag, payload in entries:
            items, payloads = out.setdefault(part.shard, ([], []))
            items.append((part.name, tag))
            payloads.append(payload)
        return out

    # ------------------------------------------------------------ payloads
    def _dense_payload(self, key: Any, part: Part, flat: np.ndarray, compress: bool) -> Any:
        piece = flat[part.lo:part.hi]
        if compress and self._compression is not None:
            res = self._residual.get(key)
            if res is None:
                res = self._residual[key] = np.zeros(flat.size, np.float32)
            return Compressed(self._compression.quantize(piece, res[part.lo:part.hi]))
        return piece.reshape(part.shape)

    @staticmethod
    def _rsp_payload(part: Part, merged: RowSparseNDArray) -> Any:
        idx: Any = merged._indices   # numpy, or cupy on a GPU
        rows: Any = merged._data
        data = rows if isinstance(rows, np.ndarray) else rows.get()
        idx = idx if isinstance(idx, np.ndarray) else idx.get()
        lo, hi = np.searchsorted(idx, [part.lo, part.hi])
        return RowSparse(np.ascontiguousarray(data[lo:hi]), idx[lo:hi] - part.lo)

    def _payloads(self, key: Any, value: Any, compress: bool) -> List[Tuple[Part, Any]]:
        plan = self._plan(key, self._data[key])
        if isinstance(value, RowSparseNDArray):
            return [(p, self._rsp_payload(p, value)) for p in plan]
        flat = _host(value).reshape(-1)
        return [(p, self._dense_payload(key, p, flat, compress)) for p in plan]

    # ------------------------------------------------------------ init
    def _apply_init(self, pairs: list, is_str: bool) -> None:
        # As the local store's, except that a dense value is not copied and
        # kept here: the servers hold it; this worker keeps its shape and
        # dtype only (np.zeros: pages the OS maps only when touched, and it
        # is never written or read), so a big key is not held twice.
        # Row-sparse values are kept (their rows are planned).
        if not pairs:
            return
        entries = []
        with self._lock:
            for k, v in pairs:
                if isinstance(v, RowSparseNDArray):
                    stored = v.copyto(self._store_ctx)
                    source = stored
                else:
                    dt = np.dtype(v.dtype)
                    blank = np.zeros(tuple(v.shape), dt)
                    blank.flags.writeable = False
                    stored = NDArray(blank, self._store_ctx)
                    source = v
                self._data.set(k, stored)
                self._init_stype[k] = _stype(stored)
                self._order[k] = len(self._order)
                self._comm.init(k, stored.shape, stored.dtype, _stype(stored))
                self._seq[k] = 0
                if self._rank == 0:
                    for part, payload in self._payloads(k, source, False):
                        entries.append((part, part.shape, payload))
                else:
                    for part in self._plan(k, stored):
                        entries.append((part, part.shape, None))
            self._key_is_str = is_str
        groups = self._by_shard(entries)
        if self._rank == 0:
            # Sent, not waited for (as a push): the values were copied into
            # the messages, which are kept until the shards have them on disk
            # (re-sent to a restarted shard), and a later push or pull of
            # these keys waits on the shard for the init. So one-at-a-time
            # inits of many keys overlap instead of paying a round trip each.
            # Where this init's copies would take the inits in flight past
            # MXKV_KEEP_BYTES, it first waits for those to be durable (their
            # segments are then reused or freed): so at most MXKV_KEEP_BYTES
            # plus one init are held. (Waiting after sending would hold as
            # much, and make even a single big init wait for its checkpoint.)
            size = sum(getattr(p, "nbytes", 0) for _, (_, ps) in groups.items() for p in ps)
            if self._init_bytes and self._init_bytes + size > self._init_bound:
                self._chan.reap(block=True)
                self._init_bytes = 0
            for msg in self._transport.init_messages(groups):
                self._chan.send(msg)
            self._init_bytes += size
            self._chan.reap()
        else:
            calls = []
            def wait(shard: int, names: List[Any]) -> Callable[[str], Any]:
                return lambda inc: self._chan.shards[shard].wait_init.remote(inc, names)
            for shard, (items, _) in groups.items():
                calls.append(Call(shard, wait(shard, [n for n, _ in items]),
                                  "init (waiting for rank 0's values)"))
            self._chan.call(calls, "init (waiting for rank 0's values)")

    # ------------------------------------------------------------ push
    def _validate_push(self, key: Any, value: Any, op: str):
        grouped = super()._validate_push(key, value, op)
        if not self._sync and not self._optimizer_known:
            self._optimizer_known = self._ray.get(self._coord.has_optimizer.remote())
            if not self._optimizer_known:
                raise MXNetError(f"{op}: dist_async applies every push with the optimizer on "
                                 "the servers, and none is set: call kv.set_optimizer(...) "
                                 "first")
        return grouped

    def _apply_push(self, grouped: dict, priority: int = 0) -> None:
        # The caller holds the keys' locks: a key's merge, its sequence number
        # and its messages are this thread's alone; other keys go on in parallel.
        if self._init_bytes:
            # inits still in flight: the shards take them before this push
            # anyway, and once they are durable their segments serve it
            # (instead of new segments, kept as long as the store)
            self._chan.reap(block=True)
            self._init_bytes = 0
        else:
            self._chan.reap()
        entries = []
        for k in self._sorted_keys(grouped):
            vals = grouped[k]
            stored = self._data[k]
            if isinstance(stored, RowSparseNDArray):
                rsp = [v if isinstance(v, RowSparseNDArray) else v.tostype("row_sparse")
                       for v in vals]
                merged = rsp[0] if len(rsp) == 1 else self._comm.reduce_row_sparse(k, rsp)
            else:
                dense = [v.tostype("default") if isinstance(v, RowSparseNDArray) else v
                         for v in vals]
                merged = self._comm.reduce(k, dense)
            seq = self._seq[k] = self._seq[k] + 1
            for part, payload in self._payloads(k, merged, True):
                entries.append((part, seq, payload))
        by_shard = self._by_shard(entries)
        # shards on other nodes first: their chunks leave while the rest is
        # copied; the relay's calls once every chunk is copied and rung
        # (Channel.send)
        try:
            for shard in sorted(by_shard, key=lambda s: not self._transport.streamed(s)):
                items, payloads = by_shard[shard]
                streamed = self._transport.streamed(shard)
                for msg, nbytes in self._transport.push_messages(shard, items, payloads):
                    if self._sender is not None:
                        self._sender.submit(priority, msg, nbytes)
                    elif streamed and not msg.relayed:
                        self._streamer().submit(0, msg, nbytes)
                    else:
                        self._chan.send(msg, call_later=True)
        finally:
            self._chan.call_rung()   # (also when a copy failed: what rang is kept)

    def _streamer(self) -> Any:
        """The sender of chunks to shards on other nodes: in order, at most
        ``MXKV_STREAM_WINDOW`` chunks in flight (:mod:`.transport`)."""
        if self._stream is None:
            from .p3 import PrioritySender
            cfg = self._config
            self._stream = PrioritySender(self._chan,
                                          window=cfg.stream_window * cfg.stream_chunk_bytes)
        return self._stream

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Push values to the servers (several values for a key are merged here first).

        ``dist_sync``: the servers sum the pushes of all workers for the
        round, then apply the optimizer (or store the sum). ``dist_async``:
        each push is applied with the optimizer when it arrives.
        """
        check_priority(priority, "push")
        with self._locks.hold(key):
            grouped = self._validate_push(key, value, "push")
            self._apply_push(grouped, priority)

    # ------------------------------------------------------------ pull
    def _validate_pull(self, key: Any, out: Any, op: str, ignore_sparse: bool,
                       pending: Optional[dict] = None):
        if not ignore_sparse:
            raise MXNetError(f"{op}: the dist kvstore does not support ignore_sparse=False; "
                             "use row_sparse_pull for row_sparse values")
        grouped = super()._validate_pull(key, out, op, ignore_sparse, pending)
        for k in grouped:
            stored = pending[k] if pending is not None and k in pending else self._data[k]
            if isinstance(stored, RowSparseNDArray):
                raise MXNetError(f"{op}: key {key_name(k)} is row_sparse; a dist kvstore "
                                 "pulls row_sparse values with row_sparse_pull")
        return grouped

    def _apply_pull(self, grouped: dict) -> None:
        if not grouped:
            return
        if self._sender is not None:   # this worker's pushes of these keys have left
            self._sender.flush([p.name for k in grouped for p in self._plan(k, self._data[k])])
        self._chan.reap()
        keys = self._sorted_keys(grouped)
        entries = []
        part_of: Dict[Tuple[int, Any], Tuple[Any, Part]] = {}   # (shard, name) -> (key, part)
        for k in keys:
            seq = self._seq[k]
            itemsize = np.dtype(self._data[k].dtype).itemsize
            for part in self._plan(k, self._data[k]):
                entries.append((part, seq, int(np.prod(part.shape)) * itemsize))
                part_of[(part.shard, part.name)] = (k, part)
        # a split key's parts are written into its host outs as they come
        # (chunks of shards on other nodes come in several calls), so a part
        # read from a pull segment is copied once, and the copying is spread
        # over the pull instead of done when its last part comes; outs of
        # other kinds are filled once all of the key's parts are here
        flats = {k: self._split_outs(grouped[k]) for k in keys if len(self._plans[k]) > 1}
        kept: Dict[Any, Any] = {}              # those keys' parts until then
        arrived: Dict[Any, Set[Any]] = {}

        def consume(values: Dict[Any, Any], transient: bool) -> None:
            for sn, value in values.items():
                k, part = part_of[sn]
                if k not in flats:      # a whole key
                    self._comm.broadcast(k, NDArray(value.reshape(self._data[k].shape),
                                                    self._store_ctx), grouped[k])
                    continue
                host, rest = flats[k]
                for flat in host:
                    flat[part.lo:part.hi] = value
                if rest:
                    kept[sn] = np.array(value) if transient else value   # (a segment's view)
                    got = arrived.setdefault(k, set())
                    got.add(sn)
                    if len(got) == len(self._plans[k]):
                        self._fill(k, rest, kept)
        self._transport.pull(self._by_shard(entries), consume)

    @staticmethod
    def _split_outs(outs: list) -> Tuple[List[np.ndarray], list]:
        """A split key's outs: flat views of those that are C-contiguous host
        arrays (written a part at a time), and the rest."""
        host = [o for o in outs if isinstance(o._array, np.ndarray)
                and o._array.flags.c_contiguous]
        taken = {id(o) for o in host}   # by identity: == on NDArrays is element-wise
        return [o._array.reshape(-1) for o in host], [o for o in outs if id(o) not in taken]

    def _fill(self, key: Any, outs: list, values: Dict[Any, Any]) -> None:
        """Copy split ``key``'s pulled parts (all in ``values``) into ``outs``."""
        stored = self._data[key]
        buf = np.empty(stored.shape, np.dtype(stored.dtype)).reshape(-1)
        for p in self._plans[key]:
            buf[p.lo:p.hi] = values[(p.shard, p.name)]
        self._comm.broadcast(key, NDArray(buf.reshape(stored.shape), self._store_ctx), outs)

    def pull(self, key: Any, out: Any = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Pull the servers' values into ``out``; after this worker's push of
        a key, the value of that round (``dist_sync``) or one that includes
        the push (``dist_async``)."""
        super().pull(key, out, priority, ignore_sparse)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Push then pull in one call; ``out`` defaults to ``value``."""
        check_priority(priority, "pushpull")
        with self._locks.hold(key):
            grouped = self._validate_push(key, value, "pushpull")
            pulls = self._validate_pull(key, value if out is None else out, "pushpull", True)
            self._apply_push(grouped, priority)
            self._apply_pull(pulls)

    # ------------------------------------------------------------ row_sparse_pull
    def _apply_row_sparse_pull(self, plan: list) -> None:
        if self._sender is not None:
            self._sender.flush()
        self._chan.reap()
        entries = []
        for k, _o, ids in plan:
            seq = self._seq[k]
            for part in self._plan(k, self._data[k]):
                lo, hi = np.searchsorted(ids, [part.lo, part.hi])
                entries.append((part, seq, ids[lo:hi] - part.lo))
        groups = self._by_shard(entries)
        def pull(shard: int, items: Any, rows: Any) -> Callable[[str], Any]:
            return lambda inc: self._chan.shards[shard].row_sparse_pull.remote(
                inc, self._rank, Pull.of(items), rows)
        calls = [Call(s, pull(s, items, rows), "row_sparse_pull")
                 for s, (items, rows) in groups.items()]
        results = self._chan.call(calls, "row_sparse_pull")
        got: Dict[Any, Any] = {}
        for (shard, (items, _)), res in zip(groups.items(), results):
            for (name, _), rows in zip(items, res):
                got[(shard, name)] = rows
        for k, o, _ids in plan:
            parts = self._plans[k]
            datas, idxs = [], []
            for p in parts:
                rows = got[(p.shard, p.name)]
                datas.append(rows.data)
                idxs.append(np.asarray(rows.indices, np.int64) + p.lo)
            data = np.concatenate(datas) if len(datas) > 1 else np.array(datas[0])
            idx = np.concatenate(idxs) if len(idxs) > 1 else np.array(idxs[0])
            RowSparseNDArray(np.ascontiguousarray(data), idx, o.shape,
                             self._store_ctx).copyto(o)

    # ------------------------------------------------------------ commands
    def _command(self, head: int, body: Any) -> None:
        """Log a command at the coordinator, then apply it on every shard."""
        seq = self._ray.get(self._coord.command.remote(head, body),
                            timeout=self._job.timeouts.fail)
        def command(shard: int) -> Callable[[str], Any]:
            return lambda _inc: self._chan.shards[shard].command.remote(seq, head, body)
        calls = [Call(i, command(i), "command") for i in range(self._job.num_servers)]
        self._chan.call(calls, "sending a command to the servers")

    def _command_to(self, shard: int, head: int, body: Any) -> None:
        """Log a command for one shard, then apply it there."""
        seq = self._ray.get(self._coord.command.remote(head, body, shard),
                            timeout=self._job.timeouts.fail)
        self._chan.call([Call(shard, lambda inc: self._chan.shards[shard].command.remote(
            seq, head, body), "command")], "sending a command to a server")

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """Send a command to every server shard (MXNet's command ids: 0 sets the
        pickled optimizer in ``body``); returns when every shard has it."""
        self._command(int(head), body)

    def set_optimizer(self, optimizer: Any) -> None:
        """Ship ``optimizer`` (pickled) to the servers, which apply it to every push."""
        from ... import optimizer as opt

        if not isinstance(optimizer, opt.Optimizer):
            raise MXNetError(f"set_optimizer: expected an mx.optimizer.Optimizer, got "
                             f"{type(optimizer).__name__}")
        if self._job.p3:
            raise MXNetError("Update on P3StoreDist is not supported (as MXNet): keep the "
                             "optimizer on the workers with P3 (DMLC_PS_VAN_TYPE=p3)")
        with self._locks.hold_all():  # no push of this worker between old and new
            self._command(CMD_OPTIMIZER, pickle.dumps(optimizer))
            self._optimizer_known = True

    def _set_updater(self, updater: Any) -> None:
        """Ship ``updater(key, merged, stored)`` (cloudpickled) to the servers."""
        if not callable(updater):
            raise MXNetError(f"_set_updater: updater must be callable, got "
                             f"{type(updater).__name__}")
        with self._locks.hold_all():
            self._command(CMD_UPDATER, self._ray.cloudpickle.dumps(updater))
            self._optimizer_known = True

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress pushes on the wire: workers quantize (keeping residuals),
        servers dequantize (as MXNet)."""
        if self._job.p3:
            raise MXNetError("Gradient compression is not supported in P3StoreDist "
                             "(DMLC_PS_VAN_TYPE=p3)")
        super().set_gradient_compression(compression_params)
        self._command(CMD_COMPRESSION, cast(GradientCompression, self._compression).get_params())

    # ------------------------------------------------------------ states
    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Save the servers' optimizer states as one file, in the format a
        local store's ``load_optimizer_states`` reads."""
        from ...optimizer.states_file import sealed
        from .states import gather_states

        with self._locks.hold_all():  # between this worker's pushes
            self._drain()
            blobs = self._ray.get([s.get_states.remote() for s in self._chan.shards],
                                  timeout=self._job.timeouts.fail)
            blob = gather_states(blobs, self._key_plans(), dump_optimizer)
        atomic_write(fname, sealed(blob), "optimizer states file")

    def load_optimizer_states(self, fname: str) -> None:
        """Load states (from a dist or a local store) onto the servers."""
        from .states import scatter_states

        data = read_bytes(fname, "optimizer states file")
        with self._locks.hold_all(with_init=True):
            self._drain()
            pieces = scatter_states(data, self._key_plans(), self._job.num_servers, fname)
            for shard, piece in enumerate(pieces):
                self._command_to(shard, CMD_LOAD_STATES, piece)

    def _key_plans(self) -> Dict[Any, Tuple[List[Part], KeyLayout]]:
        """Every key's plan and layout (for :mod:`.states`)."""
        return {k: (self._plan(k, self._data[k]), layout)
                for k, layout in self.layouts().items()}

    def _drain(self) -> None:
        for sender in (self._sender, self._stream):
            if sender is not None:
                sender.flush()
        self._chan.reap(block=True)

    # ------------------------------------------------------------ cluster
    def _barrier(self) -> None:
        """Wait until every worker reaches this barrier (MXNet's ``_barrier``)."""
        for sender in (self._sender, self._stream):
            if sender is not None:
                sender.flush()
        self._chan.reap()
        ref = self._coord.barrier.remote(self._rank)
        try:
            self._chan._wait_refs([ref], "barrier")
            self._ray.get(ref)
        except Exception as exc:  # noqa: BLE001
            cause = getattr(exc, "cause", exc)
            if isinstance(cause, MXNetError):
                raise cause from None
            raise

    def num_dead_node(self, node_id: int, timeout: int = 60) -> int:
        """Nodes of group ``node_id`` (1 scheduler, 2 servers, 4 workers, or a
        sum) that are dead or silent for ``timeout`` seconds."""
        return int(self._ray.get(self._coord.dead_nodes.remote(int(node_id), float(timeout)),
                                 timeout=self._job.timeouts.fail))

    def set_barrier_before_exit(self, barrier_before_exit: bool = True) -> None:
        """Whether :meth:`close` (also run at exit and when the store is
        garbage-collected) meets the other workers at a barrier first."""
        self._barrier_before_exit = bool(barrier_before_exit)

    def close(self) -> None:
        """Finish pending pushes, meet the other workers at the exit barrier
        (unless ``set_barrier_before_exit(False)``), and leave the job."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._drain()
            if self._barrier_before_exit:
                self._barrier()
        except (DeadNodeError, MXNetTimeoutError) as exc:
            # a peer is gone: leaving is all that is left to do
            log.warning("mxkv: worker rank %d leaves without the exit barrier: %s",
                        self._rank, exc)
        finally:
            self._stop.set()
            try:
                self._ray.get(self._coord.leave.remote(self._rank), timeout=10)
            except Exception:  # noqa: BLE001 - the job may be gone already
                pass
            # the shards are done with this worker's segments (drained, or the job failed)
            self._chan.forget_all()
            self._transport.close()
            super().close()  # the local part: comm streams, buffers, stored values
