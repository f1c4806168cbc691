"""The inputs of tests/golden/nn_ops.json.gz, rebuilt from their description.

Shared by the recorder (tools/golden_nn_ops.py, in MXNet's interpreter) and
the replay (tests/test_nn_ops_golden.py), so both see the same arrays:
numpy's legacy ``RandomState`` keeps its streams fixed across versions.
"""
from __future__ import annotations

import numpy as np

KINDS = ("normal", "wide", "pos", "int")


def make(spec: dict) -> np.ndarray:
    """``{"rand": [seed, shape, dtype, kind]}`` or ``{"values", "shape", "dtype"}``
    as a numpy array: ``normal`` is N(0, 1), ``wide`` N(0, 16), ``pos`` U[0.5, 1.5),
    ``int`` integers in [0, 10)."""
    if "values" in spec:
        return np.array(spec["values"], dtype=spec["dtype"]).reshape(spec["shape"])
    seed, shape, dtype, kind = spec["rand"]
    rs = np.random.RandomState(seed)
    if kind == "normal":
        a = rs.standard_normal(shape)
    elif kind == "wide":
        a = rs.standard_normal(shape) * 4
    elif kind == "pos":
        a = rs.random_sample(shape) + 0.5
    elif kind == "int":
        a = rs.randint(0, 10, size=shape)
    else:
        raise ValueError(f"input kind {kind!r} is not one of {KINDS}")
    return np.asarray(a).astype(dtype)
