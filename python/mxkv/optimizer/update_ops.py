"""MXNet's optimizer update operators (``mx.nd.sgd_update``, ``adam_update``...).

Each takes the weight, the gradient and the states as NDArrays plus the
hyper-parameters as keywords, as MXNet 1.9's generated operators do; the
states are updated in place and the new weight is written into ``out``
(``out=weight`` updates it in place; without ``out`` a new array is
returned and the weight is left as it was). They run the same kernels as
the optimizers (``sgd_kernel``, ``adam_kernel``...), so they give MXNet's
numbers bit for bit on the CPU. Row-sparse gradients update only their rows
where MXNet's operator does (``lazy_update``: sgd, sgd_mom, adam; ftrl on a
row-sparse weight).
Reached as ``mx.nd.<name>``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..base import MXNetError, MXNetTypeError, _Null
from ..ndarray import NDArray
from ._arrays import array_module, dense_view, is_row_sparse, run_kernel
from ._mxmath import sum_sq
from .adam import adam_kernel
from .ftml import ftml_kernel
from .ftrl import ftrl_kernel
from .nag import nag_kernel
from .rmsprop import rmsprop_kernel, rmspropalex_kernel
from .sgd import sgd_kernel
from .signum import signsgd_kernel, signum_kernel

__all__ = [
    "adam_update", "ftml_update", "ftrl_update", "lamb_update_phase1", "lamb_update_phase2",
    "mp_lamb_update_phase1", "mp_lamb_update_phase2", "mp_nag_mom_update",
    "mp_sgd_mom_update", "mp_sgd_update", "multi_lars", "multi_sum_sq", "nag_mom_update",
    "rmsprop_update", "rmspropalex_update", "sgd_mom_update", "sgd_update",
    "signsgd_update", "signum_update",
]


def _required(op: str, **values: Any) -> None:
    for name, v in values.items():
        if v is None or v is _Null:
            raise MXNetError(f"{op}: Required parameter {name} of float is not presented")


def _nd(op: str, **arrays: Any) -> None:
    for name, a in arrays.items():
        if not isinstance(a, NDArray):
            raise MXNetTypeError(f"{op}: {name} must be an NDArray, got {type(a).__name__}")


def _clip(value: float) -> float | None:
    """A kernel's clip parameter: applied when >= 0 (default -1: none)."""
    return float(np.float32(value)) if value is not None and value >= 0 else None


def _target(op: str, weight: Any, out: Any) -> Any:
    """The array the new weight is computed in: ``weight`` itself for
    ``out=weight``, else ``out`` (or a new array) holding a copy of it."""
    if out is weight:
        return weight
    if out is None:
        return weight.copy()
    if isinstance(out, (list, tuple)) and len(out) == 1:
        out = out[0]
    if tuple(out.shape) != tuple(weight.shape):
        raise MXNetError(f"{op}: out has shape {tuple(out.shape)} but the weight "
                         f"{tuple(weight.shape)}")
    out[:] = weight
    return out


def _run(op: str, kernel: Callable, weight: Any, grad: Any, states: Sequence[Any], out: Any,
         lazy: bool = False) -> Any:
    _nd(op, weight=weight, grad=grad)
    if tuple(grad.shape) != tuple(weight.shape):
        raise MXNetError(f"{op}: grad of shape {tuple(grad.shape)} does not match the "
                         f"weight's shape {tuple(weight.shape)}")
    target = _target(op, weight, out)
    run_kernel(kernel, target, grad, list(states), lazy=lazy and is_row_sparse(grad))
    return target


def _run_mp(op: str, kernel: Callable, weight: Any, grad: Any, states: Sequence[Any],
            weight32: Any, out: Any) -> Any:
    """A ``mp_*`` operator: the kernel updates the float32 ``weight32`` (and
    states); the new weight is it, cast into the weight's dtype."""
    _nd(op, weight=weight, grad=grad, weight32=weight32)
    run_kernel(kernel, weight32, grad, list(states), lazy=False)
    target = weight if out is weight else _target(op, weight, out)
    dense_view(target)[...] = dense_view(weight32, write=False).astype(target.dtype)
    return target


def sgd_update(weight=None, grad=None, lr=None, wd=0, rescale_grad=1, clip_gradient=-1,
               lazy_update=True, out=None, **kwargs):
    """``weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad, clip_gradient)``."""
    _required("sgd_update", lr=lr)
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), 0.0, decay_form=True)
    return _run("sgd_update", k, weight, grad, [None], out, lazy_update)


def sgd_mom_update(weight=None, grad=None, mom=None, lr=None, momentum=0, wd=0,
                   rescale_grad=1, clip_gradient=-1, lazy_update=True, out=None, **kwargs):
    """``mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); weight += mom``."""
    _required("sgd_mom_update", lr=lr)
    _nd("sgd_mom_update", mom=mom)
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), momentum)
    return _run("sgd_mom_update", k, weight, grad, [mom], out, lazy_update)


def mp_sgd_update(weight=None, grad=None, weight32=None, lr=None, wd=0, rescale_grad=1,
                  clip_gradient=-1, lazy_update=True, out=None, **kwargs):
    """:func:`sgd_update` on the float32 master copy ``weight32``."""
    _required("mp_sgd_update", lr=lr)
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), 0.0, decay_form=True)
    return _run_mp("mp_sgd_update", k, weight, grad, [None], weight32, out)


def mp_sgd_mom_update(weight=None, grad=None, mom=None, weight32=None, lr=None, momentum=0,
                      wd=0, rescale_grad=1, clip_gradient=-1, lazy_update=True, out=None,
                      **kwargs):
    """:func:`sgd_mom_update` on the float32 master copy (``mom`` is float32)."""
    _required("mp_sgd_mom_update", lr=lr)
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), momentum)
    return _run_mp("mp_sgd_mom_update", k, weight, grad, [mom], weight32, out)


def nag_mom_update(weight=None, grad=None, mom=None, lr=None, momentum=0, wd=0,
                   rescale_grad=1, clip_gradient=-1, out=None, **kwargs):
    """Nesterov momentum (the NAG optimizer's step)."""
    _required("nag_mom_update", lr=lr)
    # into another array, MXNet's momentum update reads the untouched weight
    old = None if out is weight else dense_view(weight, write=False)
    k = nag_kernel(lr, wd, rescale_grad, _clip(clip_gradient), momentum, old)
    return _run("nag_mom_update", k, weight, grad, [mom], out)


def mp_nag_mom_update(weight=None, grad=None, mom=None, weight32=None, lr=None, momentum=0,
                      wd=0, rescale_grad=1, clip_gradient=-1, out=None, **kwargs):
    """:func:`nag_mom_update` on the float32 master copy."""
    _required("mp_nag_mom_update", lr=lr)
    k = nag_kernel(lr, wd, rescale_grad, _clip(clip_gradient), momentum)
    return _run_mp("mp_nag_mom_update", k, weight, grad, [mom], weight32, out)


def adam_update(weight=None, grad=None, mean=None, var=None, lr=None, beta1=0.9, beta2=0.999,
                epsilon=1e-8, wd=0, rescale_grad=1, clip_gradient=-1, lazy_update=True,
                out=None, **kwargs):
    """Adam's step with ``lr`` as given (no bias correction: the optimizer folds
    it into ``lr``)."""
    _required("adam_update", lr=lr)
    k = adam_kernel(lr, wd, rescale_grad, _clip(clip_gradient), beta1, beta2, epsilon)
    return _run("adam_update", k, weight, grad, [mean, var], out, lazy_update)


def signsgd_update(weight=None, grad=None, lr=None, wd=0, rescale_grad=1, clip_gradient=-1,
                   out=None, **kwargs):
    """``weight = (1 - lr*wd)*weight - lr*sign(grad)``."""
    _required("signsgd_update", lr=lr)
    return _run("signsgd_update", signsgd_kernel(lr, wd), weight, grad, [None], out)


def signum_update(weight=None, grad=None, mom=None, lr=None, momentum=0, wd=0, rescale_grad=1,
                  clip_gradient=-1, wd_lh=0, out=None, **kwargs):
    """Signum: SGD on the sign of the momentum."""
    _required("signum_update", lr=lr)
    k = signum_kernel(lr, wd, rescale_grad, _clip(clip_gradient), momentum, wd_lh)
    return _run("signum_update", k, weight, grad, [mom], out)


def rmsprop_update(weight=None, grad=None, n=None, lr=None, gamma1=0.95, epsilon=1e-8, wd=0,
                   rescale_grad=1, clip_gradient=-1, clip_weights=-1, out=None, **kwargs):
    """RMSProp (Tieleman & Hinton)."""
    _required("rmsprop_update", lr=lr)
    k = rmsprop_kernel(lr, wd, rescale_grad, _clip(clip_gradient), gamma1, epsilon,
                       _clip(clip_weights))
    return _run("rmsprop_update", k, weight, grad, [n], out)


def rmspropalex_update(weight=None, grad=None, n=None, g=None, delta=None, lr=None,
                       gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0, rescale_grad=1,
                       clip_gradient=-1, clip_weights=-1, out=None, **kwargs):
    """Centered RMSProp (Graves 2013)."""
    _required("rmspropalex_update", lr=lr)
    k = rmspropalex_kernel(lr, wd, rescale_grad, _clip(clip_gradient), gamma1, gamma2,
                           epsilon, _clip(clip_weights))
    return _run("rmspropalex_update", k, weight, grad, [n, g, delta], out)


def ftrl_update(weight=None, grad=None, z=None, n=None, lr=None, lamda1=0.01, beta=1, wd=0,
                rescale_grad=1, clip_gradient=-1, out=None, **kwargs):
    """FTRL-proximal. A row-sparse gradient updates only its rows when the weight
    is row sparse too (MXNet's sparse kernel); with a dense weight MXNet falls
    back to the dense operator, which updates every row."""
    _required("ftrl_update", lr=lr)
    k = ftrl_kernel(lr, wd, rescale_grad, _clip(clip_gradient), lamda1, beta)
    return _run("ftrl_update", k, weight, grad, [z, n], out, lazy=is_row_sparse(weight))


def ftml_update(weight=None, grad=None, d=None, v=None, z=None, lr=None, beta1=0.6,
                beta2=0.999, epsilon=1e-8, t=None, wd=0, rescale_grad=1, clip_grad=-1,
                out=None, **kwargs):
    """FTML (Zheng & Kwok, 2017) at step ``t``."""
    _required("ftml_update", lr=lr, t=t)
    k = ftml_kernel(lr, wd, rescale_grad, _clip(clip_grad), beta1, beta2, epsilon, t)
    return _run("ftml_update", k, weight, grad, [d, v, z], out)


def _lamb_g(w, grad, mean, var, beta1, beta2, epsilon, t, bias_correction, wd, rescale_grad,
            clip_gradient):
    """``lamb_update_phase1``'s kernel: updates ``mean``/``var``, returns ``g``
    (in the type of ``w``: the weight's, or float32 for the master copy)."""
    typ = w.dtype.type
    xp = array_module(w)
    m, v = dense_view(mean), dense_view(var)
    b1, b2, eps, wd_, rs_ = (typ(np.float32(x)) for x in (beta1, beta2, epsilon, wd,
                                                          rescale_grad))
    g = dense_view(grad, write=False).astype(w.dtype).reshape(w.shape) * rs_
    clip = _clip(clip_gradient)
    if clip is not None:
        xp.clip(g, -clip, clip, out=g)
    one = typ(1)
    m *= b1
    m += (one - b1) * g
    v *= b2
    v += (one - b2) * g * g
    if bias_correction:
        # beta**t by C's pow in double; mean_hat's division runs in double
        b1_t = typ(float(np.float32(beta1)) ** int(t))
        b2_t = typ(float(np.float32(beta2)) ** int(t))
        m = (m.astype(np.float64) / (1.0 - np.float64(b1_t))).astype(w.dtype)
        v = v / (one - b2_t)
    return m / (xp.sqrt(v) + eps) + wd_ * w


def lamb_update_phase1(weight=None, grad=None, mean=None, var=None, beta1=0.9, beta2=0.999,
                       epsilon=1e-6, t=None, bias_correction=True, wd=None, rescale_grad=1,
                       clip_gradient=-1, out=None, **kwargs):
    """LAMB's first phase: updates ``mean`` and ``var``; returns ``g``."""
    _required("lamb_update_phase1", t=t, wd=wd)
    _nd("lamb_update_phase1", weight=weight, grad=grad, mean=mean, var=var)
    w = dense_view(weight, write=False)
    g = _lamb_g(w, grad, mean, var, beta1, beta2, epsilon, t, bias_correction, wd,
                rescale_grad, clip_gradient)
    return _result(g, weight.context, out)


def mp_lamb_update_phase1(weight=None, grad=None, mean=None, var=None, weight32=None,
                          beta1=0.9, beta2=0.999, epsilon=1e-6, t=None, bias_correction=True,
                          wd=None, rescale_grad=1, clip_gradient=-1, out=None, **kwargs):
    """:func:`lamb_update_phase1` on the float32 master copy; ``g`` is float32."""
    _required("mp_lamb_update_phase1", t=t, wd=wd)
    _nd("mp_lamb_update_phase1", weight=weight, grad=grad, weight32=weight32)
    w = dense_view(weight32, write=False)
    g = _lamb_g(w, grad, mean, var, beta1, beta2, epsilon, t, bias_correction, wd,
                rescale_grad, clip_gradient)
    return _result(g, weight.context, out)


def _phase2_lr(lr, r1, r2, lower_bound, upper_bound) -> np.float32:
    f = np.float32
    new_r1 = f(r1.asnumpy().reshape(-1)[0])
    r2_ = f(r2.asnumpy().reshape(-1)[0])
    if lower_bound is not None and lower_bound >= 0:
        new_r1 = max(new_r1, f(lower_bound))
    if upper_bound is not None and upper_bound >= 0:
        new_r1 = min(new_r1, f(upper_bound))
    if new_r1 == 0 or r2_ == 0:
        return f(lr)
    return f(f(lr) * new_r1) / r2_


def lamb_update_phase2(weight=None, g=None, r1=None, r2=None, lr=None, lower_bound=-1,
                       upper_bound=-1, out=None, **kwargs):
    """LAMB's second phase: ``weight - lr * (r1/r2) * g`` (``r1``, ``r2``: the
    norms of the weight and of ``g``, shape (1,))."""
    _required("lamb_update_phase2", lr=lr)
    _nd("lamb_update_phase2", weight=weight, g=g, r1=r1, r2=r2)
    w = dense_view(weight, write=False)
    lr_ = w.dtype.type(_phase2_lr(lr, r1, r2, lower_bound, upper_bound))
    new = w - lr_ * dense_view(g, write=False).astype(w.dtype)
    return _result(new, weight.context, out)


def mp_lamb_update_phase2(weight=None, g=None, r1=None, r2=None, weight32=None, lr=None,
                          lower_bound=-1, upper_bound=-1, out=None, **kwargs):
    """:func:`lamb_update_phase2` from the float32 master copy (left as it was,
    as MXNet's kernel leaves it), cast into the weight's dtype."""
    _required("mp_lamb_update_phase2", lr=lr)
    _nd("mp_lamb_update_phase2", weight=weight, g=g, weight32=weight32)
    w32 = dense_view(weight32, write=False)
    lr_ = _phase2_lr(lr, r1, r2, lower_bound, upper_bound)
    new = (w32 - lr_ * dense_view(g, write=False)).astype(weight.dtype)
    return _result(new, weight.context, out)


def _result(arr: Any, ctx: Any, out: Any) -> Any:
    if out is None:
        return NDArray(arr, ctx)
    if isinstance(out, (list, tuple)) and len(out) == 1:
        out = out[0]
    out[:] = NDArray(arr, ctx)
    return out


def multi_sum_sq(*arrays, num_arrays=None, out=None, **kwargs):
    """The sum of squares of each array, as float32 (MXNet's sequential CPU sums)."""
    if num_arrays is None or int(num_arrays) != len(arrays):
        raise MXNetError(f"multi_sum_sq: num_arrays={num_arrays} but {len(arrays)} arrays")
    sums = np.array([sum_sq(np.asarray(a.asnumpy())) for a in arrays], dtype=np.float32)
    return _result(sums, arrays[0].context if arrays else None, out) if arrays else \
        NDArray(sums, None)


def multi_lars(lrs=None, weights_sum_sq=None, grads_sum_sq=None, wds=None, eta=None, eps=None,
               rescale_grad=1, out=None, **kwargs):
    """LARS learning rates: ``lr*eta*|w| / (|g|*rescale_grad + wd*|w| + eps)``
    where both norms are positive, else ``lr`` (float32)."""
    _required("multi_lars", eta=eta, eps=eps)
    f = np.float32
    lr_, wss, gss, wd_ = (np.asarray(a.asnumpy(), f) for a in (lrs, weights_sum_sq,
                                                               grads_sum_sq, wds))
    w_norm = np.sqrt(wss)
    valid = (w_norm > 0) & (gss > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lars = (lr_ * f(eta)) * w_norm / ((np.sqrt(gss) * f(rescale_grad) + wd_ * w_norm)
                                          + f(eps))
    return _result(np.where(valid, lars, lr_).astype(f), lrs.context, out)


def _multi(name: str, single: Callable, per: int, preloaded: bool) -> Callable:
    """MXNet's ``multi_*``/``preloaded_multi_*`` form of ``single``: ``data`` holds
    ``per`` arrays for each of ``num_weights`` weights (weight, grad, states...),
    then, when ``preloaded``, the arrays of the learning rates and weight decays."""
    def fn(*data, **kwargs):
        out = kwargs.pop("out", None)
        kwargs.pop("name", None)
        num = int(kwargs.pop("num_weights", 1))
        if preloaded:
            if len(data) != per * num + 2:
                raise MXNetError(f"{name}: {len(data)} arrays for num_weights={num} "
                                 f"({per} per weight, then lrs and wds)")
            lrs, wds = (np.asarray(dense_view(a, write=False)).reshape(-1).tolist()
                        for a in data[-2:])
            data = data[:-2]
        else:
            lrs, wds = kwargs.pop("lrs", None), kwargs.pop("wds", None)
            _required(name, lrs=lrs, wds=wds)
            lrs = [lrs] if np.isscalar(lrs) else list(lrs)
            wds = [wds] if np.isscalar(wds) else list(wds)
        if len(data) != per * num or len(lrs) != num or len(wds) != num:
            raise MXNetError(f"{name}: num_weights={num} needs {per * num} arrays, {num} lrs "
                             f"and {num} wds; got {len(data)}, {len(lrs)} and {len(wds)}")
        outs = list(out) if isinstance(out, (list, tuple)) else [out] * num if num == 1 \
            else [None] * num if out is None else None
        if outs is None or len(outs) != num:
            raise MXNetError(f"{name}: out must be a list of {num} arrays")
        res = [single(*data[i * per:(i + 1) * per], lr=lrs[i], wd=wds[i], out=outs[i],
                      **kwargs) for i in range(num)]
        return res if num > 1 or isinstance(out, (list, tuple)) else res[0]
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"MXNet's ``{name}``: ``{single.__name__}`` for each of ``num_weights`` "
                  "weights" + (", learning rates and weight decays as the last two arrays."
                               if preloaded else ", with ``lrs`` and ``wds`` per weight."))
    return fn


def _sgd_multi_form(weight=None, grad=None, lr=None, wd=0, rescale_grad=1, clip_gradient=-1,
                    out=None, **kwargs):
    """:func:`sgd_update` as MXNet's multi-weight kernel computes it (the momentum
    form with no momentum: ``w + (-(lr*wd)*w - G)``, not ``(1 - lr*wd)*w - G``)."""
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), 0.0)
    return _run("multi_sgd_update", k, weight, grad, [None], out)


def _mp_sgd_multi_form(weight=None, grad=None, weight32=None, lr=None, wd=0, rescale_grad=1,
                       clip_gradient=-1, out=None, **kwargs):
    """:func:`_sgd_multi_form` on the float32 master copy ``weight32``."""
    k = sgd_kernel(lr, wd, rescale_grad, _clip(clip_gradient), 0.0)
    return _run_mp("multi_mp_sgd_update", k, weight, grad, [None], weight32, out)


multi_sgd_update = _multi("multi_sgd_update", _sgd_multi_form, 2, False)
multi_sgd_mom_update = _multi("multi_sgd_mom_update", sgd_mom_update, 3, False)
multi_mp_sgd_update = _multi("multi_mp_sgd_update", _mp_sgd_multi_form, 3, False)
multi_mp_sgd_mom_update = _multi("multi_mp_sgd_mom_update", mp_sgd_mom_update, 4, False)
preloaded_multi_sgd_update = _multi("preloaded_multi_sgd_update", _sgd_multi_form, 2, True)
preloaded_multi_sgd_mom_update = _multi("preloaded_multi_sgd_mom_update", sgd_mom_update, 3,
                                        True)
preloaded_multi_mp_sgd_update = _multi("preloaded_multi_mp_sgd_update", _mp_sgd_multi_form, 3,
                                       True)
preloaded_multi_mp_sgd_mom_update = _multi("preloaded_multi_mp_sgd_mom_update",
                                           mp_sgd_mom_update, 4, True)
__all__ += [
    "multi_mp_sgd_mom_update", "multi_mp_sgd_update", "multi_sgd_mom_update", "multi_sgd_update",
    "preloaded_multi_mp_sgd_mom_update", "preloaded_multi_mp_sgd_update",
    "preloaded_multi_sgd_mom_update", "preloaded_multi_sgd_update",
]
