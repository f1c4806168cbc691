"""Row-sparse gradients: lazy updates touch only the gradient's rows."""
import math

import numpy as np
import pytest

import mxkv as mx

SHAPE = (5, 3)
ROWS = [1, 3]


def _weight():
    return np.arange(15, dtype=np.float64).reshape(SHAPE) / 10 - 0.7


def _grad_rows():
    return np.array([[0.5, -1.0, 2.0], [-0.3, 0.8, -1.5]])


def _rsp(rows=ROWS, data=None):
    data = _grad_rows() if data is None else data
    return mx.nd.sparse.row_sparse_array((np.asarray(data, dtype=np.float32),
                                          np.asarray(rows, dtype=np.int64)), shape=SHAPE)


def _dense_grad(rows=ROWS):
    g = np.zeros(SHAPE)
    g[rows] = _grad_rows()
    return g


def _untouched():
    return [r for r in range(SHAPE[0]) if r not in ROWS]


def test_sgd_lazy_update_touches_only_grad_rows_including_wd():
    lr, mu, wd = 0.1, 0.9, 0.05
    opt = mx.optimizer.SGD(learning_rate=lr, momentum=mu, wd=wd)
    w = mx.nd.array(_weight(), dtype="float32")
    mom = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, _rsp(), mom)

    want_w, want_m = _weight(), np.zeros(SHAPE)
    for _ in range(2):
        g = _grad_rows()
        want_m[ROWS] = mu * want_m[ROWS] - lr * wd * want_w[ROWS] - lr * g
        want_w[ROWS] = want_w[ROWS] + want_m[ROWS]
    got = w.asnumpy()
    assert (got[_untouched()] == _weight()[_untouched()].astype(np.float32)).all()
    assert (mom.asnumpy()[_untouched()] == 0).all()
    np.testing.assert_allclose(got, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mom.asnumpy(), want_m, rtol=1e-5, atol=1e-6)


def test_sgd_lazy_update_without_momentum():
    lr, wd = 0.1, 0.05
    opt = mx.optimizer.SGD(learning_rate=lr, wd=wd, rescale_grad=2.0, clip_gradient=1.0)
    w = mx.nd.array(_weight(), dtype="float32")
    opt.update(0, w, _rsp(), None)
    want = _weight()
    want[ROWS] = (1 - lr * wd) * want[ROWS] - lr * np.clip(2.0 * _grad_rows(), -1, 1)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_sgd_standard_update_decays_every_row():
    lr, mu, wd = 0.1, 0.9, 0.05
    opt = mx.optimizer.SGD(learning_rate=lr, momentum=mu, wd=wd, lazy_update=False)
    w = mx.nd.array(_weight(), dtype="float32")
    mom = opt.create_state(0, w)
    opt.update(0, w, _rsp(), mom)
    want_m = -lr * wd * _weight() - lr * _dense_grad()
    np.testing.assert_allclose(w.asnumpy(), _weight() + want_m, rtol=1e-5, atol=1e-6)
    assert (w.asnumpy()[_untouched()] != _weight()[_untouched()].astype(np.float32)).any()


@pytest.mark.parametrize("lazy", [True, False])
def test_adam_row_sparse(lazy):
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.01
    opt = mx.optimizer.Adam(learning_rate=lr, wd=wd, lazy_update=lazy)
    w = mx.nd.array(_weight(), dtype="float32")
    mean, var = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, _rsp(), (mean, var))

    rows = ROWS if lazy else list(range(SHAPE[0]))
    want, m, v = _weight(), np.zeros(SHAPE), np.zeros(SHAPE)
    for t in (1, 2):
        g = _dense_grad()[rows] + wd * want[rows]
        m[rows] = b1 * m[rows] + (1 - b1) * g
        v[rows] = b2 * v[rows] + (1 - b2) * g * g
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        want[rows] = want[rows] - lr_t * m[rows] / (np.sqrt(v[rows]) + eps)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), m, rtol=1e-5, atol=1e-7)
    if lazy:
        assert (var.asnumpy()[_untouched()] == 0).all()


def test_adagrad_row_sparse_updates_only_rows():
    lr, eps = 0.1, 1e-7
    opt = mx.optimizer.AdaGrad(learning_rate=lr)
    w = mx.nd.array(_weight(), dtype="float32")
    hist = opt.create_state(0, w)
    opt.update(0, w, _rsp(), hist)
    want = _weight()
    g = _grad_rows()
    want[ROWS] = want[ROWS] - lr * g / np.sqrt(g * g + eps)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert (hist.asnumpy()[_untouched()] == 0).all()


def test_adagrad_row_sparse_with_wd_raises_and_changes_nothing():
    opt = mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.1)
    w = mx.nd.array(_weight(), dtype="float32")
    hist = opt.create_state(0, w)
    with pytest.raises(mx.MXNetError, match="weight decay"):
        opt.update(0, w, _rsp(), hist)
    np.testing.assert_array_equal(w.asnumpy(), _weight().astype(np.float32))
    assert opt.num_update == 0


def test_ftrl_row_sparse_weight_updates_only_rows():
    lr, l1, beta = 0.1, 0.01, 1.0
    opt = mx.optimizer.Ftrl()
    w = mx.nd.array(_weight(), dtype="float32").tostype("row_sparse")
    z, n = opt.create_state(0, w)
    opt.update(0, w, _rsp(), (z, n))
    want = _weight()
    g, wr = _grad_rows(), want[ROWS]
    zr = g - (np.sqrt(g * g) - 0) * wr / lr
    nr = g * g
    want[ROWS] = (np.sign(zr) * l1 - zr) / ((beta + np.sqrt(nr)) / lr) * (np.abs(zr) > l1)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_ftrl_dense_weight_row_sparse_grad_takes_dense_update():
    # MXNet's storage fallback: every row is recomputed from z and n
    opt = mx.optimizer.Ftrl()
    w = mx.nd.array(_weight(), dtype="float32")
    opt.update(0, w, _rsp(), opt.create_state(0, w))
    assert (w.asnumpy()[_untouched()] == 0).all()


def test_dense_only_optimizer_treats_absent_rows_as_zero():
    lr, g1, eps, wd = 0.01, 0.9, 1e-8, 0.1
    opt = mx.optimizer.RMSProp(learning_rate=lr, wd=wd)
    w = mx.nd.array(_weight(), dtype="float32")
    opt.update(0, w, _rsp(), opt.create_state(0, w))
    g = _dense_grad() + wd * _weight()
    want = _weight() - lr * g / np.sqrt((1 - g1) * g * g + eps)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_empty_row_sparse_grad_leaves_lazy_update_untouched():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1)
    w = mx.nd.array(_weight(), dtype="float32")
    empty = mx.nd.sparse.row_sparse_array((np.zeros((0, 3), dtype=np.float32),
                                           np.zeros((0,), dtype=np.int64)), shape=SHAPE)
    opt.update(0, w, empty, opt.create_state(0, w))
    np.testing.assert_array_equal(w.asnumpy(), _weight().astype(np.float32))


def test_row_sparse_weight_missing_rows_is_refused():
    opt = mx.optimizer.SGD(learning_rate=0.1)
    w = mx.nd.sparse.row_sparse_array((np.ones((2, 3), dtype=np.float32),
                                       np.array([0, 4], dtype=np.int64)), shape=SHAPE)
    with pytest.raises(mx.MXNetError, match="all rows"):
        opt.update(0, w, _rsp(), None)


def test_updater_applies_lazy_sgd_through_kvstore_style_call():
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5, momentum=0.5))
    w = mx.nd.array(_weight(), dtype="float32")
    updater(7, _rsp(), w)
    want = _weight()
    want[ROWS] -= 0.5 * _grad_rows()
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)
