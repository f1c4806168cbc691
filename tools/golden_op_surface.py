"""Record MXNet 1.9.1's NDArray operator surface: tests/golden/op_surface.json.

What it records, once, from the real MXNet (names and parameter specs are
API facts, not code): every public callable of ``mx.nd`` with its Python
signature and, for registry operators, MXNet's argument names and type
strings in order (``'float, required'``, ``"int or None, optional,
default='-1'"``); the public attributes of ``mx.nd.NDArray``; the names in
``mx.nd.linalg``, ``mx.nd.random`` and ``mx.nd.op``.

Used by ``tests/test_op_surface.py`` (counts present / in scope, and each
table operator's parameters in MXNet's order with MXNet's defaults) and by
``tools/gen_operators_doc.py``.

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_op_surface.py
"""
from __future__ import annotations

import ctypes
import inspect
import json
import os
import sys

import mxnet as mx
from mxnet.base import _LIB, c_str, check_call, mx_uint, py_str

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "op_surface.json")


def registry_info(name: str):
    """MXNet's registry entry for operator ``name``: {"real": its primary
    name, "args": [(arg, type string)], "key_var_num_args": the
    variable-count argument (or None)}; None when ``name`` is not an operator."""
    hdl = ctypes.c_void_p()
    if _LIB.NNGetOpHandle(c_str(name), ctypes.byref(hdl)) != 0 or not hdl.value:
        return None
    real, desc, kv, rt = (ctypes.c_char_p() for _ in range(4))
    num = mx_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(_LIB.MXSymbolGetAtomicSymbolInfo(
        hdl, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(num), ctypes.byref(names),
        ctypes.byref(types), ctypes.byref(descs), ctypes.byref(kv), ctypes.byref(rt)))
    args = [[py_str(names[i]), py_str(types[i])] for i in range(num.value)]
    return {"real": py_str(real.value), "args": args,
            "key_var_num_args": py_str(kv.value) if kv.value else None}


def op_args(name: str):
    """What op_surface.json records of operator ``name``: its registry
    entry's arguments and variable-count argument (None when not an operator)."""
    info = registry_info(name)
    return None if info is None else {k: info[k] for k in ("args", "key_var_num_args")}


def signature(fn) -> str | None:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return None


def public(module) -> list:
    return sorted(n for n in dir(module) if not n.startswith("_")
                  and callable(getattr(module, n)) and not inspect.isclass(getattr(module, n))
                  and not inspect.ismodule(getattr(module, n)))


def main(out: str) -> None:
    nd = {}
    for name in public(mx.nd):
        fn = getattr(mx.nd, name)
        rec = {"signature": signature(fn), "registry": op_args(name) if hasattr(mx.nd.op, name)
               else None}
        nd[name] = rec
    registry_extra = {}
    for mod_name, module in (("linalg", mx.nd.linalg), ("random", mx.nd.random)):
        for name in public(module):
            full = ("linalg_" if mod_name == "linalg" else "") + name
            if mod_name == "linalg":
                registry_extra[full] = op_args(full)
    surface = {
        "mxnet": mx.__version__,
        "nd": nd,
        "linalg_registry": registry_extra,
        "methods": sorted(n for n in dir(mx.nd.NDArray) if not n.startswith("_")),
        "linalg": public(mx.nd.linalg),
        "random": public(mx.nd.random),
        "op": public(mx.nd.op),
    }
    with open(out, "w") as f:
        json.dump(surface, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"wrote {out}: {len(nd)} mx.nd functions, {len(surface['methods'])} methods")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT)
