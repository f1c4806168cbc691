"""The link topology between GPUs, as MXNet's ``gpu_topology.h`` reads it.

Two matrices describe the links between ``n`` devices:

* ``rank[i][j]``: CUDA's P2P performance rank between devices ``i`` and ``j``
  (``cudaDevP2PAttrPerformanceRank``: 0 for PCI-E, 1 for one NVLink, 2 for
  two NVLinks...);
* ``p2p[i][j]``: whether device ``i`` can read ``j``'s memory directly.

:func:`link_weights` turns them into the edge weights the tree builder
maximises, exactly as MXNet's ``GetP2PWeight``: ``rank + 1``, falling back to
the P2P matrix where the ranks miss a P2P link, then PCI-E links set to 0
when the NVLinks alone connect every device, else to ``1/n``.

Real GPUs are read through CUDA (:func:`cuda_links`). Simulated and virtual
GPUs get a synthetic topology (:func:`synthetic_links`) chosen by
``MXKV_SIMULATE_TOPOLOGY``:

``groups`` (default)
    two groups, ``gpu(0..h-1)`` and ``gpu(h..n-1)`` with ``h = ceil(n/2)``:
    one NVLink (rank 1, P2P) between any two devices of a group, PCI-E
    without P2P (rank 0) between the groups.
``nvlink``
    one NVLink between every pair (an NVSwitch machine).
``pcie``
    PCI-E only, no P2P anywhere.
``dgx1``
    the 8-GPU hybrid cube-mesh of a DGX-1 / p3.16xlarge, as MXNet's comment
    in ``gpu_topology.h`` records it (ranks 1 and 2, P2P along the NVLinks);
    fewer devices take its top-left corner. At most 8 devices.
"""
from __future__ import annotations

import ctypes
from collections import deque
from dataclasses import dataclass
from typing import List, Sequence

from ...base import MXNetValueError, env
from ...context import Context, cuda_device, num_gpus

__all__ = ["Links", "cuda_links", "link_weights", "links_for", "synthetic_links",
           "synthetic_links_for_all", "TOPOLOGIES"]

TOPOLOGIES = ("groups", "nvlink", "pcie", "dgx1")

# p3.16xlarge with CUDA 9.0 (MXNet's gpu_topology.h): rank + 1, and P2P access.
_DGX1_WEIGHT = [
    [0, 2, 2, 3, 3, 1, 1, 1],
    [2, 0, 3, 2, 1, 3, 1, 1],
    [2, 3, 0, 3, 1, 1, 2, 1],
    [3, 2, 3, 0, 1, 1, 1, 2],
    [3, 1, 1, 1, 0, 2, 2, 3],
    [1, 3, 1, 1, 2, 0, 3, 2],
    [1, 1, 2, 1, 2, 3, 0, 3],
    [1, 1, 1, 2, 3, 2, 3, 0],
]


@dataclass(frozen=True)
class Links:
    """Raw link facts for ``n`` devices (row/column ``i`` is the ``i``-th device)."""

    rank: List[List[int]]
    p2p: List[List[bool]]

    @property
    def n(self) -> int:
        """The number of devices."""
        return len(self.rank)


def synthetic_links(n: int, kind: str | None = None) -> Links:
    """The synthetic topology ``kind`` (default ``MXKV_SIMULATE_TOPOLOGY``) for ``n`` devices."""
    if kind is None:
        kind = env("MXKV_SIMULATE_TOPOLOGY", "groups").strip().lower()
    if kind not in TOPOLOGIES:
        raise MXNetValueError(f"MXKV_SIMULATE_TOPOLOGY={kind!r} is not a known topology: "
                              f"expected one of {', '.join(TOPOLOGIES)}")
    rank = [[0] * n for _ in range(n)]
    p2p = [[False] * n for _ in range(n)]
    half = -(-n // 2)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if kind == "groups":
                linked = (i < half) == (j < half)
                rank[i][j], p2p[i][j] = (1, True) if linked else (0, False)
            elif kind == "nvlink":
                rank[i][j], p2p[i][j] = 1, True
            elif kind == "dgx1":
                if n > 8:
                    raise MXNetValueError(f"MXKV_SIMULATE_TOPOLOGY=dgx1 has 8 GPUs, "
                                          f"{n} were asked for")
                w = _DGX1_WEIGHT[i][j]
                rank[i][j], p2p[i][j] = w - 1, w > 1
    return Links(rank, p2p)


def synthetic_links_for_all() -> Links:
    """The synthetic topology over every simulated (or virtual) GPU ``gpu(0..N-1)``."""
    return synthetic_links(num_gpus())


def cuda_links(device_ids: Sequence[int]) -> Links:
    """Read the links between real CUDA devices ``device_ids``.

    P2P from ``cudaDeviceCanAccessPeer``; the performance rank from the
    driver's ``cuDeviceGetP2PAttribute`` (CuPy does not bind it), or 0 where
    the driver library cannot be asked (the P2P fallback then applies).
    """
    import cupy

    rt = cupy.cuda.runtime
    n = len(device_ids)
    rank = [[0] * n for _ in range(n)]
    p2p = [[False] * n for _ in range(n)]
    attr = _driver_p2p_rank()
    for i, a in enumerate(device_ids):
        for j, b in enumerate(device_ids):
            if i == j:
                continue
            p2p[i][j] = a != b and bool(rt.deviceCanAccessPeer(a, b))
            rank[i][j] = attr(a, b) if attr is not None and a != b else 0
    return Links(rank, p2p)


def _driver_p2p_rank():
    """``f(a, b) -> performance rank`` through libcuda, or None."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        get = lib.cuDeviceGetP2PAttribute
        dev = lib.cuDeviceGet
    except (OSError, AttributeError):
        return None
    perf_rank = 0x01  # CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK

    def rank(a: int, b: int) -> int:
        da, db, value = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        if dev(ctypes.byref(da), a) or dev(ctypes.byref(db), b):
            return 0
        if get(ctypes.byref(value), perf_rank, da, db):
            return 0
        return int(value.value)

    return rank


def links_for(devs: Sequence[Context]) -> Links:
    """The links between GPU contexts ``devs`` (in that order).

    Real GPUs: read from CUDA. Simulated or virtual GPUs: the synthetic
    topology over their device ids.
    """
    if devs and all(d.uses_cupy for d in devs) and len({d.cuda_id for d in devs}) == len(devs):
        return cuda_links([cuda_device(d) for d in devs])
    full = synthetic_links_for_all()
    ids = [d.device_id for d in devs]
    return Links([[full.rank[a][b] for b in ids] for a in ids],
                 [[full.p2p[a][b] for b in ids] for a in ids])


def _connected(weight: List[List[float]]) -> bool:
    """Whether the links heavier than 1 (NVLinks) connect every device (BFS)."""
    n = len(weight)
    seen = [False] * n
    seen[0] = True
    todo = deque([0])
    while todo:
        cur = todo.popleft()
        for i in range(n):
            if i != cur and weight[cur][i] > 1 and not seen[i]:
                seen[i] = True
                todo.append(i)
    return all(seen)


def link_weights(links: Links) -> List[List[float]]:
    """MXNet's ``GetP2PWeight``: the edge weights trees are built to maximise.

    0 on the diagonal; ``rank + 1`` elsewhere, unless some P2P pair has
    weight 1 (the ranks missed it: then 2 for every P2P pair, 1 for the
    rest). Finally the PCI-E links (weight 1) become 0 when the heavier links
    connect every device, else ``1/n`` (slow links shared through the CPU).
    """
    n = links.n
    if n == 0:
        return []
    w = [[0.0 if i == j else float(links.rank[i][j] + 1) for j in range(n)] for i in range(n)]
    if any(links.p2p[i][j] and w[i][j] == 1 for i in range(n) for j in range(n)):
        w = [[2.0 if links.p2p[i][j] else 1.0 for j in range(n)] for i in range(n)]
    pcie = 0.0 if _connected(w) else 1.0 / n
    return [[pcie if v == 1 else v for v in row] for row in w]
