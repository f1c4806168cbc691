"""FTRL-Proximal (MXNet's ``ftrl_update``, dense and row-sparse)."""
from __future__ import annotations

from typing import Any

from ._arrays import (
    array_module,
    grad_prologue,
    is_row_sparse,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import Optimizer, register

__all__ = ["Ftrl", "ftrl_kernel"]


def ftrl_kernel(lr: float, wd: float, rescale: float, clip: float | None, lamda1: float,
                beta: float):
    """The FTRL step on arrays, as MXNet's kernel, in the weight's dtype::

        g = clip(rescale_grad * grad, clip_gradient)
        z += g - (sqrt(n + g**2) - sqrt(n)) * w / lr
        n += g**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (abs(z) > lamda1)
    """
    def kernel(w, g, z, n):
        xp = array_module(w)
        lr_, wd_, rs_, l1, beta_ = scalars(w, lr, wd, rescale, lamda1, beta)
        grad_prologue(g, w, rs_, clip)
        g2 = g * g
        z += g - (xp.sqrt(n + g2) - xp.sqrt(n)) * w / lr_
        n += g2
        w[...] = ((xp.sign(z) * l1 - z) / ((beta_ + xp.sqrt(n)) / lr_ + wd_)
                  * (xp.abs(z) > l1))
    return kernel


@register
class Ftrl(Optimizer):
    """The FTRL optimizer (McMahan et al., "Ad Click Prediction", KDD 2013).

    Updates each weight by::

        g = clip(rescale_grad * grad, clip_gradient)
        z += g - (sqrt(n + g**2) - sqrt(n)) * weight / lr
        n += g**2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (abs(z) > lamda1)

    When weight and gradient are both ``row_sparse`` only the gradient's rows
    change (MXNet's sparse ``ftrl_update``); a dense weight with a row-sparse
    gradient takes the dense update (MXNet's storage fallback).

    Parameters
    ----------
    lamda1 : float, optional, default 0.01
        L1 regularization coefficient.
    learning_rate : float, optional, default 0.1
    beta : float, optional, default 1
        Per-coordinate learning rate correlation parameter.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(z, n)``. As MXNet 1.9, ``learning_rate`` is set after the
    base class is built, so it never overrides an ``lr_scheduler``'s ``base_lr``.
    """

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(z, n)``, zeros of its shape and dtype, on the
        weight's context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One FTRL step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula).
        With a row_sparse ``grad`` and a row_sparse weight only the gradient's rows change."""
        self._update_count(index)
        wd = self._get_wd(index)
        lr = self._get_lr(index)
        z, n = state
        kernel = ftrl_kernel(lr, wd, self.rescale_grad, self._kernel_clip(), self.lamda1,
                             self.beta)
        lazy = is_row_sparse(grad) and is_row_sparse(weight)
        run_kernel(kernel, weight, grad, [z, n], lazy=lazy)
