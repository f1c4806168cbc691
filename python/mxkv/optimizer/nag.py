"""Nesterov accelerated gradient (MXNet's ``nag_mom_update``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import grad_prologue, on_weight_device, run_kernel, scalars
from .optimizer import Optimizer, _cast_into, register
from .sgd import MomentumStates, effective_momentum, sgd_kernel

__all__ = ["NAG", "nag_kernel"]


def nag_kernel(lr: float, wd: float, rescale: float, clip: float | None, momentum: float,
               old_weight: Any = None):
    """The NAG step on arrays, as MXNet's kernel computes it::

        g     = clip(rescale_grad * grad, clip_gradient)
        mom   = momentum * mom
        w_new = w - mom + (momentum + 1) * (mom - lr * (g + wd * w))
        mom   = mom - lr * (g + wd * w_new)

    The last line reads the *new* weight: MXNet's kernel writes the weight
    in place before it updates the momentum from it (both in
    ``nag_mom_update`` and ``mp_nag_mom_update``); MXNet 1.9.1 gives exactly
    these numbers. When the result goes to another array (``nag_mom_update``
    with ``out`` not the weight), MXNet's weight is untouched and the last
    line reads it: pass it as ``old_weight`` (an array of the kernel's kind).
    """
    def kernel(w, g, mom):
        lr_, wd_, rs_, mu_ = scalars(w, lr, wd, rescale, momentum)
        grad_prologue(g, w, rs_, clip)
        mom *= mu_
        step = g + wd_ * w
        step *= lr_
        step -= mom                         # -(mom - lr * (g + wd * w))
        w -= mom
        w -= (mu_ + 1) * step
        if wd:
            g += wd_ * (w if old_weight is None else old_weight)
        g *= lr_
        mom -= g
    return kernel


@register
class NAG(MomentumStates, Optimizer):
    """Nesterov accelerated gradient.

    Updates each weight by (``mom`` is the state, as MXNet keeps it)::

        g = clip(rescale_grad * grad, clip_gradient)
        mom = momentum * mom
        new_weight = weight - mom + (momentum + 1) * (mom - lr * (g + wd * weight))
        mom = mom - lr * (g + wd * new_weight)
        weight = new_weight

    Without weight decay this is ``state = momentum * state + g;
    weight -= lr * (g + momentum * state)`` with ``mom = -lr * state``. With
    it, the momentum sees the updated weight, as MXNet 1.9's kernel does
    (it updates the weight in place first).

    Without momentum this is plain SGD (``sgd_update``). Row-sparse
    gradients count as dense (MXNet has no sparse NAG kernel).

    Parameters
    ----------
    momentum : float, optional, default 0.0
        The momentum value.
    multi_precision : bool, optional
        For float16 weights, update a float32 master copy; the state is then
        ``(momentum, weight32)``.
    **kwargs
        Passed to :class:`Optimizer`.
    """

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    @on_weight_device
    def _update_impl(self, index, weight, grad, state, multi_precision=False):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        clip = self._kernel_clip()
        momentum = effective_momentum(self.momentum)
        target, mom = (state[1], state[0]) if multi_precision else (weight, state)
        if mom is not None:
            kernel = nag_kernel(lr, wd, self.rescale_grad, clip, momentum)
        else:   # sgd_update / mp_sgd_update
            kernel = sgd_kernel(lr, wd, self.rescale_grad, clip, 0.0, decay_form=True)
        run_kernel(kernel, target, grad, [mom], lazy=False)
        if multi_precision:
            _cast_into(target, weight)

    def update(self, index, weight, grad, state):
        """One Nesterov momentum (plain SGD without momentum) step on the weight at ``index``:
        ``weight`` and ``state`` (from :meth:`create_state`) change in place, from ``grad`` (the
        class docstring's formula). A row_sparse ``grad`` counts as dense."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """As :meth:`update`, on the float32 master copy in ``state`` (``(momentum, weight32)``)
        when the weight is float16 and ``multi_precision`` is set; the weight then receives the
        master copy's values."""
        use_mp = (self.multi_precision and weight.dtype == np.float16
                  and isinstance(state, (tuple, list)))
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)
