"""AdaGrad (MXNet's Python update; ``_sparse_adagrad_update`` for row-sparse gradients)."""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ._arrays import (
    array_module,
    grad_prologue,
    is_row_sparse,
    on_weight_device,
    run_kernel,
    zeros_state,
)
from .optimizer import Optimizer, register

__all__ = ["AdaGrad"]


def _adagrad_kernel(lr: float, wd: float, rescale: float, clip: float | None, eps: float):
    """``g = clip(rescale*g); h += g*g; w += (g / sqrt(h + eps) + w * wd) * -lr``."""
    def kernel(w, g, history):
        xp = array_module(w)
        grad_prologue(g, w, rescale, clip)
        history += g * g
        div = g / xp.sqrt(history + eps)
        if wd:
            div += w * wd
        div *= -lr
        w += div
    return kernel


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., JMLR 2011).

    Updates each weight by::

        g = clip(rescale_grad * grad, clip_gradient)
        history += g**2
        weight += (g / sqrt(history + eps) + wd * weight) * -lr

    A ``row_sparse`` gradient updates only its rows (MXNet's
    ``sparse.adagrad_update``), which supports no weight decay: with ``wd``
    other than 0 such an update raises ``MXNetError`` and changes nothing.

    Parameters
    ----------
    eps : float, optional, default 1e-7
        Added to the history under the square root.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is the ``history`` NDArray.
    """

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        """The state of the weight at ``index``: the ``history`` of squared gradients, zeros of its
        shape and dtype, on the weight's context."""
        return zeros_state(weight)

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One AdaGrad step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). A
        row_sparse ``grad`` updates only its rows.

        Raises
        ------
        MXNetError
            A row_sparse ``grad`` for an index with weight decay (MXNet's sparse kernel has none);
            nothing changes.
        """
        if is_row_sparse(grad) and self._get_wd(index) != 0:
            raise MXNetError(f"AdaGrad with a row_sparse gradient supports no weight decay "
                             f"(index {index!r} has wd={self._get_wd(index)}); set wd=0 "
                             f"or wd_mult 0 for it")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        eps, rescale = self.float_stable_eps, self.rescale_grad
        if is_row_sparse(grad):
            kernel = _adagrad_kernel(lr, 0.0, rescale, self._kernel_clip(), eps)
            run_kernel(kernel, weight, grad, [state], lazy=True)
        else:
            kernel = _adagrad_kernel(lr, wd, rescale, self._python_clip(), eps)
            run_kernel(kernel, weight, grad, [state], lazy=False)
