"""FTML, Follow the Moving Leader (MXNet's ``ftml_update``)."""
from __future__ import annotations

from typing import Any

from ._arrays import (
    array_module,
    grad_prologue,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import Optimizer, register

__all__ = ["FTML", "ftml_kernel"]


def ftml_kernel(lr: float, wd: float, rescale: float, clip: float | None, beta1: float,
                beta2: float, epsilon: float, t: int):
    """``ftml_update``'s step on arrays, in the weight's dtype (state ``d, v, z``)."""
    def kernel(w, g, d, v, z):
        xp = array_module(w)
        lr_, wd_, rs_, b1, b2, eps_, t_ = scalars(w, lr, wd, rescale, beta1, beta2, epsilon, t)
        one = w.dtype.type(1)
        grad_prologue(g, w, rs_, clip, wd_)
        v *= b2
        v += (one - b2) * (g * g)
        d_t = (one - b1 ** t_) / lr_ * (xp.sqrt(v / (one - b2 ** t_)) + eps_)
        z *= b1
        z += (one - b1) * g
        z -= (d_t - b1 * d) * w
        d[...] = d_t
        w[...] = -z / d_t
    return kernel


@register
class FTML(Optimizer):
    """FTML (Zheng & Kwok, ICML 2017).

    At step ``t``::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
        d = d_t
        weight = -z / d_t

    Parameters
    ----------
    beta1 : float, optional, default 0.6
    beta2 : float, optional, default 0.999
    epsilon : float, optional, default 1e-8
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(d, v, z)``.
    """

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(d, v, z)``, zeros of its shape and dtype, on
        the weight's context."""
        return (zeros_state(weight), zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One FTML step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` counts as dense (absent rows are zero)."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        beta1, beta2, eps, clip = self.beta1, self.beta2, self.epsilon, self._kernel_clip()
        rescale = self.rescale_grad

        kernel = ftml_kernel(lr, wd, rescale, clip, beta1, beta2, eps, t)
        run_kernel(kernel, weight, grad, list(state), lazy=False)
