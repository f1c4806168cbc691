"""Learning-rate schedules, as MXNet 1.9's ``mx.lr_scheduler``.

A scheduler is called with ``num_update``, the largest number of updates
applied to any weight so far, and returns the learning rate. Every schedule
can start with a warmup (``linear`` from ``warmup_begin_lr`` up to
``base_lr``, or ``constant`` at ``warmup_begin_lr``) for ``warmup_steps``.

>>> import mxkv as mx
>>> sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
>>> [sched(n) for n in (1, 2, 3, 5)]
[1.0, 1.0, 0.5, 0.25]

Like MXNet's, the Factor and MultiFactor schedulers are stateful: they walk
forward through their steps and do not go back for a smaller ``num_update``.
"""
from __future__ import annotations

import logging
import numbers
from math import cos, isfinite, pi

from .base import MXNetTypeError, MXNetValueError

__all__ = [
    "CosineScheduler",
    "FactorScheduler",
    "LRScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
]

_log = logging.getLogger(__name__)


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise MXNetTypeError(f"{name} must be an integer, got {value!r}")


def _check_real(*pairs: tuple) -> None:
    """Refuse, when the scheduler is built, a value that would break every update."""
    for name, value in pairs:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise MXNetTypeError(f"{name} must be a number, got {value!r}")
        if not isfinite(value):
            raise MXNetValueError(f"{name} must be finite, got {value!r}")


class LRScheduler:
    """Base class of learning-rate schedulers.

    Parameters
    ----------
    base_lr : float, optional, default 0.01
        The learning rate after warmup (and before any decay).
    warmup_steps : int, optional, default 0
        Number of warmup updates before the schedule proper starts.
    warmup_begin_lr : float, optional, default 0
        The learning rate warmup starts from; at most ``base_lr``.
    warmup_mode : {'linear', 'constant'}, optional, default 'linear'
        ``linear`` rises in equal increments; ``constant`` stays at
        ``warmup_begin_lr``.
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear") -> None:
        _check_real(("base_lr", base_lr), ("warmup_begin_lr", warmup_begin_lr))
        self.base_lr = base_lr
        _check_int("warmup_steps", warmup_steps)
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate at ``num_update`` (< ``warmup_steps``) during warmup."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update {num_update} is past the {self.warmup_steps} "
                             f"warmup steps")
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) \
                * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        """Return the learning rate after ``num_update`` updates.

        Parameters
        ----------
        num_update : int
            The largest number of updates applied to any one weight.
        """
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates.

    ``lr = base_lr * factor ** floor((num_update - 1) / step)``, never below
    ``stop_factor_lr``.

    Parameters
    ----------
    step : int
        Updates between two decays (at least 1).
    factor : float, optional, default 1
        The decay factor, at most 1.
    stop_factor_lr : float, optional, default 1e-8
        The learning rate stops decreasing at this value.
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_int("step", step)
        _check_real(("factor", factor), ("stop_factor_lr", stop_factor_lr))
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # a loop, not an if: resuming training may jump several steps at once
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _log.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                          "change in the future", num_update, self.base_lr)
            else:
                _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` each time ``num_update`` passes a step.

    For ``step[k] < num_update <= step[k+1]``: ``lr = base_lr * factor ** (k + 1)``.

    Parameters
    ----------
    step : list of int
        Strictly increasing update counts, each at least 1.
    factor : float, optional, default 1
        The decay factor, at most 1.
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(self, step: list[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise ValueError(f"step must be a non-empty list of ints, got {step!r}")
        for _step in step:
            _check_int("step", _step)
        _check_real(("factor", factor))
        for i, _step in enumerate(step):
            if i != 0 and _step <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if _step < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                _log.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay to ``final_lr`` at ``max_update``.

    After warmup, for ``num_update <= max_update``::

        lr = final_lr + (base_lr - final_lr) * (1 - (num_update - warmup_steps) / max_steps) ** pwr

    with ``max_steps = max_update - warmup_steps``; after that the last value.

    Parameters
    ----------
    max_update : int
        Updates until ``final_lr`` is reached (at least 1).
    base_lr : float, optional, default 0.01
    pwr : int, optional, default 2
        Power of the decay.
    final_lr : float, optional, default 0
    warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_int("max_update", max_update)
        _check_real(("pwr", pwr), ("final_lr", final_lr))
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                pow(1 - float(num_update - self.warmup_steps) / float(self.max_steps),
                    self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay to ``final_lr`` at ``max_update``.

    After warmup, for ``num_update <= max_update``::

        lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * nup / max_steps)) / 2

    where ``nup = num_update - warmup_steps``.

    Parameters
    ----------
    max_update : int
        Updates until ``final_lr`` is reached (at least 1).
    base_lr : float, optional, default 0.01
    final_lr : float, optional, default 0
    warmup_steps, warmup_begin_lr, warmup_mode
        As :class:`LRScheduler`.
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_int("max_update", max_update)
        _check_real(("final_lr", final_lr))
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                (1 + cos(pi * (num_update - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr
