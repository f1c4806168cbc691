"""Seeded random KVStore call sequences, as plain data.

``generate(seed, n_ops)`` returns a list of operations (JSON-able dicts) that
``replay.py`` runs against a library (``mxnet`` or ``mxkv``). The generator
keeps a model of each store (keys, shapes, dtypes, storage types, the rows a
row-sparse value holds, the updater) so that most calls are valid and the
rest (about 15%) are invalid in a known way.

It avoids the calls where mxkv deliberately differs from MXNet 1.9.1 (the
list, with reasons, is in ``docs/parity.md``; each is covered by its own
parity scenario instead):

* D1 a multi-value push to an unknown key, and D2 a multi-value push with
  more values than the key's first multi-value push: MXNet segfaults.
* D3 multi-value pushes to one key whose first values have different storage
  types from call to call: MXNet raises "storage type mismatch", mxkv sums.
* D4 a one-device push of the wrong shape: MXNet replaces the key's value.
* D5 writing to an array after a one-device push: MXNet's stored value
  changes (the generator never reuses an array).
* D6 a dense push to a row_sparse-initialized key without an updater: MXNet
  makes the key dense.
* D7 a one-value push of another dtype under an optimizer (and, after a
  no-updater push of another dtype, any optimizer update of that key): MXNet
  drops the update silently, mxkv raises or updates.
* D8 failing batched calls with int keys: MXNet applies the valid keys; mxkv
  applies nothing (invalid calls here name one key, or str keys).
* D9 row ids out of range; D10 a multi-value push whose first value has
  another dtype than the key (MXNet raises); D11 an updater that raises.
* D12 a key named by a failed call and initialized later: MXNet remembers it
  and raises "duplicate init" (unknown keys here are never initialized).
* D13 storage conversions inside the store for values that are not float32:
  a pull of a row_sparse value into a dense out (or of a dense value into a
  row_sparse out), a multi-value push mixing storage types, a row_sparse
  value or out of another dtype than the key's: MXNet's copies between
  storage types handle float32 only, its row-sparse copies do not cast, and
  they raise (sometimes several calls later).
* D14 a push through an updater after a push without one: MXNet's stored
  value then is its merge buffer (after a multi-value dense push, or any
  row_sparse one), so the next merge into that buffer overwrites the weight
  with the gradient before the updater runs.
* D15 row_sparse values and dtypes other than float32 in a ``device`` store:
  MXNet's device comm trips over the dtypes in the same way and sums
  row_sparse values differently from its CPU comm (rows that sum to zero
  vanish); ``device`` stores here hold dense float32 values only.
* D16 an optimizer on a row_sparse weight with a dense gradient: MXNet's
  dense fallback stores the weight and states back without their all-zero
  rows, and its next row_sparse update reads the wrong rows' states (mxkv
  keeps every row); row_sparse weights here get row_sparse gradients.

Values are multiples of 1/8 in [-2, 2], exact in every float dtype, so sums
agree exactly; only optimizer steps need tolerances. Python's ``random``
drives everything, so the sequence is the same under any numpy.
"""
from __future__ import annotations

import random
from typing import Any, Dict, List, Optional

__all__ = ["FORMAT", "generate"]

FORMAT = 1
DTYPES = ("float32", "float32", "float32", "float16", "float64")
FLOATS = ("float16", "float32", "float64")
SHAPES = ((2,), (3,), (2, 2), (3, 2), (4, 2), (2, 3))
INVALID_SHARE = 0.17


class _Key:
    def __init__(self, shape: tuple, dtype: str, stype: str, rows: set) -> None:
        self.shape = shape
        self.dtype = dtype             # the key's dtype (init's)
        self.init_stype = stype
        self.stype = stype             # the stored value's storage type now
        self.rows = rows               # rows a row_sparse stored value holds
        self.mx_dtype = dtype          # what MXNet holds after a no-updater push
        self.multi_n = 0               # values of the first multi-value push (D2)
        self.multi_stype: Optional[str] = None  # first value's stype in multi pushes (D3)
        self.tol = dtype               # the coarsest dtype its values went through
        self.alias: Optional[str] = None  # MXNet's stored value is its merge buffer (D14)

    def all_rows(self) -> bool:
        return self.stype == "default" or len(self.rows) == self.shape[0]

    def optimizable(self) -> bool:  # D7; rows: the model is not exact under a custom updater
        return self.mx_dtype == self.dtype and self.all_rows()


class _Store:
    def __init__(self, kv_type: str) -> None:
        self.kv_type = kv_type
        self.str_keys: Optional[bool] = None
        self.keys: Dict[Any, _Key] = {}
        self.updater: Optional[str] = None  # None, "custom", "optimizer"
        self.next_int = 0


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.store: Optional[_Store] = None

    # -- values -----------------------------------------------------------------
    def _vals(self, n: int) -> List[float]:
        return [self.rng.randint(-16, 16) / 8 for _ in range(n)]

    def dense(self, shape: tuple, dtype: str, ctx: int = 0, zero: bool = False) -> dict:
        n = 1
        for d in shape:
            n *= d
        v = [0.0] * n if zero else self._vals(n)
        return {"v": v, "shape": list(shape), "dtype": dtype, "ctx": ctx, "stype": "default"}

    def rsp(self, shape: tuple, dtype: str, ctx: int = 0, rows: Optional[List[int]] = None,
            zero: bool = False) -> dict:
        if rows is None:
            r = self.rng.random()
            if r < 0.05:
                rows = []
            elif r < 0.35:
                rows = list(range(shape[0]))
            else:
                rows = sorted(self.rng.sample(range(shape[0]), self.rng.randint(1, shape[0])))
        width = 1
        for d in shape[1:]:
            width *= d
        v = [0.0] * (len(rows) * width) if zero else self._vals(len(rows) * width)
        return {"v": v, "shape": list(shape), "dtype": dtype, "ctx": ctx,
                "stype": "row_sparse", "rows": rows}

    @staticmethod
    def nonzero_rows(spec: dict) -> set:
        shape = spec["shape"]
        width = 1
        for d in shape[1:]:
            width *= d
        v = spec["v"]
        if spec["stype"] == "row_sparse":
            return set(spec["rows"])  # a pushed row_sparse value keeps all its rows
        return {i for i in range(shape[0]) if any(v[i * width:(i + 1) * width])}

    # -- keys ---------------------------------------------------------------------
    def new_key(self) -> Any:
        s = self.store
        if s.str_keys:
            while True:
                k = "".join(self.rng.choice("abcdefgh") for _ in range(self.rng.randint(1, 2)))
                if k not in s.keys:
                    return k
        s.next_int += self.rng.randint(1, 3)
        return s.next_int

    def unknown_key(self) -> Any:
        """A key never initialized, now or later: MXNet remembers keys a failed
        call named, and a later init of one raises 'duplicate init' (D12)."""
        if self.store.str_keys:
            return "z" + "".join(self.rng.choice("abcdefgh") for _ in range(2))
        return 10000 + self.rng.randint(0, 99)

    def pick(self, pred=lambda k: True, n_max: int = 3) -> List[Any]:
        ks = [k for k, m in self.store.keys.items() if pred(m)]
        if not ks:
            return []
        n = min(len(ks), self.rng.randint(1, n_max))
        return self.rng.sample(ks, n)

    def other_float(self, dtype: str) -> str:
        return self.rng.choice([d for d in FLOATS if d != dtype])

    @staticmethod
    def form(keys: List[Any], vals: List[Any], rng: random.Random) -> tuple:
        """A call's (key, value) arguments: one key and one value, or lists."""
        if len(keys) == 1 and rng.random() < 0.6:
            return keys[0], vals[0]
        return list(keys), list(vals)

    # -- operations ------------------------------------------------------------------
    def op_create(self) -> dict:
        kv_type = self.rng.choice(("local", "local", "device"))
        self.store = _Store(kv_type)
        return {"op": "create", "type": kv_type}

    def _init_values(self, n: int) -> tuple:
        s = self.store
        if s.str_keys is None:
            s.str_keys = self.rng.random() < 0.5
        keys, vals, models = [], [], []
        for _ in range(n):
            k = self.new_key()
            while k in keys:
                k = self.new_key()
            shape = self.rng.choice(SHAPES)
            dtype = self.rng.choice(DTYPES) if s.kv_type == "local" else "float32"  # D15
            if self.rng.random() < 0.3 and s.kv_type == "local":  # D15
                rows = list(range(shape[0])) if self.rng.random() < 0.7 else None
                spec = self.rsp(shape, dtype, self.rng.randint(0, 3), rows=rows)
                model = _Key(shape, dtype, "row_sparse", set(spec["rows"]))
            else:
                spec = self.dense(shape, dtype, self.rng.randint(0, 3))
                model = _Key(shape, dtype, "default", set())
            keys.append(k)
            vals.append(spec)
            models.append(model)
        return keys, vals, models

    def op_init(self) -> dict:
        keys, vals, models = self._init_values(self.rng.randint(1, 3))
        for k, m in zip(keys, models):
            self.store.keys[k] = m
        key, value = self.form(keys, vals, self.rng)
        return {"op": "init", "key": key, "value": value}

    def _outs(self, m: _Key, n_max: int = 3, ignore_sparse: Optional[bool] = None
              ) -> List[dict]:
        """Outs for a pull of ``m``: dense, or row_sparse (kept only with
        ``ignore_sparse=False``), never converting a non-float32 value (D13)."""
        outs = []
        for _ in range(self.rng.randint(1, n_max)):
            dtype = m.dtype if self.rng.random() < 0.8 or self.store.kv_type != "local" \
                else self.other_float(m.dtype)  # D15
            ctx = self.rng.randint(0, 3)
            want_rsp = self.rng.random() < (0.5 if m.stype == "row_sparse" else 0.15) \
                and self.store.kv_type == "local"                   # D15
            rsp_ok = ignore_sparse is not False or self.converts_ok(
                m.stype, m.mx_dtype, "row_sparse", m.dtype)
            if not self.converts_ok(m.stype, m.mx_dtype, "default", dtype):
                dtype = "float32"
            dense_ok = self.converts_ok(m.stype, m.mx_dtype, "default", dtype)
            if (want_rsp or not dense_ok) and rsp_ok:  # D13: row_sparse outs are not cast
                outs.append(self.rsp(m.shape, m.dtype, ctx, rows=[], zero=True))
            elif dense_ok:
                outs.append(self.dense(m.shape, dtype, ctx, zero=True))
        return outs

    def op_broadcast(self) -> dict:
        keys, vals, models = self._init_values(self.rng.randint(1, 2))
        outs = [self._outs(m, n_max=2, ignore_sparse=True) for m in models]
        for k, m in zip(keys, models):
            self.store.keys[k] = m
        outs = [o[0] if len(o) == 1 and self.rng.random() < 0.5 else o for o in outs]
        key, out = self.form(keys, outs, self.rng)
        key2, value = (key, vals[0]) if not isinstance(key, list) else (key, vals)
        return {"op": "broadcast", "key": key2, "value": value, "out": out}

    def _push_values(self, k: Any, m: _Key) -> List[dict]:
        s = self.store
        n = self.rng.choices((1, 2, 3, 4), weights=(40, 25, 20, 15))[0]
        if n > 1 and m.multi_n:
            n = min(n, m.multi_n)                                   # D2
        if m.init_stype == "row_sparse" and s.updater is None:
            stypes = ["row_sparse"] * n                             # D6
        else:
            rsp_share = 0.7 if m.stype == "row_sparse" else 0.25
            if s.kv_type != "local":
                rsp_share = 0.0                                     # D15
            stypes = ["row_sparse" if self.rng.random() < rsp_share else "default"
                      for _ in range(n)]
        if n > 1 and m.multi_stype is not None:
            stypes[0] = m.multi_stype                               # D3
            if m.init_stype == "row_sparse" and s.updater is None:
                stypes = ["row_sparse"] * n
                if m.multi_stype != "row_sparse":
                    return []
        if m.stype == "row_sparse" and s.updater == "optimizer" and stypes[0] != "row_sparse":
            return []                                               # D16
        if n > 1 and m.dtype != "float32":
            stypes = [stypes[0]] * n                                # D13
        vals = []
        for i, st in enumerate(stypes):
            dtype = m.dtype
            if self.rng.random() < 0.15 and not (n == 1 and s.updater == "optimizer") \
                    and not (n > 1 and i == 0) and st == stypes[0] == "default" \
                    and s.kv_type == "local":                       # D7, D10, D13, D15
                dtype = self.other_float(m.dtype)
            ctx = self.rng.randint(0, 3)
            vals.append(self.rsp(m.shape, dtype, ctx) if st == "row_sparse"
                        else self.dense(m.shape, dtype, ctx))
        return vals

    def _after_push(self, m: _Key, vals: List[dict]) -> tuple:
        """(stype, rows, MXNet's dtype, alias) of the key's stored value after
        pushing ``vals``; alias: the stype of MXNet's merge buffer it is (D14)."""
        if self.store.updater is not None:
            return m.stype, m.rows, m.mx_dtype, m.alias
        merged = vals[0]["stype"]
        buffered = merged == "row_sparse" or len(vals) > 1
        alias = merged if buffered and merged == m.stype else None  # else MXNet copies
        if merged == "row_sparse" or m.init_stype == "row_sparse":
            rows: set = set()
            for v in vals:
                rows |= self.nonzero_rows(v)
            return "row_sparse", rows, m.dtype, alias
        one_dense = len(vals) == 1
        return "default", set(), vals[0]["dtype"] if one_dense else m.dtype, alias

    def _corrupts(self, m: _Key, vals: List[dict]) -> bool:
        """Whether MXNet would merge ``vals`` into the buffer its stored value is (D14)."""
        if self.store.updater is None or m.alias is None:
            return False
        merged = vals[0]["stype"]
        return merged == m.alias and (merged == "row_sparse" or len(vals) > 1)

    def _apply_push(self, m: _Key, vals: List[dict]) -> None:
        if len(vals) > 1 and not m.multi_n:
            m.multi_n = len(vals)
            m.multi_stype = vals[0]["stype"]
        for v in vals:
            if FLOATS.index(v["dtype"]) < FLOATS.index(m.tol):
                m.tol = v["dtype"]
        m.stype, m.rows, m.mx_dtype, m.alias = self._after_push(m, vals)

    @staticmethod
    def converts_ok(stype: str, mx_dtype: str, out_stype: str, out_dtype: str) -> bool:
        """Whether MXNet can pull this stored value into an out of ``out_stype``
        and ``out_dtype``: a change of storage type works in float32 only (D13)."""
        return out_stype == stype or mx_dtype == out_dtype == "float32"

    def _pushable(self, m: _Key) -> bool:
        s = self.store
        return s.updater != "optimizer" or m.optimizable()

    def op_push(self, with_pull: bool = False) -> Optional[dict]:
        keys = self.pick(self._pushable)
        if not keys:
            return None
        if self.rng.random() < 0.1 and not with_pull:
            keys.append(self.rng.choice(keys))  # a repeated key
        grouped: Dict[Any, List[dict]] = {}
        per_key = []
        for k in keys:
            if k in grouped:
                vals = [self.dense(self.store.keys[k].shape, self.store.keys[k].dtype,
                                   self.rng.randint(0, 3))]
                if self.store.keys[k].init_stype == "row_sparse" and self.store.updater is None:
                    vals = [self.rsp(self.store.keys[k].shape, self.store.keys[k].dtype)]
            else:
                vals = self._push_values(k, self.store.keys[k])
                if not vals:
                    return None
            grouped.setdefault(k, []).extend(vals)
            per_key.append(vals)
        # a key given twice in one call is one multi-value push of all its values
        for k, vals in grouped.items():
            m = self.store.keys[k]
            if self._corrupts(m, vals):
                return None
            if m.stype == "row_sparse" and self.store.updater == "optimizer" and \
                    vals[0]["stype"] != "row_sparse":               # D16
                return None
            if len(vals) > 1 and ((m.multi_n and len(vals) > m.multi_n) or
                                  (m.multi_stype and vals[0]["stype"] != m.multi_stype) or
                                  vals[0]["dtype"] != m.dtype or
                                  any(v["stype"] != vals[0]["stype"] and   # D13
                                      not v["dtype"] == m.dtype == "float32" for v in vals) or
                                  (m.init_stype == "row_sparse" and self.store.updater is None
                                   and any(v["stype"] != "row_sparse" for v in vals))):
                return None
            if len(vals) == 1 and self.store.updater == "optimizer" and \
                    vals[0]["stype"] == "default" and vals[0]["dtype"] != m.dtype:
                return None
        if with_pull:  # the pull (ignore_sparse=True) must not convert storage (D13)
            for k, vals in grouped.items():
                stype, _, mx_dtype, _ = self._after_push(self.store.keys[k], vals)
                dense = [v["dtype"] for v in vals if v["stype"] == "default"] or ["float32"]
                if not all(self.converts_ok(stype, mx_dtype, "default", d) for d in dense):
                    return None
        for k, vals in grouped.items():
            self._apply_push(self.store.keys[k], vals)
        shaped = [v[0] if len(v) == 1 and self.rng.random() < 0.5 else v for v in per_key]
        key, value = self.form(keys, shaped, self.rng)
        op: dict = {"op": "pushpull" if with_pull else "push", "key": key, "value": value}
        if with_pull:
            if self.rng.random() < 0.5:
                op["out"] = None
            else:
                outs = [self._outs(self.store.keys[k], n_max=2, ignore_sparse=True)
                        for k in keys]
                outs = [o[0] if len(o) == 1 and self.rng.random() < 0.5 else o for o in outs]
                op["out"] = outs[0] if not isinstance(key, list) else outs
        op["tol"] = self._tol(keys)
        return op

    def _tol(self, keys: List[Any]) -> str:
        tol = "float64"
        for k in keys:
            t = self.store.keys[k].tol
            if FLOATS.index(t) < FLOATS.index(tol):
                tol = t
        return tol

    def op_pull(self) -> Optional[dict]:
        keys = self.pick()
        if not keys:
            return None
        ignore = None if self.rng.random() < 0.7 else self.rng.random() < 0.5
        outs = [self._outs(self.store.keys[k], ignore_sparse=ignore is not False)
                for k in keys]
        if not all(outs):
            return None
        outs = [o[0] if len(o) == 1 and self.rng.random() < 0.5 else o for o in outs]
        key, out = self.form(keys, outs, self.rng)
        op = {"op": "pull", "key": key, "out": out, "tol": self._tol(keys)}
        if ignore is not None:
            op["ignore_sparse"] = ignore
        return op

    def _row_ids(self, nrows: int) -> dict:
        n = self.rng.randint(0, nrows + 2)
        ids = [self.rng.randrange(nrows) for _ in range(n)]
        dtype = self.rng.choice(("float32", "int64"))
        shape = [n]
        if n and n % 2 == 0 and self.rng.random() < 0.2:
            shape = [2, n // 2]
        return {"v": ids, "shape": shape, "dtype": dtype, "ctx": 0, "stype": "default"}

    def op_row_sparse_pull(self) -> Optional[dict]:
        keys = self.pick(lambda m: m.stype == "row_sparse")
        if not keys:
            return None
        ms = [self.store.keys[k] for k in keys]

        def out_for(m):  # D13: row_sparse copies are not cast
            return self.rsp(m.shape, m.dtype, self.rng.randint(0, 3), rows=[], zero=True)

        form = self.rng.random()
        if len(keys) == 1 and form < 0.3:
            m = ms[0]
            return {"op": "row_sparse_pull", "key": keys[0], "out": out_for(m),
                    "row_ids": self._row_ids(m.shape[0]), "tol": self._tol(keys)}
        if len(keys) == 1 and form < 0.6:  # several outs, one row_ids (or a list of one)
            m = ms[0]
            outs = [out_for(m) for _ in range(self.rng.randint(2, 3))]
            rid = self._row_ids(m.shape[0])
            return {"op": "row_sparse_pull", "key": keys[0], "out": outs,
                    "row_ids": rid if self.rng.random() < 0.5 else [rid],
                    "tol": self._tol(keys)}
        # one row_ids per out, nested like out
        outs, rids = [], []
        for m in ms:
            n = self.rng.randint(1, 2)
            o = [out_for(m) for _ in range(n)]
            r = [self._row_ids(m.shape[0]) for _ in range(n)]
            if n == 1 and self.rng.random() < 0.5:
                o, r = o[0], r[0]
            outs.append(o)
            rids.append(r)
        key, out = self.form(keys, outs, self.rng)
        row_ids = rids if isinstance(key, list) else (rids[0] if isinstance(rids[0], list)
                                                      else [rids[0]])
        if not isinstance(key, list) and not isinstance(out, list):
            out = [out]
        return {"op": "row_sparse_pull", "key": key, "out": out, "row_ids": row_ids,
                "tol": self._tol(keys)}

    def op_set_updater(self) -> dict:
        self.store.updater = "custom"
        return {"op": "set_updater"}

    def op_set_optimizer(self) -> dict:
        r = self.rng
        if r.random() < 0.6:
            opt = {"name": "sgd", "learning_rate": r.choice((0.1, 0.05, 0.01)),
                   "momentum": r.choice((0.0, 0.0, 0.9)), "wd": r.choice((0.0, 0.01, 0.1)),
                   "rescale_grad": r.choice((1.0, 0.5, 0.25)),
                   "clip_gradient": r.choice((None, None, 0.5, 1.0))}
        else:
            opt = {"name": "adam", "learning_rate": r.choice((0.01, 0.1)),
                   "wd": r.choice((0.0, 0.01)), "rescale_grad": r.choice((1.0, 0.5)),
                   "clip_gradient": r.choice((None, None, 0.5))}
        self.store.updater = "optimizer"
        return {"op": "set_optimizer", "optimizer": opt}

    # -- invalid calls ------------------------------------------------------------------
    def op_invalid(self) -> Optional[dict]:
        s = self.store
        kinds = ["dup_init", "pull_unknown", "push_unknown", "mixed_key_type",
                 "pull_wrong_shape", "push_shape_mismatch", "len_mismatch",
                 "broadcast_existing", "rsp_pull_dense_key", "rsp_pull_dense_out",
                 "rsp_pull_count_mismatch"]
        kind = self.rng.choice(kinds)
        keys = list(s.keys)
        if not keys:
            return None
        k = self.rng.choice(keys)
        m = s.keys[k]
        if kind == "dup_init":
            return {"op": "init", "key": k, "value": self.dense(m.shape, m.dtype),
                    "invalid": kind}
        if kind == "broadcast_existing":
            return {"op": "broadcast", "key": k, "value": self.dense(m.shape, m.dtype),
                    "out": self.dense(m.shape, m.dtype, zero=True), "invalid": kind}
        if kind == "pull_unknown":
            return {"op": "pull", "key": self.unknown_key(),
                    "out": self.dense(m.shape, m.dtype, zero=True), "invalid": kind}
        if kind == "push_unknown":  # one value: a multi-value push segfaults MXNet (D1)
            return {"op": "push", "key": self.unknown_key(), "value": self.dense(m.shape, m.dtype),
                    "invalid": kind}
        if kind == "mixed_key_type":
            other = "zz" if not s.str_keys else 1000
            return {"op": self.rng.choice(("push", "pull")), "key": other,
                    "value": self.dense(m.shape, m.dtype),
                    "out": self.dense(m.shape, m.dtype, zero=True), "invalid": kind}
        bad_shape = tuple(d + 1 for d in m.shape)
        if kind == "pull_wrong_shape":
            return {"op": "pull", "key": k, "out": self.dense(bad_shape, m.dtype, zero=True),
                    "invalid": kind}
        if kind == "push_shape_mismatch":  # several values: one value would be D4
            n = max(2, min(m.multi_n or 2, 3))
            vals = [self.dense(m.shape, m.dtype, i) for i in range(n)]
            vals[self.rng.randrange(1, n)] = self.dense(bad_shape, m.dtype, 1)
            if (m.init_stype == "row_sparse" and s.updater is None) or m.alias == "default":
                return None  # D6; D14: MXNet writes the first value into the stored one
            if not m.multi_n:  # MXNet sizes the key's buffers even as this call fails
                m.multi_n, m.multi_stype = n, "default"
            return {"op": "push", "key": k, "value": vals, "invalid": kind}
        if kind == "len_mismatch":
            return {"op": "push", "key": [k], "value": [self.dense(m.shape, m.dtype)] * 2,
                    "invalid": kind}
        if kind == "rsp_pull_dense_key":
            dense = [kk for kk, mm in s.keys.items() if mm.stype == "default"]
            if not dense:
                return None
            mm = s.keys[dense[0]]
            return {"op": "row_sparse_pull", "key": dense[0],
                    "out": self.rsp(mm.shape, mm.dtype, rows=[], zero=True),
                    "row_ids": self._row_ids(mm.shape[0]), "invalid": kind}
        rsp_keys = [kk for kk, mm in s.keys.items() if mm.stype == "row_sparse"]
        if not rsp_keys:
            return None
        kk = rsp_keys[0]
        mm = s.keys[kk]
        if kind == "rsp_pull_dense_out":
            return {"op": "row_sparse_pull", "key": kk,
                    "out": self.dense(mm.shape, mm.dtype, zero=True),
                    "row_ids": self._row_ids(mm.shape[0]), "invalid": kind}
        return {"op": "row_sparse_pull", "key": kk,
                "out": [self.rsp(mm.shape, mm.dtype, rows=[], zero=True)] * 1,
                "row_ids": [self._row_ids(mm.shape[0]) for _ in range(2)], "invalid": kind}

    # -- the sequence ---------------------------------------------------------------------
    def next_op(self) -> dict:
        s = self.store
        if s is None:
            return self.op_create()
        if not s.keys:
            return self.op_init() if self.rng.random() < 0.8 else self.op_broadcast()
        r = self.rng.random()
        if r < INVALID_SHARE:
            op = self.op_invalid()
        elif r < 0.19:
            op = self.op_create()
        elif r < 0.26:
            op = self.op_init()
        elif r < 0.29:
            op = self.op_broadcast()
        elif r < 0.53:
            op = self.op_push()
        elif r < 0.69:
            op = self.op_pull()
        elif r < 0.77:
            op = self.op_push(with_pull=True)
        elif r < 0.91:
            op = self.op_row_sparse_pull()
        elif s.updater is None and r < 0.95:
            op = self.op_set_updater() if self.rng.random() < 0.4 else self.op_set_optimizer()
        else:
            op = self.op_pull()
        return op if op is not None else self.op_pull() or self.op_init()


def generate(seed: int, n_ops: int = 200) -> List[dict]:
    """The op sequence for ``seed``: ``n_ops`` JSON-able dicts (see replay.py)."""
    g = _Gen(seed)
    return [g.next_op() for _ in range(n_ops)]
