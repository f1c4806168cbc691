"""Generate the Python frontends from the operator table.

:func:`make_function` writes, once per operator, a Python function with
MXNet's own signature (``sum(data=None, axis=_Null, keepdims=_Null,
exclude=_Null, out=None, name=None, **kwargs)``; ``concat(*data,
**kwargs)`` for a variable count), compiled from source so a call does no
introspection: inputs are checked by type, parameters left as ``_Null``
take their precomputed default, given ones go through their converter,
and the implementation runs on the first input's array module. The
result keeps MXNet's conventions: shape ``(1,)`` for a scalar result, the
first input's context, ``out=`` written and returned.
"""
from __future__ import annotations

from typing import Any, Callable, cast

import numpy as np

from ...base import MXNetError, _Null
from ...context import Context, current_context, xp_for
from .._util import (
    QUIET,
    SUPPORTED_DTYPES,
    MXNetIndexError,
    MXNetTypeError,
    MXNetValueError,
    copy_into,
    device_scope,
    quiet_reset,
    quiet_set,
)
from ..ndarray import NDArray, peer_array
from .registry import REQUIRED, OpDef, iter_ops

__all__ = ["make_function", "functions", "install_methods"]

_SUPPORTED = frozenset(SUPPORTED_DTYPES)
_NEW = object.__new__

def _wrap(res: Any, ctx: Context) -> NDArray:
    """A new NDArray around the implementation's result ``res`` (no copy when
    it is C-contiguous, of a supported dtype and not 0-d)."""
    if res.ndim == 0:
        res = res.reshape(1)
    if not res.flags.c_contiguous:
        res = res.copy()
    if res.dtype not in _SUPPORTED:
        res = res.astype(np.int64 if res.dtype.kind in "iu" else np.float32)
    nd = _NEW(NDArray)
    nd._array = res
    nd._ctx = ctx
    return nd


def _to_out(opname: str, res: Any, out: Any) -> NDArray:
    if not isinstance(out, NDArray):
        raise MXNetTypeError(f"{opname}: out must be an NDArray, got {type(out).__name__}")
    shape = tuple(res.shape) or (1,)
    if out.shape != shape:
        raise MXNetValueError(f"{opname}: out has shape {out.shape}, the result has shape "
                              f"{shape}")
    if out.stype != "default":
        out[:] = _wrap(res, out.context)
        return out
    copy_into(out._array, res.reshape(shape))
    return out


def finish(opdef: OpDef, res: Any, x0: Any, ctx: Context, out: Any) -> Any:
    """The NDArray(s) for the implementation's result ``res`` (or ``out`` written)."""
    xp = np if not ctx.uses_cupy else xp_for(ctx)
    if isinstance(res, (tuple, list)):
        outs = out if isinstance(out, (list, tuple)) else [None] * len(res)
        if len(outs) != len(res):
            raise MXNetValueError(f"{opdef.name}: out has {len(outs)} arrays, the operator "
                                  f"gives {len(res)}")
        return [finish(opdef, r, x0, ctx, o) for r, o in zip(res, outs)]
    if not hasattr(res, "dtype") or not hasattr(res, "ndim"):
        res = xp.asarray(res)
    if opdef.dtype == "same" and x0 is not None and res.dtype != x0.dtype:
        with np.errstate(all="ignore"):
            res = res.astype(x0.dtype)
    if out is not None:
        return _to_out(opdef.name, res, out)
    return _wrap(res, ctx)


_ERRORS = {ValueError: MXNetValueError, TypeError: MXNetTypeError,
           IndexError: MXNetIndexError, np.exceptions.AxisError: MXNetValueError,
           np.linalg.LinAlgError: MXNetError, ZeroDivisionError: MXNetValueError}


def error(opdef: OpDef, exc: Exception, xs: tuple) -> Exception:
    """``exc`` (raised by an implementation) as an MXNetError naming the operator
    and the inputs' shapes; an MXNetError passes unchanged."""
    if isinstance(exc, MXNetError):
        return exc
    cls = next((c for t, c in _ERRORS.items() if isinstance(exc, t)), MXNetError)
    shapes = ", ".join(f"{n}{tuple(x.shape)}" for n, x in xs if hasattr(x, "shape"))
    return cls(f"{opdef.name}: {exc} (inputs: {shapes or 'none'})")


def coerce(opdef: OpDef, name: str, x: Any) -> NDArray:
    """Input ``name`` as a dense NDArray (a sparse one as a dense copy), or an error."""
    if isinstance(x, NDArray):
        return x if x.stype == "default" else x.tostype("default")
    raise MXNetTypeError(f"{opdef.name}: argument {name} must have NDArray type, got "
                         f"{'nothing (it is required)' if x is None else type(x).__name__}")


def peer(opdef: OpDef, x: NDArray, ctx: Context) -> Any:
    """``x``'s array on ``ctx``'s device (shared on CPU, copied between GPUs)."""
    return peer_array(x, ctx, opdef.name)


def check_dtypes(opdef: OpDef, xs: list) -> None:
    """Raise unless the inputs share one dtype (MXNet's elemwise type rule)."""
    first = xs[0][1]._array.dtype
    for name, x in xs[1:]:
        if x._array.dtype != first:
            raise MXNetTypeError(f"{opdef.name}: input {name!r} has dtype "
                                 f"{x._array.dtype.name}, input {xs[0][0]!r} has "
                                 f"{first.name}: cast one with astype first")


def unexpected(opdef: OpDef, kwargs: dict) -> Exception:
    """The error for keyword arguments the operator does not have."""
    known = [p.name for p in opdef.params]
    return MXNetValueError(f"{opdef.name}: unexpected argument(s) {sorted(kwargs)}; its "
                           f"parameters are {known}")


def missing(opdef: OpDef, pname: str) -> Exception:
    """The error for a required parameter not given."""
    return MXNetValueError(f"{opdef.name}: required parameter {pname!r} is missing")


def ctx_param(value: Any) -> Context:
    """A ``ctx`` parameter (a Context, a string such as ``'gpu(0)'``, or empty) as a Context."""
    if value is None or value is _Null or value == "":
        return current_context()
    if isinstance(value, Context):
        return value
    text = str(value)
    kind, _, rest = text.partition("(")
    return Context(kind, int(rest.rstrip(")") or 0))


def run_gpu(opdef: OpDef, ctx: Context, args: tuple, xs: tuple) -> Any:
    """The implementation on ``ctx``'s GPU (its device current)."""
    with device_scope(ctx), np.errstate(all="ignore"):
        try:
            return cast(Callable[..., Any], opdef.impl)(xp_for(ctx), *args)
        except Exception as exc:  # noqa: BLE001 (translated, re-raised)
            raise error(opdef, exc, xs) from None


def _signature(opdef: OpDef) -> str:
    if opdef.variadic:
        return f"*{opdef.inputs[0][1:]}, **kwargs"
    parts = [f"{n}=None" for n in opdef.inputs] + [f"{p.name}=_Null" for p in opdef.params]
    return ", ".join(parts + ["out=None", "name=None", "**kwargs"])


def _source(opdef: OpDef, fname: str) -> str:
    """The Python source of ``fname``, the frontend of ``opdef``."""
    L = [f"def {fname}({_signature(opdef)}):"]
    add = L.append
    params = opdef.params
    if opdef.variadic:
        arg = opdef.inputs[0][1:]
        add("    out = kwargs.pop('out', None)")
        add("    kwargs.pop('name', None)")
        for p in params:
            add(f"    {p.name} = kwargs.pop({p.name!r}, _Null)")
        add("    if kwargs: raise _unexpected(OP, kwargs)")
        add(f"    if len({arg}) == 1 and isinstance({arg}[0], (list, tuple)): {arg} = "
            f"tuple({arg}[0])")
        add(f"    if not {arg}: raise _MXNetError(OP.name + ': needs at least one input array')")
        if opdef.csr is not None:
            add(f"    if any(getattr(x, 'stype', None) in OP.stypes for x in {arg}):")
            add(f"        return OP.csr(OP, list({arg}), "
                f"dict({', '.join(f'{p.name}={p.name}' for p in params)}), out)")
        add(f"    xs = [_coerce(OP, {arg!r}, x) for x in {arg}]")
        add("    x0 = xs[0]")
        add("    ctx = x0._ctx")
        add("    arrs = [x._array if x._ctx is ctx else _peer(OP, x, ctx) for x in xs]")
        add("    a0 = arrs[0]")
        if opdef.same_dtype:
            add("    _check_dtypes(OP, [(str(i), x) for i, x in enumerate(xs)])")
        if any(p.name == "num_args" for p in params):
            add("    if num_args is _Null: num_args = len(xs)")
            add("    elif int(num_args) != len(xs): raise _MXNetValueError("
                "f'{OP.name}: num_args is {num_args}, {len(xs)} arrays given')")
            add("    else: num_args = int(num_args)")
        names = [f"('{arg}', x0)"]
        args = ["arrs"]
    else:
        add("    if kwargs: raise _unexpected(OP, kwargs)")
        if opdef.csr is not None and opdef.inputs:
            test = " or ".join(f"getattr({n}, 'stype', None) in OP.stypes" for n in opdef.inputs)
            add(f"    if {test}:")
            add(f"        return OP.csr(OP, [{', '.join(opdef.inputs)}], "
                f"dict({', '.join(f'{p.name}={p.name}' for p in params)}), out)")
        names, args = [], []
        for i, n in enumerate(opdef.inputs):
            if i and n in opdef.optional:  # (None passes through to the impl)
                add(f"    x{i} = {n} if type({n}) is _ND or {n} is None else "
                    f"_coerce(OP, {n!r}, {n})")
                add(f"    a{i} = None if x{i} is None else x{i}._array if x{i}._ctx is ctx "
                    f"else _peer(OP, x{i}, ctx)")
                names.append(f"({n!r}, x{i})")
                args.append(f"a{i}")
                continue
            add(f"    x{i} = {n} if type({n}) is _ND else _coerce(OP, {n!r}, {n})")
            names.append(f"({n!r}, x{i})")
            if i == 0:
                add("    ctx = x0._ctx")
                add("    a0 = x0._array")
            else:
                add(f"    a{i} = x{i}._array if x{i}._ctx is ctx else _peer(OP, x{i}, ctx)")
            args.append(f"a{i}")
        if opdef.same_dtype and len(opdef.inputs) > 1:
            differ = " or ".join(f"a{i}.dtype != a0.dtype" for i in range(1, len(opdef.inputs)))
            add(f"    if {differ}: _check_dtypes(OP, [{', '.join(names)}])")
        if not opdef.inputs:
            add("    x0 = None")
    for k, p in enumerate(params):
        if p.required:
            add(f"    if {p.name} is _Null: raise _missing(OP, {p.name!r})")
            add(f"    {p.name} = P{k}.convert(OP.name, {p.name})")
        else:
            add(f"    {p.name} = D{k} if {p.name} is _Null else P{k}.convert(OP.name, {p.name})")
    if not opdef.inputs and not opdef.variadic:
        has_ctx = any(p.name == "ctx" for p in params)
        add(f"    ctx = _ctx_param({'ctx' if has_ctx else 'None'})")
        if has_ctx:
            add("    ctx_arg = ctx")
    call_args = ", ".join(args + [("ctx" if (p.name == "ctx" and not opdef.inputs) else p.name)
                                  for p in params])
    xs = f"({', '.join(names)},)"
    gpu_test = "type(a0) is not _NPA" if opdef.inputs else "ctx.uses_cupy"
    add(f"    if {gpu_test}:")
    add(f"        res = _run_gpu(OP, ctx, ({call_args}{',' if call_args else ''}), {xs})")
    add("    else:")
    add("        tok = _QSET(_QUIET)")
    add("        try:")
    add(f"            res = IMPL(_np, {call_args})")
    add("        except Exception as exc:")
    add(f"            raise _error(OP, exc, {xs}) from None")
    add("        finally:")
    add("            _QRESET(tok)")
    if opdef.dtype == "same" and opdef.inputs:
        # the common case inline: one array result of the input's dtype, no out
        add("    if out is None and type(res) is _NPA and res.dtype == a0.dtype and res.ndim "
            "and res.flags.c_contiguous:")
        add("        r = _NEW(_ND)")
        add("        r._array = res")
        add("        r._ctx = ctx")
        add("        return r")
    elif opdef.inputs and not opdef.variadic:
        add("    if out is None and type(res) is _NPA and res.ndim and res.flags.c_contiguous"
            " and res.dtype in _SUPPORTED:")
        add("        r = _NEW(_ND)")
        add("        r._array = res")
        add("        r._ctx = ctx")
        add("        return r")
    add("    return _finish(OP, res, x0._array if x0 is not None else None, ctx, out)")
    return "\n".join(L) + "\n"


def make_function(opdef: OpDef, fname: str | None = None) -> Callable[..., Any]:
    """The ``mx.nd`` function of ``opdef`` (its hand-written frontend when it has one)."""
    fname = fname or opdef.name
    if opdef.frontend is not None:
        return opdef.frontend
    env = {"OP": opdef, "IMPL": opdef.impl, "_np": np, "_Null": _Null, "_ND": NDArray,
           "_NPA": np.ndarray, "_NEW": _NEW, "_SUPPORTED": _SUPPORTED, "_coerce": coerce,
           "_peer": peer, "_check_dtypes": check_dtypes, "_unexpected": unexpected,
           "_missing": missing, "_run_gpu": run_gpu, "_error": error, "_finish": finish,
           "_ctx_param": ctx_param, "_MXNetError": MXNetError, "_QSET": quiet_set,
           "_QRESET": quiet_reset, "_QUIET": QUIET,
           "_MXNetValueError": MXNetValueError}
    for k, p in enumerate(opdef.params):
        env[f"P{k}"] = p
        if not p.required:
            env[f"D{k}"] = p.default
    src = _source(opdef, fname)
    code = compile(src, f"<mxkv operator {opdef.name}>", "exec")
    exec(code, env)  # noqa: S102 (generated from the table, as MXNet's frontends)
    fn = env[fname]
    fn.__doc__ = _doc(opdef)
    fn.__module__ = "mxkv.ndarray"
    fn.__qualname__ = fname
    fn.opdef = opdef
    return fn


def _doc(opdef: OpDef) -> str:
    lines = [opdef.doc or f"MXNet's ``{opdef.name}`` operator.", "", "Parameters", "----------"]
    for n in opdef.inputs:
        lines.append(f"{n.lstrip('*')} : NDArray{'s' if n.startswith('*') else ''}")
    for p in opdef.params:
        dflt = "required" if p.required else f"optional, default={p.default!r}"
        lines.append(f"{p.name} : {p.type}, {dflt}")
        if p.doc:
            lines.append(f"    {p.doc}")
    lines += ["out : NDArray, optional", "    The output array.", "name : str, optional",
              "    Ignored (MXNet's symbol name)."]
    if opdef.differences:
        lines += ["", "Differences from MXNet: " + opdef.differences]
    return "\n".join(lines)


_FUNCTIONS: dict = {}
# which OpDef namespaces each Python namespace shows: ``mx.nd`` holds the registry's
# operators and MXNet's Python wrappers (``python``), ``mx.nd.op`` the registry's only
_SPACES = {"nd": ("nd", "linalg", "python"), "op": ("nd", "linalg"), "linalg": ("linalg",)}


def functions(namespace: str = "nd") -> dict:
    """``{python name: function}`` of every operator of ``namespace`` (names and
    aliases): ``'nd'`` (``mx.nd``), ``'op'`` (``mx.nd.op``), ``'linalg'`` (the
    short names, ``gemm`` for ``linalg_gemm``), ``'internal'``, ``'random'``..."""
    res = {}
    for opdef in iter_ops():
        fn = _FUNCTIONS.get(opdef.name)
        if fn is None:
            fn = _FUNCTIONS[opdef.name] = make_function(opdef)
        if opdef.namespace in _SPACES.get(namespace, (namespace,)):
            short = namespace == "linalg"
            for n in opdef.names:
                if not short:
                    res[n] = fn
                elif n.startswith("linalg_"):
                    res[n[len("linalg_"):]] = fn
    return res


def install_methods() -> list:
    """Set each operator's NDArray methods on :class:`NDArray` (those the class
    does not define itself); returns their names."""
    done = []
    for opdef in iter_ops():
        for m in opdef.methods:
            if m in NDArray.__dict__ and not hasattr(NDArray.__dict__[m], "opdef"):
                continue
            fn = _FUNCTIONS.get(opdef.name) or make_function(opdef)
            _FUNCTIONS[opdef.name] = fn
            setattr(NDArray, m, fn)
            done.append(m)
    return done


# (REQUIRED is re-exported for the generated code's readers)
_ = REQUIRED
