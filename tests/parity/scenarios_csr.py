"""Parity scenarios for csr arrays (issue 21): building them (``tostype('csr')``,
``csr_matrix``'s forms, ``zeros``), their copies, row slices, scalar ``*`` and
``/``, and ``sparse.dot``.

Registered into ``scenarios.SCENARIOS`` when ``scenarios`` is imported.
"""
from __future__ import annotations

import numpy as np

from .scenarios import RAISED, attempt, scenario

DENSE = [[0.0, 1.5, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, -1.0, 0.0]]


def _json(a):
    """``a.tolist()``, with inf and nan as strings (the golden file is strict JSON)."""
    def fix(v):
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v if not isinstance(v, float) or np.isfinite(v) else str(v)
    return fix(a.tolist())


def csr_parts(x):
    """Everything observable about a csr (or other) array, its three arrays too."""
    out = {"stype": x.stype, "shape": list(x.shape), "dtype": np.dtype(x.dtype).name,
           "ctx": str(x.context), "value": _json(x.asnumpy())}
    if x.stype == "csr":
        out.update(data=_json(x.data.asnumpy()), indices=x.indices.asnumpy().tolist(),
                   indptr=x.indptr.asnumpy().tolist(),
                   parts_dtypes=[np.dtype(a.dtype).name for a in (x.data, x.indices, x.indptr)])
    if x.stype == "row_sparse":
        out["indices"] = x.indices.asnumpy().tolist()
    return out


def _csr(mx):
    return mx.nd.array(DENSE).tostype("csr")


def _grid(rows, cols, seed):
    """Values in sixteenths (some zero), from integers only."""
    i = np.arange(rows * cols, dtype=np.int64)
    v = ((i * 7919 + seed * 104729) % 23 - 11) / 16.0
    v[(i * 31 + seed) % 3 == 0] = 0.0
    return v.reshape(rows, cols)


@scenario()
def scenario_csr_from_dense_tostype(mx):
    out = {
        "float32": csr_parts(_csr(mx)),
        "float64_nan_and_negative_zero": csr_parts(
            mx.nd.array([[0.0, -0.0, 2.5], [float("nan"), 0.0, 0.0]], dtype="float64")
            .tostype("csr")),
        "int32": csr_parts(mx.nd.array([[0, 4], [-2, 0]], dtype="int32").tostype("csr")),
        "all_zero": csr_parts(mx.nd.zeros((2, 3)).tostype("csr")),
        "cast_storage": csr_parts(mx.nd.sparse.cast_storage(mx.nd.array(DENSE), "csr")),
        "back_to_default": csr_parts(_csr(mx).tostype("default")),
        "csr_to_csr": csr_parts(_csr(mx).tostype("csr")),
        "cast_storage_back": csr_parts(mx.nd.sparse.cast_storage(_csr(mx), "default")),
    }
    for name, f in {"one_d": lambda: mx.nd.ones((4,)).tostype("csr"),
                    "three_d": lambda: mx.nd.ones((2, 3, 4)).tostype("csr"),
                    "from_row_sparse": lambda: mx.nd.ones((2, 2)).tostype("row_sparse")
                    .tostype("csr"),
                    "to_row_sparse": lambda: _csr(mx).tostype("row_sparse")}.items():
        out[name] = attempt(lambda f=f: csr_parts(f()))
    return out


@scenario()
def scenario_csr_matrix_forms(mx):
    csr = mx.nd.sparse.csr_matrix
    parts = ([1.0, 2.0, 3.0], [1, 0, 2], [0, 1, 1, 3])
    out = {
        "definition": csr_parts(csr(parts, shape=(3, 4))),
        "definition_inferred_shape": csr_parts(csr(parts)),
        "definition_numpy_float64": csr_parts(
            csr((np.array([1.0, 2.0, 3.0]), np.array(parts[1]), np.array(parts[2])),
                shape=(3, 3))),
        "definition_ndarrays": csr_parts(
            csr(tuple(mx.nd.array(p) for p in parts), shape=(3, 5))),
        "definition_int_lists_dtype": csr_parts(csr(([1, 2, 3], [1, 0, 2], [0, 1, 1, 3]),
                                                    shape=(3, 3), dtype="int64")),
        "empty": csr_parts(csr((3, 4))),
        "empty_float64": csr_parts(csr((2, 5), dtype="float64")),
        "dense_ndarray": csr_parts(csr(mx.nd.array(DENSE))),
        "dense_ndarray_float64": csr_parts(csr(mx.nd.array(DENSE), dtype="float64")),
        "dense_numpy_int64": csr_parts(csr(np.array([[0, 1], [2, 0]]))),
        "dense_numpy_float16": csr_parts(csr(np.array([[0, 1.5]], dtype="float16"))),
        "dense_numpy_to_int32": csr_parts(csr(np.array([[0, 1.5], [2.5, 0]]), dtype="int32")),
        "dense_list": csr_parts(csr([[0, 1], [2, 0]])),
        "dense_ctx": csr_parts(csr(np.array([[0, 1.5]]), ctx=mx.cpu(2))),
        "from_csr": csr_parts(csr(_csr(mx))),
        "from_csr_float64": csr_parts(csr(_csr(mx), dtype="float64")),
        "from_csr_shape": csr_parts(csr(_csr(mx), shape=(3, 4))),
    }
    for name, f in {
            "from_row_sparse": lambda: csr(mx.nd.ones((2, 2)).tostype("row_sparse")),
            "four_tuple": lambda: csr((1, 2, 3, 4)),
            "dense_shape_mismatch": lambda: csr(mx.nd.ones((2, 3)), shape=(3, 2)),
            "empty_shape_mismatch": lambda: csr((2, 3), shape=(3, 2)),
            "csr_shape_mismatch": lambda: csr(_csr(mx), shape=(3, 5)),
            "dense_one_d": lambda: csr([1, 2, 3]),
            "dense_three_d": lambda: csr(np.ones((2, 2, 2))),
            "definition_no_indices_no_shape": lambda: csr(((), (), (0, 0))),
            "definition_three_d_shape": lambda: csr(((1.0,), (0,), (0, 1)), shape=(1, 2, 3)),
    }.items():
        out[name] = attempt(lambda f=f: csr_parts(f()))
    return out


@scenario()
def scenario_csr_zeros(mx):
    out = {"sparse_zeros": csr_parts(mx.nd.sparse.zeros("csr", (2, 3))),
           "sparse_zeros_int64": csr_parts(mx.nd.sparse.zeros("csr", (2, 3), dtype="int64")),
           "nd_zeros": csr_parts(mx.nd.zeros((3, 2), stype="csr")),
           "zeros_like": csr_parts(mx.nd.sparse.zeros_like(_csr(mx))),
           "nd_zeros_like": csr_parts(mx.nd.zeros_like(_csr(mx)))}
    out["three_d"] = attempt(lambda: csr_parts(mx.nd.sparse.zeros("csr", (2, 3, 4))))
    return out


@scenario()
def scenario_csr_copies_and_astype(mx):
    c = _csr(mx)
    out = {"copy": csr_parts(c.copy()), "copy_is_new": c.copy() is not c,
           "copyto_cpu1": csr_parts(c.copyto(mx.cpu(1))),
           "as_in_context_cpu1": csr_parts(c.as_in_context(mx.cpu(1))),
           "as_in_context_same_is_self": c.as_in_context(mx.cpu(0)) is c,
           "sparse_array": csr_parts(mx.nd.sparse.array(c))}
    dense = mx.nd.ones((3, 4))
    out["copyto_dense_returns_it"] = c.copyto(dense) is dense
    out["copyto_dense"] = csr_parts(dense)
    other = mx.nd.sparse.csr_matrix((3, 4), dtype="float64")
    out["copyto_csr_returns_it"] = c.copyto(other) is other
    out["copyto_csr_float64"] = csr_parts(other)
    for name, f in {
            "copyto_dense_float64": lambda: c.copyto(mx.nd.zeros((3, 4), dtype="float64")),
            "copyto_dense_wrong_shape": lambda: c.copyto(mx.nd.zeros((3, 5))),
            "copyto_row_sparse": lambda: c.copyto(mx.nd.zeros((3, 4)).tostype("row_sparse")),
            "copyto_str": lambda: c.copyto("cpu")}.items():
        out[name] = attempt(lambda f=f: csr_parts(f()))
    for dt in ("float64", "float16", "int32"):
        out[f"astype_{dt}"] = csr_parts(c.astype(dt))
    out["astype_same_copy_false_is_self"] = c.astype("float32", copy=False) is c
    out["astype_same_is_new"] = c.astype("float32") is not c
    for part in (c.data, c.indices, c.indptr):
        part[:] = 7
    out["parts_are_copies"] = csr_parts(c)
    c.check_format()
    c.check_format(full_check=False)
    out["check_format"] = "passed"
    return out


_ROW_KEYS = {
    "0_2": slice(0, 2), "1_3": slice(1, 3), "2_3": slice(2, 3), "0_3": slice(0, 3),
    "1_10": slice(1, 10), "1_m1": slice(1, -1), "0_0": slice(0, 0), "1_0": slice(1, 0),
    "m2_": slice(-2, None), "m1_": slice(-1, None), "_m1": slice(None, -1),
    "_2": slice(None, 2), "2_": slice(2, None), "1": 1, "2": 2, "m1": -1, "m2": -2, "m3": -3,
    # errors
    "1_1": slice(1, 1), "3_": slice(3, None), "3": 3, "m4": -4, "step_1": slice(None, None, 1),
    "step_2": slice(None, None, 2), "tuple": (slice(0, 2), 1), "numpy_int": np.int64(1),
    "float": 1.0, "bool": True,
}


@scenario()
def scenario_csr_row_slices(mx):
    c = mx.nd.sparse.csr_matrix(_grid(5, 4, 3).astype(np.float32))
    out = {name: attempt(lambda key=key: csr_parts(c[key])) for name, key in _ROW_KEYS.items()}
    out["all_is_self"] = c[:] is c
    out["slice_of_slice"] = csr_parts(c[1:4][1:])
    return out


@scenario(mxnet_skip="MXNet 1.9.1 slices a csr array from a start below -rows without a "
                     "check: it reads memory before the array (its values vary)",
          expected={"m6_2": RAISED, "m5_1": RAISED})
def scenario_csr_row_slice_starting_before_the_first_row(mx):
    c = mx.nd.sparse.csr_matrix(_grid(5, 4, 3).astype(np.float32))
    return {"m6_2": attempt(lambda: csr_parts(c[-6:2])),
            "m5_1": attempt(lambda: csr_parts(c[-7:1]))}


@scenario()
def scenario_csr_scalar_multiply_divide(mx):
    c = _csr(mx)
    with_zero = mx.nd.sparse.csr_matrix(([1.0, 0.0, 2.0], [0, 1, 3], [0, 2, 2, 3]),
                                        shape=(3, 5))
    i32 = mx.nd.array([[1, 0, 2], [0, -3, 5]], dtype="int32").tostype("csr")
    out = {"mul_2": csr_parts(c * 2), "rmul_2": csr_parts(2 * c), "div_2": csr_parts(c / 2),
           "mul_2_5": csr_parts(c * 2.5), "div_3": csr_parts(c / 3),
           "div_0": csr_parts(c / 0), "neg": csr_parts(-c), "mul_0": csr_parts(c * 0),
           "stored_zero_kept": csr_parts(with_zero * 2),
           "mul_float32": csr_parts(c * np.float32(0.1)), "div_int64": csr_parts(c / np.int64(2)),
           "mul_true": csr_parts(c * True),
           "int32_mul_2_5": csr_parts(i32 * 2.5), "int32_div_2": csr_parts(i32 / 2),
           "float16_div_3": csr_parts(mx.nd.array(DENSE, dtype="float16").tostype("csr") / 3),
           "float64_mul": csr_parts(mx.nd.array(DENSE, dtype="float64").tostype("csr") * 0.1)}
    d = _csr(mx)
    d *= 3
    out["imul_3"] = csr_parts(d)
    d /= 4
    out["then_idiv_4"] = csr_parts(d)
    out["source_unchanged"] = csr_parts(c)
    return out


def _dense(mx, rows, cols, seed, dtype="float32"):
    return mx.nd.array(_grid(rows, cols, seed), dtype=dtype)


@scenario()
def scenario_csr_dot(mx):
    dot = mx.nd.sparse.dot
    a = mx.nd.sparse.csr_matrix(_grid(6, 5, 1).astype(np.float32) / 3)
    with_zero = mx.nd.sparse.csr_matrix(([1.0, 0.0, 2.0], [0, 1, 3], [0, 2, 2, 3]),
                                        shape=(3, 5))
    out = {
        "csr_dense": csr_parts(dot(a, _dense(mx, 5, 3, 2))),
        "csr_dense_one_column": csr_parts(dot(a, _dense(mx, 5, 1, 4))),
        "transpose_a": csr_parts(dot(a, _dense(mx, 6, 3, 5), transpose_a=True)),
        "transpose_a_stored_zero": csr_parts(dot(with_zero, _dense(mx, 3, 2, 6),
                                                 transpose_a=True)),
        "transpose_b": csr_parts(dot(a, _dense(mx, 2, 5, 7), transpose_b=True)),
        "transpose_both": csr_parts(dot(a, _dense(mx, 4, 6, 8), transpose_a=True,
                                        transpose_b=True)),
        "row_sparse_rhs": csr_parts(dot(a, _dense(mx, 5, 3, 2).tostype("row_sparse"))),
        "row_sparse_rhs_transpose_a": csr_parts(
            dot(a, _dense(mx, 6, 3, 5).tostype("row_sparse"), transpose_a=True)),
        "float64": csr_parts(dot(a.astype("float64"), _dense(mx, 5, 3, 2, "float64"))),
        "float64_transpose_a": csr_parts(dot(a.astype("float64"),
                                             _dense(mx, 6, 2, 9, "float64"), transpose_a=True)),
        "rhs_on_cpu1": csr_parts(dot(a, _dense(mx, 5, 3, 2).as_in_context(mx.cpu(1)))),
        "all_zero_csr": csr_parts(dot(mx.nd.sparse.zeros("csr", (2, 3)), mx.nd.ones((3, 2)))),
        "all_zero_csr_transpose_a": csr_parts(dot(mx.nd.sparse.zeros("csr", (2, 3)),
                                                  mx.nd.ones((2, 2)), transpose_a=True)),
    }
    o = mx.nd.ones((6, 3))
    out["out_returned"] = dot(a, _dense(mx, 5, 3, 2), out=o) is o
    out["out"] = csr_parts(o)
    for name, f in {
            "inner_mismatch": lambda: dot(a, _dense(mx, 6, 3, 2)),
            "transpose_a_mismatch": lambda: dot(a, _dense(mx, 5, 3, 2), transpose_a=True),
            "transpose_b_mismatch": lambda: dot(a, _dense(mx, 5, 3, 2), transpose_b=True),
            "dtype_mismatch": lambda: dot(a, _dense(mx, 5, 3, 2, "float64")),
            "int32": lambda: dot(a.astype("int32"), _dense(mx, 5, 3, 2, "int32")),
            "rhs_one_d": lambda: dot(a, mx.nd.ones((5,))),
            "rhs_three_d": lambda: dot(a, mx.nd.ones((5, 2, 2))),
            "rhs_list": lambda: dot(a, [[1.0]] * 5)}.items():
        out[name] = attempt(lambda f=f: csr_parts(f()))
    return out


# ------------------------------------------------------------------ issue 21: operators
def csr_stored(x):
    """What ``csr_parts`` records, with a csr array's stored values as ``[column,
    value]`` pairs per row in column order: MXNet leaves some results' columns
    unsorted within a row (and stale values past ``indptr[-1]``), mxkv sorts
    them (D26)."""
    out = {"stype": x.stype, "shape": list(x.shape), "dtype": np.dtype(x.dtype).name,
           "ctx": str(x.context), "value": _json(x.asnumpy())}
    if x.stype == "csr":
        indptr = x.indptr.asnumpy().tolist()
        data = x.data.asnumpy()[:indptr[-1]]
        indices = x.indices.asnumpy()[:indptr[-1]].tolist()
        rows = []
        for b, e in zip(indptr[:-1], indptr[1:]):
            order = sorted(range(b, e), key=lambda k: indices[k])
            rows.append([[indices[k], _json(data[k:k + 1])[0]] for k in order])
        out.update(indptr=indptr, rows=rows)
    return out


def _b(mx):
    return mx.nd.array([[1.0, 0, 0, 0], [0, 0, 2.0, 0], [3.0, 0, 0, -4.0]]).tostype("csr")


def _with_zero(mx):
    """A csr array storing a zero (at row 0, column 1)."""
    return mx.nd.sparse.csr_matrix(([1.0, 0.0, -2.0], [0, 1, 3], [0, 2, 2, 3]), shape=(3, 5))


def _with_nan(mx):
    return mx.nd.sparse.csr_matrix(([float("nan"), float("inf"), 2.0], [0, 1, 3],
                                    [0, 2, 2, 3]), shape=(3, 4))


def _i32(mx):
    return mx.nd.array([[1, 0, 2], [0, -3, 5]], dtype="int32").tostype("csr")


def _attempts(cases):
    return {name: attempt(lambda f=f: csr_stored(f())) for name, f in cases.items()}


@scenario()
def scenario_csr_with_a_scalar(mx):
    a = _csr(mx)
    return _attempts({
        "add_1": lambda: a + 1, "radd_1": lambda: 1 + a, "sub_1": lambda: a - 1,
        "rsub_1": lambda: 1 - a, "add_0": lambda: a + 0, "radd_0": lambda: 0 + a,
        "sub_0": lambda: a - 0, "rsub_0": lambda: 0 - a, "rdiv_1": lambda: 1 / a,
        "rdiv_0": lambda: 0 / a, "mod_2": lambda: a % 2, "pow_2": lambda: a ** 2,
        "rpow_2": lambda: 2 ** a, "eq_0": lambda: a == 0, "eq_1_5": lambda: a == 1.5,
        "ne_0": lambda: a != 0, "ne_1": lambda: a != 1, "gt_0": lambda: a > 0,
        "gt_m1": lambda: a > -1, "ge_0": lambda: a >= 0, "ge_1": lambda: a >= 1,
        "lt_0": lambda: a < 0, "lt_1": lambda: a < 1, "le_0": lambda: a <= 0,
        "le_m1": lambda: a <= -1, "eq_nan": lambda: a == float("nan"),
        "ne_nan": lambda: a != float("nan"), "req_1_5": lambda: 1.5 == a,
        "rlt_1": lambda: 1 < a, "req_0": lambda: 0 == a,
        "stored_zero_add_0": lambda: _with_zero(mx) + 0,
        "stored_zero_gt_0": lambda: _with_zero(mx) > 0,
        "stored_zero_neg": lambda: -_with_zero(mx),
        "int32_add_1": lambda: _i32(mx) + 1, "int32_add_0_5": lambda: _i32(mx) + 0.5,
        "int32_gt_0_5": lambda: _i32(mx) > 0.5, "int32_gt_m0_5": lambda: _i32(mx) > -0.5,
        "int32_mul_0_5": lambda: _i32(mx) * 0.5, "int32_neg": lambda: -_i32(mx),
        "float64_sub_0": lambda: a.astype("float64") - 0,
        "pos": lambda: +a,
    })


@scenario()
def scenario_csr_with_a_csr(mx):
    a, b = _csr(mx), _b(mx)
    f16 = mx.nd.array(DENSE, dtype="float16").tostype("csr")
    nd = mx.nd
    return _attempts({
        "a_add_a": lambda: a + a, "a_add_b": lambda: a + b, "a_sub_b": lambda: a - b,
        "a_sub_a": lambda: a - a, "a_mul_b": lambda: a * b, "a_mul_a": lambda: a * a,
        "a_div_b": lambda: a / b, "a_mod_a": lambda: a % a, "a_pow_a": lambda: a ** a,
        "eq": lambda: a == b, "ne": lambda: a != b, "lt": lambda: a < b, "gt": lambda: a > b,
        "stored_zero_add": lambda: _with_zero(mx) + _with_zero(mx),
        "stored_zero_sub": lambda: _with_zero(mx) - _with_zero(mx),
        "stored_zero_mul": lambda: _with_zero(mx) * _with_zero(mx),
        "nan_mul_b": lambda: _with_nan(mx) * b, "nan_add_b": lambda: _with_nan(mx) + b,
        "nan_sub_nan": lambda: _with_nan(mx) - _with_nan(mx),
        "float16_add": lambda: f16 + f16, "float16_mul": lambda: f16 * f16,
        "int32_add": lambda: _i32(mx) + _i32(mx), "int32_sub": lambda: _i32(mx) - _i32(mx),
        "int32_mul": lambda: _i32(mx) * _i32(mx),
        "broadcast_add": lambda: a + nd.ones((1, 4)).tostype("csr"),
        "broadcast_mul": lambda: a * nd.ones((1, 4)).tostype("csr"),
        "elemwise_add": lambda: nd.elemwise_add(a, b),
        "elemwise_add_stored_zero": lambda: nd.elemwise_add(_with_zero(mx), _with_zero(mx)),
        "nd_broadcast_add": lambda: nd.broadcast_add(a, b), "add_n": lambda: nd.add_n(a, b),
        "add_n_three": lambda: nd.add_n(a, b, a),
        "element_wise_sum": lambda: nd.ElementWiseSum(a, b),
        "maximum": lambda: nd.maximum(a, b), "minimum": lambda: nd.minimum(a, b),
        "power": lambda: nd.power(a, 2),
        # errors
        "shape_mismatch": lambda: a + nd.ones((2, 4)).tostype("csr"),
        "dtype_mismatch": lambda: a + b.astype("float64"),
        "elemwise_add_dtype_mismatch": lambda: nd.elemwise_add(a, b.astype("float64")),
    })


@scenario()
def scenario_csr_with_a_dense_array(mx):
    a, nd = _csr(mx), mx.nd
    d = nd.array(np.arange(12).reshape(3, 4))
    with_zero = nd.array([[1, 0, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])
    row, col = nd.array([[1, 2, 3, 4]]), nd.array([[1], [2], [4]])
    return _attempts({
        "mul": lambda: a * d, "rmul": lambda: d * a, "add": lambda: a + d,
        "radd": lambda: d + a, "sub": lambda: a - d, "rsub": lambda: d - a,
        "rdiv": lambda: d / a, "mul_zero_kept": lambda: a * with_zero,
        "mul_row": lambda: a * row, "mul_col": lambda: a * col,
        "mul_one_d": lambda: a * nd.array([1, 2, 3, 4]), "mul_1x1": lambda: a * nd.array([[2]]),
        "mul_shape_1": lambda: a * nd.array([2]), "div_row": lambda: a / row,
        "div_col": lambda: a / col, "div_one_d": lambda: a / nd.array([1, 2, 4, 8]),
        "float16_mul_row": lambda: a.astype("float16") * row.astype("float16"),
        "int32_mul_row": lambda: _i32(mx) * nd.ones((1, 3), dtype="int32"),
        "float64_mul": lambda: a.astype("float64") * d.astype("float64"),
        "nan_mul_zeros": lambda: _with_nan(mx) * nd.zeros((3, 4)),
        "stored_zero_mul": lambda: _with_zero(mx) * nd.ones((3, 5)),
        "eq": lambda: a == d, "gt": lambda: a > d, "req": lambda: d == a,
        "add_row": lambda: a + nd.ones((1, 4)), "mod": lambda: a % d,
        "add_row_sparse": lambda: a + nd.ones((3, 4)).tostype("row_sparse"),
        "mul_row_sparse": lambda: a * nd.ones((3, 4)).tostype("row_sparse"),
        "row_sparse_mul": lambda: nd.ones((3, 4)).tostype("row_sparse") * a,
        "row_sparse_add": lambda: nd.ones((3, 4)).tostype("row_sparse") + a,
        "elemwise_add": lambda: nd.elemwise_add(a, d),
        "nd_broadcast_add": lambda: nd.broadcast_add(a, d),
        # errors
        "div_same_shape": lambda: a / nd.ones((3, 4)),
        "int32_mul_same_shape": lambda: _i32(mx) * nd.ones((2, 3), dtype="int32"),
        "float16_mul_same_shape": lambda: a.astype("float16") * d.astype("float16"),
        "mul_three_d": lambda: a * nd.ones((2, 3, 4)),
        "add_shape_mismatch": lambda: a + nd.ones((3, 5)),
        "mul_shape_mismatch": lambda: a * nd.ones((3, 5)),
        "mul_dtype_mismatch": lambda: a * d.astype("float64"),
        "add_dtype_mismatch": lambda: a + d.astype("float64"),
    })


def _in_place(a, op, value):
    if op == "+":
        a += value
    elif op == "-":
        a -= value
    elif op == "*":
        a *= value
    elif op == "/":
        a /= value
    else:
        a %= value
    return a


@scenario()
def scenario_csr_in_place(mx):
    d = mx.nd.array(np.arange(12).reshape(3, 4))
    cases = {"add_1": ("+", 1), "add_0": ("+", 0), "sub_1": ("-", 1), "mul_0": ("*", 0),
             "mod_2": ("%", 2), "add_a": ("+", _csr(mx)), "sub_b": ("-", _b(mx)),
             "mul_b": ("*", _b(mx)), "div_b": ("/", _b(mx)), "mul_dense": ("*", d),
             "add_dense": ("+", d), "div_dense": ("/", d),
             "add_dtype_mismatch": ("+", _b(mx).astype("float64"))}
    out = {}
    for name, (op, value) in cases.items():
        a = _csr(mx)
        out[name] = attempt(lambda a=a, op=op, value=value: csr_stored(_in_place(a, op, value)))
        out[name + "_after"] = csr_stored(a)
    out["int32_mul_2_5"] = csr_stored(_in_place(_i32(mx), "*", 2.5))
    out["int32_add_1"] = csr_stored(_in_place(_i32(mx), "+", 1))
    a = _csr(mx)
    out["returns_self"] = _in_place(a, "+", _b(mx)) is a
    return out


@scenario()
def scenario_csr_assign(mx):
    nd = mx.nd
    d = nd.array(np.arange(12).reshape(3, 4))
    cases = {
        "dense": (slice(None), d), "csr": (slice(None), _b(mx)),
        "csr_float64": (slice(None), _b(mx).astype("float64")),
        "csr_int32": (slice(None), nd.ones((3, 4), dtype="int32").tostype("csr")),
        "numpy": (slice(None), np.arange(12.0).reshape(3, 4)),
        "numpy_tenths": (slice(None), np.full((3, 4), 0.1)),
        "numpy_int": (slice(None), np.arange(12).reshape(3, 4)),
        "all_zero": (slice(None), nd.zeros((3, 4))),
        # errors
        "float": (slice(None), 2.0), "int": (slice(None), 3),
        "numpy_scalar": (slice(None), np.float32(2)),
        "row_sparse": (slice(None), nd.ones((3, 4)).tostype("row_sparse")),
        "list": (slice(None), [[1.0] * 4] * 3),
        "dense_wrong_shape": (slice(None), nd.ones((2, 4))),
        "dense_broadcast_shape": (slice(None), nd.ones((1, 4))),
        "csr_wrong_shape": (slice(None), nd.ones((3, 5)).tostype("csr")),
        "numpy_wrong_shape": (slice(None), np.ones((2, 4))),
        "row": (0, d[0]), "rows": (slice(1, 2), d[1:2]), "step": (slice(None, None, 1), d),
        "tuple": ((0, 1), 1.0), "str": ("a", d),
    }
    out = {}
    for name, (key, value) in cases.items():
        a = _csr(mx)

        def assign(a=a, key=key, value=value):
            a[key] = value
            return csr_stored(a)
        out[name] = attempt(assign)
        out[name + "_after"] = csr_stored(a)
    a = _csr(mx)
    a[:] = a
    out["self"] = csr_stored(a)
    c = _csr(mx)
    out["dense_copyto_returns_it"] = d.copyto(c) is c
    out["dense_copyto"] = csr_stored(c)
    return out


@scenario(mxnet_skip="MXNet 1.9.1 raises on a dense value of another dtype assigned to a csr "
                     "array, then aborts the process (terminate called without an active "
                     "exception)",
          expected={"dense_float64": RAISED, "dense_int32": RAISED,
                    "numpy_into_float64": RAISED, "unchanged": True})
def scenario_csr_assign_a_dense_value_of_another_dtype(mx):
    d = mx.nd.array(np.arange(12).reshape(3, 4))
    a, f64 = _csr(mx), _csr(mx).astype("float64")
    out = {}
    for name, dst, value in (("dense_float64", a, d.astype("float64")),
                             ("dense_int32", a, d.astype("int32")),
                             ("numpy_into_float64", f64, np.ones((3, 4)))):
        out[name] = attempt(lambda dst=dst, value=value: (dst.__setitem__(slice(None), value),
                                                          csr_stored(dst))[1])
    out["unchanged"] = csr_stored(a) == csr_stored(_csr(mx)) and \
        csr_stored(f64) == csr_stored(_csr(mx).astype("float64"))
    return out


@scenario()
def scenario_csr_elementwise_functions(mx):
    a, nd = _csr(mx), mx.nd
    f64, f16 = a.astype("float64"), a.astype("float16")

    def into(fn, out):
        res = fn(out)
        return {"returned_out": res is out, "out": csr_stored(out)}

    out = _attempts({
        "abs": lambda: nd.abs(a), "square": lambda: nd.square(a), "sqrt": lambda: nd.sqrt(a),
        "sign": lambda: nd.sign(a), "negative": lambda: nd.negative(a),
        "abs_method": lambda: a.abs(), "sqrt_method": lambda: a.sqrt(),
        "square_method": lambda: a.square(), "sign_method": lambda: a.sign(),
        "abs_builtin": lambda: abs(a), "clip_method": lambda: a.clip(-1, 1),
        "stored_zero_abs": lambda: nd.abs(_with_zero(mx)),
        "stored_zero_negative": lambda: nd.negative(_with_zero(mx)),
        "stored_zero_sign": lambda: nd.sign(_with_zero(mx)),
        "int32_sqrt": lambda: nd.sqrt(_i32(mx)), "int32_square": lambda: nd.square(_i32(mx)),
        "int32_abs": lambda: nd.abs(_i32(mx)), "int32_sign": lambda: nd.sign(_i32(mx)),
        "float64_sqrt": lambda: nd.sqrt(f64), "float16_square": lambda: nd.square(f16),
        "clip_m1_1": lambda: nd.clip(a, -1, 1), "clip_0_1": lambda: nd.clip(a, 0, 1),
        "clip_m1_0": lambda: nd.clip(a, -1, 0),
        "ones_like": lambda: nd.ones_like(a), "zeros_like": lambda: nd.zeros_like(a),
        "sum": lambda: nd.sum(a), "sum_axis0": lambda: nd.sum(a, axis=0),
        "sum_method": lambda: a.sum(), "norm": lambda: nd.norm(a),
        "mean_axis1": lambda: a.mean(axis=1), "max_axis0": lambda: nd.max(a, axis=0),
        "min": lambda: nd.min(a), "prod": lambda: nd.prod(a),
        "argmax_axis1": lambda: nd.argmax(a, axis=1), "transpose": lambda: a.T,
        "flatten": lambda: a.flatten(), "flatten_in_place": lambda: a.flatten(inplace=True),
        "reshape": lambda: a.reshape((4, 3)),
        "maximum_0": lambda: nd.maximum(a, 0), "minimum_0": lambda: nd.minimum(a, 0),
        # errors
        "clip_0_5_1": lambda: nd.clip(a, 0.5, 1), "clip_m2_m0_5": lambda: nd.clip(a, -2, -0.5),
    })
    for name, fn, make in (
            ("abs_out_dense", lambda o: nd.abs(a, out=o), lambda: nd.zeros((3, 4))),
            ("abs_out_csr", lambda o: nd.abs(a, out=o), lambda: nd.sparse.zeros("csr", (3, 4))),
            ("sqrt_out_dense", lambda o: nd.sqrt(a, out=o), lambda: nd.zeros((3, 4))),
            ("negative_out_dense", lambda o: nd.negative(a, out=o), lambda: nd.zeros((3, 4))),
            ("square_out_csr", lambda o: nd.square(a, out=o),
             lambda: nd.ones((3, 4)).tostype("csr")),
            ("dense_abs_out_csr", lambda o: nd.abs(nd.array(DENSE) - 1, out=o),
             lambda: nd.sparse.zeros("csr", (3, 4))),
            ("dense_broadcast_add_out_csr",
             lambda o: nd.broadcast_add(nd.ones((3, 4)), nd.array(DENSE), out=o),
             lambda: nd.sparse.zeros("csr", (3, 4))),
            ("clip_out_csr", lambda o: nd.clip(a, -1, 1, out=o),
             lambda: nd.sparse.zeros("csr", (3, 4))),
            ("clip_out_dense", lambda o: nd.clip(a, -1, 1, out=o), lambda: nd.zeros((3, 4)))):
        out[name] = attempt(lambda fn=fn, make=make: into(fn, make()))
    return out


@scenario()
def scenario_csr_concat(mx):
    a, b, nd = _csr(mx), _b(mx), mx.nd
    two_rows = nd.ones((2, 4)).tostype("csr")

    def into_dense():
        o = nd.zeros((6, 4))
        return {"returned_out": nd.concat(a, b, dim=0, out=o) is o, "out": csr_stored(o)}

    out = _attempts({
        "dim0": lambda: nd.concat(a, b, dim=0), "one": lambda: nd.concat(a, dim=0),
        "three": lambda: nd.concat(a, b, a, dim=0),
        "rows_differ": lambda: nd.concat(a, two_rows, dim=0),
        "int32": lambda: nd.concat(_i32(mx), _i32(mx), dim=0),
        "stored_zero": lambda: nd.concat(_with_zero(mx), _with_zero(mx), dim=0),
        "default_dim": lambda: nd.concat(a, b), "dim1": lambda: nd.concat(a, b, dim=1),
        "dim_m2": lambda: nd.concat(a, b, dim=-2),
        "with_dense": lambda: nd.concat(a, nd.ones((3, 4)), dim=0),
        "dense_first": lambda: nd.concat(nd.ones((3, 4)), a, dim=0),
        "concatenate_axis1": lambda: nd.concatenate([a, b], axis=1),
        # errors
        "columns_differ": lambda: nd.concat(a, nd.ones((2, 5)).tostype("csr"), dim=0),
        "dtype_differs": lambda: nd.concat(a, b.astype("float64"), dim=0),
        "concatenate_axis0": lambda: nd.concatenate([a, b]),
    })
    out["into_dense"] = into_dense()
    return out


def _check_format_of(fn):
    def run():
        x = fn()
        x.check_format()
        return "passed"
    return run


@scenario(deviation="MXNet 1.9.1 leaves the column indices of csr + - * csr results "
                    "unsorted within a row, so its own check_format refuses them; mxkv "
                    "sorts them (D26)",
          mxkv_expected={k: {"raises": False, "result": "passed"}
                         for k in ("add", "sub", "mul", "elemwise_add", "in_place_add")})
def scenario_csr_results_of_csr_pairs_pass_check_format(mx):
    a, b = _csr(mx), _b(mx)

    def in_place():
        c = _csr(mx)
        c += b
        return c
    return {name: attempt(_check_format_of(fn)) for name, fn in {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * a,
        "elemwise_add": lambda: mx.nd.elemwise_add(a, b), "in_place_add": in_place}.items()}
