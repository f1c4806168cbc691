"""LARS, layer-wise adaptive rate scaling (MXNet 1.9's ``LARS`` optimizer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import env
from ._arrays import dense_view, is_row_sparse, on_weight_device, run_kernel
from ._mxmath import sum_sq
from .optimizer import Optimizer, _cast_into, register
from .params import check_mults
from .sgd import MomentumStates, effective_momentum, sgd_kernel

__all__ = ["LARS"]

_NO_LARS = ("gamma", "beta", "bias")  # names whose learning rate LARS leaves alone


@register
class LARS(MomentumStates, Optimizer):
    """LARS (You et al., https://arxiv.org/abs/1708.03888): SGD with momentum and
    weight decay whose learning rate is scaled per layer::

        w_norm, g_norm = norm(weight), norm(rescale_grad * grad)
        lr_layer = lr * eta * w_norm / (g_norm + wd * w_norm + eps)   (if both > 0)

    Layers whose name (``param_idx2name``, else ``str(index)``) ends with
    ``gamma``, ``beta`` or ``bias`` keep ``lr``.

    Parameters
    ----------
    momentum : float, optional, default 0.0
    lazy_update : bool, optional, default True
        Row-sparse weight and gradient: update only the gradient's rows.
    eta : float, optional, default 0.001
        The LARS coefficient.
    eps : float, optional, default 0
        Added to the denominator.
    momentum_correction : bool, optional, default True
        Scale the momentum by ``lr / last lr`` when a scheduler changes the rate.
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    Dense weights and gradients follow MXNet's ``multi_sum_sq``,
    ``multi_lars`` and ``preloaded_multi_(mp_)sgd_(mom_)update`` bit for bit
    on the CPU. Row-sparse ones take MXNet's per-layer path; its norms are
    computed in float64 here (MXNet's ``norm`` differs by an ulp or so).
    The state is the momentum (None without); ``(momentum, weight32)`` for a
    float16 weight with ``multi_precision``.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = env("MXNET_OPTIMIZER_AGGREGATION_SIZE", 4, minimum=1)
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr: float | None = None
        self.cur_lr: float | None = None

    def _get_lrs(self, indices):
        """As the base class, remembering the last and current global rate (for
        ``momentum_correction``)."""
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        if self.lr_scheduler is not None:
            with self._sync():
                lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return self._with_lr_mults(lr, indices)

    def set_wd_mult(self, args_wd_mult):
        """As the base class, but only names ending with ``_weight`` keep their
        weight decay by default (``_gamma`` too gets 0, as MXNet's LARS)."""
        check_mults(type(self).__name__, "wd_mult", args_wd_mult)
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith("_weight")}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _name(self, index) -> str:
        return self.idx2name[index] if index in self.idx2name else str(index)

    def _momentum(self) -> float:
        if self.momentum <= 0:
            return 0.0
        if self.momentum_correction and self.last_lr != 0:
            cur, last = self.cur_lr, self.last_lr
            if cur is None or last is None:  # (_get_lrs sets both before an update)
                raise RuntimeError("LARS momentum correction before any learning rate was "
                                   "taken (no update has run _get_lrs)")
            return self.momentum * (cur / last)
        return self.momentum

    @on_weight_device
    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        dense = not any(is_row_sparse(w) or is_row_sparse(g) for w, g in zip(weights, grads))
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        momentum = effective_momentum(self._momentum())
        clip, rescale = self._kernel_clip(), self.rescale_grad
        f32 = np.float32
        for i, (index, weight, grad) in enumerate(zip(indices, weights, grads)):
            if self._name(index).endswith(_NO_LARS):
                continue
            if dense:  # multi_lars, in float32
                w_norm = np.sqrt(sum_sq(dense_view(weight, write=False)))
                g_ss = sum_sq(dense_view(grad, write=False))
                if w_norm > 0 and g_ss > 0:
                    lrs[i] = float((f32(lrs[i]) * f32(self.eta)) * w_norm / (
                        (np.sqrt(g_ss) * f32(rescale) + f32(wds[i]) * w_norm) + f32(self.eps)))
            else:
                lrs[i] = self._lars(weight, grad, lrs[i], wds[i])
        for weight, grad, state, lr, wd in zip(weights, grads, states, lrs, wds):
            if multi_precision:
                mom, weight32 = state
                kernel = sgd_kernel(lr, wd, rescale, clip, momentum,
                                    decay_form=not dense and mom is None)
                run_kernel(kernel, weight32, grad, [mom], lazy=False)
                _cast_into(weight32, weight)
            else:
                kernel = sgd_kernel(lr, wd, rescale, clip, momentum,
                                    decay_form=not dense and state is None)
                run_kernel(kernel, weight, grad, [state],
                           lazy=not dense and self.lazy_update and is_row_sparse(grad))

    def _lars(self, weight, grad, lr: float, wd: float) -> float:
        w = weight.asnumpy().astype(np.float32)
        g = grad.asnumpy().astype(np.float32) * np.float32(self.rescale_grad)
        w_norm = float(np.sqrt(np.sum(np.square(w, dtype=np.float64))))
        g_norm = float(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
        if w_norm > 0.0 and g_norm > 0.0:
            return self.eta * w_norm / (g_norm + wd * w_norm + self.eps) * lr
        return lr

    def update(self, index, weight, grad, state):
        """Update ``weight`` (an index, or a list of them updated together) in place from ``grad``,
        scaling each layer's learning rate by its LARS ratio (the class docstring); ``state`` is
        the momentum, or None."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """As :meth:`update`, through the float32 master copy of ``state`` when the (first) weight
        is float16 and ``multi_precision`` is set."""
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        self._update_impl(index, weight, grad, state,
                          multi_precision=self.multi_precision and first.dtype == np.float16)

