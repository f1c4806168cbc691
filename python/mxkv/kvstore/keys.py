"""Normalising the (key, value) arguments of a KVStore call.

MXNet accepts a single key with one value or a list of values (several
devices), or a list of keys with a list of values or lists of values. This
module turns all of these into a flat list of ``(key, value)`` pairs and
checks the shapes of the arguments, so that a store can validate a whole
call before it mutates anything.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Sequence, Tuple

import numpy as np

from ..base import MXNetError, MXNetTypeError
from ..ndarray import NDArray
from ..ndarray.sparse import RowSparseNDArray
from .foreign import wrap

__all__ = ["check_priority", "flatten", "group", "key_name", "pair_row_ids"]

_ARRAY_TYPES = (NDArray, RowSparseNDArray)
_PLAIN_TYPES = {NDArray, RowSparseNDArray}
_PLAIN_OR_LISTS = _PLAIN_TYPES | {list, tuple}


def key_name(key: Any) -> str:
    """How a key is named in messages: ``'3'`` for a str, ``3`` for an int."""
    return repr(key)


def check_priority(priority: Any, op: str) -> None:
    """Refuse a ``priority`` MXNet refuses: it hands it to ``ctypes.c_int``,
    which takes ints and whatever has ``__index__`` (numpy ints, bools) and
    raises TypeError for anything else (str, None, floats, arrays)."""
    if type(priority) is int:
        return
    try:
        ctypes.c_int(priority)
    except TypeError:
        raise MXNetTypeError(f"{op}: priority must be an int, got "
                             f"{type(priority).__name__} ({priority!r})") from None


def _check_key(key: Any, op: str) -> Tuple[Any, bool]:
    if isinstance(key, bool):
        raise MXNetError(f"{op}: key {key!r} is a bool; keys are int or str")
    if isinstance(key, str):
        return key, True
    if isinstance(key, (int, np.integer)):
        k = int(key)
        if not -(2 ** 31) <= k < 2 ** 31:
            raise MXNetError(f"{op}: int key {k} does not fit in 32 bits")
        return k, False
    raise MXNetError(f"{op}: unexpected type for key: {type(key).__name__} ({key!r}); "
                     "keys are int or str")


def _check_value(key: Any, value: Any, op: str, what: str) -> Any:
    if not isinstance(value, _ARRAY_TYPES) and what != "row_ids" and \
            hasattr(value, "__dlpack__"):
        value = wrap(key_name(key), value, op, what)  # numpy, PyTorch, CuPy...
    if not isinstance(value, _ARRAY_TYPES):
        raise MXNetError(
            f"{op}: {what} for key {key_name(key)} must be an NDArray, "
            f"got {type(value).__name__}"
        )
    if value.stype == "csr":
        raise MXNetError(f"{op}: {what} for key {key_name(key)} is a csr array of shape "
                         f"{value.shape}; a store holds dense and row_sparse arrays "
                         "(convert with tostype('default'))")
    if what == "value" and type(value) is RowSparseNDArray:
        _check_rows(key, value, op)
    return value


def _check_rows(key: Any, value: RowSparseNDArray, op: str) -> None:
    """Refuse a row_sparse value whose indices are not sorted, unique and in
    range: the store relies on them (MXNet's store goes wrong with them)."""
    problem = value.index_problem()
    if problem is not None:
        raise MXNetError(f"{op}: the row_sparse value for key {key_name(key)} is invalid: "
                         f"{problem}")


def flatten(keys: Any, values: Any, op: str, what: str = "value"
            ) -> Tuple[List[Tuple[Any, Any]], bool]:
    """Flatten ``keys``/``values`` to ``[(key, array), ...]``.

    Returns the pairs and whether the keys are strings. Raises MXNetError,
    naming the key at fault, for mismatched lengths, mixed key types and
    values that are not arrays.
    """
    fast = _flatten_plain(keys, values, what)
    if fast is not None:
        return fast
    pairs: List[Tuple[Any, Any]] = []
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)):
            raise MXNetError(
                f"{op}: {len(keys)} keys were given but the {what}s are a single "
                f"{type(values).__name__}; give one {what} (or list of {what}s) per key"
            )
        if len(keys) != len(values):
            raise MXNetError(f"{op}: {len(keys)} keys but {len(values)} {what}s")
        use_str = None
        for k, v in zip(keys, values):
            k, is_str = _check_key(k, op)
            if use_str is None:
                use_str = is_str
            elif use_str != is_str:
                raise MXNetError(
                    f"{op}: inconsistent types of keys detected: key {key_name(k)} is "
                    f"{'str' if is_str else 'int'} but earlier keys are "
                    f"{'str' if use_str else 'int'}"
                )
            _append(pairs, k, v, op, what)
        return pairs, bool(use_str)
    k, is_str = _check_key(keys, op)
    _append(pairs, k, values, op, what)
    return pairs, is_str


def _flatten_plain(keys: Any, values: Any, what: str):
    """The common case in one pass: a list of all-int or all-str keys with
    one array each. None when the call needs the general path (which also
    produces the error messages)."""
    if type(keys) not in (list, tuple) or type(values) not in (list, tuple) \
            or len(keys) != len(values) or not keys:
        return None
    kinds = set(map(type, keys))
    if kinds == {str}:
        is_str = True
    elif kinds == {int}:
        if not all(-(2 ** 31) <= k < 2 ** 31 for k in keys):
            return None
        is_str = False
    else:
        return None
    types = set(map(type, values))
    if types <= _PLAIN_TYPES:
        pairs = list(zip(keys, values))
    elif types <= _PLAIN_OR_LISTS:  # some keys with a list of values (one per device)
        pairs, types = _pairs_of_lists(keys, values)
        if pairs is None or not types <= _PLAIN_TYPES:
            return None
    else:
        return None
    if what == "value" and RowSparseNDArray in types:
        return None  # (row_sparse values are checked on the general path)
    return pairs, is_str


def _pairs_of_lists(keys: Sequence[Any], values: Sequence[Any]):
    """``(key, value)`` for each value, and the set of the values' types; None
    for the pairs when a list is empty (the general path says so)."""
    pairs: List[Tuple[Any, Any]] = []
    types: set = set()
    add, extend, note = pairs.append, pairs.extend, types.update
    for k, v in zip(keys, values):
        if type(v) is list or type(v) is tuple:
            if not v:
                return None, types
            note(map(type, v))
            extend([(k, x) for x in v])
        else:
            types.add(type(v))
            add((k, v))
    return pairs, types


def _append(pairs: list, key: Any, value: Any, op: str, what: str) -> None:
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise MXNetError(f"{op}: empty list of {what}s for key {key_name(key)}")
        for v in value:
            pairs.append((key, _check_value(key, v, op, what)))
    else:
        pairs.append((key, _check_value(key, value, op, what)))


def group(pairs: Sequence[Tuple[Any, Any]]) -> dict:
    """Group pairs by key, keeping each key's values in call order."""
    grouped: dict = {}
    for k, v in pairs:
        lst = grouped.get(k)
        if lst is None:
            grouped[k] = [v]
        else:
            lst.append(v)
    return grouped


def pair_row_ids(keys: Any, out: Any, row_ids: Any, op: str
                 ) -> Tuple[List[Tuple[Any, Any]], List[Any], List[Any]]:
    """Pair each out of a ``row_sparse_pull`` with its row ids, as MXNet does.

    ``row_ids`` is nested like ``out`` (one NDArray per out, a list of lists
    for several keys with several outs) and the two are paired by position.
    A single NDArray, or a list of one, with a list of outs means: pull into
    the first out, then copy it into the others. Returns ``(pairs, row_ids,
    copies)``: the ``(key, out)`` pairs to pull, their row ids, and the outs
    to copy the first one into.
    """
    if isinstance(row_ids, NDArray):
        row_ids = [row_ids]
    if not isinstance(row_ids, (list, tuple)):
        raise MXNetError(f"{op}: row_ids should be NDArray or list of NDArray, "
                         f"got {type(row_ids).__name__}")
    copies: List[Any] = []
    first = out
    if len(row_ids) == 1 and isinstance(out, (list, tuple)) and len(out) > 0:
        first, copies = [out[0]], list(out[1:])
    pairs, _ = flatten(keys, first, op, what="out")
    ids, _ = flatten(keys, row_ids, op, what="row_ids")
    if len(ids) != len(pairs):
        raise MXNetError(f"{op}: the number of row_ids ({len(ids)}) doesn't match the "
                         f"number of outs ({len(pairs)}); give one row_ids per out, nested "
                         "as out is")
    return pairs, [r for _, r in ids], copies
