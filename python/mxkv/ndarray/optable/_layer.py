"""Registering a layer kernel: MXNet's positional operator call onto the
kernel's keyword parameters.

The layer kernels (``nn_*.py``) take their parameters by keyword and leave
out those that only steer MXNet's backends (``workspace``, ``cudnn_tune``,
``cudnn_off``, ...); :func:`register_layer` declares the operator with all
of MXNet's parameters and passes the kernel the ones it uses.
"""
from __future__ import annotations

from typing import Any, Callable

from .._util import MXNetValueError
from .registry import OpDef, Param, register

__all__ = ["BACKEND_PARAMS", "register_layer"]

#: Parameters that choose among MXNet's backends (cuDNN, MKL-DNN, quantization,
#: workspace sizes; num_args, which the frontend checks): accepted and checked for
#: type, no effect on the result.
BACKEND_PARAMS = frozenset({"workspace", "cudnn_tune", "cudnn_off", "min_calib_range",
                            "max_calib_range", "sparse_grad", "layout", "num_args"})


def _check_layout(opname: str, layout: Any) -> None:
    if layout is not None and not layout.startswith("NC"):
        raise MXNetValueError(f"{opname}: layout {layout!r} is not supported: mxkv computes "
                              f"channels-first layouts (NCW, NCHW, NCDHW), as MXNet's CPU "
                              f"kernels")


def register_layer(name: str, inputs: tuple, params: tuple, kernel: Callable[..., Any], *,
                   doc: str, differences: str = "", optional: tuple = (),
                   methods: tuple = (), aliases: tuple = ()) -> OpDef:
    """Register operator ``name`` computed by ``kernel(xp, *arrays, **used_params)``,
    the parameters in :data:`BACKEND_PARAMS` left out (``layout`` checked)."""
    n = len(inputs)
    variadic = n == 1 and inputs[0].startswith("*")
    # impl(xp, <arrays>, <every parameter>) -> kernel(xp, <arrays>, name=value...),
    # written out once (no per-call dict), the layout checked where there is one
    arrays = ["arrs"] if variadic else [f"a{i}" for i in range(n)]
    pnames = [f"p{i}" for i in range(len(params))]
    body = [f"def impl(xp, {', '.join(arrays + pnames)}):"]
    for i, p in enumerate(params):
        if p.name == "layout":
            body.append(f"    _check_layout(NAME, p{i})")
    kws = [f"{p.name}=p{i}" for i, p in enumerate(params) if p.name not in BACKEND_PARAMS]
    call_arrays = "*arrs" if variadic else ", ".join(arrays)
    body.append(f"    return KERNEL(xp, {', '.join([call_arrays] + kws)})")
    env = {"KERNEL": kernel, "NAME": name, "_check_layout": _check_layout}
    exec(compile("\n".join(body) + "\n", f"<layer {name}>", "exec"), env)  # noqa: S102
    impl = env["impl"]

    impl.__module__ = kernel.__module__
    impl.__name__ = kernel.__name__
    return register(OpDef(name=name, inputs=inputs, params=tuple(params), impl=impl,
                          dtype="impl", doc=doc, differences=differences, optional=optional,
                          methods=methods, aliases=aliases,
                          family=kernel.__module__.rsplit(".", 1)[-1]))


def params(*specs: tuple) -> tuple:
    """``Param`` s from ``(name, type[, default])`` tuples."""
    return tuple(Param(*s) for s in specs)
