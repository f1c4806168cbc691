"""Checking an optimizer's hyper-parameters: the one place that says what
values an optimizer accepts.

An optimizer is checked when it is built (every class's ``__init__``, through
``Optimizer.__init_subclass__``), when a setter changes a parameter, and when
it is loaded from a states file. So a bad value (``learning_rate="abc"``,
``momentum=float('nan')``) is refused by the call that receives it, naming
the parameter, instead of breaking every later push (MXNet accepts it and
fails inside the update).

Each rule is keyed by the attribute the optimizer stores the parameter in;
the message uses the parameter's name (``lr`` is ``learning_rate``).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Dict, Tuple

import numpy as np

from ..base import MXNetTypeError, MXNetValueError
from ..lr_scheduler import LRScheduler

__all__ = ["check_optimizer", "check_number", "check_mults"]


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def check_number(owner: str, name: str, value: Any, *, allow_none: bool = False) -> None:
    """Raise unless ``value`` is a finite real number (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "a finite number or None" if allow_none else "a finite number"
        raise MXNetTypeError(f"{owner}: {name} must be {what}, got {_describe(value)}")
    if not math.isfinite(float(value)):
        raise MXNetValueError(f"{owner}: {name} must be finite, got {value!r}")


def _count(owner: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise MXNetTypeError(f"{owner}: {name} must be an int, got {_describe(value)}")
    if value < 0:
        raise MXNetValueError(f"{owner}: {name} must be at least 0, got {value}")


def _positive_int(owner: str, name: str, value: Any) -> None:
    _count(owner, name, value)
    if value < 1:
        raise MXNetValueError(f"{owner}: {name} must be at least 1, got {value}")


def _flag(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, (bool, numbers.Integral, np.bool_)) or value not in (0, 1):
        raise MXNetTypeError(f"{owner}: {name} must be True or False, got {_describe(value)}")


def _real(name: str) -> Callable[[str, Any], None]:
    return lambda owner, value: check_number(owner, name, value)


def _real_or_none(name: str) -> Callable[[str, Any], None]:
    return lambda owner, value: check_number(owner, name, value, allow_none=True)


def check_mults(owner: str, name: str, mults: Any) -> None:
    """``lr_mult``/``wd_mult``: a dict of index or name -> finite number."""
    if not isinstance(mults, dict):
        raise MXNetTypeError(f"{owner}: {name} must be a dict of index or name -> number, "
                             f"got {_describe(mults)}")
    for k, v in mults.items():
        check_number(owner, f"{name}[{k!r}]", v)


def _steps(owner: str, name: str, value: Any) -> None:
    """A step count, or (MultiFactorScheduler) a list of them."""
    for v in (value if isinstance(value, list) else [value]):
        _count(owner, name, v)


# A scheduler's fields (mxkv's and MXNet's schedulers share them).
SCHEDULER_RULES: Dict[str, Callable[[str, str, Any], None]] = {
    "base_lr": check_number, "base_lr_orig": check_number, "final_lr": check_number,
    "factor": check_number, "stop_factor_lr": check_number, "power": check_number,
    "warmup_begin_lr": check_number, "warmup_final_lr": check_number,
    "warmup_steps": _count, "count": _count, "cur_step_ind": _count, "max_update": _count,
    "max_steps": _count, "step": _steps,
}


def _scheduler(owner: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, LRScheduler) and not callable(value):
        raise MXNetTypeError(f"{owner}: lr_scheduler must be an LRScheduler, got "
                             f"{_describe(value)}")
    if isinstance(value, LRScheduler):
        for name, field in vars(value).items():
            rule = SCHEDULER_RULES.get(name)
            if rule is not None:
                rule(owner, f"lr_scheduler.{name}", field)
        if getattr(value, "warmup_mode", "linear") not in ("linear", "constant"):
            raise MXNetValueError(f"{owner}: lr_scheduler.warmup_mode must be 'linear' or "
                                  f"'constant', got {_describe(value.warmup_mode)}")
    elif hasattr(value, "base_lr"):
        check_number(owner, "lr_scheduler.base_lr", value.base_lr)


def _counts(owner: str, value: Any) -> None:
    ok = isinstance(value, dict) and all(
        isinstance(dev, int) and isinstance(c, dict)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in c.values())
        for dev, c in value.items())
    if not ok:
        raise MXNetTypeError(f"{owner}: the update counts must be a dict of device id -> "
                             f"{{index: count}}, got {_describe(value)}")


def _typed(kind: type, what: str) -> Callable[[str, Any], None]:
    def check(owner: str, value: Any) -> None:
        if not isinstance(value, kind):
            raise MXNetTypeError(f"{owner}: {what}, got {_describe(value)}")
    return check


# attribute -> check(owner, value). Parameters are named as the constructors
# name them.
RULES: Dict[str, Callable[[str, Any], None]] = {
    "rescale_grad": _real("rescale_grad"),
    "wd": _real("wd"),
    "clip_gradient": _real_or_none("clip_gradient"),
    "begin_num_update": lambda o, v: _count(o, "begin_num_update", v),
    "num_update": lambda o, v: _count(o, "num_update", v),
    "aggregate_num": lambda o, v: _count(o, "aggregate_num", v),
    "multi_precision": lambda o, v: _flag(o, "multi_precision", v),
    "lr_scheduler": _scheduler,
    "lr_mult": lambda o, v: check_mults(o, "lr_mult", v),
    "wd_mult": lambda o, v: check_mults(o, "wd_mult", v),
    "idx2name": _typed(dict, "param_idx2name must be a dict of index -> name"),
    "param_dict": _typed(dict, "param_dict must be a dict"),
    "sym_info": _typed(tuple, "sym_info must be a tuple"),
    "_all_index_update_counts": _counts,
    # the optimizers' own
    "momentum": _real("momentum"),
    "beta1": _real("beta1"),
    "beta2": _real("beta2"),
    "epsilon": _real("epsilon"),
    "gamma1": _real("gamma1"),
    "gamma2": _real("gamma2"),
    "rho": _real("rho"),
    "lamda1": _real("lamda1"),
    "lamda": _real("lamda"),
    "beta": _real("beta"),
    "float_stable_eps": _real("eps"),
    "schedule_decay": _real("schedule_decay"),
    "m_schedule": _real("m_schedule"),
    "wd_lh": _real("wd_lh"),
    "lower_bound": _real_or_none("lower_bound"),
    "upper_bound": _real_or_none("upper_bound"),
    "clip_weights": _real_or_none("clip_weights"),
    "lazy_update": lambda o, v: _flag(o, "lazy_update", v),
    "centered": lambda o, v: _flag(o, "centered", v),
    "bias_correction": lambda o, v: _flag(o, "bias_correction", v),
    "momentum_correction": lambda o, v: _flag(o, "momentum_correction", v),
    "eta": _real("eta"),
    "eps": _real("eps"),
    "last_lr": _real_or_none("last_lr"),
    "cur_lr": _real_or_none("cur_lr"),
    "warmup_strategy": _typed(str, "warmup_strategy must be a str ('linear', 'power2', "
                                   "'sqrt' or 'lars'; others mean no warmup)"),
    "warmup_epochs": lambda o, v: _count(o, "warmup_epochs", v),
    "batch_scale": lambda o, v: _positive_int(o, "batch_scale", v),
    "updates_per_epoch": lambda o, v: _count(o, "updates_per_epoch", v),
    "init_updates": lambda o, v: _count(o, "init_updates", v),
    "num_epochs": lambda o, v: _count(o, "num_epochs", v),
    "cumgrads": _typed(dict, "cumgrads must be a dict"),
}

# Attributes every optimizer has (a loaded one must too).
REQUIRED: Tuple[str, ...] = (
    "rescale_grad", "lr", "wd", "clip_gradient", "lr_scheduler", "begin_num_update",
    "num_update", "_all_index_update_counts", "multi_precision", "aggregate_num",
    "lr_mult", "wd_mult", "idx2name", "sym_info",
)


def check_optimizer(opt: Any) -> None:
    """Raise :class:`MXNetTypeError` / :class:`MXNetValueError`, naming the
    parameter and the value, unless every hyper-parameter of ``opt`` is valid."""
    owner = type(opt).__name__
    state = vars(opt)
    for name in REQUIRED:
        if name not in state:
            raise MXNetValueError(f"{owner}: the optimizer has no {name!r} (not an mxkv or "
                                  "MXNet optimizer)")
    lr = state["lr"]
    check_number(owner, "learning_rate", lr, allow_none=state["lr_scheduler"] is not None)
    for name, value in state.items():
        rule = RULES.get(name)
        if rule is not None:
            rule(owner, value)
