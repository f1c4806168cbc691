"""Signum and signSGD (MXNet's ``signum_update`` and ``signsgd_update``)."""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ._arrays import (
    array_module,
    clip_inplace,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import Optimizer, register
from .sgd import effective_momentum

__all__ = ["Signum", "signsgd_kernel", "signum_kernel"]


def signsgd_kernel(lr: float, wd: float):
    """``signsgd_update``: ``w = (1 - lr*wd)*w - lr*sign(grad)`` (rescale_grad and
    clip_gradient cannot change a sign)."""
    def kernel(w, g, _=None):
        xp = array_module(w)
        lr_, wd_ = scalars(w, lr, wd)
        if wd:
            w *= w.dtype.type(1) - lr_ * wd_
        w -= lr_ * xp.sign(g)
    return kernel


def signum_kernel(lr: float, wd: float, rescale: float, clip: float | None, momentum: float,
                  wd_lh: float):
    """``signum_update``::

        mom = momentum*mom - (1-momentum)*wd*w - (1-momentum)*clip(rescale*g)
        w = (1 - lr*wd_lh)*w + lr*sign(mom)
    """
    def kernel(w, g, mom):
        xp = array_module(w)
        lr_, wd_, rs_, mu_, lh_ = scalars(w, lr, wd, rescale, momentum, wd_lh)
        one = w.dtype.type(1)
        if clip is not None:
            g *= rs_
            clip_inplace(g, clip)
            g *= one - mu_
        else:
            g *= (one - mu_) * rs_
        mom *= mu_
        if wd:
            mom -= ((one - mu_) * wd_) * w
        mom -= g
        if wd_lh:
            w *= one - lr_ * lh_
        w += lr_ * xp.sign(mom)
    return kernel


@register
class Signum(Optimizer):
    """Signum: the sign of the momentum (signSGD when ``momentum`` is 0).

    With momentum (``signum_update``)::

        mom = momentum * mom - (1 - momentum) * (wd * weight
                                                 + clip(rescale_grad * grad, clip_gradient))
        weight = (1 - lr * wd_lh) * weight + lr * sign(mom)

    Without (``signsgd_update``; rescaling and clipping cannot change a sign
    and are not applied)::

        weight = (1 - lr * wd) * weight - lr * sign(grad)

    Reference: Bernstein et al., signSGD, ICML 2018 (https://arxiv.org/abs/1802.04434).
    Row-sparse gradients count as dense.

    Parameters
    ----------
    learning_rate : float, optional, default 0.01
    momentum : float, optional, default 0.9
    wd_lh : float, optional, default 0.0
        Decoupled weight decay (Loshchilov & Hutter); only with momentum.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is the momentum NDArray, or None when ``momentum`` is 0.
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        """The state of the weight at ``index``: the momentum, zeros of its shape and dtype
        on its context; None when ``momentum`` is 0 (signSGD)."""
        if self.momentum != 0.0:
            return zeros_state(weight)
        return None

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One Signum (signSGD without momentum) step on the weight at ``index``: ``weight`` and
        ``state`` (from :meth:`create_state`) change in place, from ``grad`` (the class
        docstring's formula). A row_sparse ``grad`` counts as dense.

        Raises
        ------
        MXNetError
            ``wd_lh`` without momentum (signSGD has no decoupled weight decay).
        """
        if state is None and self.wd_lh:
            raise MXNetError("Signum's wd_lh (decoupled weight decay) needs momentum > 0; "
                             "signSGD (momentum=0) has no wd_lh")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if state is None:
            run_kernel(signsgd_kernel(lr, wd), weight, grad, [None], lazy=False)
            return
        kernel = signum_kernel(lr, wd, self.rescale_grad, self._kernel_clip(),
                               effective_momentum(self.momentum), self.wd_lh)
        run_kernel(kernel, weight, grad, [state], lazy=False)
