"""The bridge's operator dispatch: any operator of the engine's table
(:mod:`mxkv.ndarray.optable`) by MXNet's name, as the JVM calls it
(``nd.invoke``).

The bridge holds no operator of its own (DESIGN.md decision 14). A call
names the operator (its MXNet name or an alias), gives its NDArray inputs in
the table's order, its parameters by position (MXNet's order, as
clojure-mxnet's ``ndarray`` functions pass them) and by name, and
optionally the array(s) to write into (``out``). The table says which
parameter each position is; the engine's own function (``mx.nd.<name>``,
generated from the same entry) checks and converts every value and runs the
kernel, so Python and the JVM take one code path and get one result.

Errors name what is at fault: an unknown operator, the count of arrays, a
parameter given twice, too many positions (with the parameters' names);
the rest (a bad value, an unknown name, a shape the operator refuses) are
the engine function's own errors.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from ..base import MXNetValueError
from ..ndarray import optable
from ..ndarray.optable.frontend import ctx_param

__all__ = ["invoke", "resolve"]

_FUNCTIONS: Dict[str, Any] = {}


def resolve(name: str):
    """The table entry (OpDef) of operator ``name`` (an MXNet name or alias)."""
    opdef = optable.lookup(name)
    if opdef is None:
        raise MXNetValueError(f"unknown NDArray operator {name!r}: the engine's operator table "
                              "has no operator of that name (docs/operators.md lists them)")
    return opdef


def _function(mx: Any, opdef: Any):
    """The engine's function for ``opdef``: the table's own (mxkv), or the
    backend's ``mx.nd.<name>`` (another backend such as MXNet itself)."""
    if getattr(mx, "__name__", "mxkv") == "mxkv" or not hasattr(mx, "nd"):
        fn = _FUNCTIONS.get(opdef.name)
        if fn is None:
            fn = _FUNCTIONS[opdef.name] = optable.make_function(opdef)
        return fn
    for n in opdef.names:
        fn = getattr(mx.nd, n, None) or getattr(getattr(mx.nd, "_internal", None), n, None)
        if fn is not None:
            return fn
    raise MXNetValueError(f"the engine's backend has no operator {opdef.name!r}")


def _check_inputs(opdef: Any, inputs: Sequence[Any]) -> None:
    n = len(inputs)
    if opdef.variadic:
        if n == 0:
            raise MXNetValueError(f"{opdef.name} takes one or more arrays ({opdef.inputs[0][1:]}), "
                                  "got none")
        return
    most = len(opdef.inputs)
    least = most - sum(1 for i in opdef.inputs if i in opdef.optional)
    if not least <= n <= most:
        names = ", ".join(opdef.inputs) or "none"
        want = str(most) if least == most else f"{least} to {most}"
        raise MXNetValueError(f"{opdef.name} takes {want} array(s) ({names}), got {n}")


def params(opdef: Any, positional: Sequence[Any], named: Dict[str, Any] | None) -> dict:
    """``opdef``'s parameters given by position (MXNet's order) and by name, as one
    dict; refuses too many positions and a parameter given both ways, naming them
    (unknown names are refused by the engine's function, which lists the known)."""
    names = [p.name for p in opdef.params]
    if len(positional) > len(names):
        raise MXNetValueError(
            f"{opdef.name} takes at most {len(names)} parameters after its array(s) "
            f"({', '.join(names) or 'none'}), got {len(positional)}: {list(positional)}")
    given = dict(zip(names, positional))
    for k, v in (named or {}).items():
        if k in given:
            raise MXNetValueError(f"{opdef.name}: parameter {k!r} given by position and by name")
        given[k] = v
    # a nil/None is the parameter's None where its type has one (``slice_axis``'s
    # ``end``, ``topk``'s ``axis``), else "not given" (its default)
    # Each value goes through its parameter's converter (MXNet's text forms such
    # as a shape "(2,3)" are read the same whichever function runs the operator).
    return {k: (opdef.param(k).convert(opdef.name, v) if k in names else v)
            for k, v in given.items()
            if v is not None or k not in names or opdef.param(k).required
            or "None" in opdef.param(k).type}


def invoke(mx: Any, name: str, inputs: List[Any], positional: Sequence[Any] = (),
           named: Dict[str, Any] | None = None, out: Any = None):
    """Operator ``name`` on NDArrays ``inputs``: a new NDArray (a list for
    several outputs), or ``out`` written."""
    opdef = resolve(name)
    _check_inputs(opdef, inputs)
    kwargs = params(opdef, positional or (), named)
    fn = _function(mx, opdef)
    if isinstance(kwargs.get("ctx"), str) and kwargs["ctx"] and fn is _FUNCTIONS.get(opdef.name):
        kwargs["ctx"] = ctx_param(kwargs["ctx"])  # MXNet's text "cpu(0)", as the table reads it
    if out is not None:
        kwargs["out"] = out
    return fn(*inputs, **kwargs)
