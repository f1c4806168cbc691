"""The registry of engine operations: ``@op("kv.push")`` names a method."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List

from ..base import MXNetValueError

__all__ = ["OPS", "op", "dumps", "loads", "group"]

#: op name -> method of EngineFacade (or of one of its mixins)
OPS: Dict[str, Callable] = {}


def op(name: str):
    """Register the decorated method as engine operation ``name``."""
    def register(fn):
        OPS[name] = fn
        return fn
    return register


def dumps(value: Any) -> str:
    """``value`` as compact JSON (no spaces), the form the JVM reads."""
    return json.dumps(value, separators=(",", ":"))


_scan = json.JSONDecoder().scan_once


def loads(text: str) -> Any:
    """``json.loads(text)`` for the JVM's compact JSON, minus the layers of
    Python calls around the C scanner (a third of a microsecond-scale call's
    parse): the scanner reads one value, and anything it cannot read whole
    goes to ``json.loads``, for its result or its error."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def group(keys: List[Any], vals: List[Any], single: bool = False):
    """Turn parallel lists (a key repeated once per device) into MXNet's
    grouped form: unique keys in first-seen order, each with one value or a
    list of values. With ``single``, one key with one value becomes a plain
    key and value (MXNet's single form: the store's quickest path)."""
    if len(keys) != len(vals):
        raise MXNetValueError(f"{len(keys)} keys but {len(vals)} values: give one key per value, "
                         "or a single key for all of them")
    if single and len(keys) == 1:
        return keys[0], vals[0]
    if len(set(keys)) == len(keys):
        return list(keys), list(vals)
    groups: Dict[Any, list] = {}
    for k, v in zip(keys, vals):
        groups.setdefault(k, []).append(v)
    return list(groups), [vs if len(vs) > 1 else vs[0] for vs in groups.values()]
