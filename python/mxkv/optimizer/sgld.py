"""Stochastic Gradient Langevin Dynamics (MXNet's Python update)."""
from __future__ import annotations

import math
from typing import Any

from ._arrays import array_module, clip_inplace, on_weight_device, run_kernel
from .optimizer import Optimizer, register

__all__ = ["SGLD"]


@register
class SGLD(Optimizer):
    """Stochastic Gradient Riemannian Langevin Dynamics.

    Updates each weight by::

        g = clip(rescale_grad * grad, clip_gradient)
        weight += -lr / 2 * (g + wd * weight) + normal(0, sqrt(lr), weight.shape)

    The noise comes from the global random state of the weight's array
    module: ``numpy.random`` on CPU (seed it with ``numpy.random.seed``),
    ``cupy.random`` on GPU (``cupy.random.seed``).

    Reference: Patterson & Teh, NIPS 2013. It has no state.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def create_state(self, index, weight):
        """None: SGLD keeps no state."""
        return None

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One SGLD step on ``weight`` in place: half a gradient step plus Gaussian noise of
        variance ``lr`` drawn from the weight's array module's global random state (the class
        docstring). ``state`` is None."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        clip = self._python_clip()
        rescale = self.rescale_grad

        def kernel(w, g, _):
            xp = array_module(w)
            g *= rescale
            clip_inplace(g, clip)
            if wd:
                g += wd * w
            g *= -lr / 2
            w += g
            w += xp.random.normal(0.0, math.sqrt(lr), size=w.shape).astype(w.dtype)

        run_kernel(kernel, weight, grad, [None], lazy=False)
