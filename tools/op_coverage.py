"""How much of MXNet 1.9.1's ``mx.nd`` surface mxkv has, from the record
tests/golden/op_surface.json (tools/golden_op_surface.py), and whether the
operator table's parameters are MXNet's (names, order, defaults).

Usage::

    .venv/bin/python tools/op_coverage.py            # counts
    .venv/bin/python tools/op_coverage.py --missing  # ... and what is missing

``tests/test_op_surface.py`` runs the same functions.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SURFACE = ROOT / "tests" / "golden" / "op_surface.json"

#: Out of scope for mx.nd functions, with the reason (docs/ndarray.md lists them).
EXCLUDED = {
    "imdecode": "image decoding",
    "Custom": "custom operators (Python callbacks into the engine)",
    "RNN": "RNN/CTC", "CTCLoss": "RNN/CTC", "ctc_loss": "RNN/CTC",
    "BilinearSampler": "spatial samplers", "GridGenerator": "spatial samplers",
    "SpatialTransformer": "spatial samplers",
    "SoftmaxOutput": "*Output loss layers (their gradient is their point)",
    "LinearRegressionOutput": "*Output loss layers", "LogisticRegressionOutput":
    "*Output loss layers", "MAERegressionOutput": "*Output loss layers",
    "SVMOutput": "*Output loss layers",
    "IdentityAttachKLSparseReg": "autograd (a gradient-only regularizer)",
    "CachedOp": "autograd / graph execution (a class, not an operator)",
    "get_indexing_dispatch_code": "a private helper of MXNet's indexing, not an operator",
    "get_oshape_of_gather_nd_op": "a private helper of MXNet's indexing, not an operator",
    "indexing_key_expand_implicit_axes": "a private helper of MXNet's indexing",
}
#: Out of scope for NDArray methods and attributes.
EXCLUDED_METHODS = {
    "attach_grad": "autograd", "backward": "autograd", "grad": "autograd",
    "detach": "autograd", "handle": "MXNet's C handle",
    "as_np_ndarray": "MXNet's numpy-mode arrays (mx.np) are not part of mxkv",
}


def surface() -> dict:
    """The recorded MXNet surface."""
    return json.loads(SURFACE.read_text())


def coverage() -> dict:
    """``{'functions': (present, in_scope, missing), 'methods': (...)}``."""
    import mxkv as mx
    s = surface()
    funcs = sorted(n for n in s["nd"] if n not in EXCLUDED)
    have = [n for n in funcs if callable(getattr(mx.nd, n, None))]
    methods = sorted(n for n in s["methods"] if n not in EXCLUDED_METHODS)
    have_m = [n for n in methods if hasattr(mx.nd.NDArray, n)]
    linalg = s["linalg"]
    have_l = [n for n in linalg if callable(getattr(mx.nd.linalg, n, None))]
    return {
        "functions": (len(have), len(funcs), sorted(set(funcs) - set(have))),
        "methods": (len(have_m), len(methods), sorted(set(methods) - set(have_m))),
        "linalg": (len(have_l), len(linalg), sorted(set(linalg) - set(have_l))),
    }


def _mxnet_default(type_str: str):
    """(required, default text) from MXNet's type string."""
    if "required" in type_str:
        return True, None
    if "default=" not in type_str:
        return False, None
    text = type_str.split("default=", 1)[1].strip()
    return False, text.strip("'")


def _norm_default(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, tuple):
        return "[]" if not v else "(" + ",".join(str(x) for x in v) + ("," if len(v) == 1
                                                                         else "") + ")"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _same_default(ours, theirs: str | None) -> bool:
    if theirs is None:
        return True
    a, b = _norm_default(ours), theirs.replace(" ", "")
    if b.startswith("[") and isinstance(ours, tuple):  # MXNet's [0,0] is the tuple (0, 0)
        b = "(" + b[1:-1] + ("," if b.count(",") == 0 and b != "[]" else "") + ")" \
            if b != "[]" else b
    if a == b or (a in ("[]", "()") and b in ("[]", "()", "None")):
        return True
    try:  # (MXNet prints float parameters' defaults as float32: 0.200000003)
        return abs(float(a) - float(b)) <= 1e-7 * max(1.0, abs(float(b)))
    except ValueError:
        return False


def param_mismatches() -> list:
    """Table operators whose parameters differ from MXNet's registry entry."""
    from mxkv.ndarray import optable
    s = surface()
    registry = {n: r["registry"] for n, r in s["nd"].items() if r.get("registry")}
    registry.update({n: r for n, r in s.get("linalg_registry", {}).items() if r})
    out = []
    for opdef in optable.iter_ops():
        entry = next((registry[n] for n in opdef.names if n in registry), None)
        if entry is None:
            continue
        theirs = [(a, t) for a, t in entry["args"]
                  if not t.startswith(("NDArray", "Symbol"))]
        ours = [p for p in opdef.params]
        if [a for a, _ in theirs] != [p.name for p in ours]:
            out.append(f"{opdef.name}: parameters {[p.name for p in ours]}, MXNet "
                       f"{[a for a, _ in theirs]}")
            continue
        for p, (_, t) in zip(ours, theirs):
            required, default = _mxnet_default(t)
            if required != p.required or (not required and not _same_default(p.default,
                                                                              default)):
                out.append(f"{opdef.name}.{p.name}: default "
                           f"{'required' if p.required else repr(p.default)}, MXNet {t!r}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--missing", action="store_true", help="list what is missing")
    args = ap.parse_args()
    cov = coverage()
    for what, (have, scope, missing) in cov.items():
        print(f"{what}: {have} / {scope} in scope ({100 * have / scope:.0f}%)")
        if args.missing:
            print("  missing:", " ".join(missing))
    bad = param_mismatches()
    print(f"parameter mismatches with MXNet: {len(bad)}")
    for b in bad:
        print("  " + b)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "python"))
    sys.exit(main())
