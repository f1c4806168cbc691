"""Each optimizer's update, three steps, against its formula written out here.

The references run in float64 numpy, independent of mxkv's code; the
optimizers run in float32, hence the tolerances.
"""
import math

import numpy as np
import pytest

import mxkv as mx

RTOL, ATOL = 2e-5, 1e-6
SHAPE = (3, 4)


def _inputs(seed=0, scale=2.0):
    rs = np.random.RandomState(seed)
    w = rs.uniform(-1, 1, SHAPE)
    grads = [rs.uniform(-scale, scale, SHAPE) for _ in range(3)]
    return w, grads


def _run(opt, w0, grads, index=0):
    """Weights after each update, and the final state."""
    w = mx.nd.array(w0, dtype="float32")
    state = opt.create_state_multi_precision(index, w)
    out = []
    for g in grads:
        opt.update_multi_precision(index, w, mx.nd.array(g, dtype="float32"), state)
        out.append(w.asnumpy())
    return out, state


def _check(got, want):
    for step, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"step {step + 1}")


def _clip(g, c):
    return np.clip(g, -c, c) if c else g


VARIANTS = [
    {},
    {"wd": 0.01},
    {"rescale_grad": 0.5, "clip_gradient": 0.4},
    {"wd": 0.02, "rescale_grad": 1.5, "clip_gradient": 1.0},
]


# ---------------------------------------------------------------- SGD

@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("kw", VARIANTS)
def test_sgd(momentum, kw):
    lr, wd = 0.1, kw.get("wd", 0.0)
    rescale, clip = kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(1)
    got, _ = _run(mx.optimizer.SGD(learning_rate=lr, momentum=momentum, **kw), w0, grads)

    w, mom, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        mom = momentum * mom - lr * wd * w - lr * g
        w = w + mom
        want.append(w)
    _check(got, want)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("kw", VARIANTS)
def test_nag(momentum, kw):
    lr, wd = 0.1, kw.get("wd", 0.0)
    rescale, clip = kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(2)
    got, _ = _run(mx.optimizer.NAG(learning_rate=lr, momentum=momentum, **kw), w0, grads)

    w, mom, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        if momentum:
            # MXNet's nag_mom_update: the momentum reads the weight it just wrote
            mom = momentum * mom
            new_w = w - mom + (momentum + 1) * (mom - lr * (g + wd * w))
            mom = mom - lr * (g + wd * new_w)
            w = new_w
        else:
            w = (1 - lr * wd) * w - lr * g
        want.append(w)
    _check(got, want)


def test_nag_without_wd_is_textbook_nesterov():
    lr, mu = 0.1, 0.9
    w0, grads = _inputs(2)
    got, _ = _run(mx.optimizer.NAG(learning_rate=lr, momentum=mu), w0, grads)
    w, state, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        state = mu * state + g
        w = w - lr * (g + mu * state)
        want.append(w)
    _check(got, want)


# ---------------------------------------------------------------- Adam family

@pytest.mark.parametrize("kw", VARIANTS)
def test_adam(kw):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(3)
    got, (mean, var) = _run(mx.optimizer.Adam(learning_rate=lr, **kw), w0, grads)

    w, m, v, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), []
    for t, g in enumerate(grads, start=1):
        g = _clip(rescale * g + wd * w, clip)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - lr_t * m / (np.sqrt(v) + eps)
        want.append(w)
    _check(got, want)
    np.testing.assert_allclose(mean.asnumpy(), m, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(var.asnumpy(), v, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kw", [{}, {"wd": 0.01, "clip_gradient": 0.5}])
def test_adamax(kw):
    lr, b1, b2 = 0.002, 0.9, 0.999
    wd, clip = kw.get("wd", 0.0), kw.get("clip_gradient")
    w0, grads = _inputs(4)
    got, _ = _run(mx.optimizer.Adamax(**kw), w0, grads)

    w, m, u, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), []
    for t, g in enumerate(grads, start=1):
        g = _clip(g + wd * w, clip)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        w = w - lr / (1 - b1 ** t) * m / u
        want.append(w)
    _check(got, want)


def test_nadam():
    lr, b1, b2, eps, sd, wd = 0.001, 0.9, 0.999, 1e-8, 0.004, 0.01
    w0, grads = _inputs(5)
    got, _ = _run(mx.optimizer.Nadam(wd=wd), w0, grads)

    w, m, v, m_sched, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), 1.0, []
    for t, g in enumerate(grads, start=1):
        g = g + wd * w
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * sd))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * sd))
        m_sched *= mu_t
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_bar = (1 - mu_t) * g / (1 - m_sched) + mu_next * m / (1 - m_sched * mu_next)
        w = w - lr * m_bar / (np.sqrt(v / (1 - b2 ** t)) + eps)
        want.append(w)
    _check(got, want)


def test_ftml():
    lr, b1, b2, eps, wd, clip = 0.01, 0.6, 0.999, 1e-8, 0.01, 1.0
    w0, grads = _inputs(6)
    got, _ = _run(mx.optimizer.FTML(learning_rate=lr, wd=wd, clip_gradient=clip), w0, grads)

    w, d, v, z, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), np.zeros(SHAPE), []
    for t, g in enumerate(grads, start=1):
        g = _clip(g + wd * w, clip)
        v = b2 * v + (1 - b2) * g * g
        d_t = (1 - b1 ** t) / lr * (np.sqrt(v / (1 - b2 ** t)) + eps)
        z = b1 * z + (1 - b1) * g - (d_t - b1 * d) * w
        d = d_t
        w = -z / d_t
        want.append(w)
    _check(got, want)


# ---------------------------------------------------------------- adaptive

@pytest.mark.parametrize("kw", VARIANTS)
def test_adagrad(kw):
    lr, eps = 0.1, 1e-7
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(7)
    got, hist = _run(mx.optimizer.AdaGrad(learning_rate=lr, **kw), w0, grads)

    w, h, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        h = h + g * g
        w = w - lr * (g / np.sqrt(h + eps) + wd * w)
        want.append(w)
    _check(got, want)
    np.testing.assert_allclose(hist.asnumpy(), h, rtol=RTOL)


@pytest.mark.parametrize("kw", VARIANTS + [{"clip_weights": 0.5}])
def test_rmsprop(kw):
    lr, g1, eps = 0.01, 0.9, 1e-8
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    cw = kw.get("clip_weights")
    w0, grads = _inputs(8)
    got, _ = _run(mx.optimizer.RMSProp(learning_rate=lr, **kw), w0, grads)

    w, n, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g + wd * w, clip)
        n = (1 - g1) * g * g + g1 * n
        w = w - lr * g / np.sqrt(n + eps)
        if cw:
            w = np.clip(w, -cw, cw)
        want.append(w)
    _check(got, want)


@pytest.mark.parametrize("kw", VARIANTS + [{"clip_weights": 0.5}])
def test_rmsprop_centered(kw):
    lr, g1, g2, eps = 0.01, 0.9, 0.9, 1e-8
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    cw = kw.get("clip_weights")
    w0, grads = _inputs(9)
    got, state = _run(mx.optimizer.RMSProp(learning_rate=lr, centered=True, **kw), w0, grads)
    assert len(state) == 3

    w, n, gm, delta, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g + wd * w, clip)
        n = (1 - g1) * g * g + g1 * n
        gm = (1 - g1) * g + g1 * gm
        delta = g2 * delta - lr * g / np.sqrt(n - gm * gm + eps)
        w = w + delta
        if cw:
            w = np.clip(w, -cw, cw)
        want.append(w)
    _check(got, want)


@pytest.mark.parametrize("kw", VARIANTS)
def test_adadelta(kw):
    rho, eps = 0.9, 1e-5
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(10)
    got, _ = _run(mx.optimizer.AdaDelta(**kw), w0, grads)

    w, acc_g, acc_d, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        acc_g = rho * acc_g + (1 - rho) * g * g
        delta = np.sqrt(acc_d + eps) / np.sqrt(acc_g + eps) * g
        acc_d = rho * acc_d + (1 - rho) * delta * delta
        w = w - (delta + wd * w)
        want.append(w)
    _check(got, want)


def test_adadelta_leaves_the_gradient_alone():
    opt = mx.optimizer.AdaDelta(rescale_grad=2.0, clip_gradient=0.1)
    w, g = mx.nd.ones((3,)), mx.nd.array([1.0, -2.0, 3.0])
    opt.update(0, w, g, opt.create_state(0, w))
    assert g.asnumpy().tolist() == [1.0, -2.0, 3.0]


# ---------------------------------------------------------------- sign based

@pytest.mark.parametrize("kw", [{}, {"wd": 0.01, "wd_lh": 0.1},
                                {"rescale_grad": 0.5, "clip_gradient": 0.3, "wd": 0.05}])
def test_signum(kw):
    lr, mu = 0.01, 0.9
    wd, wd_lh = kw.get("wd", 0.0), kw.get("wd_lh", 0.0)
    rescale, clip = kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(11)
    got, _ = _run(mx.optimizer.Signum(learning_rate=lr, momentum=mu, **kw), w0, grads)

    w, mom, want = w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        mom = mu * mom - (1 - mu) * (wd * w + _clip(rescale * g, clip))
        w = (1 - lr * wd_lh) * w + lr * np.sign(mom)
        want.append(w)
    _check(got, want)


def test_signsgd_is_signum_without_momentum():
    lr, wd = 0.01, 0.1
    w0, grads = _inputs(12)
    opt = mx.optimizer.Signum(learning_rate=lr, momentum=0.0, wd=wd, rescale_grad=0.3)
    got, state = _run(opt, w0, grads)
    assert state is None

    w, want = w0.copy(), []
    for g in grads:
        w = (1 - lr * wd) * w - lr * np.sign(g)
        want.append(w)
    _check(got, want)


# ---------------------------------------------------------------- FTRL

@pytest.mark.parametrize("kw", [{}, {"wd": 0.01, "clip_gradient": 0.7, "rescale_grad": 0.9}])
def test_ftrl(kw):
    lr, l1, beta = 0.1, 0.01, 1.0
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(13)
    got, _ = _run(mx.optimizer.Ftrl(**kw), w0, grads)

    w, z, n, want = w0.copy(), np.zeros(SHAPE), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
        n = n + g * g
        w = (np.sign(z) * l1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > l1)
        want.append(w)
    _check(got, want)


# ---------------------------------------------------------------- DCASGD, SGLD

@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("kw", [{}, {"wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}])
def test_dcasgd(momentum, kw):
    lr, lamda = 0.1, 0.04
    wd, rescale, clip = kw.get("wd", 0.0), kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w0, grads = _inputs(14)
    got, _ = _run(mx.optimizer.DCASGD(learning_rate=lr, momentum=momentum, **kw), w0, grads)

    w, prev, mom, want = w0.copy(), w0.copy(), np.zeros(SHAPE), []
    for g in grads:
        g = _clip(rescale * g, clip)
        step = -lr * (g + wd * w + lamda * g * g * (w - prev))
        mom = momentum * mom + step
        prev = w
        w = w + mom
        want.append(w)
    _check(got, want)


def test_sgld_with_fixed_seed_matches_formula():
    lr, wd = 0.01, 0.1
    w0, grads = _inputs(15)
    np.random.seed(1234)
    got, _ = _run(mx.optimizer.SGLD(learning_rate=lr, wd=wd, rescale_grad=0.5), w0, grads)

    np.random.seed(1234)
    w, want = w0.copy(), []
    for g in grads:
        w = w - lr / 2 * (0.5 * g + wd * w)
        w = w + np.random.normal(0, math.sqrt(lr), SHAPE).astype(np.float32)
        want.append(w)
    _check(got, want)


def test_sgld_noise_has_variance_lr():
    lr = 0.04
    np.random.seed(7)
    opt = mx.optimizer.SGLD(learning_rate=lr)
    w = mx.nd.zeros((20000,))
    opt.update(0, w, mx.nd.zeros((20000,)), None)
    noise = w.asnumpy()
    assert abs(noise.mean()) < 0.005
    assert noise.std() == pytest.approx(math.sqrt(lr), rel=0.03)


def test_test_optimizer_adds_rescaled_grad_and_mirrors_state():
    opt = mx.optimizer.create("test", rescale_grad=0.5)
    w = mx.nd.ones((2,))
    state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.array([2.0, 4.0]), state)
    assert w.asnumpy().tolist() == [2.0, 3.0]
    assert state.asnumpy().tolist() == [2.0, 3.0]


# ---------------------------------------------------------------- knobs shared by all

def test_clip_gradient_zero_disables_kernel_clipping_as_mxnet():
    # fused kernels get clip_gradient only when it is truthy
    opt = mx.optimizer.SGD(learning_rate=0.1, clip_gradient=0.0)
    w = mx.nd.ones((2,))
    opt.update(0, w, mx.nd.array([5.0, -5.0]), None)
    np.testing.assert_allclose(w.asnumpy(), [0.5, 1.5], rtol=1e-6)


def test_clip_gradient_zero_zeroes_python_optimizers_as_mxnet():
    # the Python-written ones clip whenever it is not None
    opt = mx.optimizer.AdaGrad(learning_rate=0.1, clip_gradient=0.0)
    w = mx.nd.ones((2,))
    opt.update(0, w, mx.nd.array([5.0, -5.0]), opt.create_state(0, w))
    assert w.asnumpy().tolist() == [1.0, 1.0]


def test_wd_mult_by_name_reaches_the_kernel():
    opt = mx.optimizer.SGD(learning_rate=0.5, wd=0.2,
                           param_idx2name={0: "fc_weight", 1: "fc_bias"})
    w0, w1 = mx.nd.ones((2,)), mx.nd.ones((2,))
    opt.update(0, w0, mx.nd.zeros((2,)), None)
    opt.update(1, w1, mx.nd.zeros((2,)), None)
    np.testing.assert_allclose(w0.asnumpy(), [0.9, 0.9], rtol=1e-6)
    assert w1.asnumpy().tolist() == [1.0, 1.0]


def test_grad_of_wrong_shape_raises_and_changes_nothing():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    w = mx.nd.ones((2, 3))
    state = opt.create_state(0, w)
    with pytest.raises(mx.MXNetError, match=r"\(3, 2\)"):
        opt.update(0, w, mx.nd.ones((3, 2)), state)
    assert (w.asnumpy() == 1).all() and (state.asnumpy() == 0).all()


@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "adagrad", "rmsprop", "adadelta",
                                  "signum", "ftrl", "ftml", "adamax", "nadam", "dcasgd"])
def test_updates_keep_weight_buffer_and_dtype(name):
    opt = mx.optimizer.create(name, momentum=0.9) if name in ("sgd", "nag", "dcasgd") \
        else mx.optimizer.create(name)
    w = mx.nd.ones((2, 2))
    buf = w._array
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, mx.nd.ones((2, 2)) * 0.1, state)
    assert w._array is buf and w.dtype == np.float32
    assert not np.allclose(w.asnumpy(), 1.0)
