"""NDArray: MXNet 1.9's ``mxnet.nd`` over numpy (CPU) and cupy (GPU).

Dense arrays (:class:`NDArray`), row-sparse arrays (``mx.nd.sparse``) and
save/load. See ``docs/ndarray.md`` for what is supported and when memory is
copied or shared.
"""
from __future__ import annotations

from . import contrib, creation, csr, csr_ops, dlpack, io, linalg, ndarray, op, ops, random, sparse
from .creation import arange, array, empty, eye, from_numpy, full, ones, zeros
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .io import load, load_frombuffer, save
from .ndarray import NDArray
from .ops import concatenate, waitall
from .optable import functions as _functions
from .optable import install_methods as _install_methods
from .sparse import RowSparseNDArray, cast_storage, row_sparse_array

# Every operator of the operator table (optable/): mx.nd.exp, mx.nd.broadcast_add, ...,
# and their NDArray methods (x.exp(), x.transpose()...).
_OPERATORS = _functions("nd")
globals().update(_OPERATORS)
_install_methods()
# mx.nd.random: the table's random operators (namespace 'random') that random.py
# does not write by hand
for _name, _fn in _functions("random").items():
    if not hasattr(random, _name):
        setattr(random, _name, _fn)

tostype = cast_storage

# MXNet's optimizer update operators (mx.nd.sgd_update...) live with the
# optimizers' kernels (optimizer/update_ops.py) and are looked up on first use.
_UPDATE_OPS = frozenset({
    "adam_update", "ftml_update", "ftrl_update", "lamb_update_phase1", "lamb_update_phase2",
    "mp_lamb_update_phase1", "mp_lamb_update_phase2", "mp_nag_mom_update",
    "mp_sgd_mom_update", "mp_sgd_update", "multi_lars", "multi_sum_sq", "nag_mom_update",
    "rmsprop_update", "rmspropalex_update", "sgd_mom_update", "sgd_update",
    "signsgd_update", "signum_update", "multi_sgd_update", "multi_sgd_mom_update",
    "multi_mp_sgd_update", "multi_mp_sgd_mom_update", "preloaded_multi_sgd_update",
    "preloaded_multi_sgd_mom_update", "preloaded_multi_mp_sgd_update",
    "preloaded_multi_mp_sgd_mom_update"})


def __getattr__(name: str):
    if name in _UPDATE_OPS:
        from ..optimizer import update_ops
        return getattr(update_ops, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "NDArray", "RowSparseNDArray", "arange", "array", "cast_storage", "concatenate",
    "contrib", "creation", "csr", "csr_ops", "dlpack", "empty", "eye", "from_dlpack", "from_numpy",
    "full", "io", "linalg", "load", "load_frombuffer", "ndarray", "op", "ones", "ops",
    "random", "row_sparse_array", "save", "sparse", "to_dlpack_for_read",
    "to_dlpack_for_write", "tostype", "waitall", "zeros",
]
__all__ += sorted(set(_OPERATORS) - set(__all__))
