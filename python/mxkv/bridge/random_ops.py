"""Random engine operations: what the Clojure ``random`` namespace,
``ndarray/random-uniform`` and ``ndarray-random-api`` call.

Every draw goes through the engine's ``mx.random`` (numpy's global
generator on a CPU), so ``(random/seed 42)`` in Clojure and
``mx.random.seed(42)`` in Python give the same numbers; they are not the
numbers MXNet draws (its generators differ).

* ``random.seed [n]``
* ``random.draw [kind, params, shape, dev_type, dev_id, dtype, out]``: the
  ``random`` namespace's form (``kind`` uniform or normal, ``params`` its two
  numbers; ``out`` a handle to write into, or null)

MXNet's operator form (``random_uniform`` with ``low, high, shape, ctx,
dtype`` ..., ``sample_normal`` on arrays) is no operation of its own: it is
the engine's operator table through ``nd.invoke`` (nd_dispatch.py), where
``shape`` may be MXNet's text ``"(2,3)"`` and ``ctx`` ``"cpu(0)"``.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from ..base import MXNetValueError
from .registry import op

__all__ = ["parse_shape"]

def parse_shape(shape: Any) -> tuple:
    """A shape from a list of ints or MXNet's text form ``"(2, 3)"``."""
    if shape is None:
        return (1,)
    if isinstance(shape, str):
        text = shape.strip()
        if not re.fullmatch(r"[(\[]\s*(\d+\s*(,\s*\d+\s*)*,?)?\s*[)\]]", text):
            raise MXNetValueError(f"invalid shape {shape!r}: expected a list of dimensions "
                                  "or MXNet's text form such as \"(2,3)\"")
        return tuple(int(d) for d in re.findall(r"\d+", text))
    if isinstance(shape, (int, float)) and not isinstance(shape, bool):
        shape = [shape]
    dims = list(shape)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise MXNetValueError(f"invalid shape {shape!r}: dimensions must be non-negative ints")
    return tuple(dims)


def _check(kind: str, a: Any, b: Any) -> None:
    for name, v in (("first parameter", a), ("second parameter", b)):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise MXNetValueError(f"random {kind}: the {name} must be a number, got {v!r}")
    if kind == "uniform" and a > b:
        raise MXNetValueError(f"random uniform: low ({a}) must not exceed high ({b})")
    if kind == "normal" and b < 0:
        raise MXNetValueError(f"random normal: scale must be positive, got {b}")
    if kind == "gamma" and (a <= 0 or b <= 0):
        raise MXNetValueError(f"random gamma: alpha and beta must be positive, got {a}, {b}")
    if kind == "randint" and not (isinstance(a, int) and isinstance(b, int)):
        raise MXNetValueError(f"random randint: low and high must be ints, got {a!r}, {b!r}")


def _draw(self, kind: str, a: Any, b: Any, shape: Sequence[int], ctx: Any, dtype: Any,
          out: Any = None):
    _check(kind, a, b)
    fn = getattr(self.mx.random, kind)
    if out is not None:
        arr = self.nd(out)
        fn(a, b, out=arr)
        return self.meta(arr, out)
    if dtype is None:
        dtype = "int32" if kind == "randint" else "float32"
    return self.meta(fn(a, b, shape=parse_shape(shape), dtype=dtype, ctx=ctx))


@op("random.seed")
def _random_seed(self, seed_state):
    """Seed the engine's generators (``mx.random.seed``)."""
    self.mx.random.seed(seed_state)


@op("random.draw")
def _random_draw(self, kind, params, shape, dev_type, dev_id, dtype, out=None):
    """A uniform or normal draw of ``shape`` on a device (or into ``out``)."""
    if kind not in ("uniform", "normal"):
        raise MXNetValueError(f"random.draw: kind must be uniform or normal, got {kind!r}")
    a, b = params
    return _draw(self, kind, a, b, shape, self.ctx(dev_type, dev_id), dtype, out)
