"""Compare one library's replay records with another's (MXNet's, the reference).

Per op: whether it raised must match; the arrays it wrote must have the same
dtype, shape, storage type and row indices, and values within a tolerance
set by the coarsest float dtype involved (the out's, or any the key's values
went through, which the generator records as ``tol``); the updater calls
(key, gradient storage type) must match exactly.
"""
from __future__ import annotations

import hashlib
import json
from typing import List

import numpy as np

from .replay import decode, out_specs

__all__ = ["TOLERANCES", "compare", "digest"]

# (rtol, atol) per float dtype: a few units in the last place, for the
# optimizer steps (sums of the generator's values are exact in every dtype).
TOLERANCES = {"float16": (4e-3, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}
_ORDER = ("float16", "float32", "float64")


def digest(ops: list) -> str:
    """A short hash of an op sequence (to notice a changed generator)."""
    return hashlib.sha256(json.dumps(ops, sort_keys=True).encode()).hexdigest()[:16]


def _coarser(a: str, b: str) -> str:
    if a not in _ORDER:
        return b
    if b not in _ORDER:
        return a
    return a if _ORDER.index(a) < _ORDER.index(b) else b


def _bad(rec) -> bool:
    """An array recorded as not matching its spec (see replay.encode)."""
    return isinstance(rec, str) and rec.startswith("!")


def compare(ops: List[dict], expected: List[dict], actual: List[dict]) -> List[str]:
    """Every divergence of ``actual`` from ``expected``, as messages naming the op."""
    out = []
    if len(expected) != len(actual):
        return [f"{len(actual)} records for {len(expected)} expected"]
    for i, (op, e, a) in enumerate(zip(ops, expected, actual)):
        where = f"op {i} ({op['op']}{' ' + op['invalid'] if 'invalid' in op else ''})"
        if e["r"] != a["r"]:
            out.append(f"{where}: reference {'raised' if e['r'] else 'did not raise'}, "
                       f"this {'raised' if a['r'] else 'did not raise'}")
            continue
        if e.get("u", []) != a.get("u", []):
            out.append(f"{where}: updater calls {a.get('u', [])} != {e.get('u', [])}")
        eo, ao = e.get("o", []), a.get("o", [])
        if len(eo) != len(ao):
            out.append(f"{where}: {len(ao)} outputs != {len(eo)}")
            continue
        for j, (x, y, spec) in enumerate(zip(eo, ao, out_specs(op))):
            if _bad(x) or _bad(y):
                if x != y:
                    out.append(f"{where} out {j}: {y} (reference: {x})")
                continue
            xv, xi = decode(x, spec)
            yv, yi = decode(y, spec)
            if xi != yi:
                out.append(f"{where} out {j}: rows {yi} != {xi}")
                continue
            rtol, atol = TOLERANCES.get(_coarser(spec["dtype"], op.get("tol", "float64")),
                                        (0, 0))
            if not np.allclose(yv.astype(np.float64), xv.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True):
                bad = int(np.argmax(np.abs(yv.astype(np.float64) - xv.astype(np.float64))))
                out.append(f"{where} out {j}: values differ beyond rtol={rtol} atol={atol}: "
                           f"{yv.reshape(-1)[bad]!r} != {xv.reshape(-1)[bad]!r}")
    return out
