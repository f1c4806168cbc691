"""The NDArray operator table: every operator declared once, every frontend
generated from it (``mx.nd.<op>``, the NDArray methods, ``mx.nd.op``,
``mx.nd.linalg``, ``mx.nd.random``; later the bridge and Clojure's functions).

How to add an operator
----------------------
Pick the family file (``unary.py``, ``binary.py``, ``reduce.py``, ``shape.py``,
``slicing.py``, ``indexing.py``, ``linalg.py``, ``misc.py``; layer operators in ``nn_*.py``,
random ones in ``random.py``), or add one (< ~400 lines) and list it in
:data:`FAMILIES` below. Then write the kernel over an array module and
register it with MXNet's name, inputs and parameters (MXNet 1.9.1's order,
names, type strings and defaults: ``tests/golden/op_surface.json`` has them,
``tests/test_op_surface.py`` checks them)::

    from .registry import OpDef, Param, register

    def _topk(xp, data, axis, k, ret_typ, is_ascend, dtype):
        ...                      # numpy/cupy arrays in, an array (or a list) out

    register(OpDef(
        name="topk", inputs=("data",),
        params=(Param("axis", "int or None", -1), Param("k", "int", 1),
                Param("ret_typ", "{'both', 'indices', 'mask', 'value'}", "indices"),
                Param("is_ascend", "boolean", False),
                Param("dtype", "{'float16', 'float32', ...}", "float32")),
        impl=_topk, methods=("topk",), dtype="impl",
        doc="One line for docs/operators.md."))

``impl(xp, *arrays, *params)`` gets the inputs as numpy (CPU contexts) or
CuPy (GPU) arrays of the first input's device, and the parameters converted
(``'int'`` -> int, ``'Shape(tuple)'`` -> tuple of ints, ``'boolean'`` ->
bool, an enum -> its string; ``Param(conv=...)`` for anything else), in
order. It returns an array (``dtype='same'`` casts it to the first input's
dtype; ``'impl'`` keeps what it returns), a Python scalar, or a list/tuple of
arrays (several outputs). A 0-d result becomes shape ``(1,)``. Raise
``MXNetValueError``/``MXNetTypeError`` naming the operator and the argument
at fault; other exceptions from numpy are turned into MXNetErrors naming the
operator and the inputs' shapes. Variable inputs: ``inputs=("*data",)`` (with
``num_args`` as a parameter when MXNet has it). No inputs: the parameter
``ctx`` (if any) picks the device and the impl gets the Context there.
``aliases=`` MXNet's other names (``_plus``); ``methods=`` the NDArray
methods it serves (``self`` is the first input); ``namespace=`` ``'nd'``
(default), ``'linalg'``, ``'random'``, ``'contrib'``, ``'internal'`` (hidden
``_name`` operators) or ``'python'`` (MXNet's Python wrappers, given as
``frontend=`` functions). ``differences=`` says where it differs from MXNet
(it goes to docs/operators.md). Then record MXNet's outputs for it in
``tools/golden_ops.py`` (a case list per family) and run
``tools/gen_operators_doc.py``.

Walking the table (for generators): :func:`iter_ops` yields each
:class:`OpDef` once (``name``, ``aliases``, ``inputs``, ``params`` as
:class:`Param` (``name``, ``type``, ``default``/``required``), ``namespace``,
``methods``, ``doc``, ``differences``); :func:`functions` gives the generated
Python functions by name; :func:`get` one OpDef by name or alias;
:func:`clojure_name` clojure-mxnet's name of an operator.
"""
from __future__ import annotations

import importlib

from .frontend import functions, install_methods, make_function
from .registry import REQUIRED, OpDef, Param, clojure_name, get, iter_ops, lookup, op, register

#: The family modules, imported in this order (each registers its operators).
FAMILIES = ("unary", "binary", "reduce", "shape", "slicing", "indexing", "linalg", "misc",
            "vision", "nn_conv", "nn_pool", "nn_dense", "nn_norm", "nn_seq", "random",
            "random_pdf", "update", "storage")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")

__all__ = ["FAMILIES", "REQUIRED", "OpDef", "Param", "clojure_name", "functions", "get",
           "install_methods",
           "iter_ops", "lookup", "make_function", "op", "register"]
