"""RMSProp, plain (``rmsprop_update``) and centered (``rmspropalex_update``)."""
from __future__ import annotations

from typing import Any

from ._arrays import (
    array_module,
    clip_inplace,
    grad_prologue,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import Optimizer, register

__all__ = ["RMSProp"]


def rmsprop_kernel(lr: float, wd: float, rescale: float, clip: float | None, gamma1: float,
                   epsilon: float, clip_weights: float | None):
    """``n = (1-gamma1) g**2 + gamma1 n;  w = w - lr * (g / sqrt(n + epsilon))``."""
    def kernel(w, g, n):
        xp = array_module(w)
        lr_, wd_, rs_, g1, eps = scalars(w, lr, wd, rescale, gamma1, epsilon)
        grad_prologue(g, w, rs_, clip, wd_)
        n *= g1
        n += (w.dtype.type(1) - g1) * (g * g)
        w -= lr_ * (g / xp.sqrt(n + eps))
        clip_inplace(w, clip_weights)
    return kernel


def rmspropalex_kernel(lr: float, wd: float, rescale: float, clip: float | None,
                       gamma1: float, gamma2: float, epsilon: float,
                       clip_weights: float | None):
    """Centered RMSProp (Graves 2013, eq. 38-45)::

        n = (1-gamma1) g**2 + gamma1 n
        gm = (1-gamma1) g + gamma1 gm
        delta = gamma2 delta - lr * g / sqrt(n - gm**2 + epsilon)
        w = w + delta
    """
    def kernel(w, g, n, gm, delta):
        xp = array_module(w)
        lr_, wd_, rs_, g1, g2, eps = scalars(w, lr, wd, rescale, gamma1, gamma2, epsilon)
        one_g1 = w.dtype.type(1) - g1
        grad_prologue(g, w, rs_, clip, wd_)
        sq = one_g1 * g
        sq *= g
        n *= g1
        n += sq
        gm *= g1
        gm += one_g1 * g
        delta *= g2
        delta -= (lr_ * g) / xp.sqrt(n - gm * gm + eps)
        w += delta
        clip_inplace(w, clip_weights)
    return kernel


@register
class RMSProp(Optimizer):
    """The RMSProp optimizer.

    ``centered=False`` (Tieleman & Hinton, 2012)::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        n = (1 - gamma1) * g**2 + gamma1 * n
        weight = weight - lr * g / sqrt(n + epsilon)

    ``centered=True`` (Graves, 2013)::

        n = (1 - gamma1) * g**2 + gamma1 * n
        gm = (1 - gamma1) * g + gamma1 * gm
        delta = gamma2 * delta - lr * g / sqrt(n - gm**2 + epsilon)
        weight = weight + delta

    Then, with ``clip_weights``, ``weight = clip(weight, clip_weights)``.
    Row-sparse gradients count as dense (MXNet has no sparse RMSProp).

    Parameters
    ----------
    learning_rate : float, optional, default 0.001
    gamma1 : float, optional, default 0.9
        Decay of the moving average of squared gradients.
    gamma2 : float, optional, default 0.9
        The "momentum" of the centered version.
    epsilon : float, optional, default 1e-8
    centered : bool, optional, default False
    clip_weights : float, optional
        Clip weights into ``[-clip_weights, clip_weights]``.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(n,)``, or ``(n, gm, delta)`` when centered.
    """

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False,
                 clip_weights: float | None = None, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(n,)``, or ``(n, gm, delta)`` when ``centered``;
        zeros of its shape and dtype, on the weight's context."""
        if self.centered:
            return (zeros_state(weight), zeros_state(weight), zeros_state(weight))
        return (zeros_state(weight),)

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One RMSProp (RMSPropAlex when ``centered``) step on the weight at ``index``: ``weight``
        and ``state`` (from :meth:`create_state`) change in place, from ``grad`` (the class
        docstring's formula). Weights are clipped to ``clip_weights`` when it is positive; a
        row_sparse ``grad`` counts as dense."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        clip = self._kernel_clip()
        cw = self.clip_weights
        clip_weights = float(cw) if cw and cw > 0 else None
        rescale = self.rescale_grad
        if self.centered:
            kernel = rmspropalex_kernel(lr, wd, rescale, clip, self.gamma1, self.gamma2,
                                        self.epsilon, clip_weights)
        else:
            kernel = rmsprop_kernel(lr, wd, rescale, clip, self.gamma1, self.epsilon,
                                    clip_weights)
        run_kernel(kernel, weight, grad, list(state), lazy=False)
