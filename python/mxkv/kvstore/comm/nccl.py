"""CommNCCL: the ``nccl`` store's reduce and broadcast, through CuPy's NCCL binding
(MXNet's ``KVStoreNCCL``).

The first push of a key from several GPUs fixes the store's device set; one
NCCL communicator spans it, rank ``r`` being the ``r``-th device by id (as
MXNet sorts them). Each key's merge buffer is placed by load as in the
``device`` comm, and its device is the root of that key's collectives:

* push: one ``ncclReduce`` per rank, all inside one ``ncclGroupStart/End``,
  summing every rank's value into the root's merge buffer;
* pull into one array per device of the set: the stored value is uploaded to
  the root's output, then one grouped ``ncclBcast`` sends it to the others.

Other pulls (host outputs, a subset of the devices) are plain copies. Every
push is checked before anything changes: more than one value must come from
distinct GPUs, the store's device set once fixed, on distinct physical
devices (NCCL refuses two ranks on one GPU, hence virtual GPUs), in a dtype
NCCL sums; otherwise a clear error instead of a hang.

On simulated GPUs the same plan runs over :class:`SimulatedCollectives`,
which carries out NCCL's reduce and broadcast in host memory and enforces
the rules NCCL itself would (every rank in every grouped collective once,
with the same count, dtype and root). NCCL itself never runs there.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...base import MXNetError
from ...context import Context, cuda_device, gpu_mode, num_gpus
from ...ndarray import NDArray
from ..keys import key_name
from .base import Comm
from .device import CommDevice
from .streams import model

__all__ = ["CommNCCL", "CupyNccl", "SimulatedCollectives", "check_nccl_available",
           "NCCL_INSTALL_HINT"]

NCCL_INSTALL_HINT = "pip install 'mxkv[gpu]' (cupy-cuda12x and nvidia-nccl-cu12)"

# numpy dtype -> NCCL data type (nccl.h: ncclInt8 0, ncclUint8 1, ncclInt32 2,
# ncclInt64 4, ncclFloat16 6, ncclFloat32 7, ncclFloat64 8).
NCCL_TYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2,
              np.dtype(np.int64): 4, np.dtype(np.float16): 6, np.dtype(np.float32): 7,
              np.dtype(np.float64): 8}
NCCL_SUM = 0


def _nccl_module():
    """``cupy.cuda.nccl`` when CuPy imports and NCCL loads, else an MXNetError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CuPy warns when libnccl is absent
            from cupy.cuda import nccl
    except ImportError:
        raise MXNetError(f"kvstore type 'nccl' needs CuPy and NCCL, and CuPy is not "
                         f"installed: {NCCL_INSTALL_HINT}") from None
    if not getattr(nccl, "available", False):
        raise MXNetError("kvstore type 'nccl' needs the NCCL library, which CuPy could not "
                         f"load: pip install nvidia-nccl-cu12 (or {NCCL_INSTALL_HINT})")
    return nccl


def check_nccl_available() -> None:
    """Raise a clear MXNetError unless the ``nccl`` store can run here.

    Simulated GPUs need nothing; otherwise CuPy, the NCCL library and a GPU.
    """
    if gpu_mode() == "simulated":
        return
    _nccl_module()
    if num_gpus() == 0:
        raise MXNetError("kvstore type 'nccl' needs GPUs, but CuPy sees none "
                         "(check the CUDA driver, or use 'local' or 'device')")


# ----------------------------------------------------------------------------
# collectives: real NCCL through CuPy, or NCCL's semantics on simulated GPUs


class CupyNccl:
    """One NCCL communicator over CUDA devices ``cuda_ids`` (rank = position)."""

    def __init__(self, cuda_ids: Sequence[int]) -> None:
        nccl = _nccl_module()
        import cupy

        self._nccl = nccl
        self._cupy = cupy
        self.cuda_ids = list(cuda_ids)
        try:
            self.comms = nccl.NcclCommunicator.initAll(self.cuda_ids)
        except nccl.NcclError as exc:
            raise MXNetError(f"NCCL could not form a communicator over CUDA devices "
                             f"{self.cuda_ids}: {exc}") from None

    def _stream(self) -> int:
        """The current stream of the current device: the comm's own stream
        inside a comm operation (:mod:`.streams`), which orders it."""
        return self._cupy.cuda.get_current_stream().ptr

    @contextlib.contextmanager
    def group(self):
        """A context manager: the collectives called inside run as one NCCL group
        (``ncclGroupStart`` / ``ncclGroupEnd``)."""
        self._nccl.groupStart()
        try:
            yield
        finally:
            self._nccl.groupEnd()

    def reduce(self, rank: int, send: Any, recv: Optional[Any], root: int) -> None:
        """Rank ``rank``'s part of a sum-reduce to rank ``root``: ``send`` is summed into ``recv``
        (the root's buffer; None on the other ranks), on the rank's device and its current
        stream."""
        with self._cupy.cuda.Device(self.cuda_ids[rank]):
            self.comms[rank].reduce(send.data.ptr, 0 if recv is None else recv.data.ptr,
                                    send.size, NCCL_TYPES[np.dtype(send.dtype)], NCCL_SUM,
                                    root, self._stream())

    def bcast(self, rank: int, buf: Any, root: int) -> None:
        """Rank ``rank``'s part of a broadcast of the root's ``buf`` into every rank's ``buf``, on
        the rank's device and its current stream."""
        with self._cupy.cuda.Device(self.cuda_ids[rank]):
            self.comms[rank].bcast(buf.data.ptr, buf.size, NCCL_TYPES[np.dtype(buf.dtype)],
                                   root, self._stream())

    def close(self) -> None:
        """Destroy the communicators, after every device finished its work
        (the comm's streams were synchronised before; this waits for the rest)."""
        for d, c in zip(self.cuda_ids, self.comms):
            with self._cupy.cuda.Device(d):
                self._cupy.cuda.Device(d).synchronize()
            c.destroy()
        self.comms = []


class SimulatedCollectives:
    """NCCL's grouped reduce and broadcast for simulated GPUs (numpy arrays).

    Calls made inside :meth:`group` are checked as NCCL would need them (each
    of the ``nranks`` ranks exactly once per collective, one count, one
    dtype, one root, a receive buffer on the root only) and then carried
    out: a reduce sums the ranks' values in rank order into the root's
    buffer; a broadcast copies the root's buffer to the others. ``calls``
    records every collective run, for tests to read.
    """

    #: communicators made and not yet destroyed (tests check close destroys them)
    alive = 0
    _alive_lock = threading.Lock()

    def __init__(self, nranks: int, devs: Optional[Sequence[Context]] = None) -> None:
        self.nranks = nranks
        self.devs = list(devs) if devs is not None else None
        self._pending: Optional[List[Tuple]] = None
        self.calls: List[Tuple[str, int, int]] = []  # (op, root, count)
        self.destroyed = False
        with SimulatedCollectives._alive_lock:
            SimulatedCollectives.alive += 1

    @contextlib.contextmanager
    def group(self):
        """A context manager: the collectives called inside are checked as one NCCL group and then
        run, when the block ends.

        Raises
        ------
        MXNetError
            A group NCCL would hang or fail on (a rank missing or twice, disagreeing counts, dtypes
            or roots).
        """
        self._pending = []
        try:
            yield
            pending = self._pending
        finally:
            self._pending = None
        self._run(pending)

    def reduce(self, rank: int, send: Any, recv: Optional[Any], root: int) -> None:
        """Queue rank ``rank``'s part of a sum-reduce of ``send`` into the root's ``recv`` (None on
        the other ranks).

        Raises
        ------
        MXNetError
            Outside :meth:`group` (one process drives every rank: NCCL would block).
        """
        self._add(("reduce", rank, send, recv, root))

    def bcast(self, rank: int, buf: Any, root: int) -> None:
        """Queue rank ``rank``'s part of a broadcast of the root's ``buf``.

        Raises
        ------
        MXNetError
            Outside :meth:`group`.
        """
        self._add(("bcast", rank, buf, None, root))

    def _add(self, call: Tuple) -> None:
        if self._pending is None:
            raise MXNetError("simulated NCCL: a collective outside a group would block "
                             "(one process drives every rank)")
        self._pending.append(call)

    def _run(self, calls: List[Tuple]) -> None:
        if not calls:
            return
        op = calls[0][0]
        ranks = sorted(c[1] for c in calls)
        if any(c[0] != op for c in calls) or ranks != list(range(self.nranks)):
            raise MXNetError(f"simulated NCCL: a group must hold one {op} per rank 0.."
                             f"{self.nranks - 1}, got ranks {ranks}; NCCL would hang")
        first = calls[0][2]
        root = calls[0][4]
        for _, rank, buf, recv, r in calls:
            if r != root or buf.size != first.size or buf.dtype != first.dtype:
                raise MXNetError("simulated NCCL: ranks disagree on root, count or dtype")
            if op == "reduce" and (recv is not None) != (rank == root):
                raise MXNetError("simulated NCCL: only the root passes a receive buffer")
        by_rank = {c[1]: c for c in calls}
        if self.devs is not None:  # order as NCCL does, on each rank's current stream
            be = model()
            streams = [be.current(d) for d in self.devs]
            be.collective(streams)
            for r, st in enumerate(streams):
                c = by_rank[r]
                if op == "reduce":
                    be.access(st, reads=[c[2]], writes=[c[3]] if r == root else [],
                              what="ncclReduce")
                else:
                    be.access(st, reads=[c[2]] if r == root else [],
                              writes=[] if r == root else [c[2]], what="ncclBcast")
        if op == "reduce":
            out = by_rank[root][3].reshape(-1)
            total = by_rank[0][2].reshape(-1).copy()
            for r in range(1, self.nranks):
                total += by_rank[r][2].reshape(-1)
            out[...] = total
        else:
            src = by_rank[root][2].reshape(-1)
            for r in range(self.nranks):
                if r != root:
                    by_rank[r][2].reshape(-1)[...] = src
        self.calls.append((op, root, int(first.size)))

    def close(self) -> None:
        """Destroy the communicator (once; later calls do nothing)."""
        if self.destroyed:
            return
        self.destroyed = True
        with SimulatedCollectives._alive_lock:
            SimulatedCollectives.alive -= 1


# ----------------------------------------------------------------------------
# the comm


@Comm.register
class CommNCCL(CommDevice):
    """The ``nccl`` store's comm (MXNet's ``KVStoreNCCL``): a push from several GPUs is one grouped
    NCCL reduce into the key's merge buffer, a pull to every GPU of the set one grouped
    broadcast; see the module docstring."""
    name = "nccl"

    def __init__(self) -> None:
        super().__init__()
        self.devs: Optional[List[Context]] = None
        self.collectives: Any = None
        # One communicator, made once; its grouped calls issued by one thread
        # at a time (NCCL communicators are not safe to drive concurrently).
        self._lock = threading.RLock()

    # -- validation, before any change -------------------------------------------
    def validate_push(self, grouped: Dict[Any, list]) -> None:
        """Refuse, before the store changes, a push NCCL cannot sum: values of one key from more
        than one GPU must come from distinct GPUs of the store's device set (fixed by the first
        such push), on distinct physical devices, in a dtype NCCL sums.

        Raises
        ------
        MXNetError
            Naming the key and what is wrong.
        """
        devs = self.devs
        for k, vals in grouped.items():
            dense = [v for v in vals if type(v) is NDArray]
            if len(vals) < 2 or len(dense) != len(vals):
                continue
            ctxs = [v.context for v in vals]
            where = ", ".join(str(c) for c in ctxs)
            if not all(c.is_gpu for c in ctxs):
                raise MXNetError(f"push: the nccl store sums values on GPUs; key {key_name(k)} "
                                 f"has values on {where}")
            if len(set(ctxs)) != len(ctxs):
                raise MXNetError(f"push: the nccl store takes one value per GPU (one NCCL rank "
                                 f"each); key {key_name(k)} has values on {where}")
            if np.dtype(vals[0].dtype) not in NCCL_TYPES:
                raise MXNetError(f"push: NCCL cannot sum dtype {np.dtype(vals[0].dtype).name} "
                                 f"(key {key_name(k)})")
            mine = sorted(ctxs, key=lambda c: c.device_id)
            if devs is None:
                devs = mine
                _check_ranks(devs)
            elif mine != devs:
                raise MXNetError(
                    f"push: the nccl store's communicator spans "
                    f"{', '.join(str(c) for c in devs)}; key {key_name(k)} was pushed from "
                    f"{where} (MXNet: NCCL KVStore supports only single set of devices)")

    def _communicator(self, srcs: List[NDArray]):
        with self._lock:
            return self._make_communicator(srcs)

    def _make_communicator(self, srcs: List[NDArray]):
        if self.collectives is None:
            devs = sorted((s.context for s in srcs), key=lambda c: c.device_id)
            _check_ranks(devs)
            if devs[0].uses_cupy:
                self.collectives = CupyNccl([cuda_device(d) for d in devs])
            else:
                self.collectives = SimulatedCollectives(len(devs), devs)
            self.devs = devs
        return self.collectives

    # -- reduce -----------------------------------------------------------------
    def _reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        if self.gc is not None or len(srcs) < 2 or any(type(s) is not NDArray for s in srcs):
            return super()._reduce(key, srcs, out)
        with self._lock:  # the device set is checked and fixed in one step
            self.validate_push({key: srcs})
            coll = self._communicator(srcs)
        merge = self._merge_buf(key, srcs)
        devs = self.devs
        if devs is None:  # (the communicator is made with its device set)
            raise RuntimeError("nccl: the communicator has no device set")
        root = devs.index(merge.context)
        by_ctx = {s.context: s for s in srcs}
        with self._lock, coll.group():
            for rank, ctx in enumerate(devs):
                coll.reduce(rank, by_ctx[ctx]._array,
                            merge._array if rank == root else None, root)
        if out is None:
            return merge
        self.copier.copy(out, merge)
        return out

    # -- broadcast --------------------------------------------------------------
    def _broadcast(self, key: Any, src: NDArray, dsts: List[NDArray]) -> None:
        ctxs = sorted((d.context for d in dsts), key=lambda c: c.device_id)
        if self.collectives is None or ctxs != self.devs or \
                any(type(d) is not NDArray for d in dsts):
            super()._broadcast(key, src, dsts)
            return
        by_ctx = {d.context: d for d in dsts}
        root_ctx = self._merge_ctx.get(key, self.devs[0])
        root = self.devs.index(root_ctx)
        self.copier.copy(by_ctx[root_ctx], src)
        coll = self.collectives
        with self._lock, coll.group():
            for rank, ctx in enumerate(self.devs):
                coll.bcast(rank, by_ctx[ctx]._array, root)

    def _free(self) -> None:
        # the streams were synchronised first (Comm.close): destroy the communicator
        with self._lock:
            if self.collectives is not None:
                self.collectives.close()
                self.collectives = None
        super()._free()


def _check_ranks(devs: Sequence[Context]) -> None:
    """NCCL needs one physical GPU per rank, all of one kind."""
    if all(d.uses_cupy for d in devs):
        ids = [cuda_device(d) for d in devs]
        if len(set(ids)) != len(ids):
            raise MXNetError(
                f"NCCL needs one physical GPU per rank, but {', '.join(str(d) for d in devs)} "
                f"share CUDA device(s) {sorted(set(ids))} (virtual GPUs: MXKV_VIRTUAL_GPUS); "
                "use the 'device' store to test them")
        return
    if any(d.uses_cupy for d in devs):
        raise MXNetError("NCCL cannot mix real and simulated GPUs")
