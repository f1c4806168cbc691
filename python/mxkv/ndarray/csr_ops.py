"""Operators on csr arrays, with MXNet 1.9.1's storage types
(``tests/parity/scenarios_csr.py`` records MXNet's results).

A result keeps csr storage where MXNet's operator has a csr kernel, else it
is dense (MXNet's storage fallback) with the values of the dense operator:

* **a scalar** ``s``: ``a * s``, ``s * a``, ``a / s`` always csr (on ``a``'s
  stored positions, stored zeros kept); ``a + s``, ``s + a``, ``a - s`` csr
  when ``s == 0``; a comparison ``a OP s`` csr when ``0 OP s`` is false
  (``a > 0``, ``a == 1.5``, ``a != nan``...; the stored positions keep their
  0 or 1). Everything else (``s - a``, ``s / a``, ``%``, ``**``) is dense.
* **a csr array of its shape**: ``+``, ``-``, ``*`` csr over the union of the
  two arrays' stored positions, without the positions whose result is 0
  (NaN kept); ``/``, ``%``, ``**`` and comparisons dense. Of another shape
  (broadcasting): dense.
* **a dense array**: ``a * d`` csr on ``a``'s positions (float32/float64
  only when ``d`` has ``a``'s shape; any dtype for a ``d`` that broadcasts,
  of at most 2 dimensions); ``a / d`` the same for a broadcast ``d``, and
  refused for one of ``a``'s shape (as MXNet's ``broadcast_div``); the rest
  dense. A row-sparse operand: dense.
* **in place** (``+=``, ``-=``, ``*=``, ``/=``, ``%=``): the result above
  written back into ``a``, which stays csr (a dense result without its zeros).
* ``a[:] = value``: a csr array (cast to ``a``'s dtype), a dense NDArray of
  ``a``'s shape and dtype, or a numpy array (as ``nd.array`` of it, float32);
  scalars, other keys and other types are refused, as MXNet.
* ``abs``, ``sign``, ``sqrt``, ``square``, ``negative``: csr on the same
  positions (with a dense ``out``: its dense values); ``clip`` too when
  ``a_min <= 0 <= a_max``, refused otherwise (MXNet has no kernel for it);
  ``concat(..., dim=0)`` of csr arrays only: csr; other dims, mixed inputs:
  dense.

Where MXNet leaves a csr result's column indices unsorted within a row (csr
``+``, ``-``, ``*`` csr: its own ``check_format`` then refuses them), the
results here are sorted (``docs/parity.md``, D26).
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..base import MXNetError
from . import ops
from ._util import MXNetTypeError, MXNetValueError, is_scalar
from .csr import CSRNDArray, _from_dense
from .ndarray import NDArray, peer_array, provide

__all__ = ["binary", "clip", "concat", "setitem", "unary"]

_SYMBOL = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "mod": "%",
           "power": "**", "equal": "==", "not_equal": "!=", "greater": ">",
           "greater_equal": ">=", "lesser": "<", "lesser_equal": "<="}
_COMPARE = {"equal": operator.eq, "not_equal": operator.ne, "greater": operator.gt,
            "greater_equal": operator.ge, "lesser": operator.lt, "lesser_equal": operator.le}


def _on_positions(a: CSRNDArray, values: NDArray) -> CSRNDArray:
    """A csr array with ``a``'s stored positions and these values."""
    _, indices, indptr = a._csr
    return CSRNDArray(values._array, indices.copy(), indptr.copy(), a.shape, a.context,
                      full_check=False)


def _keeps_csr_with_scalar(name: str, s: Any, reverse: bool) -> bool:
    if name == "multiply" or (name == "divide" and not reverse):
        return True
    if name == "add" or (name == "subtract" and not reverse):
        return float(s) == 0
    if name in _COMPARE:
        return not _COMPARE[name](0.0, float(s))
    return False


def _dense_result(a: CSRNDArray, other: Any, name: str, reverse: bool) -> NDArray:
    """MXNet's storage fallback: the dense operator on dense copies."""
    if isinstance(other, NDArray) and other.stype != "default":
        other = other.tostype("default")
    return a.tostype("default")._binary(other, name, reverse)


def _union(a: CSRNDArray, b: CSRNDArray, name: str) -> CSRNDArray:
    """``a OP b`` (``+``, ``-``, ``*``) of two csr arrays of one shape: the union of
    their stored positions, less those whose result is 0."""
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise MXNetTypeError(f"operator {_SYMBOL[name]}: csr operands have dtypes "
                             f"{np.dtype(a.dtype).name} and {np.dtype(b.dtype).name}; cast "
                             "one with astype first")
    a.check_format()
    b.check_format()
    cols = a.shape[1]
    flat_a = a._rows_of_values() * cols + a._csr[1]
    flat_b = b._rows_of_values() * cols + b._csr[1]
    flat = np.union1d(flat_a, flat_b)
    va = np.zeros(flat.size, a._csr[0].dtype)
    vb = np.zeros(flat.size, b._csr[0].dtype)
    va[np.searchsorted(flat, flat_a)] = a._csr[0]
    vb[np.searchsorted(flat, flat_b)] = b._csr[0]
    values = NDArray(va, a.context)._binary(NDArray(vb, a.context), name)._array
    keep = values != 0
    flat, values = flat[keep], values[keep]
    indptr = np.zeros(a.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(flat // cols, minlength=a.shape[0]), out=indptr[1:])
    return CSRNDArray(np.ascontiguousarray(values), flat % cols, indptr, a.shape, a.context,
                      full_check=False)


def _with_dense(a: CSRNDArray, d: NDArray, name: str) -> NDArray:
    """``a * d`` or ``a / d`` for a dense ``d``: csr on ``a``'s positions."""
    sym = _SYMBOL[name]
    if np.dtype(d.dtype) != np.dtype(a.dtype):
        raise MXNetTypeError(f"operator {sym}: a csr array of dtype {np.dtype(a.dtype).name} "
                             f"and a dense one of dtype {np.dtype(d.dtype).name}; cast one "
                             "with astype first")
    if d.shape == a.shape:
        if name == "divide":
            raise MXNetValueError(
                f"operator /: a csr array divided by a dense array of its shape {a.shape}: "
                "MXNet 1.9.1's broadcast_div refuses it; convert with tostype('default')")
        if np.dtype(a.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise MXNetTypeError(f"operator *: a csr array times a dense array of its shape "
                                 f"takes float32 or float64 (as MXNet), not "
                                 f"{np.dtype(a.dtype).name}")
    elif d.ndim > 2:
        raise MXNetValueError(f"operator {sym}: a csr array of shape {a.shape} with a dense "
                              f"array of shape {d.shape}: the dense one may have at most 2 "
                              "dimensions")
    try:
        full = np.broadcast_to(peer_array(d, a.context, f"operator {sym}"), a.shape)
    except ValueError:
        raise MXNetValueError(f"operator {sym}: shapes {a.shape} and {d.shape} cannot be "
                              "broadcast onto the csr array's shape") from None
    a.check_format()
    values = np.ascontiguousarray(full[a._rows_of_values(), a._csr[1]])
    return _on_positions(a, NDArray(a._csr[0], a.context)._binary(
        NDArray(values, a.context), name))


def binary(a: CSRNDArray, other: Any, name: str, reverse: bool = False,
           inplace: bool = False) -> NDArray:
    """``a OP other`` (``other OP a`` with ``reverse``), csr where MXNet keeps csr
    (the module's docstring); ``inplace`` writes the result into ``a``."""
    if is_scalar(other):
        if _keeps_csr_with_scalar(name, other, reverse):
            a.check_format()
            res: NDArray = _on_positions(
                a, NDArray(a._csr[0], a.context)._binary(other, name, reverse))
        else:
            res = _dense_result(a, other, name, reverse)
    elif isinstance(other, CSRNDArray) and other.shape == a.shape and \
            name in ("add", "subtract", "multiply"):
        res = _union(a, other, name)
    elif isinstance(other, NDArray) and other.stype == "default" and not reverse and \
            name in ("multiply", "divide"):
        res = _with_dense(a, other, name)
    elif isinstance(other, NDArray):
        res = _dense_result(a, other, name, reverse)
    else:
        raise MXNetTypeError(f"operator {_SYMBOL.get(name, name)} on a csr array of shape "
                             f"{a.shape}: type {type(other)} not supported")
    if not inplace:
        return res
    if res.shape != a.shape:
        raise MXNetValueError(f"operator {_SYMBOL[name]}=: the result shape {res.shape} differs "
                              f"from the destination's shape {a.shape}")
    if not isinstance(res, CSRNDArray):
        res = _from_dense(res.asnumpy(), a.context)
    a._set(res._csr[0].astype(a._csr[0].dtype, copy=False), res._csr[1], res._csr[2])
    return a


def setitem(a: CSRNDArray, key: Any, value: Any) -> None:
    """``a[:] = value`` (the module's docstring)."""
    if not isinstance(key, slice):
        raise MXNetTypeError(f"a csr array is assigned with [:] only, got [{key!r}]")
    if key != slice(None):
        raise MXNetValueError(f"assignment to a slice [{key.start}:{key.stop}:{key.step}] of "
                              "a csr array is not supported (MXNet 1.9.1 has [:] only)")
    if is_scalar(value):
        raise MXNetValueError(f"assigning a number ({value!r}) to a csr array is not "
                              "supported (as MXNet 1.9.1): assign an array")
    if isinstance(value, (np.ndarray, np.generic)):
        value = NDArray(np.asarray(value, dtype=np.float32), a.context)  # as nd.array
    if not isinstance(value, NDArray):
        raise MXNetTypeError(f"a csr array's [:] takes an NDArray or numpy array, not "
                             f"{type(value).__name__}")
    if value is a:
        return
    if value.shape != a.shape:
        raise MXNetValueError(f"cannot assign a value of shape {value.shape} to a csr array of "
                              f"shape {a.shape}")
    if isinstance(value, CSRNDArray):
        value.check_format()
        data, indices, indptr = value._csr
        a._set(data.astype(a._csr[0].dtype), indices.copy(), indptr.copy())
        return
    if value.stype != "default":
        raise MXNetTypeError(f"a csr array's [:] takes a csr or dense value, not "
                             f"{value.stype}")
    if np.dtype(value.dtype) != np.dtype(a.dtype):
        raise MXNetTypeError(f"a dense value of dtype {np.dtype(value.dtype).name} into a csr "
                             f"array of dtype {np.dtype(a.dtype).name}: cast it with astype "
                             "first")
    res = _from_dense(value.asnumpy(), a.context)
    a._set(*res._csr)


def _into(res: NDArray, out: NDArray | None) -> NDArray:
    if out is None:
        return res
    if res.shape != out.shape:
        raise MXNetValueError(f"out has shape {out.shape}, the result has shape {res.shape}")
    out[:] = res
    return out


def unary(data: CSRNDArray, fname: str, out: NDArray | None = None) -> NDArray:
    """``abs``, ``sign``, ``sqrt``, ``square`` or ``negative`` of a csr array: csr on
    its stored positions; into a dense ``out``, the dense operator's values."""
    fn = getattr(ops, fname)
    if out is not None and out.stype != "csr":
        return fn(data.tostype("default"), out=out)
    data.check_format()
    return _into(_on_positions(data, fn(NDArray(data._csr[0], data.context))), out)


def clip(data: CSRNDArray, a_min: float, a_max: float, out: NDArray | None = None) -> NDArray:
    """``clip`` of a csr array: csr when ``a_min <= 0 <= a_max`` (MXNet's only
    kernel for it), refused otherwise and into a dense ``out``."""
    if not a_min <= 0 <= a_max or (out is not None and out.stype != "csr"):
        into = "csr" if out is None or out.stype == "csr" else \
            "a dense out" if out.stype == "default" else f"a {out.stype} out"
        raise MXNetError(f"clip of a csr array (shape {data.shape}) into {into} with "
                         f"[a_min, a_max] = [{a_min}, {a_max}]: MXNet 1.9.1 clips csr "
                         "arrays only into csr and only when the range holds 0; convert with "
                         "tostype('default') first")
    data.check_format()
    return _into(_on_positions(data, ops.clip(NDArray(data._csr[0], data.context), a_min,
                                              a_max)), out)


def concat(arrays: list, dim: Any, out: NDArray | None = None) -> NDArray:
    """``concat`` with a csr input: csr when every input is csr and ``dim`` is 0,
    else the dense ``concat`` of dense copies."""
    if not (all(isinstance(x, CSRNDArray) for x in arrays) and
            isinstance(dim, int) and not isinstance(dim, bool) and dim == 0):
        dense = [x.tostype("default") if isinstance(x, NDArray) and x.stype != "default"
                 else x for x in arrays]
        return ops.concatenate(dense, axis=dim, out=out)
    first = arrays[0]
    for i, x in enumerate(arrays):
        if x.shape[1] != first.shape[1]:
            raise MXNetValueError(f"concat along dim 0: array {i} has shape {x.shape}, array "
                                  f"0 has shape {first.shape}")
        if np.dtype(x.dtype) != np.dtype(first.dtype):
            raise MXNetTypeError(f"concat: array {i} has dtype {np.dtype(x.dtype).name}, "
                                 f"array 0 has dtype {np.dtype(first.dtype).name}")
        x.check_format()
    offsets = np.cumsum([0] + [int(x._csr[2][-1]) for x in arrays])
    indptr = np.concatenate([np.zeros(1, np.int64)] +
                            [x._csr[2][1:] + off for x, off in zip(arrays, offsets)])
    res = CSRNDArray(np.concatenate([x._csr[0] for x in arrays]),
                     np.concatenate([x._csr[1] for x in arrays]), indptr,
                     (sum(x.shape[0] for x in arrays), first.shape[1]), first.context,
                     full_check=False)
    return _into(res, out)


provide(csr_binary=binary, csr_setitem=setitem, csr_unary=unary, csr_clip=clip,
        csr_concat=concat)
