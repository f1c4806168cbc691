"""Row-sparse values in the local store: push sums the union of rows,
row_sparse_pull returns only the requested rows."""
import numpy as np
import pytest

import mxkv as mx
from mxkv import MXNetError

SHAPE = (6, 2)


def rsp(rows, value, shape=SHAPE, ctx=None):
    data = mx.nd.ones((len(rows),) + shape[1:], ctx=ctx) * value
    return mx.nd.sparse.row_sparse_array((data, mx.nd.array(rows, dtype="int64", ctx=ctx)),
                                         shape=shape, ctx=ctx)


@pytest.fixture(params=["local", "device"])
def kv(request):
    with mx.kv.create(request.param) as kv:
        kv.init("e", rsp([0, 1, 2, 3, 4, 5], 1))
        yield kv


def pull_rows(kv, key, rows):
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(rows, dtype="int64"))
    return out


def test_row_sparse_pull_returns_only_requested_rows(kv):
    out = pull_rows(kv, "e", [4, 1])
    assert out.indices.asnumpy().tolist() == [1, 4]
    assert np.all(out.data.asnumpy() == 1)
    dense = out.tostype("default").asnumpy()
    assert dense[[1, 4]].sum() == 4 and dense[[0, 2, 3, 5]].sum() == 0


def test_duplicate_row_ids_are_merged(kv):
    out = pull_rows(kv, "e", [2, 2, 0])
    assert out.indices.asnumpy().tolist() == [0, 2]


def test_push_from_devices_sums_the_union_of_rows(kv):
    kv.push("e", [rsp([0, 2], 2, ctx=mx.cpu(0)), rsp([2, 5], 3, ctx=mx.cpu(1))])
    out = pull_rows(kv, "e", [0, 1, 2, 5])
    assert out.indices.asnumpy().tolist() == [0, 1, 2, 5]
    assert out.data.asnumpy()[:, 0].tolist() == [2.0, 0.0, 5.0, 3.0]


def test_one_row_ids_for_several_outs(kv):
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE, ctx=mx.cpu(i)) for i in range(2)]
    kv.row_sparse_pull("e", out=outs, row_ids=mx.nd.array([3], dtype="int64"))
    for i, o in enumerate(outs):
        assert o.context == mx.cpu(i)
        assert o.indices.asnumpy().tolist() == [3]


def test_one_row_ids_per_out(kv):
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE) for _ in range(2)]
    ids = [mx.nd.array([0], dtype="int64"), mx.nd.array([5, 4], dtype="int64")]
    kv.row_sparse_pull("e", out=outs, row_ids=ids)
    assert outs[0].indices.asnumpy().tolist() == [0]
    assert outs[1].indices.asnumpy().tolist() == [4, 5]


def test_pull_ignores_sparse_outs_by_default(kv):
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.pull("e", out=out)
    assert out.indices.shape == (0,)
    kv.pull("e", out=out, ignore_sparse=False)
    assert out.indices.asnumpy().tolist() == [0, 1, 2, 3, 4, 5]


def test_pull_of_a_sparse_key_into_a_dense_out_densifies(kv):
    out = mx.nd.zeros(SHAPE)
    kv.pull("e", out=out)
    assert np.all(out.asnumpy() == 1)


def test_dense_push_to_sparse_key_keeps_it_sparse(kv):
    v = np.zeros(SHAPE, np.float32)
    v[3] = 7
    kv.push("e", mx.nd.array(v))
    out = pull_rows(kv, "e", [0, 3])
    assert out.indices.asnumpy().tolist() == [0, 3]  # requested rows, zero where absent
    assert out.data.asnumpy()[:, 0].tolist() == [0.0, 7.0]
    dense = mx.nd.zeros(SHAPE)
    kv.pull("e", out=dense)
    assert dense.asnumpy()[:, 0].tolist() == [0, 0, 0, 7, 0, 0]


def test_sparse_push_to_dense_key_adds_rows():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE))
    kv.push(0, [rsp([1], 2), rsp([1, 2], 1)])
    out = mx.nd.zeros(SHAPE)
    kv.pull(0, out=out)
    assert out.asnumpy()[:, 0].tolist() == [0, 3, 1, 0, 0, 0]


def test_row_sparse_pull_errors_change_nothing(kv):
    good = mx.nd.sparse.zeros("row_sparse", SHAPE)
    with pytest.raises(MXNetError, match="row id 6 is out of range"):
        kv.row_sparse_pull("e", out=good, row_ids=mx.nd.array([6], dtype="int64"))
    assert good.indices.shape == (0,)
    with pytest.raises(MXNetError, match="must be row_sparse"):
        kv.row_sparse_pull("e", out=mx.nd.zeros(SHAPE), row_ids=mx.nd.array([1]))
    with pytest.raises(MXNetError, match="row_ids is required"):
        kv.row_sparse_pull("e", out=good)
    with pytest.raises(MXNetError, match="number of row_ids"):
        kv.row_sparse_pull("e", out=[good, good, good],
                           row_ids=[mx.nd.array([1]), mx.nd.array([2])])


def test_row_sparse_pull_of_a_dense_key_is_refused():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="dense value"):
        kv.row_sparse_pull(0, out=mx.nd.sparse.zeros("row_sparse", SHAPE),
                           row_ids=mx.nd.array([0]))


def test_sgd_lazy_update_on_a_sparse_key_touches_only_pushed_rows(kv):
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, wd=0.0))
    kv.push("e", rsp([2], 1))
    out = mx.nd.zeros(SHAPE)
    kv.pull("e", out=out)
    col = out.asnumpy()[:, 0].tolist()
    assert col == [1, 1, 0.5, 1, 1, 1]


def test_optimizer_on_a_sparse_key_missing_rows_is_refused_before_any_update():
    kv = mx.kv.create("local")
    kv.init(["full", "partial"], [rsp([0, 1, 2, 3, 4, 5], 1), rsp([1], 1)])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    with pytest.raises(MXNetError, match="key 'partial' holds 1 of its 6 rows"):
        kv.push(["full", "partial"], [rsp([2], 1), rsp([1], 1)])
    out = mx.nd.zeros(SHAPE)
    kv.pull("full", out=out)
    assert np.all(out.asnumpy() == 1)  # the valid key was not updated either


def test_a_csr_value_or_out_is_refused_naming_the_key(kv):
    # mxkv's stores hold dense and row_sparse arrays only (MXNet 1.9.1's local
    # store takes a csr init, refuses a csr push, and leaves a csr out of a
    # pull as it was)
    c = mx.nd.array([[0, 1.5], [2, 0]]).tostype("csr")
    kv.init("d2", mx.nd.ones((2, 2)))
    for call in (lambda: kv.init("new", c), lambda: kv.push("d2", c),
                 lambda: kv.push(["d2", "e"], [c, rsp([0], 5)]),
                 lambda: kv.pull("d2", out=c), lambda: kv.pushpull("d2", c)):
        with pytest.raises(MXNetError, match=r"for key '(d2|new)' is a csr array of shape "
                                             r"\(2, 2\)"):
            call()
    out = mx.nd.zeros((2, 2))
    kv.pull("d2", out=out)
    assert out.asnumpy().tolist() == [[1, 1], [1, 1]]
    assert c.asnumpy().tolist() == [[0, 1.5], [2, 0]]
    with pytest.raises(MXNetError, match="'new'"):
        kv.pull("new", out=mx.nd.zeros((2, 2)))


@pytest.mark.parametrize("rows", [[3, 1], [1, 1], [1, 6]])
def test_a_row_sparse_value_with_invalid_indices_is_refused_naming_the_key(kv, rows):
    # MXNet builds such arrays (check_format reports them); a store refuses
    # them whole, since its rows must be sorted, unique and in range
    bad = mx.nd.sparse.row_sparse_array((mx.nd.ones((2, 2)), rows), shape=SHAPE)
    for call in (lambda: kv.init("new", bad), lambda: kv.push("e", bad),
                 lambda: kv.push(["e", "e2"], [rsp([0], 5), bad]),
                 lambda: kv.pushpull("e", bad, out=mx.nd.zeros(SHAPE))):
        with pytest.raises(MXNetError, match=r"row_sparse value for key '(e|new|e2)' is "
                                             r"invalid: row_sparse ind"):
            call()
    assert pull_rows(kv, "e", list(range(6))).data.asnumpy().tolist() == [[1, 1]] * 6
    with pytest.raises(MXNetError, match="'new'"):
        kv.pull("new", out=mx.nd.zeros(SHAPE))
