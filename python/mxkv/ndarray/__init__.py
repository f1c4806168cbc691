"""NDArray: MXNet 1.9's ``mxnet.nd`` over numpy (CPU) and cupy (GPU).

Dense arrays (:class:`NDArray`), row-sparse arrays (``mx.nd.sparse``) and
save/load. See ``docs/ndarray.md`` for what is supported and when memory is
copied or shared.
"""
from __future__ import annotations

from . import creation, io, ndarray, ops, random, sparse
from .creation import (
    arange,
    array,
    empty,
    eye,
    full,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .io import load, load_frombuffer, save
from .ndarray import NDArray
from .ops import (
    ElementWiseSum,
    abs,
    add_n,
    broadcast_add,
    clip,
    concat,
    concatenate,
    elemwise_add,
    maximum,
    minimum,
    negative,
    norm,
    power,
    sign,
    sqrt,
    square,
    sum,
    waitall,
)
from .sparse import RowSparseNDArray, cast_storage, row_sparse_array

tostype = cast_storage

__all__ = [
    "ElementWiseSum",
    "NDArray",
    "RowSparseNDArray",
    "abs",
    "add_n",
    "arange",
    "array",
    "broadcast_add",
    "cast_storage",
    "clip",
    "concat",
    "creation",
    "concatenate",
    "elemwise_add",
    "empty",
    "eye",
    "full",
    "io",
    "load",
    "load_frombuffer",
    "maximum",
    "minimum",
    "ndarray",
    "negative",
    "norm",
    "ones",
    "ones_like",
    "ops",
    "power",
    "random",
    "row_sparse_array",
    "save",
    "sign",
    "sparse",
    "sqrt",
    "square",
    "sum",
    "tostype",
    "waitall",
    "zeros",
    "zeros_like",
]
