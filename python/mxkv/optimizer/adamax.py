"""AdaMax, Adam's infinity-norm variant (MXNet's Python update)."""
from __future__ import annotations

from typing import Any

from ._arrays import array_module, grad_prologue, on_weight_device, run_kernel, zeros_state
from .optimizer import Optimizer, register

__all__ = ["Adamax"]


@register
class Adamax(Optimizer):
    """AdaMax (Kingma & Ba, http://arxiv.org/abs/1412.6980, section 7).

    At step ``t``::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * g
        u = maximum(beta2 * u, abs(g))
        weight -= lr / (1 - beta1**t) * m / u

    Parameters
    ----------
    learning_rate : float, optional, default 0.002
    beta1 : float, optional, default 0.9
    beta2 : float, optional, default 0.999
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(m, u)``.
    """

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(m, u)``, zeros of its shape and dtype, on the
        weight's context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One Adamax step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` counts as dense (absent rows are zero)."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr /= 1.0 - self.beta1 ** t
        beta1, beta2, clip = self.beta1, self.beta2, self._python_clip()
        rescale = self.rescale_grad

        def kernel(w, g, m, u):
            xp = array_module(w)
            grad_prologue(g, w, rescale, clip, wd)
            m *= beta1
            m += (1.0 - beta1) * g
            u *= beta2
            xp.maximum(u, xp.abs(g), out=u)
            w -= lr * m / u

        run_kernel(kernel, weight, grad, list(state), lazy=False)
