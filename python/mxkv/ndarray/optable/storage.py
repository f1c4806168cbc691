"""MXNet's ``cast_storage`` as an entry of the operator table, so that the
frontends generated from the table have it (the bridge's dispatch, Clojure's
``cast-storage`` in ``ndarray`` and ``ndarray-api``).

Its implementation is the sparse arrays' own (``mx.nd.cast_storage``, in
:mod:`mxkv.ndarray.row_sparse`), called through the entry's ``frontend`` and
imported on first use; the entry is in the table's ``storage`` namespace,
which ``mx.nd`` does not show (``mx.nd.cast_storage`` stays that function).
"""
from __future__ import annotations

import importlib
from typing import Any

from .._util import MXNetValueError
from .registry import OpDef, Param, register

__all__: list = []


def _cast_storage(data: Any = None, stype: Any = None, out: Any = None, **kwargs: Any) -> Any:
    kwargs.pop("name", None)
    if kwargs:
        raise MXNetValueError(f"cast_storage: unexpected argument(s) {sorted(kwargs)}; its "
                              "parameters are ['stype']")
    res = importlib.import_module("mxkv.ndarray.row_sparse").cast_storage(data, stype)
    if out is None:
        return res
    out[:] = res
    return out


register(OpDef(
    name="cast_storage", inputs=("data",),
    params=(Param("stype", "{'csr', 'default', 'row_sparse'}"),),
    impl=None, frontend=_cast_storage, namespace="storage", family="storage",
    doc="The array in storage type stype (default, row_sparse or csr): a copy."))
