"""AdaDelta (MXNet's Python update)."""
from __future__ import annotations

from typing import Any

from ._arrays import array_module, grad_prologue, on_weight_device, run_kernel, zeros_state
from .optimizer import Optimizer, register

__all__ = ["AdaDelta"]


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler, https://arxiv.org/abs/1212.5701).

    Updates each weight by (the learning rate is not used)::

        g = clip(rescale_grad * grad, clip_gradient)
        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight = weight - (delta + wd * weight)

    Parameters
    ----------
    rho : float, optional, default 0.9
        Decay rate of both accumulators.
    epsilon : float, optional, default 1e-5
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(acc_g, acc_delta)``. Unlike MXNet 1.9, which rescales the
    caller's gradient in place, the gradient is left untouched.
    """

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(acc_g, acc_delta)``, zeros of its shape and
        dtype, on the weight's context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One AdaDelta step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` counts as dense (absent rows are zero); ``grad`` itself is left
        unchanged."""
        wd = self._get_wd(index)
        self._update_count(index)
        rho, eps, clip = self.rho, self.epsilon, self._python_clip()
        rescale = self.rescale_grad

        def kernel(w, g, acc_g, acc_delta):
            xp = array_module(w)
            grad_prologue(g, w, rescale, clip)
            acc_g *= rho
            acc_g += (1.0 - rho) * g * g
            delta = xp.sqrt(acc_delta + eps) / xp.sqrt(acc_g + eps) * g
            acc_delta *= rho
            acc_delta += (1.0 - rho) * delta * delta
            if wd:
                delta += wd * w
            w -= delta

        acc_g, acc_delta = state
        run_kernel(kernel, weight, grad, [acc_g, acc_delta], lazy=False)
