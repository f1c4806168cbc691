"""Replay a generated op sequence on a library: ``mxnet`` or ``mxkv``, both as ``mx``.

``replay(mx, ops)`` returns one record per op::

    {"r": 1}                                   the call raised
    {"r": 0, "o": [array, ...], "u": [[key, stype], ...]}

``o`` holds every array the call wrote (pull, pushpull, row_sparse_pull and
broadcast outs, in call order; ``out_specs(op)`` lists their specs) and ``u``
the (key, gradient storage type) of each updater call the op made. An array
is base64 of its dense values (little-endian, in the dtype of its spec), or
``[base64, row indices]`` when row sparse; an array whose dtype, shape or
storage type is not its spec's is recorded as a string starting with ``!``.
The same code runs on both libraries (numpy 1.x under MXNet, 2.x under mxkv).
"""
from __future__ import annotations

import base64
from typing import Any, List

import numpy as np

__all__ = ["decode", "encode", "out_specs", "replay"]


def encode(arr: Any, spec: dict) -> Any:
    """An output array as compact JSON (see the module docstring)."""
    dt = np.dtype(spec["dtype"])
    got = (np.dtype(arr.dtype).name, list(arr.shape), arr.stype)
    if got != (dt.name, list(spec["shape"]), spec["stype"]):
        return f"!{got} != {(dt.name, spec['shape'], spec['stype'])}"
    dense = np.ascontiguousarray(arr.asnumpy(), dtype=dt.newbyteorder("<"))
    data = base64.b64encode(dense.tobytes()).decode("ascii")
    if arr.stype == "row_sparse":
        return [data, [int(i) for i in arr.indices.asnumpy().tolist()]]
    return data


def decode(rec: Any, spec: dict) -> tuple:
    """(dense numpy values, row indices or None) of an encoded array."""
    data, idx = (rec[0], rec[1]) if isinstance(rec, list) else (rec, None)
    dt = np.dtype(spec["dtype"])
    vals = np.frombuffer(base64.b64decode(data), dtype=dt.newbyteorder("<")).astype(dt)
    return vals.reshape(spec["shape"]), idx


def _flat(tree: Any) -> list:
    if tree is None:
        return []
    if isinstance(tree, list):
        return [a for t in tree for a in _flat(t)]
    return [tree]


def out_specs(op: dict) -> list:
    """The specs of the arrays an op writes, in the order ``replay`` records them."""
    kind = op["op"]
    if kind == "pushpull":
        return _flat(op["value"] if op.get("out") is None else op["out"])
    if kind in ("pull", "broadcast", "row_sparse_pull"):
        return _flat(op["out"])
    return []


class _Replayer:
    def __init__(self, mx: Any) -> None:
        self.mx = mx
        self.kv = None
        self.calls: List[list] = []

    # -- building arrays ------------------------------------------------------------
    def array(self, spec: dict) -> Any:
        mx = self.mx
        dtype = spec["dtype"]
        shape = tuple(spec["shape"])
        ctx = mx.cpu(spec["ctx"])
        if spec["stype"] == "row_sparse":
            rows = spec["rows"]
            data = np.array(spec["v"], dtype=dtype).reshape((len(rows),) + shape[1:])
            return mx.nd.sparse.row_sparse_array((data, np.array(rows, dtype=np.int64)),
                                                 shape=shape, ctx=ctx, dtype=dtype)
        return mx.nd.array(np.array(spec["v"], dtype=dtype).reshape(shape), ctx=ctx,
                           dtype=dtype)

    def build(self, tree: Any) -> Any:
        if tree is None:
            return None
        if isinstance(tree, list):
            return [self.build(t) for t in tree]
        return self.array(tree)

    # -- the updater -------------------------------------------------------------------
    def updater(self, key: Any, recv: Any, local: Any) -> None:
        if isinstance(key, bytes):
            key = key.decode("utf-8")
        self.calls.append([key, recv.stype])
        # one storage type and dtype on both sides: MXNet's mixed in-place ops
        # leave values that later storage conversions trip over (D14)
        if recv.stype != local.stype:
            recv = recv.tostype(local.stype)
        if recv.dtype != local.dtype:
            recv = recv.astype(local.dtype)
        local += recv

    def optimizer(self, spec: dict) -> Any:
        kw = {k: v for k, v in spec.items() if k != "name" and v is not None}
        if spec["name"] == "sgd":
            return self.mx.optimizer.SGD(**kw)
        return self.mx.optimizer.Adam(**kw)

    # -- one op ---------------------------------------------------------------------------
    def run(self, op: dict) -> list:
        """Do ``op``; return the arrays it wrote."""
        mx, kind = self.mx, op["op"]
        if kind == "create":
            self.kv = mx.kv.create(op["type"])
            return []
        kv = self.kv
        if kind == "init":
            kv.init(op["key"], self.build(op["value"]))
            return []
        if kind == "push":
            kv.push(op["key"], self.build(op["value"]))
            return []
        if kind == "pull":
            out = self.build(op["out"])
            if "ignore_sparse" in op:
                kv.pull(op["key"], out=out, ignore_sparse=op["ignore_sparse"])
            else:
                kv.pull(op["key"], out=out)
            return _flat(out)
        if kind == "pushpull":
            value = self.build(op["value"])
            out = self.build(op["out"])
            kv.pushpull(op["key"], value, out=out)
            return _flat(value if out is None else out)
        if kind == "broadcast":
            out = self.build(op["out"])
            kv.broadcast(op["key"], self.build(op["value"]), out=out)
            return _flat(out)
        if kind == "row_sparse_pull":
            out = self.build(op["out"])
            kv.row_sparse_pull(op["key"], out=out, row_ids=self.build(op["row_ids"]))
            return _flat(out)
        if kind == "set_updater":
            kv._set_updater(self.updater)
            return []
        if kind == "set_optimizer":
            kv.set_optimizer(self.optimizer(op["optimizer"]))
            return []
        raise ValueError(f"unknown op {kind!r}")


def replay(mx: Any, ops: List[dict]) -> List[dict]:
    """Run ``ops`` with library ``mx``; one record per op (see the module docstring)."""
    r = _Replayer(mx)
    records = []
    for op in ops:
        r.calls = []
        try:
            outs = r.run(op)
            # reading the values makes MXNet's asynchronous errors land here
            encoded = [encode(a, spec) for a, spec in zip(outs, out_specs(op))]
            mx.nd.waitall()
        except Exception:  # noqa: BLE001 - only *that* a call raised is compared
            records.append({"r": 1})
            continue
        rec: dict = {"r": 0}
        if encoded:
            rec["o"] = encoded
        if r.calls:
            rec["u"] = r.calls
        records.append(rec)
    return records
