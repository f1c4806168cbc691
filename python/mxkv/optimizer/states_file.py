"""Reading optimizer states files: safely, and the whole file before any change.

A states file is a pickle (MXNet's format): a dict of key -> state, or a
``(states, optimizer)`` pair with ``dump_optimizer=True``. Unpickling runs
whatever a file names, so a crafted file could run code in the engine. mxkv
reads states with an unpickler that admits only what states files hold:

* arrays: mxkv's ``_SavedArray`` records (host copies) with numpy arrays of
  a numeric dtype inside, and MXNet's pickled ``NDArray`` /
  ``RowSparseNDArray`` (their ``NDArray::Save`` bytes, read by mxkv's
  bounds-checked reader);
* numbers, str, bytes, None, tuples, lists, dicts (pickle's own opcodes);
* the registered optimizer classes and the learning-rate schedulers, under
  mxkv's module names or MXNet's (``mxnet.optimizer.optimizer.SGD`` loads as
  ``mx.optimizer.SGD``), so files written by MXNet 1.9 load too.

Anything else a file names (``os.system``, ``builtins.eval``, any class) is
refused before it is looked up. Files mxkv writes end with a CRC-32 trailer
(``fileio.TRAILER``, after pickle's STOP opcode, where no reader looks), so a
flipped bit anywhere is caught; a file without one (MXNet's) must end where
its pickle does. Then the loaded object is checked whole:
its shape (states dict, optional optimizer), every key (int or str), every
state (arrays, None, tuples and lists of them), every array record, and the
optimizer's hyper-parameters (``params.py``). Only a file that passes every
check is turned into states; the updater installs them in one step.
"""
from __future__ import annotations

import io
import numbers
import pickle
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type

import numpy as np

from .. import lr_scheduler
from .. import ndarray as nd
from ..base import MXNetError, MXNetIOError, MXNetValueError
from ..fileio import check_trailer, with_trailer
from ..ndarray import NDArray
from ..ndarray.sparse import RowSparseNDArray
from .optimizer import Optimizer
from .saved_array import LEGACY_NAME, _SavedArray, _thaw

__all__ = ["LoadedStates", "read_states", "restricted_loads", "sealed"]

_CONTEXTS = ("cpu", "gpu", "cpu_pinned", "cpu_shared")


def sealed(states: bytes) -> list:
    """The chunks of a states file: the pickle, then mxkv's checksum trailer
    (``fileio.TRAILER``), which ``pickle`` never reads (it stops at its STOP
    opcode) and :func:`restricted_loads` verifies."""
    return list(with_trailer([states]))


# ------------------------------------------------------------------ unpickling
def _mxnet_array(*args: Any) -> Any:
    """What MXNet's pickled ``NDArray(None)`` becomes: an empty array object
    whose ``__setstate__`` (checked) reads the saved bytes."""
    klass = _pickled_array_class()
    return klass.__new__(klass)


_PICKLED: List[Type[NDArray]] = []


def _pickled_array_class() -> Type[NDArray]:
    """An NDArray subclass accepting only ``{'handle': bytes}`` as its pickled
    state; restoring turns the object into the NDArray the bytes hold."""
    if _PICKLED:
        return _PICKLED[0]

    class _PickledArray(NDArray):
        def __setstate__(self, state: Any) -> None:
            handle = state.get("handle") if isinstance(state, dict) else None
            if not isinstance(handle, (bytes, bytearray)) or len(state) != 1:
                raise MXNetIOError(f"a pickled NDArray holds {_describe(state)}, not "
                                   "{'handle': its saved bytes}")
            NDArray.__setstate__(self, {"handle": handle})
            if type(self) is _PickledArray:  # (restoring switches the class)
                self.__class__ = NDArray

    _PICKLED.append(_PickledArray)
    return _PickledArray


def _numpy_globals() -> Dict[Tuple[str, str], Any]:
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray  # type: ignore[no-redef]
    out = {}
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        out[(mod, "_reconstruct")] = multiarray._reconstruct
        out[(mod, "scalar")] = multiarray.scalar
    out[("numpy", "ndarray")] = np.ndarray
    out[("numpy", "dtype")] = np.dtype
    return out


def _allowed() -> Dict[Tuple[str, str], Any]:
    """(module, name) -> object, for everything a states file may name."""
    table: Dict[Tuple[str, str], Any] = dict(_numpy_globals())
    table[("builtins", "bytearray")] = bytearray
    table[LEGACY_NAME] = _SavedArray  # where files written before 0.3 name it
    table[(_SavedArray.__module__, "_SavedArray")] = _SavedArray
    for klass in (NDArray, RowSparseNDArray):  # pickled by mxkv: NEWOBJ of the class
        table[(klass.__module__, klass.__qualname__)] = _pickled_array_class()
    for mod in ("mxnet.ndarray.ndarray", "mxnet.ndarray.sparse", "mxnet.ndarray"):
        for name in ("NDArray", "RowSparseNDArray"):
            table[(mod, name)] = _mxnet_array
    for name in lr_scheduler.__all__:
        klass = getattr(lr_scheduler, name)
        table[(klass.__module__, name)] = klass
        table[("mxnet.lr_scheduler", name)] = klass
    for opt_class in Optimizer.opt_registry.values():
        table[(opt_class.__module__, opt_class.__qualname__)] = opt_class
    return table


def _mxnet_optimizer(module: str, name: str) -> Any:
    """MXNet's optimizer ``module.name`` as the mxkv class registered under its name."""
    if module in ("mxnet.optimizer.optimizer", "mxnet.optimizer", "mxnet.optimizer.contrib"):
        return Optimizer.opt_registry.get(name.lower())
    return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, stream: io.BytesIO, where: str) -> None:
        super().__init__(stream)
        self._table = _allowed()
        self._where = where

    def find_class(self, module: str, name: str) -> Any:
        obj = self._table.get((module, name)) or _mxnet_optimizer(module, name)
        if obj is None:
            raise MXNetIOError(
                f"{self._where}: refuses to load {module}.{name}: an optimizer states "
                "file holds only arrays, numbers, strings, tuples, lists, dicts and "
                "optimizers (mxkv's or MXNet's)")
        return obj


def restricted_loads(data: bytes, where: str = "optimizer states") -> Any:
    """Unpickle ``data`` admitting only what states files hold (module doc).

    Raises :class:`MXNetIOError` naming ``where`` for anything else, and for
    bytes that are not a pickle."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MXNetIOError(f"{where}: states must be bytes, got {type(data).__name__}")
    data = bytes(data)
    end = check_trailer(memoryview(data), where)
    stream = io.BytesIO(data[:end])
    try:
        loaded = _Unpickler(stream, where).load()
        if stream.tell() != end:
            raise MXNetIOError(f"{where}: {end - stream.tell()} unexpected bytes after the "
                               "states: the file is corrupted")
        return loaded
    except MXNetIOError as exc:
        if str(exc).startswith(where):
            raise
        raise MXNetIOError(f"{where}: {exc}") from None
    except RecursionError:
        raise MXNetIOError(f"{where}: nested too deeply: not an optimizer states file") \
            from None
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt pickles raise anything
        raise MXNetIOError(f"{where}: not an optimizer states file "
                           f"({type(exc).__name__}: {exc})") from None


# ------------------------------------------------------------------ checking
def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _check_key(key: Any, where: str) -> Any:
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            raise MXNetIOError(f"{where}: key {key!r} is not UTF-8") from None
    if isinstance(key, str):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
        return int(key)
    raise MXNetIOError(f"{where}: holds a state for key {_describe(key)}; keys are int or str")


def _check_saved(rec: Any, key: Any, where: str) -> None:
    """A ``_SavedArray``'s fields: a numeric host array of its shape, a known context."""
    try:
        array, shape, indices = rec.array, rec.shape, rec.indices
        dev_type, dev_id = rec.device_type, rec.device_id
    except AttributeError as exc:
        raise MXNetIOError(f"{where}: key {key!r}: an incomplete array record ({exc})") from None
    what = f"{where}: key {key!r}: array record"
    if not isinstance(array, np.ndarray) or array.dtype not in nd.io.TYPE_FLAGS:
        raise MXNetIOError(f"{what} holds {_describe(array)}, not a numeric numpy array")
    if not (isinstance(shape, tuple) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise MXNetIOError(f"{what} has shape {shape!r}, not a tuple of sizes")
    if dev_type not in _CONTEXTS or not isinstance(dev_id, int) or dev_id < 0:
        raise MXNetIOError(f"{what} names context {dev_type!r}, {dev_id!r}")
    if indices is None:
        if array.shape != shape:
            raise MXNetIOError(f"{what} has values of shape {array.shape} for shape {shape}")
        return
    ok = (isinstance(indices, np.ndarray) and indices.ndim == 1 and indices.dtype.kind in "iu"
          and len(shape) >= 1 and array.shape == (indices.shape[0],) + shape[1:]
          and (indices.size == 0 or (int(indices.min()) >= 0 and int(indices.max()) < shape[0]
                                     and bool(np.all(np.diff(indices) > 0)))))
    if not ok:
        raise MXNetIOError(f"{what}: row_sparse rows {_describe(indices)} do not fit values of "
                           f"shape {array.shape} and shape {shape}")


def _check_state(state: Any, key: Any, where: str, depth: int = 0) -> None:
    if depth > 8:
        raise MXNetIOError(f"{where}: key {key!r}: the state is nested too deeply")
    if state is None or isinstance(state, NDArray):
        return
    if isinstance(state, _SavedArray):
        _check_saved(state, key, where)
        return
    if isinstance(state, (tuple, list)):
        for s in state:
            _check_state(s, key, where, depth + 1)
        return
    raise MXNetIOError(f"{where}: key {key!r}: a state holds {_describe(state)}; states hold "
                       "arrays, None, and tuples or lists of them")


def _check_optimizer(opt: Any, where: str) -> None:
    if not isinstance(opt, Optimizer):
        raise MXNetIOError(f"{where}: the saved optimizer is {_describe(opt)}, not an "
                           "Optimizer")
    try:
        opt._check_params()
    except MXNetError as exc:
        raise MXNetIOError(f"{where}: the saved optimizer is invalid: {exc}") from None


def _shapes(state: Any):
    """The shapes of every array in a (thawed) state."""
    if state is None:
        return
    if isinstance(state, (tuple, list)):
        for s in state:
            yield from _shapes(s)
        return
    yield tuple(state.shape)


class LoadedStates:
    """A checked states file, ready to install: ``states`` (key -> state with
    NDArrays) and ``optimizer`` (None unless the file holds one)."""

    def __init__(self, states: Dict[Any, Any], optimizer: Optional[Optimizer],
                 where: str) -> None:
        self.states = states
        self.optimizer = optimizer
        self.where = where

    def check_shapes(self, shapes: Mapping[Any, tuple], op: str = "load_optimizer_states",
                     optimizer: Optional[Optimizer] = None) -> None:
        """Raise :class:`MXNetValueError` unless every state of a key in
        ``shapes`` holds arrays of that key's shape (or of the state shape
        ``optimizer`` keeps for it, :meth:`Optimizer.state_shape`: a
        multi-precision state holds the weight's float32 copy besides)."""
        for key, state in self.states.items():
            want = shapes.get(key)
            if want is None:
                continue
            allowed = {tuple(want)}
            if optimizer is not None:
                allowed.add(tuple(optimizer.state_shape(tuple(want))))
            for got in _shapes(state):
                if got not in allowed:
                    kept = " or ".join(str(a) for a in sorted(allowed))
                    raise MXNetValueError(
                        f"{op}: {self.where} holds a state of shape {got} for key {key!r}, "
                        f"which has shape {tuple(want)} (states of shape {kept})")


def read_states(data: bytes, where: str = "optimizer states") -> LoadedStates:
    """Unpickle (restricted) and check a whole states file; nothing is changed.

    Raises
    ------
    MXNetIOError
        naming ``where`` and the fault: not a pickle, a refused global, not a
        states dict, a bad key, state or array record, an invalid optimizer.
    """
    loaded = restricted_loads(data, where)
    optimizer = None
    if isinstance(loaded, tuple):
        if len(loaded) != 2:
            raise MXNetIOError(f"{where}: holds a tuple of {len(loaded)}; a states file holds "
                               "a dict of states, or a (states, optimizer) pair")
        loaded, optimizer = loaded
        _check_optimizer(optimizer, where)
    if not isinstance(loaded, dict):
        raise MXNetIOError(f"{where}: holds {_describe(loaded)}; a states file holds a dict "
                           "of key -> state, or a (states, optimizer) pair")
    states: Dict[Any, Any] = {}
    for key, state in loaded.items():
        k = _check_key(key, where)
        if k in states:
            raise MXNetIOError(f"{where}: holds two states for key {k!r}")
        _check_state(state, k, where)
        states[k] = state
    try:
        thawed = {k: _thaw(s) for k, s in states.items()}
    except MXNetError as exc:
        raise MXNetIOError(f"{where}: {exc}") from None
    return LoadedStates(thawed, optimizer, where)
