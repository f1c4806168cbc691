"""Where each key lives: the split of a key's value over the server shards.

As MXNet's ``KVStoreDist::EncodeDefaultKey``: a value with fewer than
``MXNET_KVSTORE_BIGARRAY_BOUND`` elements (65536 by default here, where
MXNet's 1000000 left the shards' bytes uneven:
:data:`~.config.DEFAULT_DIST_BOUND`) goes whole to one shard, chosen by a
stable hash of the key (MXNet's ``key * 9973 % num_servers`` for int keys,
CRC-32 of the UTF-8 name for str keys); a bigger one is split evenly over
all shards, part ``i`` holding elements ``[round(n*i/S), round(n*(i+1)/S))``
of the flattened value. Row-sparse values are split by rows the same way, so a
part is always a block of whole rows.

With P3 (``DMLC_PS_VAN_TYPE=p3``, MXNet's ``P3StoreDist``) every value is cut
into slices of ``MXNET_KVSTORE_SLICE_THRESHOLD`` elements that go to the
shards round-robin, starting at the key's hashed shard.

Every worker computes the same plan from the same (key, shape, stype), so
no table has to be shared; what decides it besides is the job's layout
(:func:`layout_of`), which every worker of a job must share.

>>> [(p.shard, p.lo, p.hi) for p in plan_key(3, (10,), "default", 2, bound=4)]
[(0, 0, 5), (1, 5, 10)]
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import numpy as np

from .config import DEFAULT_DIST_BOUND

__all__ = ["Part", "plan_key", "shard_of", "part_name", "layout_of", "describe_layout"]


@dataclass(frozen=True)
class Part:
    """One piece of a key's value, held by one shard.

    Attributes
    ----------
    key : int or str
        The user's key.
    index : int
        The part's position among the key's parts.
    shard : int
        The shard holding it.
    lo, hi : int
        Its range: flat elements for dense values, rows for row-sparse ones.
    name : int or str
        The name the shard stores it under: the key itself (a shard holds at
        most one part of a key), or ``'key#index'`` for P3 slices.
    shape : tuple
        The shape of the part as the shard stores it (flat for a dense
        split or a P3 slice, whole rows for a row-sparse split, the key's
        shape when whole).
    """

    key: Any
    index: int
    shard: int
    lo: int
    hi: int
    name: Any
    shape: Tuple[int, ...]

    @property
    def size(self) -> int:
        return self.hi - self.lo


def shard_of(key: Any, num_shards: int) -> int:
    """The shard a small key lives on: stable across processes and runs."""
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8")) % num_shards
    return (int(key) * 9973) % num_shards


def part_name(key: Any, index: int) -> str:
    """The stored name of a slice when a shard holds several parts of one key (P3)."""
    return f"{key}#{index}"


def _even_bounds(n: int, parts: int) -> List[int]:
    # MXNet: round(n / S * i) for i in 0..S
    return [int(round(n / parts * i)) for i in range(parts + 1)]


def plan_key(key: Any, shape: Sequence[int], stype: str, num_shards: int,
             bound: int = DEFAULT_DIST_BOUND, p3_slice: int = 0) -> List[Part]:
    """Split ``key`` (a value of ``shape`` and ``stype``) over ``num_shards`` shards.

    Parameters
    ----------
    key : int or str
    shape : tuple of int
    stype : ``'default'`` or ``'row_sparse'``
    num_shards : int
        At least 1.
    bound : int
        ``MXNET_KVSTORE_BIGARRAY_BOUND``: values with at least this many
        elements are split over every shard.
    p3_slice : int
        When positive, P3 slicing: slices of this many elements, round-robin.

    Returns
    -------
    list of Part, in order of their ranges.
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    home = shard_of(key, num_shards)
    if p3_slice > 0:
        if stype != "default":
            raise ValueError("P3 slices dense values only")
        cuts = list(range(0, size, p3_slice)) + [size]
        if size == 0:
            cuts = [0, 0]
        n = len(cuts) - 1
        # always 'key#i' names, so a shard's names are all str even for int keys
        return [Part(key, i, (home + i) % num_shards, cuts[i], cuts[i + 1],
                     part_name(key, i), (cuts[i + 1] - cuts[i],)) for i in range(n)]
    if size < bound or num_shards == 1:
        rows = shape[0] if (stype == "row_sparse" and shape) else size
        return [Part(key, 0, home, 0, rows, key, shape)]
    if stype == "row_sparse":
        rows = shape[0]
        b = _even_bounds(rows, num_shards)
        return [Part(key, i, i, b[i], b[i + 1], key, (b[i + 1] - b[i],) + shape[1:])
                for i in range(num_shards)]
    b = _even_bounds(size, num_shards)
    return [Part(key, i, i, b[i], b[i + 1], key, (b[i + 1] - b[i],))
            for i in range(num_shards)]


def layout_of(num_servers: int, bigarray_bound: int, p3_slice: int) -> dict:
    """How a job splits its keys over its shards (:func:`plan_key`): a
    resumed job must split them the same way, or its parts would not be the
    logs' parts."""
    return {"servers": int(num_servers), "bigarray_bound": int(bigarray_bound),
            "p3_slice": int(p3_slice)}


def describe_layout(layout: dict) -> str:
    """A layout (:func:`layout_of`) in words, for errors."""
    p3 = f"P3 slices of {layout.get('p3_slice')} elements" if layout.get("p3_slice") \
        else "no P3"
    return (f"{layout.get('servers')} servers, MXNET_KVSTORE_BIGARRAY_BOUND="
            f"{layout.get('bigarray_bound')}, {p3}")
