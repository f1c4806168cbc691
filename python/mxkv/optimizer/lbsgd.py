"""Large-batch SGD with warmup (MXNet 1.9's ``LBSGD`` optimizer)."""
from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import numpy as np

from ._arrays import copy_as, on_weight_device, run_kernel, zeros_state
from .optimizer import Optimizer, _cast_into, register
from .sgd import effective_momentum, sgd_kernel

__all__ = ["LBSGD"]

_STRATEGIES = ("linear", "power2", "sqrt", "lars")


@register
class LBSGD(Optimizer):
    """SGD for large batches: gradients are accumulated over ``batch_scale``
    updates, and the learning rate is warmed up over ``warmup_epochs``.

    Every ``batch_scale``-th update of an index applies SGD (with momentum)
    to the mean of the accumulated gradients, at ``lr * mult``, where
    ``mult`` grows from 1 to ``batch_scale`` over ``warmup_epochs *
    updates_per_epoch`` updates (``linear``, ``power2``, ``sqrt``), or is a
    LARS ratio clipped to [0.01, 100] (``lars``). The other updates leave the
    weight as it is. A row-sparse gradient updates its rows only (MXNet's
    ``sgd_(mom_)update`` with their default ``lazy_update=True``).

    Parameters
    ----------
    momentum : float, optional, default 0.0
    multi_precision : bool, optional, default False
    warmup_strategy : {'linear', 'power2', 'sqrt', 'lars'}, optional
    warmup_epochs : int, optional, default 5
    batch_scale : int, optional, default 1
    updates_per_epoch : int, optional, default 32
    begin_epoch : int, optional, default 0
    num_epochs : int, optional, default 60
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The accumulated gradients live in the optimizer (``cumgrads``), as in
    MXNet; the first one is copied (MXNet keeps the pushed gradient itself,
    which a store overwrites on the next push).
    """

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = "linear", warmup_epochs: int = 5,
                 batch_scale: int = 1, updates_per_epoch: int = 32, begin_epoch: int = 0,
                 num_epochs: int = 60, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads: dict = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        """The state of the weight at ``index``: the momentum (zeros; None when ``momentum`` is 0),
        or ``(momentum, weight32)`` for a float16 weight with ``multi_precision``, on the
        weight's context. Warns (as MXNet) for a float16 weight without ``multi_precision``."""
        if self.multi_precision and weight.dtype == np.float16:
            master = copy_as(weight, np.float32)
            mom = zeros_state(weight, np.float32) if self.momentum != 0.0 else None
            return (mom, master)
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                          "or slow convergence. Consider using multi_precision=True option "
                          "of the SGD optimizer", stacklevel=2)
        return zeros_state(weight) if self.momentum != 0.0 else None

    def _get_lbmult(self, nup: int) -> float:
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    def _get_lars(self, weight, g, wd: float) -> float:
        weight2 = float((weight.asnumpy() * weight.asnumpy()).sum())
        grad2 = float((g.asnumpy() * g.asnumpy()).sum())
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _cumulate_gradient(self, grad, index) -> dict:
        cgrad = self.cumgrads.get(index, {})
        if cgrad and cgrad["num_cums"] > 0:
            cum_grad, num_cums = cgrad["cum_grad"] + grad, cgrad["num_cums"] + 1
        else:
            cum_grad, num_cums = grad.copy(), self.init_updates + 1
        self.cumgrads[index] = {"cum_grad": cum_grad, "num_cums": num_cums}
        return self.cumgrads[index]

    @on_weight_device
    def update(self, index, weight, grad, state):
        """Accumulate ``grad`` for the weight at ``index``; every ``batch_scale``-th call, one SGD
        step on ``weight`` (and its momentum ``state``) with the mean of the accumulated
        gradients and the learning rate scaled by the warm-up strategy (``linear``, ``power2``,
        ``sqrt`` or ``lars``). In between, the weight stays as it is."""
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            run_kernel(sgd_kernel(0.0, wd, 1.0, None, 0.0, decay_form=True), weight, grad,
                       [None], lazy=False)  # (sgd_update with lr 0: the weight stays)
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        momentum = effective_momentum(self.momentum)
        clip, rescale = self._kernel_clip(), self.rescale_grad
        if isinstance(state, (list, tuple)):
            mom, weight32 = state
            run_kernel(sgd_kernel(lr, wd, rescale, clip, momentum, decay_form=mom is None),
                       weight32, grad, [mom], lazy=False)
            _cast_into(weight32, weight)
        else:
            # (MXNet calls sgd_update / sgd_mom_update with their default
            # lazy_update=True: a row-sparse gradient updates its rows only)
            run_kernel(sgd_kernel(lr, wd, rescale, clip, momentum, decay_form=state is None),
                       weight, grad, [state], lazy=True)
        self.cumgrads[index]["cum_grad"] = 0
