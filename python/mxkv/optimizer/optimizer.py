"""The ``Optimizer`` base class, its registry and ``create``, as MXNet 1.9.

An optimizer turns ``(index, weight, grad, state)`` into an in-place update
of ``weight`` (and ``state``). The base class keeps what every optimizer
shares: the learning rate (fixed or from an ``lr_scheduler``), weight decay,
gradient rescaling and clipping, per-parameter ``lr_mult``/``wd_mult``, the
per-index update counts, and float16 training with a float32 master copy
(``multi_precision``).

Every optimizer checks its hyper-parameters when it is built
(``params.py``): a bad value raises there, naming the parameter. One
optimizer may update different indices from several threads at once (a
store updates different keys in parallel): the update counts and the
learning-rate schedule are kept under a lock, and the current device
(``_set_current_context``) is per thread.
"""
from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Union

import numpy as np

from ..base import MXNetTypeError, UnknownOptimizerError
from ._arrays import copy_as, dense_view, is_row_sparse, new_like
from .params import check_mults, check_number, check_optimizer

__all__ = ["MultiTensorUpdates", "Optimizer", "create", "register"]

Index = Union[int, str]


class Optimizer:
    """The base class inherited by all optimizers.

    Parameters
    ----------
    rescale_grad : float, optional, default 1.0
        Multiply the gradient with ``rescale_grad`` before updating; often
        ``1.0 / batch_size``.
    param_idx2name : dict of int to str, optional
        Maps an index to a parameter name. Names not ending in ``_weight`` or
        ``_gamma`` get a weight-decay multiplier of 0 by default.
    wd : float, optional, default 0.0
        Weight decay (L2 regularization) coefficient.
    clip_gradient : float, optional
        Clip the rescaled gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional
        The learning rate. When None the ``lr_scheduler``'s is used, or 0.01
        without one. When both are given, it overwrites the scheduler's
        ``base_lr`` (with a ``UserWarning`` if they differ).
    lr_scheduler : LRScheduler, optional
        Gives the learning rate as a function of ``num_update``.
    sym : Symbol-like, optional
        Anything with ``attr_dict()`` and ``list_arguments()``; its
        ``__lr_mult__``/``__wd_mult__`` attributes set the multipliers.
    begin_num_update : int, optional, default 0
        The update count to start from.
    multi_precision : bool, optional, default False
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of int to Parameter-like, optional
        Objects with ``lr_mult`` and ``wd_mult`` attributes, looked up first.
        Not pickled.

    Examples
    --------
    >>> opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    >>> opt.learning_rate
    0.1
    """

    opt_registry: ClassVar[dict[str, type[Optimizer]]] = {}

    def __init__(self, rescale_grad: float = 1., param_idx2name: dict | None = None,
                 wd: float = 0., clip_gradient: float | None = None,
                 learning_rate: float | None = None, lr_scheduler: Any = None,
                 sym: Any = None, begin_num_update: int = 0,
                 multi_precision: bool = False, param_dict: dict | None = None) -> None:
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if (self.lr_scheduler is not None and learning_rate is not None
                and self.lr_scheduler.base_lr != learning_rate):
            warnings.warn("learning rate from ``lr_scheduler`` has been overwritten by "
                          "``learning_rate`` in optimizer.", UserWarning, stacklevel=2)
            self.lr_scheduler.base_lr = learning_rate

        self.wd = wd
        self.lr_mult: dict[Index, float] = {}
        self.wd_mult: dict[Index, float] = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict[int, dict[Index, int]] = {0: {}}
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0

        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name should be a dict of param indexes to names, "
                            f"got {type(param_idx2name).__name__}")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}

        self.set_lr_mult({})
        self.set_wd_mult({})
        if type(self).__init__ is Optimizer.__init__:
            check_optimizer(self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every optimizer class checks its parameters once its outermost
        ``__init__`` is done (``params.py``)."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        def __init__(self, *args: Any, **kw: Any) -> None:
            init(self, *args, **kw)
            if type(self).__init__ is __init__:
                check_optimizer(self)

        # (init's __doc__ and __qualname__, and __wrapped__ = init; not its __module__)
        functools.update_wrapper(__init__, init, assigned=("__doc__", "__qualname__"),
                                 updated=())
        cls.__init__ = __init__

    def _check_params(self) -> None:
        """Raise, naming the parameter, unless every hyper-parameter is valid."""
        check_optimizer(self)

    # ----------------------------------------------------- threads

    def _sync(self) -> threading.RLock:
        """The lock of the counters and the schedule (made on first use, so
        unpickled optimizers have one too)."""
        lock = self.__dict__.get("_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_lock", threading.RLock())
        return lock

    def _local(self) -> threading.local:
        local = self.__dict__.get("_thread")
        if local is None:
            local = self.__dict__.setdefault("_thread", threading.local())
        return local

    @property
    def _index_update_count(self) -> dict[Index, int]:
        """The update counts of the current thread's device (``_set_current_context``)."""
        dev = getattr(self._local(), "device", 0)
        counts = self._all_index_update_counts.get(dev)
        if counts is None:
            counts = self._all_index_update_counts.setdefault(dev, {})
        return counts

    # ------------------------------------------------------------------ registry

    @staticmethod
    def register(klass: type[Optimizer]) -> type[Optimizer]:
        """Register an optimizer class under its lower-cased class name.

        Examples
        --------
        >>> @mx.optimizer.Optimizer.register
        ... class MyOptimizer(mx.optimizer.Optimizer):
        ...     pass
        >>> type(mx.optimizer.Optimizer.create_optimizer('MyOptimizer')).__name__
        'MyOptimizer'
        """
        if not isinstance(klass, type):
            raise TypeError(f"Optimizer.register expects a class, got {klass!r}")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {old.__module__}.{old.__name__}",
                          stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """Instantiate the optimizer registered as ``name`` (case insensitive).

        Raises
        ------
        MXNetError
            (also a ``ValueError``, as MXNet's) when no optimizer has that name;
            the message lists the known ones. Also (``MXNetTypeError``,
            ``MXNetValueError``; MXNet accepts them and every update fails) when
            a parameter is not of the type the optimizer declares, or is a NaN
            or infinite number.

        Examples
        --------
        >>> type(mx.optimizer.create('adam', learning_rate=.1))
        <class 'mxkv.optimizer.adam.Adam'>
        """
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            known = ", ".join(sorted(Optimizer.opt_registry))
            raise UnknownOptimizerError(f"Cannot find optimizer {name}; known optimizers: {known}")
        try:
            return klass(**kwargs)
        except TypeError as exc:
            if isinstance(exc, MXNetTypeError):
                raise
            raise MXNetTypeError(f"{klass.__name__}: {exc}") from None

    # ------------------------------------------------------------ learning rate

    @property
    def learning_rate(self) -> float:
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            with self._sync():
                return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate.

        Raises
        ------
        UserWarning
            When an ``lr_scheduler`` is set (as MXNet, it is raised, not
            warned): the scheduler owns the learning rate then.
        """
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note "
                              "that set_learning_rate can mutate the value of the learning "
                              "rate of the optimizer only when the LRScheduler of the "
                              "optimizer is undefined.")
        check_number(type(self).__name__, "learning_rate", lr)
        self.lr = lr

    def set_lr_scale(self, args_lrscale: dict) -> None:
        """[DEPRECATED] Use :meth:`set_lr_mult`."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult: dict[Index, float]) -> None:
        """Set per-parameter learning-rate multipliers, by name or by index.

        Parameters
        ----------
        args_lr_mult : dict of str/int to float
            Replaces the previous multipliers (after those from ``sym``).
        """
        check_mults(type(self).__name__, "lr_mult", args_lr_mult)
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict[Index, float]) -> None:
        """Set per-parameter weight-decay multipliers, by name or by index.

        Every name in ``param_idx2name`` that does not end with ``_weight`` or
        ``_gamma`` (biases, ``_beta``, ...) first gets multiplier 0, as MXNet
        1.9; then ``sym`` attributes, then ``args_wd_mult``.

        Parameters
        ----------
        args_wd_mult : dict of str/int to float
            Explicit multipliers; they win over the defaults.
        """
        check_mults(type(self).__name__, "wd_mult", args_wd_mult)
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith(("_weight", "_gamma"))):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        """Switch this thread to the update counts of device ``device_id``."""
        self._all_index_update_counts.setdefault(device_id, {})
        self._local().device = device_id

    def _update_count(self, index: Index | list[Index] | tuple[Index, ...]) -> None:
        """Count one more update of ``index`` (or of each index of a list)."""
        indices = index if isinstance(index, (list, tuple)) else [index]
        counts = self._index_update_count
        with self._sync():
            for idx in indices:
                if idx not in counts:
                    counts[idx] = self.begin_num_update
                counts[idx] += 1
                self.num_update = max(counts[idx], self.num_update)

    def _get_lrs(self, indices: Sequence[Index]) -> list[float]:
        """Learning rates of ``indices``: the global one times each multiplier."""
        if self.lr_scheduler is not None:
            with self._sync():  # stateful schedules step once per update count
                lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        return self._with_lr_mults(lr, indices)

    def _with_lr_mults(self, lr: float, indices: Sequence[Index]) -> list[float]:
        """``lr`` times each index's multiplier."""
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index: Index) -> float:
        """Learning rate of ``index``."""
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence[Index]) -> list[float]:
        """Weight decays of ``indices``: ``wd`` times each multiplier."""
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index: Index) -> float:
        """Weight decay of ``index``."""
        return self._get_wds([index])[0]

    def _kernel_clip(self) -> float | None:
        """The clip bound as MXNet's fused kernels apply it: none unless > 0, a
        float32 parameter."""
        c = self.clip_gradient
        return float(np.float32(c)) if c and c > 0 else None

    def _python_clip(self) -> float | None:
        """The clip bound as MXNet's Python-written optimizers apply it: unless None."""
        return None if self.clip_gradient is None else float(self.clip_gradient)

    # ------------------------------------------------------------------ updates

    def state_shape(self, weight_shape: tuple) -> tuple:
        """The shape of the state arrays of a weight of ``weight_shape`` (a
        loaded states file is checked against it, or the weight's shape):
        the weight's, unless an optimizer keeps less (GroupAdaGrad: a row)."""
        return tuple(weight_shape)

    def create_state(self, index: Index, weight: Any) -> Any:
        """Create the auxiliary state (momentum, moments, ...) of one weight.

        Parameters
        ----------
        index : int or str
            The weight's unique index (a KVStore key).
        weight : NDArray
            The weight.

        Returns
        -------
        any
            NDArrays (or a tuple of them) or None; passed back to `update`.
        """
        return None

    def create_state_multi_precision(self, index: Index, weight: Any) -> Any:
        """Create the state, plus a float32 master copy for float16 weights.

        With ``multi_precision`` and a float16 weight the state is
        ``(weight32, create_state(index, weight32))``.
        """
        if self.multi_precision and weight.dtype == np.float16:
            weight_master_copy = copy_as(weight, np.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy "
                          "or slow convergence. Consider using multi_precision=True option "
                          "of the optimizer", stacklevel=2)
        return self.create_state(index, weight)

    def update(self, index: Index, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` (and ``state``) in place from ``grad``.

        Parameters
        ----------
        index : int or str
            Selects the learning rate and weight decay multipliers.
        weight : NDArray
            The parameter, updated in place.
        grad : NDArray or RowSparseNDArray
            Its gradient; never modified.
        state : any
            What `create_state` returned.
        """
        raise NotImplementedError()

    def update_multi_precision(self, index: Index, weight: Any, grad: Any, state: Any) -> None:
        """`update`, through the float32 master copy for float16 weights."""
        if self.multi_precision and weight.dtype == np.float16:
            weight_master_copy, original_state = state[0], state[1]
            self.update(index, weight_master_copy, _astype_grad(grad, np.float32),
                        original_state)
            _cast_into(weight_master_copy, weight)
        else:
            self.update(index, weight, grad, state)

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict:
        ret = self.__dict__.copy()
        # param_dict holds the trainer's parameters: never pickled, as MXNet
        ret.pop("param_dict", None)
        ret.pop("_lock", None)
        ret.pop("_thread", None)
        return ret

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        # MXNet's (and older mxkv's) alias of the current device's counts
        state.pop("_index_update_count", None)
        state.pop("_lock", None)
        state.pop("_thread", None)
        self.__dict__ = state
        self.param_dict = {}


class MultiTensorUpdates:
    """``update`` and ``update_multi_precision`` for optimizers that update one
    index or a list of them in ``_update_impl(..., multi_precision)`` (SGD,
    LAMB): the float32 master copy is used when the (first) weight is float16
    and ``multi_precision`` is set."""

    def update(self, index, weight, grad, state):
        """Update ``weight`` (one index, or a list of them updated together) in place from ``grad``
        and ``state``, without a float32 master copy."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """As :meth:`update`, through the float32 master copies in ``state`` when the (first)
        weight is float16 and ``multi_precision`` is set."""
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        use_mp = self.multi_precision and first.dtype == np.float16
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)


def _astype_grad(grad: Any, dtype: Any) -> Any:
    """``grad`` as a new NDArray of ``dtype`` (same storage type)."""
    if grad.dtype == dtype:
        return grad
    if is_row_sparse(grad):
        return type(grad)(grad._data.astype(dtype), grad._indices, tuple(grad.shape),
                          grad.context)
    return new_like(grad._array.astype(dtype), grad.context)


def _cast_into(src: Any, dst: Any) -> None:
    """Write ``src``'s values into ``dst``'s buffer in ``dst``'s dtype."""
    out = dense_view(dst)
    out[...] = dense_view(src, write=False).reshape(out.shape)


register = Optimizer.register
create = Optimizer.create_optimizer
