"""The cases ``tools/golden_ops.py`` records, one block per operator family
(runs inside MXNet's venv; imported by golden_ops.py, which it fills)."""
from __future__ import annotations

from golden_ops import arr, case

F32, F16, F64, I32, I64, U8 = "float32", "float16", "float64", "int32", "int64", "uint8"

# ---------------------------------------------------------------- unary
DOMAIN = {  # op: (lo, hi) of valid inputs
    "log": (0.1, 5), "log10": (0.1, 5), "log2": (0.1, 5), "log1p": (-0.9, 5),
    "sqrt": (0, 9), "rsqrt": (0.1, 9), "arcsin": (-0.99, 0.99), "arccos": (-0.99, 0.99),
    "arctanh": (-0.99, 0.99), "arccosh": (1.01, 6), "gamma": (0.1, 5), "gammaln": (0.1, 5),
    "erfinv": (-0.99, 0.99), "reciprocal": (0.5, 4), "rcbrt": (0.5, 4),
}
UNARY = ["abs", "sign", "square", "negative", "relu", "ceil", "floor", "trunc", "fix", "rint",
         "round", "logical_not", "exp", "expm1", "log", "log10", "log2", "log1p", "sin", "cos",
         "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
         "arctanh", "degrees", "radians", "sqrt", "rsqrt", "cbrt", "rcbrt", "reciprocal",
         "sigmoid", "softsign", "erf", "erfinv", "gamma", "gammaln", "identity", "BlockGrad",
         "stop_gradient", "make_loss"]
for op in UNARY:
    lo, hi = DOMAIN.get(op, (-3, 3))
    case(op, arr((2, 3), F32, lo, hi))
    case(op, arr((5,), F16, lo, hi), tag="f16")
    case(op, arr((2, 2), F64, lo, hi), tag="f64")
    case(op, arr((4,), I32, max(lo, 1) if op in DOMAIN else -3, max(hi, 2)), tag="int32")
    case(op, arr((0, 3), F32), empty=True, tag="empty")
case("round", arr((6,), F32, values=[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]), tag="halves")
case("rint", arr((6,), F32, values=[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]), tag="halves")
case("log", arr((3,), F32, values=[-1.0, 0.0, 1.0]), tag="nan_inf")
for m in ("exp", "log", "sqrt", "abs", "sigmoid", "relu", "tanh", "floor", "round", "square",
          "reciprocal", "rsqrt", "sin", "cos", "arctan", "expm1", "log1p", "cbrt", "sign",
          "trunc", "fix", "ceil", "rint", "degrees", "radians", "sinh", "cosh", "arcsinh",
          "log2", "log10", "tan", "rcbrt"):
    lo, hi = DOMAIN.get(m, (-3, 3))
    case(m, arr((3, 2), F32, max(lo, 0.1), hi), method=True, tag="method")
case("hard_sigmoid", arr((2, 4), F32))
case("hard_sigmoid", arr((2, 4), F32), alpha=0.3, beta=0.4, tag="params")
case("smooth_l1", arr((2, 4), F32))
case("smooth_l1", arr((2, 4), F32), scalar=2.0, tag="scalar2")
case("clip", arr((2, 3), F32), 0.5, 1.5)
case("clip", arr((2, 3), I32, -5, 5), a_min=-1, a_max=2, tag="int32")
case("clip", arr((2, 3), F32), 0.5, 1.5, method=True, tag="method")
case("clip", arr((2, 3), F32), tag="missing_param")

# ---------------------------------------------------------------- binary
PAIRS = [((2, 3), (2, 3)), ((2, 3), (1, 3)), ((4, 1, 3), (2, 1)), ((3,), (2, 1))]
BCAST = ["add", "sub", "mul", "div", "mod", "power", "maximum", "minimum", "hypot", "equal",
         "not_equal", "greater", "greater_equal", "lesser", "lesser_equal", "logical_and",
         "logical_or", "logical_xor", "plus", "minus"]
for k in BCAST:
    op = f"broadcast_{k}"
    pos = k in ("power", "hypot")
    for i, (sa, sb) in enumerate(PAIRS):
        case(op, arr(sa, F32, 0.2 if pos else -3, 3), arr(sb, F32, 0.5 if pos else -3, 3),
             tag=f"shapes{i}")
    case(op, arr((2, 3), I32, 1 if pos else -6, 6), arr((1, 3), I32, 1, 4), tag="int32")
    case(op, arr((3,), F16, 0.2, 3), arr((3,), F16, 0.5, 3), tag="f16")
    case(op, arr((2, 3), F32), arr((4,), F32), tag="bad_shapes")
case("broadcast_equal", arr((4,), F32, values=[1, 2, 2, 3]), arr((4,), F32,
                                                                     values=[1, 0, 2, 4]),
     tag="ties")
case("broadcast_mod", arr((4,), F32, values=[5, -5, 5, -5]), arr((4,), F32,
                                                                   values=[3, 3, -3, 0]),
     tag="signs")
case("broadcast_div", arr((2,), I32, values=[7, -7]), arr((2,), I32, values=[2, 2]),
     tag="int_trunc")
for k in ("add", "sub", "mul", "div"):
    op = f"elemwise_{k}"
    case(op, arr((2, 3), F32), arr((2, 3), F32, 0.5, 3))
    case(op, arr((4,), I32, -5, 5), arr((4,), I32, 1, 5), tag="int32")
    case(op, arr((2, 3), F32), arr((1, 3), F32), tag="bad_shapes")
    case(op, arr((2, 3), F32), arr((2, 3), F64), tag="mixed_dtypes")
for py in ("add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser",
           "lesser_equal", "logical_and", "logical_or", "logical_xor"):
    case(py, arr((2, 3), F32, 0.5, 3), arr((1, 3), F32, 0.5, 3))
    case(py, arr((2, 3), F32, 0.5, 3), 2.0, tag="scalar")
    case(py, 3.0, arr((2, 3), F32, 0.5, 3), tag="rscalar")
    case(py, arr((4,), I32, 1, 6), 2, tag="int_scalar")

# ---------------------------------------------------------------- reductions
X234 = lambda dt=F32, lo=-3, hi=3: arr((2, 3, 4), dt, lo, hi)  # noqa: E731
for op in ("sum", "mean", "prod", "nansum", "nanprod", "max", "min"):
    lo, hi = (0.5, 1.5) if "prod" in op else (-3, 3)
    case(op, X234(F32, lo, hi))
    case(op, X234(F32, lo, hi), axis=1, tag="axis1")
    case(op, X234(F32, lo, hi), axis=(0, 2), tag="axis02")
    case(op, X234(F32, lo, hi), axis=-1, keepdims=True, tag="keepdims")
    case(op, X234(F32, lo, hi), axis=1, exclude=True, tag="exclude")
    case(op, X234(F32, lo, hi), axis=(), tag="empty_axis")
    case(op, X234(I32, -3 if "prod" not in op else 1, 3), axis=0, tag="int32")
    case(op, arr((3, 4), F16, lo, hi), axis=1, tag="f16")
    case(op, X234(F32, lo, hi), axis=3, tag="bad_axis")
    case(op, X234(F32, lo, hi), axis=1, method=True, tag="method")
    case(op, arr((0, 3), F32), axis=1, empty=True, tag="empty")
case("nansum", arr((4,), F32, values=[1.0, float("nan"), 2.0, float("nan")]), tag="nan")
case("nanprod", arr((4,), F32, values=[2.0, float("nan"), 3.0, 1.0]), tag="nan")
for op, p in (("sum_axis", {"axis": 1}), ("max_axis", {"axis": 0}), ("min_axis", {})):
    case(op, X234(), **p)
case("norm", X234())
case("norm", X234(), ord=1, tag="l1")
case("norm", X234(), axis=1, tag="axis1")
case("norm", X234(), axis=(1, 2), keepdims=True, tag="keepdims")
case("norm", arr((3, 4), F16), tag="f16")
case("norm", X234(), out_dtype="float64", tag="out_dtype")
case("norm", X234(), method=True, tag="method")
case("norm", X234(), ord=3, tag="bad_ord")
for op in ("argmax", "argmin"):
    case(op, X234())
    case(op, X234(), axis=1, tag="axis1")
    case(op, X234(), axis=-1, keepdims=True, tag="keepdims")
    case(op, X234(I32), axis=0, tag="int32")
    case(op, X234(), axis=5, tag="bad_axis")
    case(op, X234(), axis=2, method=True, tag="method")
case("argmax_channel", arr((3, 5), F32))
case("argmax_channel", X234(), tag="3d")
case("moments", X234(), axes=(0, 2))
case("moments", X234(), axes=(1,), keepdims=True, tag="keepdims")

# ---------------------------------------------------------------- shape
for spec in [(6, 4), (-1, 2), (0, -1), (-2,), (-3, 4), (2, -4, 1, 3, 4), (5, 5)]:
    case("reshape", X234(), shape=spec, tag=f"{spec}")
case("reshape", X234(), shape=(-1, 0), reverse=True, tag="reverse")
case("Reshape", X234(), shape=(4, 6))
case("reshape_like", arr((2, 6), F32), arr((3, 4), F32))
case("reshape_like", arr((2, 6), F32), arr((3, 4), F32), lhs_begin=1, lhs_end=2, rhs_begin=0,
     rhs_end=1, tag="ranges")
case("transpose", X234())
case("transpose", X234(), axes=(1, 0, 2), tag="axes")
case("transpose", X234(), axes=(0, 1), tag="bad_axes")
case("transpose", X234(), method=True, tag="method")
for ax in (0, -1, 2, 4):
    case("expand_dims", X234(), axis=ax, tag=f"axis{ax}")
case("expand_dims", X234(), axis=1, method=True, tag="method")
case("squeeze", arr((1, 3, 1), F32))
case("squeeze", arr((1, 3, 1), F32), axis=2, tag="axis")
case("squeeze", arr((1, 3, 1), F32), axis=1, tag="bad_axis")
case("squeeze", arr((1, 3, 1), F32), method=True, tag="method")
case("flatten", X234())
case("Flatten", arr((3,), F32), tag="1d")
case("stack", arr((2, 3), F32), arr((2, 3), F32))
case("stack", arr((2, 3), F32), arr((2, 3), F32), axis=-1, tag="axis")
case("stack", arr((2, 3), F32), arr((3, 2), F32), tag="bad_shapes")
case("concat", arr((2, 3), F32), arr((2, 1), F32))
case("concat", arr((2, 3), F32), arr((1, 3), F32), dim=0, tag="dim0")
case("concat", arr((2, 3), F32), arr((3, 3), F32), tag="bad_shapes")
case("Concat", arr((2, 3), I32), arr((2, 3), I32), dim=0, tag="int32")
case("split", arr((4, 6), F32), num_outputs=2)
case("split", arr((4, 6), F32), num_outputs=3, axis=1, tag="axis1")
case("split", arr((4, 2), F32), num_outputs=2, axis=1, squeeze_axis=True, tag="squeeze")
case("split", arr((4, 5), F32), num_outputs=2, tag="bad")
case("SliceChannel", arr((4, 6), F32), num_outputs=2, axis=0)
case("split", arr((4, 6), F32), num_outputs=2, method=True, tag="method")
case("tile", arr((2, 3), F32), reps=(2, 2))
case("tile", arr((2, 3), F32), reps=(3,), tag="short_reps")
case("tile", arr((2, 3), F32), reps=(2, 1, 2), tag="long_reps")
case("tile", arr((2, 3), F32), reps=(2,), method=True, tag="method")
case("repeat", arr((2, 3), F32), repeats=2)
case("repeat", arr((2, 3), F32), repeats=2, axis=1, tag="axis1")
case("repeat", arr((2, 3), F32), repeats=3, axis=0, method=True, tag="method")
case("flip", X234(), axis=1)
case("reverse", X234(), axis=(0, 2), tag="axes")
case("flip", X234(), axis=1, method=True, tag="method")
case("swapaxes", X234(), dim1=0, dim2=2)
case("SwapAxis", X234(), dim1=1, dim2=-1, tag="neg")
case("swapaxes", X234(), dim1=0, dim2=1, method=True, tag="method")
case("slice", X234(), begin=(0, 1), end=(2, 3))
case("slice", X234(), begin=(None, 0, 1), end=(None, 3, None), step=(1, 2, 2), tag="step")
case("slice", X234(), begin=(1, 2), end=(0, 1), tag="bad")
case("crop", X234(), begin=(0, 1), end=(1, 3), tag="crop")
case("slice", X234(), begin=(0, 1), end=(2, 3), method=True, tag="method")
case("slice_axis", X234(), axis=2, begin=1, end=3)
case("slice_axis", X234(), axis=1, begin=-2, end=None, tag="none_end")
case("slice_axis", X234(), axis=2, begin=3, end=1, tag="bad")
case("slice_axis", X234(), axis=0, begin=0, end=1, method=True, tag="method")
case("slice_like", X234(), arr((1, 2, 3), F32))
case("slice_like", X234(), arr((1, 2), F32), axes=(1,), tag="axes")
case("broadcast_to", arr((1, 3), F32), shape=(4, 3))
case("broadcast_to", arr((2, 1), F32), shape=(0, 5), tag="zero_keeps")
case("broadcast_to", arr((2, 3), F32), shape=(4, 3), tag="bad")
case("broadcast_to", arr((1, 3), F32), shape=(2, 3), method=True, tag="method")
case("broadcast_like", arr((1, 3), F32), arr((4, 3), F32))
case("broadcast_like", arr((1, 3), F32), arr((5, 6), F32), lhs_axes=(0,), rhs_axes=(1,),
     tag="axes")
case("broadcast_axis", arr((2, 1, 1), F32), axis=(1, 2), size=(3, 2))
case("broadcast_axes", arr((2, 1), F32), axis=1, size=4, tag="alias")
case("depth_to_space", arr((1, 8, 2, 3), F32), block_size=2)
case("depth_to_space", arr((1, 6, 2, 3), F32), block_size=2, tag="bad")
case("space_to_depth", arr((1, 2, 4, 6), F32), block_size=2)
case("space_to_depth", arr((1, 2, 4, 6), F32), block_size=2, method=True, tag="method")
case("diag", arr((3, 4), F32))
case("diag", arr((3, 4), F32), k=1, tag="k1")
case("diag", arr((3,), F32), tag="1d")
case("diag", arr((3,), F32), k=-1, tag="1d_k")
case("diag", X234(), k=1, axis1=0, axis2=2, tag="3d")
case("cast", arr((2, 3), F32), dtype="int32")
case("Cast", arr((2, 3), F32, -300, 300), dtype="uint8", tag="u8")
case("cast", arr((2, 3), F32), dtype="float16", tag="f16")
case("amp_cast", arr((2, 3), F32), dtype="float16")
case("zeros_like", arr((2, 3), I32))
case("ones_like", arr((2, 3), F16))
case("shape_array", X234())
case("size_array", X234())
case("add_n", arr((2, 3), F32), arr((2, 3), F32), arr((2, 3), F32))
case("ElementWiseSum", arr((2, 3), I32), arr((2, 3), I32))

# ---------------------------------------------------------------- indexing
IDX = lambda shape, hi, lo=0: arr(shape, F32, values=None, lo=lo, hi=hi)  # noqa: E731
case("take", arr((5, 3), F32), arr((4,), F32, values=[0, 4, 2, 1]))
case("take", arr((5, 3), F32), arr((2, 2), F32, values=[0, 2, 1, 7]), tag="clip")
case("take", arr((5, 3), F32), arr((3,), F32, values=[-1, 5, 1]), mode="wrap", tag="wrap")
case("take", X234(), arr((2,), I32, values=[3, 1]), axis=2, tag="axis2")
case("take", arr((5, 3), F32), arr((2,), F32, values=[1, 0]), method=True, tag="method")
case("pick", arr((3, 4), F32), arr((3,), F32, values=[0, 3, 2]))
case("pick", arr((3, 4), F32), arr((4,), F32, values=[0, 2, 1, 5]), axis=0, tag="axis0")
case("pick", arr((3, 4), F32), arr((3,), F32, values=[0, -1, 5]), mode="wrap", tag="wrap")
case("pick", arr((3, 4), F32), arr((3,), F32, values=[1, 2, 3]), keepdims=True, tag="keep")
case("pick", arr((3, 4), F32), arr((3,), F32, values=[1, 2, 3]), method=True, tag="method")
case("where", arr((2, 3), F32, values=[1, 0, 1, 0, 0, 2]), arr((2, 3), F32), arr((2, 3), F32))
case("where", arr((2,), F32, values=[0, 1]), arr((2, 3), F32), arr((2, 3), F32), tag="1d_cond")
case("where", arr((2, 3), F32), arr((2, 3), F32), arr((3, 2), F32), tag="bad")
case("one_hot", arr((4,), F32, values=[0, 2, 1, 5]), depth=3)
case("one_hot", arr((2, 2), I32, values=[0, 1, 2, -1]), depth=3, on_value=5, off_value=-1,
     dtype="int32", tag="values")
case("one_hot", arr((3,), F32, values=[0, 1, 2]), depth=3, method=True, tag="method")
for op in ("sort", "argsort"):
    case(op, X234())
    case(op, X234(), axis=0, is_ascend=False, tag="desc_axis0")
    case(op, X234(), axis=None, tag="flat")
    case(op, X234(I32), tag="int32")
    case(op, X234(), axis=1, method=True, tag="method")
case("argsort", X234(), dtype="int32", tag="dtype")
case("topk", X234())
case("topk", X234(), k=2, ret_typ="value", tag="value")
case("topk", X234(), k=2, ret_typ="both", axis=1, tag="both")
case("topk", X234(), k=2, ret_typ="mask", tag="mask")
case("topk", X234(), k=3, is_ascend=True, dtype="int32", axis=0, tag="ascend")
case("topk", X234(), k=2, axis=None, tag="flat")
case("topk", arr((5,), F32, values=[1, 3, 3, 2, 3]), k=2, tag="ties")
case("topk", X234(), k=9, tag="bad_k")
case("topk", X234(), k=2, method=True, tag="method")
case("gather_nd", X234(), arr((2, 3), F32, values=[0, 1, 1, 2, 0, 3]))
case("gather_nd", arr((3, 4), F32), arr((1, 2), I32, values=[2, 0]), tag="1coord")
case("scatter_nd", arr((3,), F32), arr((2, 3), F32, values=[0, 1, 1, 2, 0, 3]), shape=(2, 4))
case("batch_take", arr((3, 4), F32), arr((3,), I32, values=[0, 3, 1]))
case("ravel_multi_index", arr((2, 3), F32, values=[0, 1, 2, 1, 0, 3]), shape=(3, 4))
case("unravel_index", arr((3,), F32, values=[0, 5, 11]), shape=(3, 4))
case("fill_element_0index", arr((3, 4), F32), arr((3,), F32), arr((3,), F32, values=[0, 3, 1]))
case("choose_element_0index", arr((3, 4), F32), arr((3,), F32, values=[0, 3, 1]))

# ---------------------------------------------------------------- products, linalg, misc
case("dot", arr((2, 3), F32), arr((3, 4), F32))
case("dot", arr((3, 2), F32), arr((3, 4), F32), transpose_a=True, tag="ta")
case("dot", arr((2, 3), F32), arr((4, 3), F32), transpose_b=True, tag="tb")
case("dot", arr((3,), F32), arr((3,), F32), tag="vv")
case("dot", arr((3,), F32), arr((3, 2), F32), tag="vm")
case("dot", X234(), arr((4, 2), F32), tag="3d")
case("dot", X234(), arr((2, 5), F32), transpose_a=True, tag="3d_ta")
case("dot", arr((2, 3), F64), arr((3, 4), F64), tag="f64")
case("dot", arr((2, 3), F32), arr((4, 3), F32), tag="bad")
case("batch_dot", X234(), arr((2, 4, 5), F32))
case("batch_dot", X234(), arr((2, 5, 4), F32), transpose_b=True, tag="tb")
case("batch_dot", arr((2, 4, 3), F32), arr((2, 4, 5), F32), transpose_a=True, tag="ta")
case("batch_dot", X234(), arr((3, 4, 5), F32), tag="bad")
case("khatri_rao", arr((2, 3), F32), arr((4, 3), F32))
case("khatri_rao", arr((2, 2), F32), arr((3, 2), F32), arr((2, 2), F32), tag="three")
case("cumsum", X234())
case("cumsum", X234(), axis=1, tag="axis1")
case("cumsum", X234(I32), axis=0, tag="int32")
case("cumsum", X234(I32), axis=-1, dtype="float32", tag="dtype")
case("all_finite", arr((3,), F32, values=[1, 2, 3]))
case("all_finite", arr((3,), F32, values=[1, float("inf"), 3]), tag="inf")
case("multi_all_finite", arr((2,), F32), arr((2,), F32, values=[1, float("nan")]),
     num_arrays=2)
case("moveaxis", X234(), 0, 2)
case("moveaxis", X234(), (0, 1), (2, 0), tag="two")
case("split_v2", arr((6, 2), F32), 3)
case("split_v2", arr((6, 2), F32), (1, 4), tag="indices")
case("split_v2", arr((2, 6), F32), 2, axis=1, squeeze_axis=False, tag="axis")

SPD = arr((2, 2), F32, values=[4, 2, 2, 3])
SPD_B = arr((2, 3, 3), F64, values=[4, 1, 0, 1, 3, 1, 0, 1, 2, 5, 2, 1, 2, 4, 0, 1, 0, 3])
LOWER = arr((3, 3), F32, values=[2, 0, 0, 1, 3, 0, -1, 2, 4])
for name in ("gemm2",):
    case(f"linalg_{name}", arr((2, 3), F32), arr((3, 4), F32))
    case(f"linalg_{name}", arr((3, 2), F32), arr((4, 3), F32), transpose_a=True, transpose_b=True,
         alpha=2.0, tag="t_alpha")
    case(f"linalg_{name}", arr((2, 2, 3), F32), arr((2, 3, 4), F32), tag="batch")
    case(f"linalg_{name}", arr((2, 3), F32), arr((2, 4), F32), tag="bad")
case("linalg_gemm", arr((2, 3), F32), arr((3, 4), F32), arr((2, 4), F32), alpha=0.5, beta=2.0)
case("linalg_gemm", arr((3, 2), F32), arr((3, 4), F32), arr((2, 4), F32), transpose_a=True,
     tag="ta")
case("linalg_potrf", SPD)
case("linalg_potrf", SPD_B, tag="batch_f64")
case("linalg_potri", arr((2, 2), F32, values=[2, 0, 1, 1.5]))
case("linalg_trmm", LOWER, arr((3, 2), F32))
case("linalg_trmm", LOWER, arr((2, 3), F32), rightside=True, transpose=True, alpha=2.0,
     tag="right_t")
case("linalg_trsm", LOWER, arr((3, 2), F32))
case("linalg_trsm", LOWER, arr((2, 3), F32), rightside=True, tag="right")
case("linalg_trsm", LOWER, arr((3, 2), F32), lower=False, transpose=True, tag="upper_t")
case("linalg_sumlogdiag", SPD)
case("linalg_syrk", arr((2, 3), F32))
case("linalg_syrk", arr((2, 3), F32), transpose=True, alpha=0.5, tag="t")
case("linalg_gelqf", arr((2, 3), F64))
case("linalg.syevd", arr((3, 3), F64, values=[4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 1]))
case("linalg.syevd", arr((2, 2, 2), F32, values=[2, -1, -1, 3, 1, 0.3, 0.3, -2]), tag="batch")
case("linalg_inverse", SPD)
case("linalg_inverse", SPD_B, tag="batch")
case("linalg_det", SPD)
case("linalg_det", SPD_B, tag="batch")
case("linalg_slogdet", arr((2, 2), F32, values=[1, 2, 3, 4]))
case("linalg_extractdiag", arr((3, 3), F32))
case("linalg_extractdiag", arr((3, 3), F32), offset=1, tag="offset")
case("linalg_makediag", arr((3,), F32))
case("linalg_makediag", arr((2, 3), F32), offset=-1, tag="batch_offset")
case("linalg_extracttrian", arr((3, 3), F32))
case("linalg_extracttrian", arr((3, 3), F32), lower=False, tag="upper")
case("linalg_extracttrian", arr((3, 3), F32), offset=1, tag="offset")
case("linalg_maketrian", arr((6,), F32))
case("linalg_maketrian", arr((6,), F32), lower=False, tag="upper")
case("linalg_maketrian", arr((3,), F32), offset=1, tag="offset")
case("linalg_potrf", arr((2, 3), F32), tag="bad_not_square")
for short in ("gemm2", "potrf", "inverse", "det", "extractdiag"):
    A = SPD if short != "gemm2" else arr((2, 3), F32)
    case(f"linalg.{short}", A, *([arr((3, 2), F32)] if short == "gemm2" else []),
         tag="linalg_namespace")

# ---------------------------------------------------------------- slicing extras, python functions
case("slice_assign", arr((3, 4), F32), arr((2, 2), F32), (0, 1), (2, 3), (None, None),
     method=True)
case("slice_assign_scalar", arr((3, 4), F32), 7.0, (1, 0), (3, 4), (1, 2), method=True)
case("split_v2", arr((6, 2), F32), (2, 3), method=True, tag="method")
case("amp_multicast", arr((2,), F32), arr((2,), F64), num_outputs=2)
case("amp_multicast", arr((2,), F32), arr((2,), F64), num_outputs=2, cast_narrow=True,
     tag="narrow")
case("linspace", 0, 1, 5)
case("linspace", -1, 3, 4, endpoint=False, dtype="float64", tag="no_end")
case("onehot_encode", arr((3,), F32, values=[1, 0, 2]), arr((3, 3), F32, values=[9] * 9))

# ---------------------------------------------------------------- multi-weight SGD updates
W = lambda dt=F32: arr((2, 3), dt)  # noqa: E731
case("multi_sgd_update", W(), W(), W(), W(), lrs=(0.1, 0.2), wds=(0.01, 0.0), num_weights=2,
     out=[W(), W()])
case("multi_sgd_update", W(), W(), lrs=(0.5,), wds=(0.1,), rescale_grad=0.5,
     clip_gradient=1.0, out=[W()], tag="one_clip")
case("multi_sgd_mom_update", W(), W(), W(), W(), W(), W(), lrs=(0.1, 0.2), wds=(0.0, 0.01),
     momentum=0.9, num_weights=2, out=[W(), W()])
case("multi_mp_sgd_update", W(F16), W(F16), W(), lrs=(0.1,), wds=(0.01,), out=[W(F16)])
case("multi_mp_sgd_mom_update", W(F16), W(F16), W(), W(), lrs=(0.1,), wds=(0.01,),
     momentum=0.5, out=[W(F16)])
case("preloaded_multi_sgd_update", W(), W(), W(), W(), arr((2,), F32, values=[0.1, 0.3]),
     arr((2,), F32, values=[0.0, 0.02]), num_weights=2, out=[W(), W()])
case("preloaded_multi_sgd_mom_update", W(), W(), W(), arr((1,), F32, values=[0.1]),
     arr((1,), F32, values=[0.01]), momentum=0.9, out=[W()])
case("preloaded_multi_mp_sgd_update", W(F16), W(F16), W(), arr((1,), F32, values=[0.1]),
     arr((1,), F32, values=[0.01]), out=[W(F16)])
case("preloaded_multi_mp_sgd_mom_update", W(F16), W(F16), W(), W(),
     arr((1,), F32, values=[0.1]), arr((1,), F32, values=[0.01]), momentum=0.5,
     out=[W(F16)])
case("multi_sgd_update", W(), W(), W(), lrs=(0.1,), wds=(0.0,), out=[W()],
     tag="bad_count")

# ---------------------------------------------------------------- vision
case("ROIPooling", arr((2, 2, 6, 8), F32),
     arr((3, 5), F32, values=[0, 0, 0, 7, 5, 1, 2, 1, 5, 4, 0, 1.4, 0.6, 3.5, 2.5]),
     pooled_size=(2, 3), spatial_scale=1.0)
case("ROIPooling", arr((1, 3, 8, 8), F32),
     arr((2, 5), F32, values=[0, 0, 0, 15, 15, 0, 4, 2, 10, 12]),
     pooled_size=(3, 3), spatial_scale=0.5, tag="scale")
case("Correlation", arr((1, 3, 7, 8), F32), arr((1, 3, 7, 8), F32))
case("Correlation", arr((2, 2, 9, 9), F32), arr((2, 2, 9, 9), F32), kernel_size=3,
     max_displacement=2, stride1=2, stride2=1, pad_size=2, tag="k3_pad")
case("Correlation", arr((1, 2, 6, 6), F32), arr((1, 2, 6, 6), F32), max_displacement=2,
     stride2=2, pad_size=1, is_multiply=False, tag="absdiff")

# ---------------------------------------------------------------- more empty arrays
E03 = lambda: arr((0, 3), F32)  # noqa: E731
case("broadcast_add", E03(), arr((1, 3), F32), empty=True, tag="empty")
case("broadcast_mul", E03(), E03(), empty=True, tag="empty")
case("elemwise_sub", E03(), E03(), empty=True, tag="empty")
case("transpose", E03(), empty=True, tag="empty")
case("concat", E03(), arr((2, 3), F32), dim=0, empty=True, tag="empty")
case("dot", E03(), arr((3, 2), F32), empty=True, tag="empty")
case("sort", E03(), empty=True, tag="empty")
case("argmax", E03(), axis=1, empty=True, tag="empty")
case("tile", E03(), reps=(2, 1), empty=True, tag="empty")
case("clip", E03(), 0, 1, empty=True, tag="empty")
case("take", arr((4, 3), F32), arr((0,), F32), empty=True, tag="empty_indices")
case("one_hot", arr((0,), F32), depth=3, empty=True, tag="empty")
case("expand_dims", E03(), axis=1, empty=True, tag="empty")
case("reshape", E03(), shape=(3, 0), empty=True, tag="empty")
