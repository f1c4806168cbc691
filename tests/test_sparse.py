"""Row-sparse arrays: construction, validation, densify, retain, arithmetic, copies."""
import pickle

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.ndarray import sparse

nd = mx.nd
needs_gpu = pytest.mark.requires_gpu


def rsp():
    return nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2))


DENSE = [[0, 0], [1, 2], [0, 0], [3, 4], [0, 0]]


def test_construct_from_data_and_indices():
    a = rsp()
    assert isinstance(a, nd.sparse.RowSparseNDArray) and isinstance(a, nd.NDArray)
    assert (a.stype, a.shape, a.dtype, a.context) == ("row_sparse", (5, 2), np.float32, mx.cpu(0))
    assert a.data.asnumpy().tolist() == [[1, 2], [3, 4]]
    assert a.indices.asnumpy().tolist() == [1, 3]
    assert a.indices.dtype is np.int64


def test_asnumpy_densifies():
    assert rsp().asnumpy().tolist() == DENSE


def test_repr_matches_mxnet():
    assert repr(rsp()) == "\n<RowSparseNDArray 5x2 @cpu(0)>"


def test_shape_is_inferred_from_the_largest_index():
    a = nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]))
    assert a.shape == (4, 2)


def test_dtype_and_ctx_arguments():
    a = nd.sparse.row_sparse_array(([[1, 2]], [0]), shape=(2, 2), ctx=mx.cpu(1),
                                   dtype="float64")
    assert (a.dtype, a.context, a.data.context) == (np.float64, mx.cpu(1), mx.cpu(1))


def test_numpy_data_keeps_its_dtype_as_mxnet():
    a = nd.sparse.row_sparse_array((np.array([[1, 2]], dtype=np.int32), [1]), shape=(3, 2))
    assert a.dtype is np.int32


def test_one_dimensional_row_sparse():
    a = nd.sparse.row_sparse_array(([1, 2], [1, 3]), shape=(5,))
    assert a.asnumpy().tolist() == [0, 1, 0, 2, 0]


def test_construction_copies_its_sources():
    data = np.array([[1.0, 2.0]], dtype=np.float32)
    a = nd.sparse.row_sparse_array((data, [0]), shape=(2, 2))
    data[:] = 9
    assert a.data.asnumpy().tolist() == [[1, 2]]


def test_construct_from_a_dense_source_keeps_nonzero_rows():
    a = nd.sparse.row_sparse_array(np.array([[0, 0], [1, 0], [0, 0]]))
    assert a.indices.asnumpy().tolist() == [1]
    assert a.dtype is np.int64
    b = nd.sparse.row_sparse_array(nd.array(DENSE, dtype="int32"))
    assert b.indices.asnumpy().tolist() == [1, 3] and b.dtype is np.int32


def test_construct_from_a_shape_is_empty():
    a = nd.sparse.row_sparse_array((5, 2))
    assert a.shape == (5, 2) and a.indices.shape == (0,) and a.data.shape == (0, 2)


def test_sparse_zeros_and_nd_zeros_with_stype():
    for a in (nd.sparse.zeros("row_sparse", (5, 2), dtype="int64", ctx=mx.cpu(1)),
              nd.zeros((5, 2), stype="row_sparse", dtype="int64", ctx=mx.cpu(1))):
        assert (a.stype, a.dtype, a.context) == ("row_sparse", np.int64, mx.cpu(1))
        assert a.asnumpy().tolist() == [[0, 0]] * 5
    assert nd.sparse.zeros("default", (2,)).stype == "default"


KRSP = "kRSPIdxErr"  # MXNet 1.9.1's check_format error for row_sparse indices


@pytest.mark.parametrize("indices, stored, detail", [
    ([1, 7], [[0, 0], [1, 2], [0, 0], [0, 0], [0, 0]], r"index 7 is out of range.*\(5, 2\)"),
    ([3, 1], [[0, 0], [3, 4], [0, 0], [1, 2], [0, 0]], r"sorted: index 1 at position 1 "
                                                        r"follows 3 \(shape \(5, 2\)\)"),
    ([1, 1], None, r"index 1 appears more than once.*\(5, 2\)"),
])
def test_invalid_indices_are_kept_as_given_and_check_format_raises(indices, stored, detail):
    # as MXNet 1.9.1: the array is built as given; check_format reports it
    a = nd.sparse.row_sparse_array(([[1, 2], [3, 4]], indices), shape=(5, 2))
    assert a.indices.asnumpy().tolist() == indices
    assert a.data.asnumpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(MXNetError, match=KRSP + ".*ascending order.*" + detail):
        a.check_format()
    a.check_format(full_check=False)  # MXNet checks only the structure then
    if stored is not None:  # rows out of range are not shown (MXNet: undefined)
        assert a.asnumpy().tolist() == stored


@pytest.mark.parametrize("indices", [[-1, 0], [0, -3]])
def test_a_negative_index_is_refused_when_the_array_is_made(indices):
    # MXNet 1.9.1 builds it, and its heap is corrupted when the array is read
    # ("corrupted size vs. prev_size"): its check_format error comes at once
    with pytest.raises(MXNetError, match=KRSP + f".*index {min(indices)} is out of range"):
        nd.sparse.row_sparse_array(([[1, 2], [3, 4]], indices), shape=(5, 2))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0)])
def test_a_zero_size_array_becomes_an_empty_row_sparse_one(shape):
    # as MXNet 1.9.1 in numpy-shape mode (its legacy mode cannot make nd.zeros((0,)))
    rsp = nd.zeros(shape).tostype("row_sparse")
    assert rsp.stype == "row_sparse" and rsp.shape == shape
    assert rsp.indices.shape == (0,) and rsp.data.shape == (0,) + shape[1:]
    assert rsp.asnumpy().shape == shape and rsp.tostype("default").shape == shape


def test_shape_inferred_from_the_last_index_as_mxnet():
    assert nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3])).shape == (4, 2)
    unsorted = nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 0]))
    assert unsorted.shape == (1, 2)
    with pytest.raises(MXNetError, match=KRSP):
        unsorted.check_format()
    with pytest.raises(MXNetError, match="last index -2"):
        nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, -2]))


def test_data_and_indices_length_mismatch_raises():
    with pytest.raises(MXNetError, match="index per row"):
        nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3, 4]), shape=(5, 2))


def test_row_shape_mismatch_raises():
    with pytest.raises(MXNetError, match=r"\(5, 3\)"):
        nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 3))


def test_bad_tuple_length_raises():
    with pytest.raises(ValueError, match="length"):
        nd.sparse.row_sparse_array(([[1.0]], [0], 3))


def csr():
    return nd.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [3, 0, -1, 0]]).tostype("csr")


CSR_ERRORS = {  # a bad csr call: (the call, what its error names)
    "tostype of a 3-d array": (lambda: nd.ones((2, 3, 4)).tostype("csr"), r"\(2, 3, 4\)"),
    "row_sparse to csr": (lambda: rsp().tostype("csr"), "from row_sparse to csr"),
    "csr to row_sparse": (lambda: csr().tostype("row_sparse"), "from csr to row_sparse"),
    "zeros of a 3-d shape": (lambda: nd.sparse.zeros("csr", (2, 3, 4)), r"\(2, 3, 4\)"),
    "dot shapes": (lambda: nd.sparse.dot(csr(), nd.ones((3, 2))),
                   r"\(3, 4\) \(transpose_a=False\) and \(3, 2\)"),
    "dot transposed shapes": (lambda: nd.sparse.dot(csr(), nd.ones((4, 2)), transpose_a=True),
                              r"\(3, 4\) \(transpose_a=True\) and \(4, 2\)"),
    "dot dtypes": (lambda: nd.sparse.dot(csr(), nd.ones((4, 2), dtype="float64")),
                   "float32 and float64"),
    "dot int dtypes": (lambda: nd.sparse.dot(csr().astype("int32"), nd.ones((4, 2),
                                                                          dtype="int32")),
                       "int32 and int32"),
    "dot 1-d rhs": (lambda: nd.sparse.dot(csr(), nd.ones((4,))), r"\(4,\)"),
    "dot dense lhs": (lambda: nd.sparse.dot(nd.ones((2, 3)), nd.ones((3, 2))),
                      "csr lhs, got default"),
    "dot list rhs": (lambda: nd.sparse.dot(csr(), [[1.0]] * 4), "got list"),
    "dot out shape": (lambda: nd.sparse.dot(csr(), nd.ones((4, 2)), out=nd.zeros((2, 2))),
                      r"\(3, 2\) differs from destination shape \(2, 2\)"),
    "rows past the end": (lambda: csr()[3:],
                          r"shape \(3, 4\): \[slice\(3, None, None\)\] selects rows 3 up to 3"),
    "row step": (lambda: csr()[::2], "step 2"),
    "numpy row": (lambda: csr()[np.int64(1)], "int64"),
    "two axes": (lambda: csr()[0:2, 1], r"\(3, 4\)"),
    "divide by a dense array of its shape": (lambda: csr() / nd.ones((3, 4)),
                                             r"of its shape \(3, 4\)"),
    "int32 times a dense array of its shape": (
        lambda: csr().astype("int32") * nd.ones((3, 4), dtype="int32"), "not int32"),
    "times a 3-d array": (lambda: csr() * nd.ones((2, 3, 4)), r"\(2, 3, 4\)"),
    "plus a csr of another dtype": (lambda: csr() + csr().astype("float64"), "float64"),
    "clip without 0": (lambda: nd.clip(csr(), 0.5, 1), r"\[0.5, 1\]"),
    "clip into a dense out": (lambda: nd.clip(csr(), -1, 1, out=nd.zeros((3, 4))),
                              "a dense out"),
    "assign a number": (lambda: csr().__setitem__(slice(None), 2.0), r"number \(2.0\)"),
    "assign rows": (lambda: csr().__setitem__(slice(1, 2), nd.ones((1, 4))), r"\[1:2:None\]"),
    "assign a row": (lambda: csr().__setitem__(0, nd.ones((4,))), r"\[0\]"),
    "assign a row_sparse": (lambda: csr().__setitem__(slice(None), rsp3x4()), "row_sparse"),
    "assign another dtype": (
        lambda: csr().__setitem__(slice(None), nd.zeros((3, 4), dtype="float64")), "float64"),
    "assign another shape": (lambda: csr().__setitem__(slice(None), nd.zeros((3, 5))),
                             r"\(3, 5\)"),
    "concatenate along axis 0": (lambda: nd.concatenate([csr(), csr()]), r"dim=0"),
    "concat of other columns": (lambda: nd.concat(csr(), nd.ones((2, 5)).tostype("csr"), dim=0),
                                r"\(2, 5\)"),
    "unary plus": (lambda: +csr(), "unary"),
    "copyto another dtype": (lambda: csr().copyto(nd.zeros((3, 4), dtype="float64")),
                             "dtype float32 into a dense array of dtype float64"),
    "copyto another shape": (lambda: csr().copyto(nd.zeros((3, 5))), r"\(3, 4\).*\(3, 5\)"),
    "copyto row_sparse": (lambda: csr().copyto(nd.zeros((3, 4)).tostype("row_sparse")),
                          "not row_sparse"),
    "csr_matrix of a row_sparse": (lambda: nd.sparse.csr_matrix(rsp()), "RowSparseNDArray"),
    "csr_matrix COO form": (lambda: nd.sparse.csr_matrix(([1.0], ([0], [1])), shape=(2, 2)),
                            "COO"),
    "csr_matrix shape": (lambda: nd.sparse.csr_matrix(nd.ones((2, 3)), shape=(3, 2)),
                         r"\(2, 3\) v.s. \(3, 2\)"),
    "csr_matrix 1-d": (lambda: nd.sparse.csr_matrix([1, 2, 3]), r"\(3,\)"),
    "csr_matrix tuple": (lambda: nd.sparse.csr_matrix((1, 2, 3, 4)), "length of input tuple: 4"),
    "reshape": (lambda: csr().reshape((4, 3)), r"\(3, 4\)"),
}


def rsp3x4():
    return nd.ones((3, 4)).tostype("row_sparse")


@pytest.mark.parametrize("name", sorted(CSR_ERRORS))
def test_a_bad_csr_call_names_the_shape_or_type_at_fault(name):
    call, detail = CSR_ERRORS[name]
    with pytest.raises(MXNetError, match=detail):
        call()


@pytest.mark.parametrize("op", ["mul", "add_0", "gt", "union", "times_dense", "abs", "clip",
                                "concat", "in_place_source"])
def test_a_csr_result_is_a_new_array_writing_to_it_leaves_the_operands(op):
    a, b = csr(), csr()
    make = {"mul": lambda: a * 2, "add_0": lambda: a + 0, "gt": lambda: a > 0,
            "union": lambda: a + b, "times_dense": lambda: a * nd.ones((3, 4)),
            "abs": lambda: nd.abs(a), "clip": lambda: nd.clip(a, -1, 1),
            "concat": lambda: nd.concat(a, b, dim=0),
            "in_place_source": lambda: b.__iadd__(a)}[op]
    res = make()
    assert res.stype == "csr" and res is not a
    res.check_format()
    res *= 0
    res[:] = nd.ones(res.shape)
    assert a.asnumpy().tolist() == csr().asnumpy().tolist()
    assert a.data.asnumpy().tolist() == csr().data.asnumpy().tolist()


def test_a_failed_csr_operation_changes_nothing():
    c = csr()
    for bad in (lambda: c.__itruediv__(nd.ones((3, 4))),
                lambda: c.__iadd__(csr().astype("float64")),
                lambda: c.__imul__(nd.ones((3, 4), dtype="float64")),
                lambda: c.copyto(nd.zeros((3, 5))), lambda: c.__setitem__(0, 1),
                lambda: c.__setitem__(slice(None), nd.zeros((3, 4), dtype="int32"))):
        with pytest.raises(MXNetError):
            bad()
        assert c.asnumpy().tolist() == csr().asnumpy().tolist()
    c *= 2
    assert c.data.asnumpy().tolist() == [3, 4, 6, -2]


def test_csr_from_tostype_saves_and_loads_whole(tmp_path):
    c = nd.array(np.arange(12, dtype=np.float32).reshape(3, 4) % 3).tostype("csr")
    nd.save(str(tmp_path / "c.params"), {"c": c, "rows": c[1:]})
    back = nd.load(str(tmp_path / "c.params"))
    for name, want in (("c", c), ("rows", c[1:])):
        got = back[name]
        assert got.stype == "csr" and got.shape == want.shape
        for part in ("data", "indices", "indptr"):
            assert getattr(got, part).asnumpy().tolist() == \
                getattr(want, part).asnumpy().tolist(), (name, part)


def test_csr_on_a_simulated_gpu_stays_in_host_memory(simulate_gpus):
    simulate_gpus(2)
    c = csr().copyto(mx.gpu(1))
    assert c.context == mx.gpu(1)
    r = nd.sparse.dot(c, nd.ones((4, 2), ctx=mx.gpu(1)))
    assert r.context == mx.gpu(1) and r.asnumpy().tolist() == [[3.5, 3.5], [0, 0], [2, 2]]
    assert c.tostype("default").context == mx.gpu(1)


@pytest.mark.parametrize("indices, indptr, detail", [
    ([0, 2, 1], [0, 5, 2, 3], "indptr"), ([2, 1, 1], [0, 2, 2, 3], "indices"),
    ([1, 2, 1], [0, 2, 2, 4], "indptr"), ([0, 2, 1], [0, -2, 2, 3], "indptr"),
    ([0, 4, 1], [0, 2, 2, 3], "indices"),
])
def test_csr_matrix_is_built_as_given_and_check_format_raises(indices, indptr, detail):
    # as MXNet 1.9.1 (what it reports for each of these: kCSRIdxErr)
    a = nd.sparse.csr_matrix(([7, 8, 9], indices, indptr), shape=(3, 4))
    assert a.indptr.asnumpy().tolist() == indptr
    with pytest.raises(MXNetError, match=r"kCSRIdxErr \(3 vs. 3\).*" + detail):
        a.check_format()
    a.check_format(full_check=False)
    with pytest.raises(MXNetError, match="kCSRIdxErr"):
        a.asnumpy()
    good = nd.sparse.csr_matrix(([7, 8, 9], [1, 3, 0], [0, 2, 2, 3]), shape=(3, 4))
    good.check_format()
    assert good.asnumpy().tolist() == [[0, 7, 0, 8], [0, 0, 0, 0], [9, 0, 0, 0]]
    with pytest.raises(MXNetError, match="do not describe"):
        nd.sparse.csr_matrix(([7, 8, 9], [1, 3], [0, 2, 2, 3]), shape=(3, 4))


def test_unknown_stype_raises():
    with pytest.raises(MXNetError, match="foo"):
        nd.ones((2, 2)).tostype("foo")


def test_tostype_round_trip():
    dense = nd.array(DENSE)
    a = dense.tostype("row_sparse")
    assert a.indices.asnumpy().tolist() == [1, 3]
    assert a.tostype("default").asnumpy().tolist() == DENSE
    assert nd.tostype(dense, "row_sparse").stype == "row_sparse"


def test_tostype_keeps_rows_with_any_nonzero():
    a = nd.array([[0, 0], [0, 5], [0, 0]]).tostype("row_sparse")
    assert a.indices.asnumpy().tolist() == [1]


def test_tostype_same_storage_is_a_copy():
    a = rsp()
    b = a.tostype("row_sparse")
    assert b is not a
    b._data[:] = 0
    assert a.data.asnumpy().sum() == 10
    d = nd.ones((2,))
    assert d.tostype("default") is not d


def test_copy_copyto_and_as_in_context():
    a = rsp()
    b = a.copy()
    b._data[:] = 0
    assert a.data.asnumpy().sum() == 10
    c = a.copyto(mx.cpu(2))
    assert c.context == mx.cpu(2) and c.asnumpy().tolist() == DENSE
    assert not np.shares_memory(a._data, c._data)
    assert a.as_in_context(mx.cpu(0)) is a


def test_copyto_rsp_and_dense_destinations():
    dst = nd.sparse.zeros("row_sparse", (5, 2), ctx=mx.cpu(1))
    assert rsp().copyto(dst) is dst and dst.asnumpy().tolist() == DENSE
    dense = nd.ones((5, 2))
    buf = dense._array
    rsp().copyto(dense)
    assert dense._array is buf and dense.asnumpy().tolist() == DENSE


def test_copyto_shape_mismatch_raises():
    with pytest.raises(MXNetError, match=r"\(5, 2\).*\(4, 2\)"):
        rsp().copyto(nd.zeros((4, 2)))


def test_astype_keeps_int64_indices():
    b = rsp().astype("float64")
    assert b.dtype is np.float64 and b.indices.dtype is np.int64


def test_setitem_whole_from_dense_and_rsp():
    a = nd.sparse.zeros("row_sparse", (5, 2))
    a[:] = nd.array(DENSE)
    assert a.indices.asnumpy().tolist() == [1, 3]
    a[:] = nd.sparse.row_sparse_array(([[7, 7]], [0]), shape=(5, 2))
    assert a.indices.asnumpy().tolist() == [0] and a.data.asnumpy().tolist() == [[7, 7]]


def test_only_whole_indexing_is_supported():
    a = rsp()
    assert a[:] is a
    with pytest.raises(MXNetError, match="only"):
        a[1]


def test_dense_only_operations_say_so():
    with pytest.raises(MXNetError, match="row_sparse"):
        rsp().reshape((10,))


def test_rsp_plus_rsp_is_row_sparse_over_the_union():
    b = nd.sparse.row_sparse_array(([[1, 1]], [0]), shape=(5, 2))
    out = rsp() + b
    assert out.stype == "row_sparse"
    assert out.indices.asnumpy().tolist() == [0, 1, 3]
    assert out.data.asnumpy().tolist() == [[1, 1], [1, 2], [3, 4]]


def test_rsp_minus_rsp():
    out = rsp() - nd.sparse.row_sparse_array(([[1, 1]], [3]), shape=(5, 2))
    assert out.asnumpy().tolist() == [[0, 0], [1, 2], [0, 0], [2, 3], [0, 0]]
    rev = nd.sparse.row_sparse_array(([[1, 1]], [3]), shape=(5, 2)) - rsp()
    assert rev.asnumpy().tolist() == [[0, 0], [-1, -2], [0, 0], [-2, -3], [0, 0]]


def test_rsp_times_scalar_stays_sparse():
    for out in (rsp() * 2, 2 * rsp()):
        assert out.stype == "row_sparse" and out.data.asnumpy().tolist() == [[2, 4], [6, 8]]
    assert (rsp() / 2).data.asnumpy().tolist() == [[0.5, 1], [1.5, 2]]


def test_rsp_plus_dense_is_dense():
    out = rsp() + nd.ones((5, 2))
    assert out.stype == "default" and out.asnumpy().tolist() == (np.array(DENSE) + 1).tolist()
    out2 = nd.ones((5, 2)) + rsp()
    assert out2.stype == "default" and out2.asnumpy().sum() == 20


def test_rsp_inplace_add_keeps_the_object():
    a = rsp()
    ident = id(a)
    a += nd.sparse.row_sparse_array(([[1, 1]], [0]), shape=(5, 2))
    a *= 2
    assert id(a) == ident and a.stype == "row_sparse"
    assert a.indices.asnumpy().tolist() == [0, 1, 3]
    assert a.data.asnumpy().tolist() == [[2, 2], [2, 4], [6, 8]]


def test_rsp_shape_mismatch_raises():
    with pytest.raises(MXNetError, match=r"\(5, 2\).*\(6, 2\)"):
        rsp() + nd.sparse.row_sparse_array((6, 2))


def test_retain_returns_the_requested_rows():
    out = nd.sparse.retain(rsp(), nd.array([3, 0], dtype="int64"))
    assert out.indices.asnumpy().tolist() == [0, 3]
    assert out.data.asnumpy().tolist() == [[0, 0], [3, 4]]
    assert out.shape == (5, 2)


def test_retain_accepts_lists_and_dedups():
    out = rsp().retain([1, 1, 3])
    assert out.indices.asnumpy().tolist() == [1, 3]
    assert out.data.asnumpy().tolist() == [[1, 2], [3, 4]]


def test_retain_from_a_dense_array():
    out = nd.sparse.retain(nd.array(DENSE), [3, 4])
    assert out.stype == "row_sparse"
    assert out.data.asnumpy().tolist() == [[3, 4], [0, 0]]


def test_retain_does_not_share_with_the_source():
    a = rsp()
    out = a.retain([1])
    out._data[:] = 0
    assert a.data.asnumpy().tolist() == [[1, 2], [3, 4]]


def test_retain_out_of_range_row_raises_naming_it():
    with pytest.raises(MXNetError, match=r"row id 9 .*\(5, 2\)"):
        rsp().retain([9])


def test_from_xp_wraps_without_copying():
    data = np.ones((1, 2), dtype=np.float32)
    idx = np.array([2], dtype=np.int64)
    a = sparse.from_xp(data, idx, (4, 2), mx.cpu(0))
    assert a._data is data and a._indices is idx
    data[:] = 5
    assert a.asnumpy()[2].tolist() == [5, 5]


def test_from_xp_checks_structure_and_optionally_format():
    with pytest.raises(MXNetError, match="int64"):
        sparse.from_xp(np.ones((1, 2), np.float32), np.array([0], np.int32), (2, 2), mx.cpu(0))
    with pytest.raises(MXNetError, match="does not fit"):
        sparse.from_xp(np.ones((2, 2), np.float32), np.array([0], np.int64), (2, 2), mx.cpu(0))
    with pytest.raises(MXNetError, match="sorted"):
        sparse.from_xp(np.ones((2, 2), np.float32), np.array([1, 0], np.int64), (2, 2),
                       mx.cpu(0), check=True)


def test_pickle_round_trip():
    a = rsp().copyto(mx.cpu(3))
    b = pickle.loads(pickle.dumps(a))
    assert (b.stype, b.context, b.asnumpy().tolist()) == ("row_sparse", mx.cpu(3), DENSE)


def test_pickles_name_the_class_where_they_always_did():
    # the class lives in row_sparse.py; pickles and states files name mxkv.ndarray.sparse,
    # which older files name too (the states file's unpickler looks the name up)
    raw = pickle.dumps(rsp())
    assert b"mxkv.ndarray.sparse" in raw and b"row_sparse\x94" not in raw
    assert type(pickle.loads(raw)) is sparse.RowSparseNDArray


def test_dense_functions_densify_sparse_inputs():
    assert nd.sum(rsp()).asscalar() == 10
    assert nd.array(rsp()).stype == "default"


@needs_gpu
def test_gpu_row_sparse_round_trip_and_retain():
    g = rsp().copyto(mx.gpu(0))
    assert g.context == mx.gpu(0) and g.asnumpy().tolist() == DENSE
    out = g.retain(nd.array([3, 4], dtype="int64"))
    assert out.data.asnumpy().tolist() == [[3, 4], [0, 0]]
    assert (g + g).data.asnumpy().tolist() == [[2, 4], [6, 8]]
    assert nd.array(DENSE, ctx=mx.gpu(0)).tostype("row_sparse").indices.asnumpy().tolist() \
        == [1, 3]


def test_dense_copyto_row_sparse_destination_keeps_nonzero_rows():
    dst = nd.sparse.zeros("row_sparse", (5, 2))
    assert nd.array(DENSE).copyto(dst) is dst
    assert dst.indices.asnumpy().tolist() == [1, 3] and dst.asnumpy().tolist() == DENSE


def test_nd_empty_with_row_sparse_stype():
    a = nd.empty((3, 2), stype="row_sparse")
    assert a.stype == "row_sparse" and a.indices.shape == (0,)


# ---------------------------------------------------------------- MXNet details (issue 7)

def test_row_sparse_array_refuses_a_shape_that_contradicts_the_source():
    with pytest.raises(ValueError, match="Shape mismatch"):
        mx.nd.sparse.row_sparse_array(mx.nd.ones((3, 4)), shape=(4, 4))
    with pytest.raises(ValueError, match="Shape mismatch"):
        mx.nd.sparse.row_sparse_array((2, 2), shape=(3, 2))
    with pytest.raises(ValueError, match="Shape mismatch"):
        mx.nd.sparse.row_sparse_array(np.ones((3, 4)), shape=(3, 5))


def test_row_sparse_array_from_lists_of_lists():
    r = mx.nd.sparse.row_sparse_array([[1, 2], [0, 0], [3, 4]])
    assert r.dtype is np.float32 and r.indices.asnumpy().tolist() == [0, 2]
    assert r.asnumpy().tolist() == [[1, 2], [0, 0], [3, 4]]


def test_row_sparse_array_refuses_csr_data_naming_its_storage():
    # (it raised AttributeError: a csr array has no _densify)
    c = mx.nd.sparse.csr_matrix(([1.0, 2.0], [0, 1], [0, 1, 2]), shape=(2, 2))
    with pytest.raises(MXNetError, match="got a csr one"):
        mx.nd.sparse.row_sparse_array((c, [0, 1]), shape=(2, 2))
    r = mx.nd.sparse.row_sparse_array(([[1.0, 2.0]], [1]), shape=(2, 2))
    assert mx.nd.sparse.row_sparse_array((r, [0, 1]), shape=(2, 2)).asnumpy().tolist() == \
        [[0, 0], [1, 2]]


def test_row_sparse_array_from_a_shape_of_three_dims():
    assert mx.nd.sparse.row_sparse_array((2, 3, 4)).shape == (2, 3, 4)


def test_assigning_a_scalar_to_a_row_sparse_array_stores_every_row():
    r = mx.nd.sparse.zeros("row_sparse", (3, 2))
    r[:] = 2
    assert r.indices.asnumpy().tolist() == [0, 1, 2] and np.all(r.asnumpy() == 2)


def test_retain_refuses_unknown_arguments():
    with pytest.raises(mx.MXNetError, match="invalid_arg"):
        mx.nd.sparse.retain(mx.nd.ones((2, 2)), invalid_arg="garbage")


def test_scalar_ops_keep_row_sparse_when_zero_rows_stay_zero():
    r = mx.nd.sparse.row_sparse_array(([[1.0, 2.0]], [1]), shape=(3, 2))
    assert (r == 1).stype == "row_sparse" and (r == 0).stype == "default"
    assert (r + 0).stype == "row_sparse" and (r + 1).stype == "default"
    assert (r == 1).asnumpy().tolist() == [[0, 0], [1, 0], [0, 0]]
    assert (r + 1).asnumpy().tolist() == [[1, 1], [2, 3], [1, 1]]


def test_row_sparse_operands_of_broadcastable_shapes_fall_back_to_dense():
    a = mx.nd.array([[1, 2], [3, 4], [5, 6]]).tostype("row_sparse")
    b = mx.nd.array([[1, 1]]).tostype("row_sparse")
    assert (a + b).asnumpy().tolist() == [[2, 3], [4, 5], [6, 7]]
    assert a.T.asnumpy().tolist() == [[1, 3, 5], [2, 4, 6]]
