"""Parity scenarios for issue 21: mxnet.base's helpers, strict arguments, and
the inspection helpers (reductions, sparse.array, from_numpy, default_ctx).

Registered into ``scenarios.SCENARIOS`` when ``scenarios`` is imported.
"""
from __future__ import annotations

import warnings

import numpy as np

from .scenarios import attempt, describe, scenario, values


def _kind(fn):
    """Which builtin family an exception belongs to (MXNet's own classes are
    RuntimeErrors; TypeError / ValueError / IndexError where MXNet raises those)."""
    try:
        fn()
    except TypeError:
        return "TypeError"
    except IndexError:
        return "IndexError"
    except ValueError:
        return "ValueError"
    except RuntimeError:
        return "MXNetError"
    return "none"


@scenario()
def scenario_base_helpers(mx):
    from importlib import import_module
    base = import_module(mx.__name__ + ".base")
    return {
        "integer_types": [t.__name__ for t in base.integer_types if t is not int],
        "string_types": [t.__name__ for t in base.string_types],
        "numeric_is_generic": np.generic in base.numeric_types,
        "mx_real_t": np.dtype(base.mx_real_t).name,
        "py_str": base.py_str(b"caf\xc3\xa9"),
        "null": repr(base._Null),
        "py_slice": import_module(mx.__name__ + ".ndarray.ndarray").py_slice is slice,
    }


@scenario()
def scenario_priority_must_be_an_int(mx):
    kv = mx.kv.create("local")
    kv.init("a", mx.nd.ones((2,)))
    out = {}
    for name, p in (("str", "a"), ("none", None), ("float", 1.5), ("nan", float("nan")),
                    ("float32", np.float32(1)), ("ndarray", mx.nd.ones((1,)))):
        out[name] = [_kind(lambda p=p: kv.push("a", mx.nd.ones((2,)), priority=p)),
                     _kind(lambda p=p: kv.pull("a", out=mx.nd.ones((2,)), priority=p)),
                     _kind(lambda p=p: kv.pushpull("a", mx.nd.ones((2,)), priority=p))]
    for name, p in (("int64", np.int64(3)), ("bool", True), ("big", 2 ** 40), ("neg", -5)):
        kv.push("a", mx.nd.ones((2,)), priority=p)
        o = mx.nd.zeros((2,))
        kv.pull("a", out=o, priority=p)
        out[name] = values(o)
    return out


@scenario()
def scenario_reshape_refuses_float_dims(mx):
    a = mx.nd.array([1, 2, 3, 4])
    return {"float": _kind(lambda: a.reshape((2.0, 2))),
            "float_varargs": _kind(lambda: a.reshape(2.0, 2)),
            "none": _kind(lambda: a.reshape(None)),
            "int64": list(a.reshape((np.int64(2), 2)).shape),
            "bool": list(a.reshape((True, 4)).shape)}


@scenario()
def scenario_empty_key_lists(mx):
    fresh = mx.kv.create("local")
    ok = attempt(lambda: [fresh.push([], []), fresh.pull([], out=[]),
                          fresh.row_sparse_pull([], out=[], row_ids=[])] and "done")
    kv = mx.kv.create("local")
    kv.init("s", mx.nd.ones((2,)))
    return {"fresh": ok,
            "on_a_str_store": [_kind(lambda: kv.push([], [])),
                               _kind(lambda: kv.pull([], out=[])),
                               _kind(lambda: kv.row_sparse_pull([], out=[], row_ids=[]))]}


@scenario()
def scenario_reductions(mx):
    a = mx.nd.array([[1.5, -2, 3], [4, 0.25, -6]])
    return {
        "max": describe(mx.nd.max(a)), "min": describe(mx.nd.min(a)),
        "mean": describe(mx.nd.mean(a)), "prod": describe(mx.nd.prod(a)),
        "max_axis0": describe(a.max(axis=0)), "min_axis1_keep": describe(a.min(axis=1,
                                                                               keepdims=True)),
        "mean_exclude": describe(mx.nd.mean(a, axis=1, exclude=True)),
        "int": describe(mx.nd.max(mx.nd.array([3, 9, 2], dtype="int32"))),
    }


@scenario()
def scenario_sparse_array_and_zeros_like(mx):
    r = mx.nd.sparse.row_sparse_array(([[1.0, 2.0], [3.0, 4.0]], [1, 4]), shape=(6, 2))
    return {
        "copy": describe(mx.nd.sparse.array(r)),
        "float16": describe(mx.nd.sparse.array(r, dtype="float16")),
        "zeros_like": describe(mx.nd.sparse.zeros_like(r)),
        # (MXNet: an AssertionError; mxkv: ValueError, docs/parity.md)
        "dense_refused": attempt(lambda: mx.nd.sparse.array(mx.nd.ones((2,))))["raises"],
        "numpy_refused": _kind(lambda: mx.nd.sparse.array(np.ones((2,)))),
    }


@scenario()
def scenario_from_numpy(mx):
    a = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    m = mx.nd.from_numpy(a)
    writable = a.flags.writeable
    m[2, 1] = 100
    copy = mx.nd.from_numpy(np.arange(3), zero_copy=False)
    return {"shares": float(a[2, 1]), "numpy_writable": bool(writable),
            "value": describe(m), "copy": describe(copy),
            "not_contiguous": _kind(lambda: mx.nd.from_numpy(np.ones((2, 3)).T))}


@scenario()
def scenario_context_default_ctx(mx):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ctx = mx.Context.default_ctx
    return {"ctx": str(ctx), "deprecated": any(issubclass(w.category, DeprecationWarning)
                                               for w in seen)}


@scenario()
def scenario_mod_by_zero(mx):
    """``x % 0`` is 0 in MXNet (its ``mod`` kernel), not NaN as in numpy."""
    a = mx.nd.array([0, 5, -1, 1, -1.5, 3, -3])
    b = mx.nd.array([0, 0, 2, -2, 2, 1.5, -1.5])
    i = mx.nd.array([5, -5, 0], dtype="int32")
    c = a.copy()
    c %= 0
    return {"array": describe(a % b), "scalar": describe(a % 0), "reverse": describe(2 % b),
            "int32": describe(i % mx.nd.array([0, 3, 0], dtype="int32")),
            "int32_scalar": describe(i % 0), "in_place": describe(c)}
