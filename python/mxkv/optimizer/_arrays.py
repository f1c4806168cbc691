"""Array plumbing shared by the optimizers: views, row-sparse rows, new states.

The optimizers do their arithmetic directly on the arrays an NDArray wraps
(``nd._array``, or ``_data``/``_indices`` for row sparse), with the array
module that holds them (numpy, or cupy for a GPU context), so one piece of
code serves both. Nothing here copies unless its name says so.
"""
from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from ..base import MXNetError
from ..context import xp_for
from ..ndarray import NDArray
from ..ndarray.cow import before_write

__all__ = [
    "array_module",
    "clip_inplace",
    "copy_as",
    "dense_grad_copy",
    "dense_view",
    "device_scope",
    "grad_rows",
    "is_row_sparse",
    "new_like",
    "on_weight_device",
    "run_kernel",
    "scalars",
    "zeros_state",
]


def array_module(arr: Any) -> types.ModuleType:
    """numpy, or cupy when ``arr`` is a cupy array."""
    if type(arr).__module__.split(".", 1)[0] == "cupy":
        import cupy
        return cupy
    return np


def is_row_sparse(nd: Any) -> bool:
    """True for a ``RowSparseNDArray``."""
    return getattr(nd, "stype", "default") == "row_sparse"


def dense_view(weight: Any, write: bool = True) -> Any:
    """The array holding every element of ``weight``, to be updated in place.

    A dense NDArray gives its ``_array``. A row-sparse weight must hold all of
    its rows, as MXNet's kernels require (``CheckAllRowsPresent``); its
    ``_data`` is then the full array. With ``write`` (the caller updates it),
    holders sharing the buffer copy-on-write (``mxkv.ndarray.cow``) are
    told before it is handed out.
    """
    if not is_row_sparse(weight):
        if write:
            before_write(weight._array)
        return weight._array
    nrows = weight.shape[0] if weight.shape else 0
    if int(weight._indices.shape[0]) != nrows:
        raise MXNetError(
            f"row_sparse weight of shape {tuple(weight.shape)} holds "
            f"{int(weight._indices.shape[0])} of its {nrows} rows; the optimizers "
            f"update row_sparse weights only when all rows are present")
    if write:
        before_write(weight._data)
    return weight._data


def grad_rows(grad: Any) -> tuple[Any, Any]:
    """``(indices, data)`` of a row-sparse gradient (no copy)."""
    return grad._indices, grad._data


def dense_grad_copy(grad: Any, dtype: Any) -> Any:
    """A new dense array of ``grad`` in ``dtype`` (absent rows are zero).

    Always a fresh array, so the caller may scale it in place.
    """
    if not is_row_sparse(grad):
        src = grad._array
        return src.astype(dtype, copy=True)
    xp = array_module(grad._data)
    out = xp.zeros(tuple(grad.shape), dtype=dtype)
    if grad._indices.shape[0]:
        out[grad._indices] = grad._data
    return out


def new_like(array: Any, ctx: Any) -> Any:
    """Wrap a freshly made xp array as an NDArray on ``ctx`` (takes ownership)."""
    return NDArray(array, ctx)


def zeros_state(weight: Any, dtype: Any | None = None) -> Any:
    """A dense zero NDArray shaped as ``weight``, on its context.

    States are always dense, also for row-sparse weights (MXNet allocates them
    row sparse and fills them with zero rows on first use; the values are the
    same).
    """
    xp = array_module(dense_view(weight, write=False))
    dt = np.dtype(dtype if dtype is not None else weight.dtype)
    with device_scope(weight.context):
        return new_like(xp.zeros(tuple(weight.shape), dtype=dt), weight.context)


def copy_as(weight: Any, dtype: Any | None = None) -> Any:
    """A dense copy of ``weight`` (in ``dtype``), on the same context."""
    src = dense_view(weight, write=False)
    dt = np.dtype(dtype if dtype is not None else weight.dtype)
    with device_scope(weight.context):
        arr = src.astype(dt, copy=True).reshape(tuple(weight.shape))
        return new_like(arr, weight.context)


def device_scope(ctx: Any) -> contextlib.AbstractContextManager:
    """Make ``ctx``'s GPU current (a no-op for CPU contexts)."""
    if ctx is not None and getattr(ctx, "uses_cupy", False):
        return xp_for(ctx).cuda.Device(ctx.cuda_id)
    return contextlib.nullcontext()


def on_weight_device(method: Callable) -> Callable:
    """Decorate ``update(self, index, weight, ...)`` to run on the weight's GPU."""
    @functools.wraps(method)
    def wrapper(self, index, weight, *args, **kwargs):
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        with device_scope(getattr(first, "context", None)):
            return method(self, index, weight, *args, **kwargs)
    return wrapper


def clip_inplace(arr: Any, bound: float | None) -> Any:
    """Clip ``arr`` to ``[-bound, bound]`` in place; no-op when bound is None."""
    if bound is not None:
        array_module(arr).clip(arr, -bound, bound, out=arr)
    return arr


def grad_prologue(g: Any, w: Any, rescale: Any, clip: float | None, wd: Any = 0.0) -> Any:
    """The kernels' shared prologue, in place: ``g = clip(rescale * g + wd * w)``.

    In this order, as MXNet's kernels round it: ``g *= rescale``, then
    ``g += wd * w`` (skipped when ``wd`` is 0), then the clip (skipped when
    ``clip`` is None). Pass the scalars in the type the kernel computes in
    (Python floats, or :func:`scalars` of the weight's dtype); a kernel whose
    order differs (weight decay after the clip) does its own.

    Parameters
    ----------
    g : array
        The gradient (a copy the kernel may overwrite); rewritten in place.
    w : array
        The weight, read only for the weight decay.
    rescale, wd : float or scalar
        ``rescale_grad`` and the weight decay.
    clip : float or None
        ``clip_gradient``.

    Returns
    -------
    array
        ``g``.
    """
    g *= rescale
    if wd:
        g += wd * w
    return clip_inplace(g, clip)


def scalars(w: Any, *values: float) -> tuple:
    """``values`` as scalars of ``w``'s dtype, the way MXNet's fused kernels see them.

    Their parameters are float32 fields (``lr``, ``wd``, ``beta1``...), cast
    to the weight's type, and their coefficient arithmetic (``1 - beta2``,
    ``lr * wd``) runs in that type; with these scalars numpy and cupy do the
    same. (A float64 weight is updated with ``float32(0.1)``, not 0.1; and
    ``1 - 0.999`` is 1.3e-5 apart in float32 and in float64.)
    """
    t = w.dtype.type
    return tuple(t(np.float32(v)) for v in values)


def run_kernel(kernel: Callable, weight: Any, grad: Any, states: Sequence[Any],
               lazy: bool) -> None:
    """Run an elementwise update ``kernel(w, g, *states)`` on the right rows.

    ``g`` is a fresh copy of the gradient in the weight's dtype, which the
    kernel may overwrite (it applies ``rescale_grad`` itself); ``w`` and the
    states (None stays None) are arrays the kernel updates in place.

    With ``lazy`` and a row-sparse ``grad`` only the gradient's rows are
    gathered, updated and scattered back: the rows it does not name are left
    exactly as they were, weight decay included (MXNet's lazy update).
    Otherwise a row-sparse gradient counts as dense with zero rows (MXNet's
    standard update, and its dense fallback).
    """
    if tuple(grad.shape) != tuple(weight.shape):
        raise MXNetError(f"gradient of shape {tuple(grad.shape)} does not match the weight's "
                         f"shape {tuple(weight.shape)}")
    w = dense_view(weight)
    sts = [None if s is None else dense_view(s) for s in states]
    if lazy and is_row_sparse(grad):
        idx, data = grad_rows(grad)
        if int(idx.shape[0]) == 0:
            return
        g = data.astype(w.dtype, copy=True)
        w_rows = w[idx]
        st_rows = [None if s is None else s[idx] for s in sts]
        kernel(w_rows, g, *st_rows)
        w[idx] = w_rows
        for s, rows in zip(sts, st_rows):
            if s is not None:
                s[idx] = rows
        return
    g = dense_grad_copy(grad, w.dtype)
    kernel(w, g.reshape(w.shape), *sts)
