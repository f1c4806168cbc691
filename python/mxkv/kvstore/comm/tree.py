"""CommTree: reduce and broadcast along topology-aware trees (MXNet's
``CommDeviceTree``, chosen with ``MXNET_KVSTORE_USETREE=1`` on a ``device``
store).

When a key is pushed from several GPUs, one value per GPU, the comm reads the
link topology between those GPUs (:mod:`.topology`), builds one balanced
binary tree per root over the heaviest links (:mod:`.spanning`), and sums up
the tree: at each level every parent receives its other child's partial sum
over one link and adds it to its own. A pull of the same device set sends
the value down the tree the same way.

Arrays larger than ``MXNET_KVSTORE_TREE_ARRAY_BOUND`` elements (default 1e7)
whose first dimension is at least twice the number of devices are cut into
one row slice per device; slice ``i`` is reduced up tree ``i`` (rooted at
device ``i``) and sent back down the same tree, so every link carries a share
(a reduce-scatter then an all-gather). Every device ends with the whole sum.

Anything else (one value, values on host contexts, two values on one GPU,
gradient compression, row-sparse values) goes through :class:`CommDevice`,
as in MXNet. Knobs: ``MXNET_KVSTORE_TREE_BACKTRACK`` (build trees by
backtracking instead of Kernighan-Lin) and
``MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY`` (default 0.7).

Sums are added in tree order, not push order, so floating-point results may
differ from the flat comm's in the last bits (exactly equal for values whose
sums are exact, such as small integers).
"""
from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...base import MXNetValueError, env
from ...context import Context
from ...ndarray import NDArray
from ...ndarray._util import device_scope
from .base import Comm
from .device import CommDevice, _empty_on
from .spanning import Tree, compute_depth, compute_trees
from .topology import link_weights, links_for

__all__ = ["CommTree", "TreePlan"]


class TreePlan:
    """The trees over one set of GPU contexts (sorted by device id).

    ``trees[r]`` is the tree rooted at ``devs[r]``, in MXNet's
    ``(topo, scan)`` format over device indices.
    """

    def __init__(self, devs: Sequence[Context], alpha: float, backtrack: bool) -> None:
        self.devs: List[Context] = list(devs)
        self.weights = link_weights(links_for(self.devs))
        self.trees: List[Tree] = _trees(tuple(map(tuple, self.weights)), alpha, backtrack)
        self.depth = compute_depth(len(self.devs))

    def reduce_steps(self, root: int) -> Tuple[List[int], List[Tuple[int, int]]]:
        """``(leaves, edges)`` of tree ``root``: the devices whose values enter,
        and the ``(dest, src)`` sends from the leaves up, in order."""
        topo, scan = self.trees[root]
        leaves = list(dict.fromkeys(topo[scan[self.depth]:scan[self.depth + 1]]))
        edges = []
        for level in range(self.depth, 0, -1):
            row = topo[scan[level]:scan[level + 1]]
            edges += [(row[k], row[k + 1]) for k in range(0, len(row), 2) if row[k] != row[k + 1]]
        return leaves, edges

    def broadcast_steps(self, root: int) -> List[Tuple[int, int]]:
        """The ``(src, dest)`` sends of tree ``root`` from the root down."""
        _, edges = self.reduce_steps(root)
        return [(d, s) for d, s in reversed(edges)]


@functools.lru_cache(maxsize=64)
def _trees(weights: Tuple[Tuple[float, ...], ...], alpha: float, backtrack: bool) -> List[Tree]:
    """The trees for one link matrix, built once per process (building takes
    up to a few tenths of a second for 5 to 7 devices)."""
    return compute_trees(weights, alpha, backtrack)


def _rows(a: NDArray, lo: int, hi: int) -> NDArray:
    """Rows ``lo:hi`` of ``a`` as an NDArray sharing its memory (all rows for 0-d)."""
    if a._array.ndim == 0:
        return a
    return NDArray(a._array[lo:hi], a.context)


@Comm.register
class CommTree(CommDevice):
    """Reduces and broadcasts along topology-aware binary trees over the GPUs' links (MXNet's
    ``CommDeviceTree``, ``MXNET_KVSTORE_USETREE=1``); what trees cannot do goes through
    :class:`CommDevice`. See the module docstring."""
    name = "tree"

    def __init__(self) -> None:
        super().__init__()
        self.array_bound = env("MXNET_KVSTORE_TREE_ARRAY_BOUND", 10_000_000, int, minimum=1)
        self.backtrack = env("MXNET_KVSTORE_TREE_BACKTRACK", False, bool)
        self.penalty = env("MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY", 0.7, float)
        if not 0 < self.penalty <= 1:
            raise MXNetValueError(f"environment variable MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY="
                                  f"{self.penalty} must be in (0, 1]")
        self._plans: Dict[Tuple[Context, ...], TreePlan] = {}
        self._tree_bufs: Dict[Tuple[Any, Context, str], NDArray] = {}

    # -- plans and buffers --------------------------------------------------------
    @staticmethod
    def _device_set(arrays: Sequence[NDArray]) -> Optional[Tuple[Context, ...]]:
        """The sorted GPU contexts of ``arrays`` when each is on its own GPU, else None."""
        ctxs = [a.context for a in arrays]
        if len(ctxs) < 2 or not all(c.is_gpu for c in ctxs) or len(set(ctxs)) != len(ctxs):
            return None
        if not all(type(a) is NDArray for a in arrays):
            return None
        return tuple(sorted(ctxs, key=lambda c: c.device_id))

    def plan(self, devs: Sequence[Context]) -> TreePlan:
        """The trees over ``devs`` (built once per device set)."""
        key = tuple(sorted(devs, key=lambda c: c.device_id))
        p = self._plans.get(key)
        if p is None:
            p = TreePlan(key, self.penalty, self.backtrack)
            self._plans[key] = p
        return p

    def _buf(self, key: Any, ctx: Context, kind: str, like: NDArray) -> NDArray:
        b = self._tree_bufs.get((key, ctx, kind))
        if b is None or b.shape != like.shape or b._array.dtype != like._array.dtype:
            b = _empty_on(ctx, like.shape, like._array.dtype)
            self._tree_bufs[(key, ctx, kind)] = b
        return b

    def _slices(self, like: NDArray, n: int) -> Optional[List[Tuple[int, int]]]:
        """Row ranges, one per device, for a big array (MXNet's slice rule), else None."""
        if like.size <= self.array_bound or like._array.ndim == 0 or like.shape[0] < 2 * n:
            return None
        step = like.shape[0] // n
        bounds = [i * step for i in range(n)] + [like.shape[0]]
        return [(bounds[i], bounds[i + 1]) for i in range(n)]

    # -- reduce -----------------------------------------------------------------
    def _reduce(self, key: Any, srcs: List[NDArray], out: Optional[NDArray] = None) -> NDArray:
        devs = None if self.gc is not None else self._device_set(srcs)
        if devs is None:
            return super()._reduce(key, srcs, out)
        plan = self.plan(devs)
        by_dev = {s.context: s for s in srcs}
        bufs = [self._buf(key, d, "sum", srcs[0]) for d in plan.devs]
        recv = [self._buf(key, d, "recv", srcs[0]) for d in plan.devs]
        slices = self._slices(srcs[0], len(plan.devs))
        if slices is None:
            self._reduce_up(plan, 0, by_dev, bufs, recv, 0, srcs[0].shape[0] if srcs[0].ndim else 0)
        else:
            for r, (lo, hi) in enumerate(slices):
                self._reduce_up(plan, r, by_dev, bufs, recv, lo, hi)
            for r, (lo, hi) in enumerate(slices):
                for s, d in plan.broadcast_steps(r):
                    self.copier.copy(_rows(bufs[d], lo, hi), _rows(bufs[s], lo, hi))
        result = bufs[0]
        if out is None:
            return result
        self.copier.copy(out, result)
        return out

    def _reduce_up(self, plan: TreePlan, root: int, by_dev: Dict[Context, NDArray],
                   bufs: List[NDArray], recv: List[NDArray], lo: int, hi: int) -> None:
        """Sum rows ``lo:hi`` of every source up tree ``root`` into ``bufs[root]``."""
        leaves, edges = plan.reduce_steps(root)
        for i in leaves:
            self.copier.copy(_rows(bufs[i], lo, hi), _rows(by_dev[plan.devs[i]], lo, hi))
        for dest, src in edges:
            landed = _rows(recv[dest], lo, hi)
            self.copier.copy(landed, _rows(bufs[src], lo, hi))
            total = _rows(bufs[dest], lo, hi)._array
            with device_scope(plan.devs[dest]):
                total += landed._array

    # -- broadcast --------------------------------------------------------------
    def _broadcast(self, key: Any, src: NDArray, dsts: List[NDArray]) -> None:
        devs = self._device_set(dsts)
        plan = self._plans.get(devs) if devs is not None else None
        if plan is None:  # no push from this device set yet: as the device comm
            super()._broadcast(key, src, dsts)
            return
        by_dev = {d.context: d for d in dsts}
        outs = [by_dev[c] for c in plan.devs]
        slices = self._slices(src, len(plan.devs)) or [(0, src.shape[0] if src.ndim else 0)]
        for r, (lo, hi) in enumerate(slices):
            self.copier.copy(_rows(outs[r], lo, hi), _rows(src, lo, hi))
            for s, d in plan.broadcast_steps(r):
                self.copier.copy(_rows(outs[d], lo, hi), _rows(outs[s], lo, hi))

    def _free(self) -> None:
        self._tree_bufs.clear()
        self._plans.clear()
        super()._free()
