"""Parity scenarios: one KVStore behaviour each, written once against MXNet's API.

Every scenario takes the library as its only positional argument (``mxnet``
or ``mxkv``, both read as ``mx``) and returns plain JSON data: values
(``asnumpy().tolist()``), shapes, dtype names, stypes and contexts as
strings, or ``{"raises": True}`` where the behaviour under test is an error.
Only *that* a call raised is recorded, never the message: MXNet's text and
ours differ on purpose.

``tools/mxnet_golden.py`` runs them with MXNet 1.9.1 and writes
``tests/golden/parity.json``; ``tests/test_parity.py`` runs them with mxkv
and compares. Each scenario builds its own kvstore, so they are independent.

Example::

    from parity.scenarios import SCENARIOS
    import mxkv as mx
    SCENARIOS["push_sum_three_devices[local]"].run(mx)
"""
from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RAISED", "SCENARIOS", "Scenario", "describe", "to_jsonable"]

RAISED: dict[str, bool] = {"raises": True}

KV_TYPES = ("local", "device")
BY_KV_TYPE = {t: {"kv_type": t} for t in KV_TYPES}


@dataclass(frozen=True)
class Scenario:
    """One registered behaviour.

    Parameters
    ----------
    name : str
        Registry key, also the key in the golden file and the pytest id.
    func : callable
        ``func(mx) -> json-able``.
    mxnet_skip : str or None
        Why this must not run against MXNet (it crashes the process);
        ``expected`` then stands in for the golden value.
    expected : object or None
        The result mxkv must give when ``mxnet_skip`` is set.
    deviation : str or None
        mxkv deliberately differs from MXNet here. MXNet's behaviour is still
        recorded in the golden file, and mxkv must return ``mxkv_expected``.
    mxkv_expected : object
        What mxkv must return for a deviation (by default: it raises).
    """

    name: str
    func: Callable[[Any], Any]
    mxnet_skip: str | None = None
    expected: Any = None
    deviation: str | None = None
    mxkv_expected: Any = None

    def run(self, mx: Any) -> Any:
        """Run the scenario with library ``mx``; return its JSON-able result."""
        return to_jsonable(self.func(mx))


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    *,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    mxnet_skip: str | None = None,
    expected: Any = None,
    deviation: str | None = None,
    mxkv_expected: Any = RAISED,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``scenario_<name>(mx, **kw)``, once per entry of ``params``.

    With ``params={"local": {"kv_type": "local"}, ...}`` the registered names
    are ``<name>[local]``, ``<name>[device]``, ...
    """
    if mxnet_skip and expected is None:
        raise ValueError("a scenario skipped on MXNet needs its expected result")

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        base = func.__name__.removeprefix("scenario_")
        variants = params if params is not None else {"": {}}
        for label, kwargs in variants.items():
            name = f"{base}[{label}]" if label else base
            if name in SCENARIOS:
                raise ValueError(f"scenario {name!r} registered twice")
            bound = functools.partial(func, **kwargs) if kwargs else func
            SCENARIOS[name] = Scenario(
                name=name, func=bound, mxnet_skip=mxnet_skip, expected=expected,
                deviation=deviation, mxkv_expected=mxkv_expected if deviation else None)
        return func

    return register


# --------------------------------------------------------------------------- helpers

def to_jsonable(obj: Any) -> Any:
    """Turn a scenario's result into plain JSON types (lists, not tuples)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"scenario returned a {type(obj).__name__}, which is not JSON data: {obj!r}")


def describe(x: Any) -> dict[str, Any]:
    """Everything observable about an NDArray: values, shape, dtype, stype, context."""
    out = {
        "value": x.asnumpy().tolist(),
        "shape": list(x.shape),
        "dtype": np.dtype(x.dtype).name,
        "stype": x.stype,
        "ctx": str(x.context),
    }
    if x.stype == "row_sparse":
        out["indices"] = x.indices.asnumpy().tolist()
    return out


def values(x: Any) -> Any:
    return x.asnumpy().tolist()


def attempt(fn: Callable[[], Any]) -> dict[str, Any]:
    """``{"raises": True}`` if ``fn()`` raises, else ``{"raises": False, "result": ...}``.

    ``fn`` must read its results back (``asnumpy``) so that MXNet's
    asynchronous engine reports its errors inside the ``try``.
    """
    try:
        result = fn()
    except Exception:  # noqa: BLE001 - only *that* it raised is compared
        return dict(RAISED)
    return {"raises": False, "result": result}


def cpus(mx: Any, n: int) -> list:
    return [mx.cpu(i) for i in range(n)]


BASE = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
SHAPE = (2, 3)


def base(mx: Any, scale: float = 1.0, ctx: Any = None, dtype: str = "float32") -> Any:
    return mx.nd.array(np.array(BASE) * scale, ctx=ctx, dtype=dtype)


def rsp(mx: Any, data: list, indices: list, shape: tuple, ctx: Any = None) -> Any:
    return mx.nd.sparse.row_sparse_array(
        (np.array(data, dtype=np.float32), np.array(indices, dtype=np.int64)),
        shape=shape, ctx=ctx)


RSP_SHAPE = (6, 2)


def rsp_weight(mx: Any, ctx: Any = None) -> Any:
    """A (6, 2) row_sparse value with rows 0, 2 and 5 set."""
    return rsp(mx, [[1.0, 10.0], [2.0, 20.0], [5.0, 50.0]], [0, 2, 5], RSP_SHAPE, ctx)


def rsp_zeros(mx: Any, ctx: Any = None) -> Any:
    return mx.nd.sparse.zeros("row_sparse", RSP_SHAPE, ctx=ctx)


def row_ids(mx: Any, ids: list, dtype: str = "int64") -> Any:
    return mx.nd.array(ids, dtype=dtype)


# --------------------------------------------------------------------------- init / pull

@scenario(params=BY_KV_TYPE)
def scenario_init_pull_int_key(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_init_pull_str_key(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("weight", base(mx))
    out = mx.nd.zeros(SHAPE)
    kv.pull("weight", out=out)
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_init_list_of_keys(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init([5, 7, 11], [mx.nd.array([1.0, 2.0]), base(mx), mx.nd.ones((4,)) * 3])
    outs = [mx.nd.zeros((2,)), mx.nd.zeros(SHAPE), mx.nd.zeros((4,))]
    kv.pull([5, 7, 11], out=outs)
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_init_list_of_str_keys(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(["a", "b", "c"], [base(mx, 1), base(mx, 2), base(mx, 3)])
    outs = [mx.nd.zeros(SHAPE) for _ in range(3)]
    kv.pull(["c", "a", "b"], out=outs)
    return {"outs": [values(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_init_copies_value(mx, kv_type):
    """Changing the array after init does not change the stored value."""
    kv = mx.kv.create(kv_type)
    v = base(mx)
    kv.init(3, v)
    v += 100
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"out": values(out)}


@scenario(params=BY_KV_TYPE)
def scenario_pull_to_several_outs_on_several_contexts(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))
    outs = [mx.nd.zeros(SHAPE, ctx=c) for c in cpus(mx, 4)]
    kv.pull(3, out=outs)
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_pull_single_out_vs_list(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))
    single = mx.nd.zeros(SHAPE)
    kv.pull(3, out=single)
    listed = mx.nd.zeros(SHAPE, ctx=mx.cpu(1))
    kv.pull(3, out=[listed])
    return {"single": describe(single), "list": describe(listed)}


@scenario(params=BY_KV_TYPE)
def scenario_pull_is_a_copy(mx, kv_type):
    """Changing a pulled array leaves the store as it was."""
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))
    first = mx.nd.zeros(SHAPE)
    kv.pull(3, out=first)
    first += 100
    second = mx.nd.zeros(SHAPE)
    kv.pull(3, out=second)
    return {"second": values(second)}


# --------------------------------------------------------------------------- push

@scenario(params=BY_KV_TYPE)
def scenario_push_overwrites_without_updater(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.ones(SHAPE))
    seen = []
    for scale in (5.0, 7.0):
        kv.push(3, base(mx, scale))
        out = mx.nd.zeros(SHAPE)
        kv.pull(3, out=out)
        seen.append(values(out))
    return {"after_each_push": seen}


@scenario(params=BY_KV_TYPE)
def scenario_push_sum_three_devices(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE))
    kv.push(3, [base(mx, i + 1, ctx=c) for i, c in enumerate(cpus(mx, 3))])
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_push_sum_str_key_four_devices(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", mx.nd.zeros(SHAPE))
    kv.push("w", [mx.nd.ones(SHAPE, ctx=c) * 0.5 for c in cpus(mx, 4)])
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    return {"out": values(out)}


@scenario(params=BY_KV_TYPE)
def scenario_push_repeated_key_in_key_list(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE))
    kv.push([3, 3, 3], [base(mx, i + 1, ctx=c) for i, c in enumerate(cpus(mx, 3))])
    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE, ctx=mx.cpu(1))]
    kv.pull([3, 3], out=outs)
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_push_list_of_lists(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init([5, 7], [mx.nd.zeros(SHAPE), mx.nd.zeros((4,))])
    devs = cpus(mx, 3)
    kv.push([5, 7], [[base(mx, i + 1, ctx=c) for i, c in enumerate(devs)],
                     [mx.nd.ones((4,), ctx=c) * (i + 1) for i, c in enumerate(devs)]])
    outs = [[mx.nd.zeros(SHAPE, ctx=c) for c in devs], [mx.nd.zeros((4,), ctx=c) for c in devs]]
    kv.pull([5, 7], out=outs)
    return {"outs": [[describe(o) for o in row] for row in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_push_list_of_str_keys(mx, kv_type):
    kv = mx.kv.create(kv_type)
    keys = ["b", "c", "d"]
    kv.init(keys, [mx.nd.zeros(SHAPE)] * 3)
    kv.push(keys, [base(mx, 1), base(mx, 2), base(mx, 3)])
    outs = [mx.nd.zeros(SHAPE) for _ in keys]
    kv.pull(keys, out=outs)
    return {"outs": [values(o) for o in outs]}


@scenario(params=BY_KV_TYPE,
          deviation="mxkv copies a pushed value: MXNet keeps a one-device push by reference, "
                    "so writing to the pushed array afterwards changes the stored value",
          mxkv_expected={"out": BASE})
def scenario_push_single_device_then_mutate_source(mx, kv_type):
    """MXNet stores a one-device push by reference: later writes to it show in pulls."""
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE))
    grad = base(mx)
    kv.push(3, grad)
    grad += 10
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"out": values(out)}


# --------------------------------------------------------------------------- pushpull / broadcast

@scenario(params=BY_KV_TYPE)
def scenario_pushpull_with_out(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE))
    devs = cpus(mx, 3)
    outs = [mx.nd.zeros(SHAPE, ctx=c) for c in devs[:2]]
    kv.pushpull(3, [base(mx, i + 1, ctx=c) for i, c in enumerate(devs)], out=outs)
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_pushpull_in_place(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE))
    vals = [base(mx, i + 1, ctx=c) for i, c in enumerate(cpus(mx, 3))]
    kv.pushpull(3, vals)
    return {"values": [describe(v) for v in vals]}


@scenario(params=BY_KV_TYPE)
def scenario_pushpull_list_of_str_keys(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(["x", "y"], [mx.nd.zeros(SHAPE), mx.nd.zeros((2,))])
    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros((2,))]
    kv.pushpull(["x", "y"], [base(mx, 2), mx.nd.array([7.0, 8.0])], out=outs)
    return {"outs": [values(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_broadcast(mx, kv_type):
    kv = mx.kv.create(kv_type)
    outs = [mx.nd.zeros(SHAPE, ctx=c) for c in cpus(mx, 2)]
    kv.broadcast(3, base(mx, 2), out=outs)
    stored = mx.nd.zeros(SHAPE)
    kv.pull(3, out=stored)
    return {"outs": [describe(o) for o in outs], "stored": values(stored)}


@scenario(params=BY_KV_TYPE)
def scenario_broadcast_list_of_str_keys(mx, kv_type):
    kv = mx.kv.create(kv_type)
    outs = [mx.nd.zeros(SHAPE), mx.nd.zeros((2,))]
    kv.broadcast(["p", "q"], [base(mx, 3), mx.nd.array([1.0, -1.0])], out=outs)
    return {"outs": [values(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_broadcast_same_key_twice_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.broadcast(3, base(mx), out=mx.nd.zeros(SHAPE))

    def again():
        out = mx.nd.zeros(SHAPE)
        kv.broadcast(3, base(mx, 2), out=out)
        return values(out)

    return attempt(again)


# --------------------------------------------------------------------------- row_sparse

@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_init_pull_all_rows(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    out = rsp_zeros(mx)
    kv.row_sparse_pull("w", out=out, row_ids=row_ids(mx, [0, 1, 2, 3, 4, 5]))
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_duplicate_unsorted_row_ids(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    out = rsp_zeros(mx)
    kv.row_sparse_pull("w", out=out, row_ids=row_ids(mx, [5, 0, 0, 3]))
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_float_row_ids(mx, kv_type):
    """row_ids made by ``nd.array`` default to float32; MXNet accepts them."""
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    out = rsp_zeros(mx)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([2, 1]))
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_2d_row_ids(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    out = rsp_zeros(mx)
    kv.row_sparse_pull("w", out=out, row_ids=row_ids(mx, [[5, 4], [2, 5]]))
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_several_outs_one_row_ids(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    outs = [rsp_zeros(mx, ctx=c) for c in cpus(mx, 3)]
    kv.row_sparse_pull("w", out=outs, row_ids=row_ids(mx, [2, 1]))
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_several_outs_several_row_ids(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    outs = [rsp_zeros(mx, ctx=c) for c in cpus(mx, 3)]
    ids = [row_ids(mx, [0]), row_ids(mx, [5, 2, 5]), row_ids(mx, [4, 4])]
    kv.row_sparse_pull("w", out=outs, row_ids=ids)
    return {"outs": [describe(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_push_overwrites(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    kv.push("w", rsp(mx, [[3.0, 4.0]], [1], RSP_SHAPE))
    out = rsp_zeros(mx)
    kv.row_sparse_pull("w", out=out, row_ids=row_ids(mx, [0, 1, 2, 3, 4, 5]))
    return {"out": describe(out)}


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_push_several_devices_union(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("g", rsp_zeros(mx))
    devs = cpus(mx, 4)
    vals = [rsp(mx, [[i + 1.0, -(i + 1.0)]], [2 * i], RSP_SHAPE, ctx=devs[i]) for i in range(3)]
    vals.append(rsp(mx, [[1.0, 1.0], [1.0, 1.0]], [0, 5], RSP_SHAPE, ctx=devs[3]))
    kv.push("g", vals)
    sparse_out = rsp_zeros(mx)
    kv.row_sparse_pull("g", out=sparse_out, row_ids=row_ids(mx, [0, 1, 2, 3, 4, 5]))
    dense_out = mx.nd.zeros(RSP_SHAPE)
    kv.pull("g", out=dense_out, ignore_sparse=False)
    return {"row_sparse_pull": describe(sparse_out), "dense_pull": describe(dense_out)}


@scenario(params=BY_KV_TYPE)
def scenario_pull_row_sparse_key_into_dense_out(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))
    result = {}
    for ignore in (True, False):
        out = mx.nd.ones(RSP_SHAPE) * 7
        kv.pull("w", out=out, ignore_sparse=ignore)
        result[f"ignore_sparse_{ignore}"] = describe(out)
    return result


@scenario(params=BY_KV_TYPE)
def scenario_pull_dense_key_into_row_sparse_out(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.ones(RSP_SHAPE) * 3)
    result = {}
    for ignore in (True, False):
        out = (mx.nd.ones(RSP_SHAPE) * 7).tostype("row_sparse")
        kv.pull(3, out=out, ignore_sparse=ignore)
        result[f"ignore_sparse_{ignore}"] = {"value": values(out), "stype": out.stype}
    return result


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_dense_key_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.ones(RSP_SHAPE))

    def pull():
        out = rsp_zeros(mx)
        kv.row_sparse_pull(3, out=out, row_ids=row_ids(mx, [1]))
        return values(out)

    return attempt(pull)


@scenario(params=BY_KV_TYPE)
def scenario_row_sparse_pull_into_dense_out_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("w", rsp_weight(mx))

    def pull():
        out = mx.nd.zeros(RSP_SHAPE)
        kv.row_sparse_pull("w", out=out, row_ids=row_ids(mx, [1]))
        return values(out)

    return attempt(pull)


@scenario()
def scenario_row_sparse_pull_row_ids_count_mismatch_raises(mx):
    kv = mx.kv.create("local")
    kv.init("w", rsp_weight(mx))

    def pull():
        outs = [rsp_zeros(mx), rsp_zeros(mx)]
        kv.row_sparse_pull("w", out=outs, row_ids=[row_ids(mx, [1]), row_ids(mx, [2]),
                                                   row_ids(mx, [3])])
        return [values(o) for o in outs]

    return attempt(pull)


def _rsp_pull_attempt(mx, kv, key):
    def pull():
        out = rsp_zeros(mx)
        kv.row_sparse_pull(key, out=out, row_ids=row_ids(mx, [4, 1]))
        return describe(out)

    return attempt(pull)


DENSE_6x2 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]


@scenario(deviation="mxkv keeps the key row_sparse: a dense push to a row_sparse key makes "
                    "MXNet's stored value dense, so later row_sparse_pulls of it fail",
          mxkv_expected={
              "dense_pull": DENSE_6x2,
              "row_sparse_pull": {"raises": False, "result": {
                  "ctx": "cpu(0)", "dtype": "float32", "indices": [1, 4], "shape": [6, 2],
                  "stype": "row_sparse",
                  "value": [[0.0, 0.0], [3.0, 4.0], [0.0, 0.0], [0.0, 0.0], [9.0, 10.0],
                            [0.0, 0.0]]}}})
def scenario_dense_push_to_row_sparse_key(mx):
    kv = mx.kv.create("local")
    kv.init("w", rsp_weight(mx))
    kv.push("w", mx.nd.array(DENSE_6x2))
    dense = mx.nd.zeros(RSP_SHAPE)
    kv.pull("w", out=dense, ignore_sparse=False)
    return {"dense_pull": values(dense), "row_sparse_pull": _rsp_pull_attempt(mx, kv, "w")}


@scenario()
def scenario_row_sparse_push_to_dense_key(mx):
    """MXNet's test_single_kv_pair pushes row_sparse values to dense keys."""
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(RSP_SHAPE))
    kv.push(3, rsp(mx, [[3.0, 4.0], [9.0, 10.0]], [1, 4], RSP_SHAPE))
    dense = mx.nd.zeros(RSP_SHAPE)
    kv.pull(3, out=dense)
    return {"dense_pull": describe(dense)}


# --------------------------------------------------------------------------- updater

@scenario(params=BY_KV_TYPE)
def scenario_updater_called_once_per_push_with_merged(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.ones(SHAPE))
    calls = []

    def update(key, grad, weight):
        calls.append({"key": key, "grad": values(grad), "weight_before": values(weight)})
        weight += grad * 2

    kv._set_updater(update)
    devs = cpus(mx, 3)
    for _ in range(2):
        kv.push(3, [base(mx, 0.5, ctx=c) for c in devs])
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"calls": calls, "out": values(out)}


@scenario(params=BY_KV_TYPE)
def scenario_updater_key_order_for_key_list(mx, kv_type):
    """A push of several keys calls the updater once per key (MXNet: in sorted key order)."""
    kv = mx.kv.create(kv_type)
    kv.init([9, 4, 6], [mx.nd.zeros((2,))] * 3)
    calls = []

    def update(key, grad, weight):
        calls.append(key)
        weight += grad

    kv._set_updater(update)
    kv.push([9, 4, 6, 4], [mx.nd.ones((2,)) * k for k in (9, 4, 6, 4)])
    outs = [mx.nd.zeros((2,)) for _ in range(3)]
    kv.pull([9, 4, 6], out=outs)
    return {"calls": calls, "outs": [values(o) for o in outs]}


@scenario(params=BY_KV_TYPE)
def scenario_updater_str_key(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init("weight", mx.nd.ones(SHAPE))
    keys = []

    def update(key, grad, weight):
        # MXNet hands str keys to the updater as bytes; compare the text only.
        keys.append(key.decode() if isinstance(key, bytes) else key)
        weight += grad * 2

    kv._set_updater(update)
    kv.push("weight", base(mx))
    out = mx.nd.zeros(SHAPE)
    kv.pull("weight", out=out)
    return {"keys": keys, "out": values(out)}


@scenario(params=BY_KV_TYPE)
def scenario_updater_input_context(mx, kv_type):
    """Where the merged gradient given to the updater lives, for 1 and 3 devices."""
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.ones(SHAPE))
    ctxs = []
    kv._set_updater(lambda key, grad, weight: ctxs.append(str(grad.context)))
    kv.push(3, base(mx, ctx=mx.cpu(1)))
    kv.push(3, [base(mx, ctx=c) for c in cpus(mx, 3)])
    return {"grad_contexts": ctxs}


# --------------------------------------------------------------------------- optimizers

W0 = [[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]]
G0 = [[0.1, -0.2, 0.3], [-0.4, 0.5, -0.6]]


def _train(mx, kv_type, optimizer, pushes=3, ndev=1, key=3):
    kv = mx.kv.create(kv_type)
    kv.init(key, mx.nd.array(W0))
    kv.set_optimizer(optimizer)
    devs = cpus(mx, ndev)
    seen = []
    for step in range(pushes):
        kv.push(key, [mx.nd.array(G0, ctx=c) * (step + 1 + i) for i, c in enumerate(devs)])
        out = mx.nd.zeros(SHAPE)
        kv.pull(key, out=out)
        seen.append(values(out))
    return {"after_each_push": seen}


@scenario(params=BY_KV_TYPE)
def scenario_sgd_default(mx, kv_type):
    return _train(mx, kv_type, mx.optimizer.SGD(), pushes=2)


@scenario(params=BY_KV_TYPE)
def scenario_sgd_momentum_three_pushes(mx, kv_type):
    return _train(mx, kv_type, mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))


@scenario(params=BY_KV_TYPE)
def scenario_sgd_momentum_three_devices(mx, kv_type):
    return _train(mx, kv_type, mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), ndev=3)


@scenario(params=BY_KV_TYPE)
def scenario_sgd_rescale_grad_and_wd(mx, kv_type):
    opt = mx.optimizer.SGD(learning_rate=0.1, rescale_grad=0.5, wd=0.1)
    return _train(mx, kv_type, opt)


@scenario(params=BY_KV_TYPE)
def scenario_sgd_momentum_rescale_grad_wd_three_devices(mx, kv_type):
    opt = mx.optimizer.SGD(learning_rate=0.05, momentum=0.9, wd=0.01, rescale_grad=1.0 / 3)
    return _train(mx, kv_type, opt, ndev=3)


@scenario(params=BY_KV_TYPE)
def scenario_sgd_str_key(mx, kv_type):
    return _train(mx, kv_type, mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), key="fc_weight")


@scenario(params=BY_KV_TYPE)
def scenario_adam_three_pushes(mx, kv_type):
    return _train(mx, kv_type, mx.optimizer.Adam(learning_rate=0.01))


@scenario()
def scenario_adam_wd_rescale_grad(mx):
    opt = mx.optimizer.Adam(learning_rate=0.02, beta1=0.8, beta2=0.99, wd=0.05, rescale_grad=0.5)
    return _train(mx, "local", opt)


@scenario()
def scenario_optimizer_by_name(mx):
    """``mx.optimizer.create('sgd', ...)`` is the same SGD."""
    return _train(mx, "local", mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))


def _states_roundtrip(mx, make_opt, dump_optimizer):
    """Train 2 pushes, save states, resume in a fresh store, push a 3rd; vs 3 straight."""
    straight = _train(mx, "local", make_opt(), pushes=3)["after_each_push"][-1]

    grads = [mx.nd.array(G0) * (step + 1) for step in range(3)]
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.array(W0))
    kv.set_optimizer(make_opt())
    for g in grads[:2]:
        kv.push(3, g)
    weight = mx.nd.zeros(SHAPE)
    kv.pull(3, out=weight)
    with tempfile.TemporaryDirectory() as tmp:
        fname = os.path.join(tmp, "opt.states")
        kv.save_optimizer_states(fname, dump_optimizer=dump_optimizer)
        resumed = mx.kv.create("local")
        resumed.init(3, weight)
        resumed.set_optimizer(make_opt())
        resumed.load_optimizer_states(fname)
    resumed.push(3, grads[2])
    out = mx.nd.zeros(SHAPE)
    resumed.pull(3, out=out)

    fresh = mx.kv.create("local")
    fresh.init(3, weight)
    fresh.set_optimizer(make_opt())
    fresh.push(3, grads[2])
    fresh_out = mx.nd.zeros(SHAPE)
    fresh.pull(3, out=fresh_out)
    return {"straight": straight, "resumed": values(out), "without_states": values(fresh_out)}


@scenario()
def scenario_optimizer_states_roundtrip_sgd_momentum(mx):
    return _states_roundtrip(
        mx, lambda: mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), dump_optimizer=False)


@scenario()
def scenario_optimizer_states_roundtrip_adam_dump_optimizer(mx):
    return _states_roundtrip(
        mx, lambda: mx.optimizer.Adam(learning_rate=0.01), dump_optimizer=True)


@scenario()
def scenario_optimizer_states_roundtrip_adam_states_only(mx):
    """Without dump_optimizer MXNet restores the moments but not Adam's step count."""
    return _states_roundtrip(
        mx, lambda: mx.optimizer.Adam(learning_rate=0.01), dump_optimizer=False)


# --------------------------------------------------------------------------- compression

GRAD_2BIT = [[0.3, -0.3, 0.6, -0.6, 0.1],
             [1.2, -0.05, 0.25, -0.25, 2.0],
             [-2.0, 0.0, 0.45, -0.45, 0.7]]


def _compressed_pushes(mx, kv_type, ndev, pushes=4, updater=False):
    kv = mx.kv.create(kv_type)
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("g", mx.nd.zeros((3, 5)))
    if updater:
        def update(key, grad, weight):
            weight += grad
        kv._set_updater(update)
    devs = cpus(mx, ndev)
    seen = []
    for _ in range(pushes):
        kv.push("g", [mx.nd.array(GRAD_2BIT, ctx=c) * (i + 1) for i, c in enumerate(devs)])
        out = mx.nd.zeros((3, 5))
        kv.pull("g", out=out)
        seen.append(values(out))
    return {"after_each_push": seen}


@scenario(params={"device": {"kv_type": "device"},
                  "local_allreduce_device": {"kv_type": "local_allreduce_device"}})
def scenario_compression_2bit_one_device(mx, kv_type):
    return _compressed_pushes(mx, kv_type, ndev=1)


@scenario()
def scenario_compression_2bit_three_devices(mx):
    return _compressed_pushes(mx, "device", ndev=3)


@scenario()
def scenario_compression_2bit_with_updater(mx):
    return _compressed_pushes(mx, "device", ndev=2, pushes=3, updater=True)


@scenario()
def scenario_compression_2bit_large_array(mx):
    """More than one packed word per row: 2 x 37 values, pushed from 2 devices."""
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    grad = np.linspace(-1.5, 1.5, 74, dtype=np.float32).reshape(2, 37)
    kv.init(0, mx.nd.zeros((2, 37)))
    seen = []
    for _ in range(3):
        kv.push(0, [mx.nd.array(grad, ctx=c) for c in cpus(mx, 2)])
        out = mx.nd.zeros((2, 37))
        kv.pull(0, out=out)
        seen.append(values(out))
    return {"after_each_push": seen}


@scenario(params={"local": {"kv_type": "local"},
                  "local_allreduce_cpu": {"kv_type": "local_allreduce_cpu"}})
def scenario_compression_refused(mx, kv_type):
    kv = mx.kv.create(kv_type)
    return attempt(lambda: kv.set_gradient_compression({"type": "2bit", "threshold": 0.5}))


@scenario()
def scenario_compression_bad_threshold(mx):
    result = {}
    for label, threshold in (("zero", 0), ("negative", -1.0)):
        kv = mx.kv.create("device")
        result[label] = attempt(
            lambda kv=kv, t=threshold: kv.set_gradient_compression(
                {"type": "2bit", "threshold": t}))
    return result


@scenario()
def scenario_compression_unknown_type(mx):
    kv = mx.kv.create("device")
    return attempt(lambda: kv.set_gradient_compression({"type": "3bit", "threshold": 0.5}))


# --------------------------------------------------------------------------- dtypes

DTYPE_PARAMS = {f"{d},{t}": {"dtype": d, "kv_type": t}
                for d in ("float16", "float64", "int32") for t in KV_TYPES}


@scenario(params=DTYPE_PARAMS)
def scenario_dtype_push_pull(mx, dtype, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, mx.nd.zeros(SHAPE, dtype=dtype))
    single = mx.nd.zeros(SHAPE, dtype=dtype)
    kv.pull(3, out=single)
    kv.push(3, [base(mx, i + 1, ctx=c, dtype=dtype) for i, c in enumerate(cpus(mx, 3))])
    outs = [mx.nd.zeros(SHAPE, ctx=c, dtype=dtype) for c in cpus(mx, 2)]
    kv.pull(3, out=outs)
    return {"init": describe(single), "outs": [describe(o) for o in outs]}


@scenario()
def scenario_dtype_pull_into_other_dtype(mx):
    """A float16 key pulled into a float32 out (MXNet casts)."""
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,), dtype="float16") * 1.5)

    def pull():
        out = mx.nd.zeros((2,))
        kv.pull(3, out=out)
        return describe(out)

    return attempt(pull)


@scenario()
def scenario_dtype_push_other_dtype(mx):
    """A float32 push to a float16 key, pulled into a float16 out (MXNet casts)."""
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros((2,), dtype="float16"))

    def push():
        kv.push(3, mx.nd.ones((2,)) * 2)
        out = mx.nd.zeros((2,), dtype="float16")
        kv.pull(3, out=out)
        return describe(out)

    return attempt(push)


# --------------------------------------------------------------------------- create / type

TYPE_STRINGS = ("local", "Local", "device", "Device", "local_allreduce_cpu",
                "local_allreduce_device", "LOCAL_ALLREDUCE_DEVICE")


@scenario(params={t: {"name": t} for t in TYPE_STRINGS})
def scenario_create_type_string(mx, name):
    kv = mx.kv.create(name)
    return {"type": kv.type, "rank": kv.rank, "num_workers": kv.num_workers}


@scenario()
def scenario_create_default(mx):
    kv = mx.kv.create()
    return {"type": kv.type, "rank": kv.rank, "num_workers": kv.num_workers}


@scenario(deviation="mxkv refuses a type name it does not know (a typo such as 'lcoal'), "
                    "naming the known types: MXNet makes a local store for any name without "
                    "'dist'/'nccl', keeping the name")
def scenario_create_unrecognised_type_string(mx):
    """MXNet makes a local store for any name without 'dist'/'nccl', keeping the name."""
    return attempt(lambda: mx.kv.create("mystore").type)


@scenario()
def scenario_create_non_string_raises(mx):
    return attempt(lambda: mx.kv.create(3).type)


@scenario()
def scenario_compression_allowed_by_type(mx):
    result = {}
    for name in ("local", "device", "local_allreduce_cpu", "local_allreduce_device"):
        kv = mx.kv.create(name)
        result[name] = attempt(
            lambda kv=kv: kv.set_gradient_compression({"type": "2bit", "threshold": 1.0}))
    return result


# --------------------------------------------------------------------------- errors

@scenario(params=BY_KV_TYPE)
def scenario_duplicate_init_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx, 2))
    result = attempt(lambda: kv.init(3, base(mx, 3)))
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"second_init": result, "stored": values(out)}


@scenario()
def scenario_duplicate_init_str_key_raises(mx):
    kv = mx.kv.create("local")
    kv.init("w", base(mx, 2))
    result = attempt(lambda: kv.init("w", base(mx, 3)))
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    return {"second_init": result, "stored": values(out)}


@scenario()
def scenario_duplicate_key_in_one_init_raises(mx):
    kv = mx.kv.create("local")
    return attempt(lambda: kv.init([3, 3], [base(mx), base(mx, 2)]))


@scenario(params=BY_KV_TYPE)
def scenario_pull_uninitialized_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))

    def pull():
        out = mx.nd.zeros(SHAPE)
        kv.pull(4, out=out)
        return values(out)

    return attempt(pull)


@scenario()
def scenario_pull_uninitialized_str_key_raises(mx):
    kv = mx.kv.create("local")
    kv.init("a", base(mx))

    def pull():
        out = mx.nd.zeros(SHAPE)
        kv.pull("b", out=out)
        return values(out)

    return attempt(pull)


@scenario()
def scenario_pull_from_empty_store_raises(mx):
    kv = mx.kv.create("local")

    def pull():
        out = mx.nd.zeros(SHAPE)
        kv.pull(3, out=out)
        return values(out)

    return attempt(pull)


@scenario(params=BY_KV_TYPE)
def scenario_push_uninitialized_single_value_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))
    result = attempt(lambda: kv.push(4, base(mx)))
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    return {"push": result, "other_key": values(out)}


@scenario()
def scenario_push_uninitialized_str_key_raises(mx):
    kv = mx.kv.create("local")
    kv.init("a", base(mx))
    return attempt(lambda: kv.push("b", base(mx)))


@scenario(
    mxnet_skip="a multi-value push to an unknown key segfaults MXNet 1.9.1 (CommCPU::Reduce "
               "on an unallocated merge buffer)",
    expected=RAISED)
def scenario_push_uninitialized_multi_value_raises(mx):
    kv = mx.kv.create("local")
    kv.init(3, base(mx))
    return attempt(lambda: kv.push(4, [base(mx, ctx=c) for c in cpus(mx, 2)]))


@scenario()
def scenario_mixed_key_types_in_one_call_raise(mx):
    kv = mx.kv.create("local")
    result = {"init": attempt(lambda: kv.init([3, "a"], [base(mx), base(mx)]))}
    kv.init([3, 4], [base(mx), base(mx)])
    result["push"] = attempt(lambda: kv.push([3, "a"], [base(mx), base(mx)]))

    def pull():
        outs = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
        kv.pull([3, "a"], out=outs)
        return [values(o) for o in outs]

    result["pull"] = attempt(pull)
    return result


@scenario()
def scenario_mixed_key_types_across_calls_int_first(mx):
    kv = mx.kv.create("local")
    kv.init(3, base(mx))

    def pull_str():
        out = mx.nd.zeros(SHAPE)
        kv.pull("a", out=out)
        return values(out)

    result = {
        "init_str": attempt(lambda: kv.init("a", base(mx))),
        "push_str": attempt(lambda: kv.push("a", base(mx))),
        "pull_str": attempt(pull_str),
    }
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    result["int_key_still_works"] = values(out)
    return result


@scenario()
def scenario_mixed_key_types_across_calls_str_first(mx):
    kv = mx.kv.create("local")
    kv.init("a", base(mx))
    result = {"init_int": attempt(lambda: kv.init(3, base(mx)))}
    out = mx.nd.zeros(SHAPE)
    kv.pull("a", out=out)
    result["str_key_still_works"] = values(out)
    return result


@scenario(params=BY_KV_TYPE)
def scenario_push_shape_mismatch_several_devices_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))

    def push():
        kv.push(3, [base(mx, ctx=mx.cpu(0)), mx.nd.ones((4,), ctx=mx.cpu(1))])
        out = mx.nd.zeros(SHAPE)
        kv.pull(3, out=out)
        return values(out)

    return attempt(push)


@scenario(params=BY_KV_TYPE,
          deviation="mxkv raises: MXNet silently replaces the stored (2, 3) value by the "
                    "pushed (4,) array on a one-device push (no shape check), corrupting the key")
def scenario_push_shape_mismatch_single_device(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))

    def push():
        kv.push(3, mx.nd.ones((4,)) * 5)
        out = mx.nd.zeros((4,))
        kv.pull(3, out=out)
        return describe(out)

    return attempt(push)


@scenario(params=BY_KV_TYPE)
def scenario_pull_into_wrong_shape_raises(mx, kv_type):
    kv = mx.kv.create(kv_type)
    kv.init(3, base(mx))

    def pull():
        out = mx.nd.zeros((4,))
        kv.pull(3, out=out)
        return values(out)

    return attempt(pull)


@scenario()
def scenario_key_value_length_mismatch_raises(mx):
    kv = mx.kv.create("local")
    result = {"init": attempt(lambda: kv.init([3, 4, 5], [base(mx), base(mx)]))}
    kv.init([3, 4], [base(mx), base(mx)])
    result["push"] = attempt(lambda: kv.push([3, 4], [base(mx)]))

    def pull():
        out = mx.nd.zeros(SHAPE)
        kv.pull([3, 4], out=[out])
        return values(out)

    result["pull"] = attempt(pull)
    return result


# --------------------------------------------------------------------------- nd level

@scenario()
def scenario_nd_array_dtype_defaults(mx):
    cases = {
        "python_list": mx.nd.array([1, 2, 3]),
        "numpy_int64": mx.nd.array(np.array([1, 2], dtype=np.int64)),
        "numpy_float64": mx.nd.array(np.array([1.5, 2.5])),
        "explicit_int32": mx.nd.array([1, 2], dtype="int32"),
        "explicit_float64_np": mx.nd.array([1, 2], dtype=np.float64),
        "zeros": mx.nd.zeros((2,)),
        "ones_float16": mx.nd.ones((2,), dtype="float16"),
        "empty": mx.nd.empty((2, 2)),
    }
    result = {}
    for name, x in cases.items():
        result[name] = {"dtype": np.dtype(x.dtype).name, "shape": list(x.shape),
                        "dtype_is_numpy_type": x.dtype is np.dtype(x.dtype).type,
                        "ctx": str(x.context), "stype": x.stype}
        if name != "empty":
            result[name]["value"] = values(x)
    return result


@scenario()
def scenario_nd_astype(mx):
    x = mx.nd.array([1.7, -1.7, 2.5, -0.5, 1000.0])
    same = x.astype("float32")
    same += 1
    return {
        "int32": describe(x.astype("int32")),
        "float16": describe(x.astype("float16")),
        "float64": describe(x.astype(np.float64)),
        "same_dtype_copies": values(x),
        "copy_false_same_object": x.astype("float32", copy=False) is x,
    }


@scenario()
def scenario_nd_copyto_across_cpu_contexts(mx):
    src = base(mx, ctx=mx.cpu(0))
    to_ctx = src.copyto(mx.cpu(2))
    dst = mx.nd.zeros(SHAPE, ctx=mx.cpu(1))
    returned = src.copyto(dst)
    src += 100
    moved = src.as_in_context(mx.cpu(3))
    return {
        "to_context": describe(to_ctx),
        "to_array": describe(dst),
        "returns_target": returned is dst,
        "as_in_context": describe(moved),
        "as_in_same_context_is_self": src.as_in_context(mx.cpu(0)) is src,
    }


@scenario()
def scenario_nd_save_load_roundtrip(mx):
    with tempfile.TemporaryDirectory() as tmp:
        fdict = os.path.join(tmp, "dict.params")
        mx.nd.save(fdict, {"b": mx.nd.array([1, 2], dtype="int32"),
                           "a": mx.nd.array(W0, dtype="float64")})
        loaded = mx.nd.load(fdict)
        flist = os.path.join(tmp, "list.params")
        mx.nd.save(flist, [mx.nd.ones((2,)), mx.nd.zeros((1, 3), dtype="float16")])
        loaded_list = mx.nd.load(flist)
    return {
        "dict_type": type(loaded).__name__,
        "dict": {k: describe(v) for k, v in sorted(loaded.items())},
        "list_type": type(loaded_list).__name__,
        "list": [describe(v) for v in loaded_list],
    }


@scenario()
def scenario_nd_row_sparse_basics(mx):
    w = rsp_weight(mx)
    dense = mx.nd.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    as_rsp = dense.tostype("row_sparse")
    return {
        "row_sparse_array": describe(w),
        "data": describe(w.data),
        "tostype_row_sparse": describe(as_rsp),
        "back_to_default": describe(as_rsp.tostype("default")),
        "sparse_zeros": describe(rsp_zeros(mx)),
    }


@scenario()
def scenario_context_basics(mx):
    return {
        "str_cpu1": str(mx.cpu(1)),
        "repr_cpu1": repr(mx.cpu(1)),
        "str_cpu_pinned": str(mx.cpu_pinned(0)),
        "equal": mx.cpu(1) == mx.Context("cpu", 1),
        "not_equal": mx.cpu(1) == mx.cpu(2),
        "device_type": mx.cpu(2).device_type,
        "device_id": mx.cpu(2).device_id,
        "typeids": [mx.cpu().device_typeid, mx.cpu_pinned().device_typeid],
        "current": str(mx.current_context()),
    }


# The scenarios of issue 7 live in their own modules; they register here.
from . import scenarios_api, scenarios_csr, scenarios_files, scenarios_store  # noqa: E402,F401
