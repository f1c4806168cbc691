"""Group AdaGrad: one AdaGrad history per row (MXNet 1.9's ``contrib.GroupAdaGrad``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from ._arrays import (
    array_module,
    clip_inplace,
    dense_grad_copy,
    dense_view,
    device_scope,
    grad_rows,
    is_row_sparse,
    new_like,
    on_weight_device,
    scalars,
)
from ._mxmath import kahan_mean_last_axis
from .optimizer import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one history value per row of a 2-D weight (embeddings)::

        g = clip(rescale_grad * grad, clip_gradient)
        history += mean(g**2, axis=1, keepdims=True)
        weight -= lr * g / sqrt(history + eps)

    A ``row_sparse`` gradient updates only its rows (MXNet's
    ``contrib.group_adagrad_update``). Weight decay is not supported.

    Parameters
    ----------
    eps : float, optional, default 1e-5
        Added to the history under the square root.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is the ``(rows, 1)`` history NDArray.
    """

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def state_shape(self, weight_shape: tuple) -> tuple:
        """``(rows, 1)``: one history value per row of the weight."""
        return (tuple(weight_shape)[0], 1) if weight_shape else ()

    def create_state(self, index, weight):
        """The state of the weight at ``index``: the float32 ``(rows, 1)`` history, zeros, whatever
        the weight's dtype, on the weight's context.

        Raises
        ------
        MXNetError
            A weight that is not 2-D.
        """
        if len(weight.shape) != 2:
            raise MXNetError(f"GroupAdaGrad: index {index!r} has a weight of shape "
                             f"{tuple(weight.shape)}; it updates 2-D weights only")
        xp = array_module(dense_view(weight, write=False))
        with device_scope(weight.context):  # float32 whatever the weight's dtype, as MXNet
            return new_like(xp.zeros((weight.shape[0], 1), dtype=np.float32), weight.context)

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One GroupAdaGrad step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` updates only its rows.

        Raises
        ------
        MXNetError
            A gradient whose shape is not the weight's, or weight decay (it has none).
        """
        if tuple(grad.shape) != tuple(weight.shape):
            raise MXNetError(f"GroupAdaGrad: gradient of shape {tuple(grad.shape)} does not "
                             f"match the weight's shape {tuple(weight.shape)}")
        self._update_count(index)
        lr = self._get_lr(index)
        if self._get_wd(index) != 0:
            raise MXNetError("GroupAdaGrad: weight decay is not supported (wd must be 0)")
        w, h = dense_view(weight), dense_view(state)
        xp = array_module(w)
        if is_row_sparse(grad):  # group_adagrad_update's kernel, row by row
            idx, data = grad_rows(grad)
            if int(idx.shape[0]) == 0:
                return
            lr_, rs_, eps_ = scalars(w, lr, self.rescale_grad, self.float_stable_eps)
            g = data.astype(w.dtype, copy=True).reshape(-1, w.shape[1])
            g *= rs_
            clip = self._kernel_clip()
            clip_inplace(g, clip)
            ssq = xp.zeros(g.shape[0], w.dtype)
            for j in range(g.shape[1]):
                ssq += g[:, j] * g[:, j]
            h[idx, 0] += ssq / w.dtype.type(g.shape[1])
            w[idx] -= lr_ * g / xp.sqrt(h[idx] + eps_)
            return
        # the dense path is MXNet's Python: NDArray operations, in the weight's dtype
        typ = w.dtype.type
        g = dense_grad_copy(grad, w.dtype).reshape(w.shape)
        g *= typ(self.rescale_grad)
        if self.clip_gradient is not None:
            clip_inplace(g, float(typ(self.clip_gradient)))
        h += kahan_mean_last_axis(g * g)
        w -= (typ(lr) * g) / xp.sqrt(h + typ(self.float_stable_eps))

