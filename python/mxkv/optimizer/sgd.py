"""SGD with momentum and weight decay (MXNet's ``sgd_update`` and ``sgd_mom_update``)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..base import env
from ._arrays import (
    clip_inplace,
    copy_as,
    is_row_sparse,
    on_weight_device,
    run_kernel,
    scalars,
    zeros_state,
)
from .optimizer import MultiTensorUpdates, Optimizer, _cast_into, register

__all__ = ["MomentumStates", "SGD", "ccSGD", "effective_momentum", "momentum_first_mp_state",
           "sgd_kernel"]


def sgd_kernel(lr: float, wd: float, rescale: float, clip: float | None, momentum: float,
               decay_form: bool = False):
    """The SGD step on arrays, as MXNet's fused kernels compute it.

    With ``G = lr * clip(rescale_grad * grad, clip_gradient)`` (unclipped:
    ``(lr * rescale_grad) * grad``), all in the weight's dtype::

        mom = momentum * mom - (lr * wd) * w - G;  w = w + mom     (multi_sgd_*, sgd_mom_update)
        w = (1 - lr * wd) * w - G                                  (sgd_update: decay_form)

    Without a momentum array the first form runs with ``mom = 0``.
    """
    def kernel(w, g, mom):
        lr_, wd_, rs_, mu_ = scalars(w, lr, wd, rescale, momentum)
        if clip is not None:
            g *= rs_
            clip_inplace(g, clip)
            g *= lr_
        else:
            g *= lr_ * rs_
        if decay_form:
            if wd:
                w *= w.dtype.type(1) - lr_ * wd_
            w -= g
        elif mom is None:
            if wd:
                g += (lr_ * wd_) * w
            w -= g
        else:
            mom *= mu_
            if wd:
                mom -= (lr_ * wd_) * w
            mom -= g
            w += mom
    return kernel


def momentum_first_mp_state(opt: Optimizer, index: Any, weight: Any) -> Any:
    """State of SGD-like optimizers: ``(state, weight32)`` for float16 + multi_precision.

    (The base class puts the master copy first; MXNet's SGD, NAG and LARS put
    it second.)
    """
    if opt.multi_precision and weight.dtype == np.float16:
        weight_master_copy = copy_as(weight, np.float32)
        return (opt.create_state(index, weight_master_copy), weight_master_copy)
    if weight.dtype == np.float16 and not opt.multi_precision:
        warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                      "or slow convergence. Consider using multi_precision=True option "
                      f"of the {type(opt).__name__} optimizer", stacklevel=3)
    return opt.create_state(index, weight)


def effective_momentum(momentum: float) -> float:
    """MXNet hands momentum to its kernels only when it is positive."""
    return float(momentum) if momentum > 0 else 0.0


class MomentumStates:
    """SGD's states, for the optimizers that keep SGD's: a momentum array
    (None when ``momentum`` is 0), and with ``multi_precision`` and a float16
    weight ``(momentum, weight32)`` (:func:`momentum_first_mp_state`).

    Mixed in before :class:`Optimizer` by SGD, NAG and LARS.
    """

    momentum: float

    def create_state_multi_precision(self, index, weight):
        """``(momentum, weight32)`` for a float16 weight with ``multi_precision``, else
        :meth:`create_state`."""
        return momentum_first_mp_state(self, index, weight)

    def create_state(self, index, weight):
        """A zero momentum array like ``weight``, or None when ``momentum`` is 0."""
        if self.momentum != 0.0:
            return zeros_state(weight)
        return None


@register
class SGD(MomentumStates, MultiTensorUpdates, Optimizer):
    """The SGD optimizer with momentum and weight decay.

    Standard update::

        rescaled_grad = lr * (clip(rescale_grad * grad, clip_gradient) + wd * weight)
        state = momentum * state - rescaled_grad     (kept as MXNet keeps it)
        weight = weight + state

    With a ``row_sparse`` gradient and ``lazy_update`` (the default) only the
    rows present in the gradient are updated, weight decay and momentum
    included; with ``lazy_update=False`` the absent rows count as zero
    gradient (every row decays).

    Parameters
    ----------
    momentum : float, optional, default 0.0
        The momentum value.
    lazy_update : bool, optional, default True
        Update only the gradient's rows for row-sparse gradients.
    multi_precision : bool, optional
        For float16 weights, update a float32 master copy.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is the momentum NDArray (None without momentum); with
    ``multi_precision`` and a float16 weight it is ``(momentum, weight32)``.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = env("MXNET_OPTIMIZER_AGGREGATION_SIZE", 4, minimum=1)

    @on_weight_device
    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        clip = self._kernel_clip()
        momentum = effective_momentum(self.momentum)
        rescale = self.rescale_grad
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            # dense gradients take MXNet's multi_(mp_)sgd_(mom_)update kernels (the
            # momentum form); row-sparse ones sgd_update (the decay form) or
            # sgd_mom_update, lazily or not; mp_sgd_* have no row-sparse kernel
            # and fall back to dense
            sparse = is_row_sparse(grad)
            if multi_precision:
                mom, weight32 = state
                kernel = sgd_kernel(lr, wd, rescale, clip, momentum, decay_form=(
                    sparse and mom is None))
                run_kernel(kernel, weight32, grad, [mom], lazy=False)
                _cast_into(weight32, weight)
            else:
                kernel = sgd_kernel(lr, wd, rescale, clip, momentum, decay_form=(
                    sparse and state is None))
                run_kernel(kernel, weight, grad, [state], lazy=self.lazy_update and sparse)



@register
class ccSGD(SGD):
    """[DEPRECATED] Same as :class:`SGD`; kept for backward compatibility."""
