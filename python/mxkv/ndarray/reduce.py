"""Reductions for inspecting values: ``max``, ``min``, ``mean``, ``prod``
(``sum`` and ``norm`` live in ``ops``), as MXNet 1.9's operators.

Over all axes by default (the result has shape ``(1,)``, as MXNet's), or
over ``axis`` (an int or a tuple; ``exclude=True`` reduces over every other
axis), keeping reduced axes as 1s with ``keepdims``. The result has the
input's dtype. ``mean`` is numpy's (pairwise summation); MXNet sums
sequentially with Kahan compensation, so float32 means may differ in the
last bit.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._util import MXNetValueError, device_scope
from .ndarray import NDArray, provide
from .ops import _dense, _finish, _reduced

__all__ = ["argmax", "argmin", "max", "mean", "min", "prod"]


def _axes(axis: Any, ndim: int, exclude: bool) -> Any:
    if axis is None or axis == ():
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if exclude:
        norm = {a % ndim for a in axes}
        return tuple(a for a in range(ndim) if a not in norm)
    return axes


def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., NDArray]:
    def reduce(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,
               out: NDArray | None = None, **kwargs: Any) -> NDArray:
        data = _dense(data, name)
        xp = data._xp()
        axes = _axes(axis, data.ndim, exclude)
        with device_scope(data._ctx):
            try:
                res = fn(xp, data._array, axes, keepdims)
            except (ValueError, TypeError, np.exceptions.AxisError) as exc:
                raise MXNetValueError(f"{name} over axis {axis} of shape {data.shape}: "
                                      f"{exc}") from None
            return _finish(_reduced(xp.asarray(res)), data, out)
    reduce.__name__ = name
    reduce.__doc__ = (f"The {name} over ``axis`` (all axes by default; the result then has "
                      "shape (1,)); ``exclude=True`` reduces over the other axes.")
    return reduce


max = _reduction("max", lambda xp, a, ax, kd: xp.max(a, axis=ax, keepdims=kd))  # noqa: A001
min = _reduction("min", lambda xp, a, ax, kd: xp.min(a, axis=ax, keepdims=kd))  # noqa: A001
mean = _reduction("mean", lambda xp, a, ax, kd: xp.mean(a, axis=ax, keepdims=kd, dtype=a.dtype))
prod = _reduction("prod", lambda xp, a, ax, kd: xp.prod(a, axis=ax, keepdims=kd, dtype=a.dtype))


def _arg_reduction(name: str, fn: Callable[..., Any]) -> Callable[..., NDArray]:
    def reduce(data: NDArray, axis: Any = None, keepdims: bool = False,
               out: NDArray | None = None, **kwargs: Any) -> NDArray:
        data = _dense(data, name)
        xp = data._xp()
        with device_scope(data._ctx):
            try:
                res = fn(xp, data._array, None if axis is None else int(axis), bool(keepdims))
            except (ValueError, TypeError, np.exceptions.AxisError) as exc:
                raise MXNetValueError(f"{name} over axis {axis} of shape {data.shape}: "
                                      f"{exc}") from None
            res = NDArray(_reduced(xp.asarray(res)).astype(data.dtype), data._ctx)
        if out is not None:
            out[:] = res
            return out
        return res
    reduce.__name__ = name
    reduce.__doc__ = (f"The {name[3:]} position along ``axis`` (of the flattened array by "
                      "default), in the array's dtype like MXNet's (int32 for int32).")
    return reduce


argmax = _arg_reduction("argmax", lambda xp, a, ax, kd: xp.argmax(a, axis=ax, keepdims=kd))
argmin = _arg_reduction("argmin", lambda xp, a, ax, kd: xp.argmin(a, axis=ax, keepdims=kd))


provide(max=max, mean=mean, min=min, prod=prod)
