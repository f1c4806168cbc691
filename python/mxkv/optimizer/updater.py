"""The KVStore updater: per-key optimizer states, and their save/restore.

``get_updater(opt)`` returns an :class:`Updater`; a store calls it as
``updater(key, grad, weight)`` once per key per push. States are made on a
key's first update and can be saved with :meth:`Updater.get_states` (bytes)
and restored with :meth:`Updater.set_states`, optionally with the optimizer.

Restoring reads the bytes with a restricted unpickler and checks all of them
first (``states_file.py``): a bad file raises and changes nothing. An
updater may be called from several threads at once for different keys (a
store updates different keys in parallel); its table of states is changed
under a lock.
"""
from __future__ import annotations

import threading
from typing import Any, Mapping, Optional

import numpy as np

from ..context import xp_for
from ..ndarray import NDArray  # RowSparseNDArray is one too
from ._arrays import array_module, dense_view, device_scope, new_like
from .optimizer import Optimizer
from .states_file import LoadedStates, read_states
from .states_writer import dumps

__all__ = ["Updater", "get_updater"]


def _is_ndarray(obj: Any) -> bool:
    return isinstance(obj, NDArray)


def _as_in_context(nd: Any, ctx: Any) -> Any:
    """``nd`` on ``ctx``: itself when already there, else a copy."""
    if nd.context == ctx:
        return nd
    if hasattr(nd, "as_in_context"):
        return nd.as_in_context(ctx)
    xp = xp_for(ctx)
    with device_scope(ctx):
        src = dense_view(nd, write=False)
        host = src.get() if array_module(src) is not np else src
        return new_like(xp.array(host, copy=True), ctx)


class Updater:
    """Applies an optimizer to KVStore values, holding one state per key.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer; its ``update_multi_precision`` does the work.

    Examples
    --------
    >>> updater = mx.optimizer.get_updater(mx.optimizer.create('sgd', learning_rate=0.1))
    >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    >>> updater(0, g, w)
    >>> w.asnumpy()
    array([0.9, 0.9], dtype=float32)
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict[Any, Any] = {}
        self.states_synced: dict[Any, bool] = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        self._lock = threading.RLock()
        # keys of loaded states whose shapes no weight has confirmed yet
        self._unchecked: dict[Any, Any] = {}

    def __call__(self, index: int | str | bytes | list | tuple, grad: Any,
                 weight: Any) -> None:
        """Update ``weight`` in place from ``grad``; ``index`` is the key (or a list of keys).

        The key's state is created on its first update, and moved to the
        weight's context after a :meth:`set_states`.
        """
        if not isinstance(index, (list, tuple)):
            keys, grads, weights = [index], [grad], [weight]
        else:
            keys, grads, weights = list(index), list(grad), list(weight)
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        # (bytes keys are their utf-8 text)
        indices: list[int | str] = [k.decode("utf-8") if isinstance(k, bytes) else k
                                    for k in keys]
        for i, idx in enumerate(indices):
            if self._unchecked:
                self.check_state(idx, weights[i].shape)
            if idx not in self.states:
                state = self.optimizer.create_state_multi_precision(idx, weights[i])
                with self._lock:
                    self.states[idx] = state
                    self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                state = self.sync_state_context(self.states[idx], weights[i].context)
                with self._lock:
                    self.states[idx] = state
                    self.states_synced[idx] = True
        if not self.aggregate_updates:
            for key, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(key, w, g, self.states[key])
            return
        # aggregating optimizers (SGD) take up to aggregate_num same-dtype weights at once
        by_dtype: dict[Any, list] = {}
        for key, w, g in zip(indices, weights, grads):
            by_dtype.setdefault(np.dtype(w.dtype), []).append((key, w, g))
        step = self.optimizer.aggregate_num
        for group in by_dtype.values():
            idxs, ws, gs = zip(*group)
            for start in range(0, len(idxs), step):
                sl = slice(start, start + step)
                self.optimizer.update_multi_precision(
                    idxs[sl], ws[sl], gs[sl], [self.states[k] for k in idxs[sl]])

    def sync_state_context(self, state: Any, context: Any) -> Any:
        """``state`` with every NDArray in it moved to ``context``."""
        if _is_ndarray(state):
            return _as_in_context(state, context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def check_state(self, index: Any, shape: tuple) -> None:
        """Raise :class:`MXNetValueError` if a loaded state of ``index`` does
        not fit a weight of ``shape`` (checked once per loaded key)."""
        where = self._unchecked.get(index)
        if where is None:
            return
        LoadedStates({index: self.states[index]}, None, where).check_shapes(
            {index: tuple(shape)}, "update", self.optimizer)
        with self._lock:
            self._unchecked.pop(index, None)

    def set_states(self, states: bytes, shapes: Optional[Mapping[Any, tuple]] = None,
                   where: str = "optimizer states") -> None:
        """Restore states saved by :meth:`get_states` (and the optimizer, if it
        was saved), or by MXNet's ``get_states``.

        The bytes are read with a restricted unpickler and checked whole
        first; on any error this updater is left exactly as it was.

        Parameters
        ----------
        states : bytes
            What :meth:`get_states` returned (a states file's contents).
        shapes : mapping of key -> shape, optional
            The weights' shapes: a state of another shape is refused
            (keys not given are checked on their first update).
        where : str
            How errors name the source (a file name).

        Raises
        ------
        MXNetIOError
            The bytes are not a valid states file (the message says why).
        MXNetValueError
            A state's shape does not fit its key's weight.
        """
        self.install(read_states(states, where), shapes)

    def install(self, loaded: Any, shapes: Optional[Mapping[Any, tuple]] = None) -> None:
        """Make checked states (``states_file.read_states``) this updater's, in one step."""
        if shapes is not None:
            loaded.check_shapes(shapes, optimizer=loaded.optimizer or self.optimizer)
        unchecked = {k: loaded.where for k in loaded.states
                     if shapes is None or k not in shapes}
        with self._lock:
            if loaded.optimizer is not None:
                self.optimizer = loaded.optimizer
                self.aggregate_updates = self.optimizer.aggregate_num > 0
            self.states = loaded.states
            self.states_synced = dict.fromkeys(self.states.keys(), False)
            self._unchecked = unchecked

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states as bytes (pickle); with ``dump_optimizer`` the optimizer too.

        Parameters
        ----------
        dump_optimizer : bool, default False
            Also save the optimizer: its learning rate, scheduler, update
            counts and multipliers.
        """
        with self._lock:
            states = dict(self.states)
            return dumps((states, self.optimizer) if dump_optimizer else states)


def get_updater(optimizer: Optimizer) -> Updater:
    """Return the :class:`Updater` a KVStore calls as ``updater(key, grad, weight)``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer to apply.
    """
    return Updater(optimizer)
