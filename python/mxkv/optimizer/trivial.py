"""The ``Test`` optimizer of MXNet: ``weight += rescale_grad * grad``."""
from __future__ import annotations

from typing import Any

from ._arrays import dense_grad_copy, dense_view, on_weight_device, zeros_state
from .optimizer import Optimizer, register

__all__ = ["Test"]


@register
class Test(Optimizer):
    """The Test optimizer: ``weight += rescale_grad * grad``; the state mirrors the weight."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def create_state(self, index, weight):
        """The state of the weight at ``index``: zeros of its shape and dtype; :meth:`update`
        copies the weight into it, on the weight's context."""
        return zeros_state(weight)

    @on_weight_device
    def update(self, index, weight, grad, state):
        """``weight += rescale_grad * grad`` in place; ``state`` then holds a copy of the new
        weight."""
        w = dense_view(weight)
        g = dense_grad_copy(grad, w.dtype).reshape(w.shape)
        g *= self.rescale_grad
        w += g
        dense_view(state)[...] = w
