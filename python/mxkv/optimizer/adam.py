"""Adam (MXNet's ``adam_update``, dense, lazy and standard row-sparse)."""
from __future__ import annotations

import math
from typing import Any

from ._arrays import (
    array_module,
    clip_inplace,
    is_row_sparse,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import Optimizer, register

__all__ = ["Adam", "adam_kernel"]


def adam_kernel(lr: float, wd: float, rescale: float, clip: float | None, beta1: float,
                beta2: float, epsilon: float):
    """The Adam step on arrays (``lr`` already bias-corrected), in the weight's dtype::

        g    = clip(rescale_grad * grad + wd * w, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g
        var  = beta2 * var + (1 - beta2) * g * g
        w    = w - lr * mean / (sqrt(var) + epsilon)
    """
    def kernel(w, g, mean, var):
        xp = array_module(w)
        lr_, wd_, rs_, b1, b2, eps = scalars(w, lr, wd, rescale, beta1, beta2, epsilon)
        one = w.dtype.type(1)
        g *= rs_
        if wd:
            g += w * wd_
        clip_inplace(g, clip)
        mean *= b1
        mean += (one - b1) * g
        var *= b2
        sq = (one - b2) * g
        sq *= g
        var += sq
        w -= lr_ * mean / (xp.sqrt(var) + eps)
    return kernel


@register
class Adam(Optimizer):
    """The Adam optimizer (Kingma & Ba, http://arxiv.org/abs/1412.6980).

    At step ``t`` (the update count of this index), as MXNet 1.9, with the
    bias correction folded into the learning rate::

        lr_t = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        weight = weight - lr_t * m / (sqrt(v) + epsilon)

    With a ``row_sparse`` gradient and ``lazy_update`` only the gradient's
    rows of ``weight``, ``m`` and ``v`` change; with ``lazy_update=False``
    absent rows count as zero gradient.

    Parameters
    ----------
    learning_rate : float, optional, default 0.001
    beta1 : float, optional, default 0.9
        Decay rate of the first moment.
    beta2 : float, optional, default 0.999
        Decay rate of the second moment.
    epsilon : float, optional, default 1e-8
    lazy_update : bool, optional, default True
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(mean, var)``.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(mean, var)``, zeros of its shape and dtype, on
        the weight's context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One Adam step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula).
        With a row_sparse ``grad`` and ``lazy_update`` only the gradient's rows change."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        mean, var = state
        kernel = adam_kernel(lr, wd, self.rescale_grad, self._kernel_clip(), self.beta1,
                             self.beta2, self.epsilon)
        lazy = self.lazy_update and is_row_sparse(grad)
        run_kernel(kernel, weight, grad, [mean, var], lazy=lazy)
