"""MXNet's optimizer update operators (``sgd_update``, ``adam_update``, the
``multi_*`` and ``preloaded_multi_*`` forms, ``multi_sum_sq``, ``multi_lars``)
as entries of the operator table, so that every frontend generated from the
table has them (the bridge's dispatch, Clojure's ``ndarray`` and
``ndarray-api`` functions).

Their implementation is the optimizers' own (:mod:`mxkv.optimizer.update_ops`,
the kernels the optimizers run, bit for bit MXNet's on the CPU; ``mx.nd``
reaches them there): each entry's ``frontend`` calls it, imported on first
use (the optimizer package imports ``mxkv.ndarray``). They are in the table's
``update`` namespace, which ``mx.nd``, ``mx.nd.op`` and the NDArray methods
do not show (``mx.nd.sgd_update`` stays the optimizers' function itself).
The parameters are MXNet 1.9.1's, in its order, with its types and defaults.
"""
from __future__ import annotations

import functools
import importlib
from typing import Any, Callable

from .registry import REQUIRED, OpDef, Param, register

__all__: list = []

#: (name, inputs, ((param, MXNet type, default), ...)) in MXNet 1.9.1's order
_SPECS = (
    ('adam_update', ('weight', 'grad', 'mean', 'var'),
     (('lr', 'float', REQUIRED), ('beta1', 'float', 0.9), ('beta2', 'float', 0.999),
      ('epsilon', 'float', 1e-08), ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('lazy_update', 'boolean', True),)),
    ('ftml_update', ('weight', 'grad', 'd', 'v', 'z'),
     (('lr', 'float', REQUIRED), ('beta1', 'float', 0.6), ('beta2', 'float', 0.999),
      ('epsilon', 'double', 1e-08), ('t', 'int', REQUIRED), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_grad', 'float', -1.0),)),
    ('ftrl_update', ('weight', 'grad', 'z', 'n'),
     (('lr', 'float', REQUIRED), ('lamda1', 'float', 0.01), ('beta', 'float', 1.0),
      ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),)),
    ('lamb_update_phase1', ('weight', 'grad', 'mean', 'var'),
     (('beta1', 'float', 0.9), ('beta2', 'float', 0.999), ('epsilon', 'float', 1e-06),
      ('t', 'int', REQUIRED), ('bias_correction', 'boolean', True), ('wd', 'float', REQUIRED),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),)),
    ('lamb_update_phase2', ('weight', 'g', 'r1', 'r2'),
     (('lr', 'float', REQUIRED), ('lower_bound', 'float', -1.0), ('upper_bound', 'float', -1.0),)),
    ('mp_lamb_update_phase1', ('weight', 'grad', 'mean', 'var', 'weight32'),
     (('beta1', 'float', 0.9), ('beta2', 'float', 0.999), ('epsilon', 'float', 1e-06),
      ('t', 'int', REQUIRED), ('bias_correction', 'boolean', True), ('wd', 'float', REQUIRED),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),)),
    ('mp_lamb_update_phase2', ('weight', 'g', 'r1', 'r2', 'weight32'),
     (('lr', 'float', REQUIRED), ('lower_bound', 'float', -1.0), ('upper_bound', 'float', -1.0),)),
    ('mp_nag_mom_update', ('weight', 'grad', 'mom', 'weight32'),
     (('lr', 'float', REQUIRED), ('momentum', 'float', 0.0), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),)),
    ('mp_sgd_mom_update', ('weight', 'grad', 'mom', 'weight32'),
     (('lr', 'float', REQUIRED), ('momentum', 'float', 0.0), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('lazy_update', 'boolean', True),)),
    ('mp_sgd_update', ('weight', 'grad', 'weight32'),
     (('lr', 'float', REQUIRED), ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('lazy_update', 'boolean', True),)),
    ('multi_lars', ('lrs', 'weights_sum_sq', 'grads_sum_sq', 'wds'),
     (('eta', 'float', REQUIRED), ('eps', 'float', REQUIRED), ('rescale_grad', 'float', 1.0),)),
    ('multi_mp_sgd_mom_update', ('*data',),
     (('lrs', 'tuple of <float>', REQUIRED), ('wds', 'tuple of <float>', REQUIRED),
      ('momentum', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('num_weights', 'int', 1),)),
    ('multi_mp_sgd_update', ('*data',),
     (('lrs', 'tuple of <float>', REQUIRED), ('wds', 'tuple of <float>', REQUIRED),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('num_weights', 'int', 1),)),
    ('multi_sgd_mom_update', ('*data',),
     (('lrs', 'tuple of <float>', REQUIRED), ('wds', 'tuple of <float>', REQUIRED),
      ('momentum', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('num_weights', 'int', 1),)),
    ('multi_sgd_update', ('*data',),
     (('lrs', 'tuple of <float>', REQUIRED), ('wds', 'tuple of <float>', REQUIRED),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('num_weights', 'int', 1),)),
    ('multi_sum_sq', ('*data',),
     (('num_arrays', 'int', REQUIRED),)),
    ('nag_mom_update', ('weight', 'grad', 'mom'),
     (('lr', 'float', REQUIRED), ('momentum', 'float', 0.0), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),)),
    ('preloaded_multi_mp_sgd_mom_update', ('*data',),
     (('momentum', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('num_weights', 'int', 1),)),
    ('preloaded_multi_mp_sgd_update', ('*data',),
     (('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('num_weights', 'int', 1),)),
    ('preloaded_multi_sgd_mom_update', ('*data',),
     (('momentum', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('num_weights', 'int', 1),)),
    ('preloaded_multi_sgd_update', ('*data',),
     (('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('num_weights', 'int', 1),)),
    ('rmsprop_update', ('weight', 'grad', 'n'),
     (('lr', 'float', REQUIRED), ('gamma1', 'float', 0.95), ('epsilon', 'float', 1e-08),
      ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('clip_weights', 'float', -1.0),)),
    ('rmspropalex_update', ('weight', 'grad', 'n', 'g', 'delta'),
     (('lr', 'float', REQUIRED), ('gamma1', 'float', 0.95), ('gamma2', 'float', 0.9),
      ('epsilon', 'float', 1e-08), ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('clip_weights', 'float', -1.0),)),
    ('sgd_mom_update', ('weight', 'grad', 'mom'),
     (('lr', 'float', REQUIRED), ('momentum', 'float', 0.0), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0),
      ('lazy_update', 'boolean', True),)),
    ('sgd_update', ('weight', 'grad'),
     (('lr', 'float', REQUIRED), ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0), ('lazy_update', 'boolean', True),)),
    ('signsgd_update', ('weight', 'grad'),
     (('lr', 'float', REQUIRED), ('wd', 'float', 0.0), ('rescale_grad', 'float', 1.0),
      ('clip_gradient', 'float', -1.0),)),
    ('signum_update', ('weight', 'grad', 'mom'),
     (('lr', 'float', REQUIRED), ('momentum', 'float', 0.0), ('wd', 'float', 0.0),
      ('rescale_grad', 'float', 1.0), ('clip_gradient', 'float', -1.0), ('wd_lh', 'float', 0.0),)),
)


def _frontend(name: str) -> Callable[..., Any]:
    """``mxkv.optimizer.update_ops.<name>``, imported when first called."""
    @functools.lru_cache(maxsize=1)
    def target() -> Callable[..., Any]:
        return getattr(importlib.import_module("mxkv.optimizer.update_ops"), name)

    def call(*args: Any, **kwargs: Any) -> Any:
        return target()(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


for _name, _inputs, _params in _SPECS:
    register(OpDef(
        name=_name, inputs=_inputs, params=tuple(Param(*p) for p in _params), impl=None,
        frontend=_frontend(_name), namespace="update", family="update",
        doc=f"MXNet's optimizer update operator {_name}: the states are updated in place "
            "and the new weight written into out (out=weight updates it in place; without "
            "out a new array is returned)."))
