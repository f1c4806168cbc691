"""What the operator tables share: :class:`Operator` (an operator's inputs,
parameters in MXNet's order, host function and result dtype), the axis and
reduction helpers, and the reading of parameters given by position and by
name. Imported by nd_operators.py (the table and ``invoke``),
nd_shape_ops.py, nd_nn_ops.py and random_ops.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..base import MXNetValueError

__all__ = ["Operator", "axes", "params", "reduction"]


@dataclass(frozen=True)
class Operator:
    """One operator: ``inputs`` NDArrays (-1: one or more), then ``params`` (MXNet's order).
    ``dtype(params, first_input_dtype)`` gives the result's dtype when it is
    not the first input's (``cast``, ``one_hot``)."""

    inputs: int
    params: Tuple[str, ...]
    host: Callable[..., Any]
    dtype: Optional[Callable[[dict, np.dtype], np.dtype]] = None


def axes(axis: Any, ndim: int, exclude: bool = False):
    """MXNet's ``axis`` parameter (an int, a sequence, or None for all) as
    a tuple of non-negative axes of an ``ndim``-d array, or None for all;
    with ``exclude`` the other axes."""
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0 and not exclude):
        return None
    picked = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    for ax in picked:
        if not -ndim <= int(ax) < ndim:
            raise MXNetValueError(f"axis {ax} is out of range for a {ndim}-d array")
    picked = tuple(int(a) % ndim for a in picked)
    if exclude:
        picked = tuple(a for a in range(ndim) if a not in picked)
    return picked


def reduction(fn: Callable) -> Callable:
    """A numpy reduction (``np.sum``) taking MXNet's ``axis keepdims exclude``."""
    def run(x, axis=None, keepdims=False, exclude=False):
        return fn(x, axis=axes(axis, x.ndim, bool(exclude)), keepdims=bool(keepdims))
    return run


def params(name: str, op: Operator, positional: Sequence[Any], kwargs: Dict[str, Any]) -> dict:
    """Operator ``name``'s parameters given by position (MXNet's order) and by
    name, as one dict (lists become tuples); refuses extra, unknown and
    doubly given ones, naming them."""
    if len(positional) > len(op.params):
        raise MXNetValueError(
            f"{name} takes at most {len(op.params)} parameters after its "
            f"{op.inputs} array(s) ({', '.join(op.params) or 'none'}), got {len(positional)}: "
            f"{list(positional)}")
    given = dict(zip(op.params, positional))
    for k, v in (kwargs or {}).items():
        if k not in op.params:
            raise MXNetValueError(f"{name} has no parameter {k!r}; its parameters are "
                                  f"{', '.join(op.params) or 'none'}")
        if k in given:
            raise MXNetValueError(f"{name}: parameter {k!r} given by position and by name")
        given[k] = v
    return {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
