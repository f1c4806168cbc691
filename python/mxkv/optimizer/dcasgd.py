"""Delay-compensated asynchronous SGD (MXNet's Python update)."""
from __future__ import annotations

from typing import Any

from ._arrays import copy_as, grad_prologue, on_weight_device, run_kernel, zeros_state
from .optimizer import Optimizer, register

__all__ = ["DCASGD"]


@register
class DCASGD(Optimizer):
    """DCASGD (Zheng et al., https://arxiv.org/abs/1609.08326).

    Updates each weight by::

        g = clip(rescale_grad * grad, clip_gradient)
        step = -lr * (g + wd * weight + lamda * g * g * (weight - previous_weight))
        mom = momentum * mom + step          (step alone without momentum)
        previous_weight = weight
        weight = weight + mom

    Parameters
    ----------
    momentum : float, optional, default 0.0
    lamda : float, optional, default 0.04
        Scale of the delay compensation.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(mom or None, previous_weight)``. MXNet 1.9 tests the
    momentum array for truth (``if mom:``), which raises for arrays of more
    than one element and skips the momentum for one-element arrays holding 0;
    here momentum is applied whenever it is configured.
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous: dict = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(mom, previous_weight)``: zeros for the momentum
        (None when ``momentum`` is 0) and a copy of the weight, on the weight's context."""
        mom = None if self.momentum == 0.0 else zeros_state(weight)
        return (mom, copy_as(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One DCASGD step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` counts as dense (absent rows are zero)."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        clip = self._python_clip()
        momentum, lamda = self.momentum, self.lamda
        rescale = self.rescale_grad

        def kernel(w, g, mom, prev):
            grad_prologue(g, w, rescale, clip)
            # -lr * (g + wd * w + lamda * g * g * (w - prev)), in MXNet's order
            comp = lamda * g
            comp *= g
            comp *= w - prev
            step = g + wd * w if wd else g
            step += comp
            step *= -lr
            if mom is not None:
                mom *= momentum
                mom += step
                step = mom
            prev[...] = w
            w += step

        mom, previous_weight = state
        run_kernel(kernel, weight, grad, [mom, previous_weight], lazy=False)
