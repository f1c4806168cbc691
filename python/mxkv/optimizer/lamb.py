"""LAMB, layer-wise adaptive moments (MXNet's ``lamb_update_phase1/2`` and
``multi_lamb_update``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import env
from ._arrays import (
    array_module,
    clip_inplace,
    dense_grad_copy,
    dense_view,
    on_weight_device,
    scalars,
    zeros_state,
)
from ._mxmath import powf, sum_sq
from .optimizer import MultiTensorUpdates, Optimizer, register

__all__ = ["LAMB"]


@register
class LAMB(MultiTensorUpdates, Optimizer):
    """LAMB (You et al., https://arxiv.org/abs/1904.00962).

    At step ``t`` of an index, with every coefficient in the weight's dtype
    (float32 for a float16 weight under ``multi_precision``)::

        g = clip(rescale_grad * grad, clip_gradient)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m', v' = m / (1 - beta1**t), v / (1 - beta2**t)   (bias_correction)
        u = m' / (sqrt(v') + epsilon) + wd * weight
        r1 = clip(norm(weight), lower_bound, upper_bound);  r2 = norm(u)
        weight -= lr * (r1 / r2 if r1 and r2 else 1) * u

    Parameters
    ----------
    learning_rate : float, optional, default 0.001
    beta1 : float, optional, default 0.9
    beta2 : float, optional, default 0.999
    epsilon : float, optional, default 1e-6
    lower_bound, upper_bound : float, optional
        Bounds for ``norm(weight)`` in the trust ratio (unset: unbounded).
    bias_correction : bool, optional, default True
    **kwargs
        Passed to :class:`Optimizer`.

    Notes
    -----
    The state is ``(mean, var)``; ``(weight32, (mean, var))`` for a float16
    weight with ``multi_precision``. Lists of indices are updated together,
    up to ``MXNET_OPTIMIZER_AGGREGATION_SIZE`` (default 45) at a time, as
    MXNet's ``multi_lamb_update``; the result is the same as one by one.
    The arithmetic is ``multi_lamb_update``'s on the CPU, bit for bit in
    float32 and float16 (what MXNet's Updater, and so a KVStore, runs): each
    ``u`` is computed in double and rounded once, ``beta**t`` by C's
    ``powf``, the norms as sequential float32 sums of squares (of the float16
    weight under ``multi_precision``), the trust ratio as a float32 division.
    A single index given to ``update`` directly takes the same path (MXNet
    takes ``lamb_update_phase1/2`` there, whose master copy goes stale);
    float64 weights agree to about 1e-8.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None,
                 upper_bound: float | None = None, bias_correction: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, env("MXNET_OPTIMIZER_AGGREGATION_SIZE", 45,
                                                minimum=1)))

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(mean, var)``, zeros of its shape and dtype
        (:meth:`create_state_multi_precision` adds the float32 master copy), on the weight's
        context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        for index, weight, grad, state in zip(indices, weights, grads, states):
            self._update_count(index)
            t = self._index_update_count[index]
            lr, wd = self._get_lr(index), self._get_wd(index)
            if multi_precision:
                master, (mean, var) = state
                self._step(dense_view(master), grad, mean, var, lr, wd, t,
                           norm_of=dense_view(weight, write=False))
                dense_view(weight)[...] = dense_view(master, write=False)
            else:
                mean, var = state
                self._step(dense_view(weight), grad, mean, var, lr, wd, t)

    def _step(self, w: Any, grad: Any, mean: Any, var: Any, lr: float, wd: float,
              t: int, norm_of: Any = None) -> None:
        """One index's step in ``multi_lamb_update``'s operation order and types."""
        xp = array_module(w)
        m, v = dense_view(mean), dense_view(var)
        b1, b2, eps, wd_, lr_, rs_ = scalars(w, self.beta1, self.beta2, self.epsilon, wd, lr,
                                             self.rescale_grad)
        typ = w.dtype.type
        one = typ(1)
        r1 = sum_sq(w if norm_of is None else norm_of)  # (the float16 weight under mp)
        g = dense_grad_copy(grad, w.dtype).reshape(w.shape)
        g *= rs_
        clip = self.clip_gradient
        clip_inplace(g, float(np.float32(clip)) if clip else None)  # (passed when truthy)
        m *= b1
        m += (one - b1) * g
        v *= b2
        v += (one - b2) * g * g
        if self.bias_correction:
            b1_t, b2_t = typ(powf(b1, t)), typ(powf(b2, t))  # the kernel's power::Map
            m_hat, v_hat = m / (one - b1_t), v / (one - b2_t)
        else:
            m_hat, v_hat = m, v
        # The kernel's unqualified sqrt is C's double sqrt: this line runs in
        # double and is rounded once into the weight's type.
        f64 = np.float64
        u = m_hat.astype(f64) / (xp.sqrt(v_hat.astype(f64)) + f64(eps))
        u += (wd_ * w).astype(f64)
        u = u.astype(w.dtype)
        r2 = sum_sq(u)
        r1, r2 = np.sqrt(r1), np.sqrt(r2)
        if self.lower_bound:
            r1 = max(r1, np.float32(self.lower_bound))
        if self.upper_bound:
            r1 = min(r1, np.float32(self.upper_bound))
        ratio = typ(1) if r1 == 0 or r2 == 0 else typ(np.float32(r1 / r2))
        w -= (lr_ * ratio) * u
