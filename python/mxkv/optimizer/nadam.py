"""Nadam, Adam with Nesterov momentum (MXNet's Python update)."""
from __future__ import annotations

from typing import Any

from ._arrays import array_module, grad_prologue, on_weight_device, run_kernel, zeros_state
from .optimizer import Optimizer, register

__all__ = ["Nadam"]


@register
class Nadam(Optimizer):
    """Nadam (Dozat, http://cs229.stanford.edu/proj2015/054_report.pdf).

    At step ``t``, with the momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))``::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m_schedule = m_schedule * mu_t
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_bar = (1 - mu_t) * g / (1 - m_schedule) + mu_{t+1} * m / (1 - m_schedule * mu_{t+1})
        weight -= lr * m_bar / (sqrt(v / (1 - beta2**t)) + epsilon)

    As MXNet 1.9, ``m_schedule`` is one number shared by all the weights of
    the optimizer (it advances once per update of any weight).

    Parameters
    ----------
    learning_rate : float, optional, default 0.001
    beta1 : float, optional, default 0.9
    beta2 : float, optional, default 0.999
    epsilon : float, optional, default 1e-8
    schedule_decay : float, optional, default 0.004
    **kwargs
        Passed to :class:`Optimizer`.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        """The state of the weight at ``index``: ``(m, v)``, zeros of its shape and dtype, on the
        weight's context."""
        return (zeros_state(weight), zeros_state(weight))

    @on_weight_device
    def update(self, index, weight, grad, state):
        """One Nadam step on the weight at ``index``: ``weight`` and ``state`` (from
        :meth:`create_state`) change in place, from ``grad`` (the class docstring's formula). It
        advances the momentum schedule shared by every weight. A row_sparse ``grad`` counts as
        dense (absent rows are zero)."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        beta1, beta2, eps, clip = self.beta1, self.beta2, self.epsilon, self._python_clip()
        momentum_t = beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        momentum_t_1 = beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        with self._sync():  # one schedule for every index
            self.m_schedule = m_schedule = self.m_schedule * momentum_t
        m_schedule_next = m_schedule * momentum_t_1
        rescale = self.rescale_grad

        def kernel(w, g, m, v):
            xp = array_module(w)
            grad_prologue(g, w, rescale, clip, wd)
            m *= beta1
            m += (1. - beta1) * g
            v *= beta2
            v += (1. - beta2) * g * g
            m_bar = (1. - momentum_t) * (g / (1. - m_schedule))
            m_bar += momentum_t_1 * (m / (1. - m_schedule_next))
            v_prime = v / (1. - pow(beta2, t))
            w -= lr * m_bar / (xp.sqrt(v_prime) + eps)

        run_kernel(kernel, weight, grad, list(state), lazy=False)
