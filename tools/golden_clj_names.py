"""Record clojure-mxnet 1.9.1's operator function names: tests/golden/clj_names.json.

clojure-mxnet generates its ``ndarray``, ``ndarray-api`` and
``ndarray-random-api`` functions from MXNet's operator registry
(``contrib/clojure-package/src/dev/generator.clj`` and the Scala
``NDArrayMacro``); this tool applies those rules to MXNet 1.9.1's registry,
read from the real library, once:

* ``ndarray``: one function per registered name (aliases included) that does
  not start with ``_`` (the Scala ``NDArray`` object's generated functions),
  named by the generator's ``clojure-case``; plus the functions clojure-mxnet
  derives from the Scala class's own methods (``greater``, ``to-array``,
  ``at`` ...), listed below from upstream's generated ``gen/ndarray.clj`` and
  hand-written ``ndarray.clj``.
* ``ndarray-api`` / ``ndarray-random-api``: one function per registered name
  that does not start with ``_`` (``Custom`` and the deprecated ``uniform``,
  ``normal`` left out), named after the operator's *primary* name (so
  ``broadcast_plus`` is ``broadcast-add``); a name containing ``random_`` or
  ``sample_`` goes to the random namespace, ``_random_X`` as ``x`` and
  ``_sample_X`` as ``x-like``.
* ``primary``: each registered name's primary name; ``function``: the
  ``[namespace, function]`` each registered name gives, which the Clojure
  generator (tools/gen_clojure_ops.py) follows.

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_clj_names.py
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import sys

import mxnet as mx
from golden_op_surface import registry_info  # (tools/, this script's directory)
from mxnet.base import _LIB, check_call, mx_uint, py_str

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "clj_names.json")

#: clojure-mxnet ``ndarray`` functions made from the Scala NDArray class's own
#: methods or written by hand (upstream gen/ndarray.clj and ndarray.clj), less the
#: JVM internals (finalize, hash-code, internal, creation-trace, tracing-enabled,
#: log-dispose-warning, org$apache$... accessors).
SCALA_DERIVED = [
    "div", "div=", ">", ">=", "<", "<=", "-", "-=", "%", "%=", "+", "+=", "*", "*=", "**",
    "**=", "/", "t", "at", "context", "copy", "dependencies", "deserialize", "dispose",
    "dispose-deps", "dispose-deps-except", "dtype", "equal", "equals", "greater",
    "greater-equal", "handle", "is-disposed", "lesser", "lesser-equal", "load",
    "load2-array", "load2-map", "maximum", "minimum", "not-equal", "onehot-encode", "power",
    "reshape", "serialize", "set", "shape", "size", "to-array", "to-scalar", "unary--",
    "wait-to-read", "waitall", "writable", "->vec", "empty", "zeros", "ones", "full", "array",
    "arange", "slice", "copy-to", "save", "save-to-file", "load-from-file", "as-in-context",
    "as-type", "concatenate", "->raw", "->float-vec", "->int-vec", "->double-vec",
    "->byte-vec", "shape-vec", "->nd-vec", "->ndarray", "to-float64-array",
    "to-float64-scalar", "to-sparse",
]


def clojure_case(name: str) -> str:
    """The generator's ``clojure-case``."""
    s = re.sub(r"(\s+)([A-Z][a-z]+)", r"\1-\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z]+)", r"\1-\2", s)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", s)
    return s.lower().replace("_", "-").replace("/", "div")


def all_names() -> list:
    n = mx_uint()
    arr = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(n), ctypes.byref(arr)))
    return sorted(py_str(arr[i]) for i in range(n.value))


def primary(name: str) -> str:
    """The primary name of registered operator ``name`` (MXNet's registry)."""
    return registry_info(name)["real"]


def random_fn_name(fn: str) -> str:
    if fn.startswith("-random-"):
        return fn[len("-random-"):]
    if fn.startswith("-sample-"):
        return fn[len("-sample-"):] + "-like"
    return fn


def main(out: str = OUT) -> None:
    names = [n for n in all_names() if not n.startswith("_")]
    prim = {n: primary(n) for n in names}
    api, rnd, function = set(), set(), {}
    for n in names:
        if n == "Custom" or n in ("uniform", "normal"):
            continue
        fn = clojure_case(prim[n])
        if "random_" in n or "sample_" in n:
            rnd.add(random_fn_name(fn))
            function[n] = ["ndarray-random-api", random_fn_name(fn)]
        else:
            api.add(fn)
            function[n] = ["ndarray-api", fn]
    record = {
        "mxnet": mx.__version__,
        "generator": "tools/golden_clj_names.py",
        "ndarray": sorted({clojure_case(n) for n in names} | set(SCALA_DERIVED)),
        "ndarray_generated": sorted({clojure_case(n) for n in names}),
        "ndarray_scala": sorted(SCALA_DERIVED),
        "ndarray-api": sorted(api),
        "ndarray-random-api": sorted(rnd),
        "random": ["normal", "seed", "uniform"],
        "primary": prim,
        "function": function,
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"wrote {out}: ndarray {len(record['ndarray'])}, ndarray-api {len(api)}, "
          f"ndarray-random-api {len(rnd)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
