"""Writing optimizer states files that MXNet 1.9.1 loads as its own.

MXNet's ``Updater.get_states`` pickles its states dict (or the
``(states, optimizer)`` pair) with NDArrays as ``NDArray(None)`` plus
``{'handle': NDArray::Save bytes}`` and the optimizer as an instance of
``mxnet.optimizer.optimizer.<Class>`` with its ``__dict__``. mxkv writes the
same: arrays under MXNet's class name and encoding (mxkv's NDArrays already
pickle MXNet's ``handle`` state), optimizers and learning-rate schedulers
under MXNet's module names, and the two attributes MXNet's optimizer has
beyond mxkv's (``_index_update_count``, the current device's counts, and
``allow_np_array``), in MXNet's order. For the same training the bytes are
MXNet's own (``tests/test_states_file.py``), so ``load_optimizer_states``
in MXNet resumes an mxkv run exactly; mxkv reads the files back through its
restricted unpickler (``states_file.py``), which admits these names.
"""
from __future__ import annotations

import io
import pickle
from typing import TYPE_CHECKING, Any, Callable, Dict, Tuple

from .. import lr_scheduler
from ..ndarray import NDArray
from .optimizer import Optimizer

__all__ = ["dumps"]

PROTOCOL = 4  # pickle.DEFAULT_PROTOCOL of MXNet's Python 3.8+

# mxkv optimizer classes MXNet keeps outside mxnet.optimizer.optimizer
_MODULES = {"GroupAdaGrad": "mxnet.optimizer.contrib"}


class _Global:
    """A global named by module and name, written without importing it."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # (pickle wants a reduce function callable)
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


def _optimizer_state(obj: Any) -> dict:
    """The optimizer's ``__dict__`` as MXNet's holds it, in MXNet's order: with
    ``_index_update_count`` (the current device's counts, the same dict) after
    ``_all_index_update_counts`` and ``allow_np_array`` after ``sym_info``."""
    state = obj.__getstate__()
    counts = state.get("_all_index_update_counts")
    current = None
    if isinstance(counts, dict) and counts:
        device = getattr(obj._local(), "device", 0)
        current = counts.get(device)
        if current is None:
            current = counts.get(0, next(iter(counts.values())))
    out: dict = {}
    for key, value in state.items():
        if key in ("_index_update_count", "allow_np_array"):
            continue
        out[key] = value
        if key == "_all_index_update_counts" and current is not None:
            out["_index_update_count"] = current
        elif key == "sym_info":
            out["allow_np_array"] = state.get("allow_np_array", False)
    out.setdefault("allow_np_array", False)
    return out


if TYPE_CHECKING:
    class _PurePickler(pickle._Pickler):
        """The undocumented parts of the pure-Python pickler this module uses
        (typeshed declares only the public ones)."""

        memo: Dict[int, Tuple[int, Any]]  # id(obj) -> (memo index, obj)
        write: Callable[[bytes], Any]     # (an instance attribute: the framer's write)

        def save(self, obj: Any, save_persistent_id: bool = True) -> None: ...

        def get(self, i: int) -> bytes: ...

        def memoize(self, obj: Any) -> None: ...
else:
    _PurePickler = pickle._Pickler


class _MXNetPickler(_PurePickler):  # the pure-Python pickler: it lets us write a global
    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self._globals: dict = {}

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if type(obj) is _Global:
            self._save_global_name(obj)
            return
        if isinstance(obj, Optimizer):
            name = type(obj).__name__
            self._save_object(obj, _Global(_MODULES.get(name, "mxnet.optimizer.optimizer"),
                                           name), _optimizer_state(obj))
            return
        if isinstance(obj, lr_scheduler.LRScheduler):
            self._save_object(obj, _Global("mxnet.lr_scheduler", type(obj).__name__),
                              dict(vars(obj)))
            return
        super().save(obj, save_persistent_id)

    def _save_global_name(self, g: _Global) -> None:
        seen = self._globals.get((g.module, g.name))
        if seen is not None:
            self.write(self.get(self.memo[id(seen)][0]))
            return
        self.save(g.module)
        self.save(g.name)
        self.write(pickle.STACK_GLOBAL)
        self.memoize(g)
        self._globals[(g.module, g.name)] = g

    def _save_object(self, obj: Any, cls: _Global, state: dict) -> None:
        """``obj`` as pickle writes an instance of ``cls``: NEWOBJ, then BUILD."""
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        self.save(cls)
        self.save(())
        self.write(pickle.NEWOBJ)
        self.memoize(obj)
        self.save(state)
        self.write(pickle.BUILD)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, NDArray):  # NDArray.__reduce__ in MXNet: NDArray(None) + handle
            return (_Global("mxnet.ndarray.ndarray", "NDArray"), (None,), obj.__getstate__())
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """Pickle a states dict or ``(states, optimizer)`` pair in MXNet's format."""
    buf = io.BytesIO()
    _MXNetPickler(buf).dump(obj)
    return buf.getvalue()
