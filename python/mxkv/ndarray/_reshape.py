"""MXNet's ``reshape`` shape rule with its special dims, for ``NDArray.reshape``
and the bridge's ``reshape`` operator (``bridge/nd_shape_ops.py``).

Each caller words its errors its own way (as it always has) and passes its
wording, one format string per problem (see :data:`PROBLEMS`); the rule is
this one function. Every problem raises MXNetValueError. Checking that the
dims are ints is the callers' (``NDArray.reshape`` raises TypeError, as
MXNet).
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from ._util import MXNetValueError

__all__ = ["PROBLEMS", "infer_reshape"]

# The problems, and the fields their format strings may use besides ``src``
# (the input shape), ``spec`` (the requested one), ``n`` (``len(src)``) and
# ``size`` (the input's element count).
PROBLEMS = {
    "zero_past_end": "i: a 0 (copy a dim) at position i, after the input's last dim",
    "merge_past_end": "i: a -3 (merge two dims) at position i, with fewer than two dims left",
    "split_short": "i: a -4 (split a dim) at position i, not followed by two dims",
    "split_past_end": "i: a -4 at position i, after the input's last dim",
    "split_both_infer": "i, whole: a -4 followed by two -1s",
    "split_mismatch": "i, whole, d0, d1: a -4 whose two dims d0 x d1 are not the dim whole",
    "two_infer": "more than one -1",
    "invalid_dim": "i, d: a dim d below -4",
    "cannot_infer": "the dims other than the -1 are 0 or do not divide the size",
    "size": "out, got: the result's shape out holds got elements, not size",
}


def _prod(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def infer_reshape(src: Sequence[int], spec: Sequence[int], reverse: bool,
                  messages: Dict[str, str]) -> tuple:
    """The shape ``reshape(shape=spec, reverse=reverse)`` gives an array of shape ``src``.

    ``0`` copies the input's dim, ``-1`` infers one dim, ``-2`` copies all the
    remaining input dims, ``-3`` merges two input dims, ``-4, a, b`` splits an
    input dim in two (one of ``a``, ``b`` may be -1); ``reverse`` matches the
    special dims from the right. ``src`` and ``spec`` are sequences of ints.

    Raises MXNetValueError with ``messages[problem]`` (:data:`PROBLEMS`)
    formatted, when ``spec`` does not apply to ``src`` or gives another size.

    >>> infer_reshape((2, 3, 4), (-4, 1, 2, -2), False, {})
    (1, 2, 3, 4)
    """
    src, spec = tuple(src), tuple(spec)
    size = _prod(src)
    last = len(spec) - 1

    def fail(problem: str, **fields) -> MXNetValueError:
        if "i" in fields and reverse:
            fields["i"] = last - fields["i"]  # the position in spec as given
        return MXNetValueError(messages[problem].format(src=src, spec=spec, n=len(src),
                                                        size=size, **fields))

    ins, dims = (src[::-1], spec[::-1]) if reverse else (src, spec)
    out: List[int] = []
    at = 0  # the next input dim
    infer = -1
    i = 0
    while i < len(dims):
        d = dims[i]
        if d == 0:
            if at >= len(ins):
                raise fail("zero_past_end", i=i)
            out.append(ins[at])
            at += 1
        elif d == -1:
            if infer >= 0:
                raise fail("two_infer")
            infer = len(out)
            out.append(1)
            at += 1
        elif d == -2:
            out.extend(ins[at:])
            at = len(ins)
        elif d == -3:
            if at + 1 >= len(ins):
                raise fail("merge_past_end", i=i)
            out.append(ins[at] * ins[at + 1])
            at += 2
        elif d == -4:
            if i + 2 >= len(dims):
                raise fail("split_short", i=i)
            if at >= len(ins):
                raise fail("split_past_end", i=i)
            whole, d0, d1 = ins[at], dims[i + 1], dims[i + 2]
            if d0 == -1 and d1 == -1:
                raise fail("split_both_infer", i=i, whole=whole)
            if d0 == -1:
                d0 = whole // d1 if d1 else 0
            if d1 == -1:
                d1 = whole // d0 if d0 else 0
            if d0 * d1 != whole:
                raise fail("split_mismatch", i=i, whole=whole, d0=d0, d1=d1)
            out.extend((d0, d1))
            at += 1
            i += 2
        elif d > 0:
            out.append(d)
            at += 1
        else:
            raise fail("invalid_dim", i=i, d=d)
        i += 1
    if infer >= 0:
        known = _prod(out)
        if known == 0 or size % known:
            raise fail("cannot_infer")
        out[infer] = size // known
    result = tuple(out[::-1] if reverse else out)
    if _prod(result) != size:
        raise fail("size", out=result, got=_prod(result))
    return result
