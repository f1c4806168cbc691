"""The random family's distributions: mxkv cannot draw MXNet's numbers (its
streams are numpy's/CuPy's), so each draw is checked for what MXNet
promises: the support, the mean and variance within a tolerance set by the
sample size (6 standard errors), one distribution per element for
``sample_*``, and the same numbers again after the same ``mx.random.seed``."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError

N = 200_000

# name, call, mean, variance, support check
CASES = [
    ("uniform", lambda: mx.nd.random.uniform(-1, 3, shape=(N,)), 1.0, 16 / 12,
     lambda v: (v >= -1).all() and (v < 3).all()),
    ("normal", lambda: mx.nd.random.normal(2, 0.5, shape=(N,)), 2.0, 0.25, None),
    ("randn", lambda: mx.nd.random.randn(N, loc=1, scale=2), 1.0, 4.0, None),
    ("gamma", lambda: mx.nd.random.gamma(2.0, 3.0, shape=(N,)), 6.0, 18.0,
     lambda v: (v > 0).all()),
    ("exponential", lambda: mx.nd.random.exponential(0.5, shape=(N,)), 0.5, 0.25,
     lambda v: (v >= 0).all()),
    ("poisson", lambda: mx.nd.random.poisson(3.0, shape=(N,)), 3.0, 3.0,
     lambda v: (v >= 0).all() and (v == np.round(v)).all()),
    ("negative_binomial", lambda: mx.nd.random.negative_binomial(3, 0.4, shape=(N,)),
     4.5, 11.25, lambda v: (v >= 0).all() and (v == np.round(v)).all()),
    ("generalized_negative_binomial",
     lambda: mx.nd.random.generalized_negative_binomial(2.0, 0.5, shape=(N,)), 2.0, 4.0,
     lambda v: (v >= 0).all() and (v == np.round(v)).all()),
    ("randint", lambda: mx.nd.random.randint(-2, 5, shape=(N,)), 1.0, (49 - 1) / 12,
     lambda v: (v >= -2).all() and (v < 5).all()),
    ("random_exponential_op", lambda: mx.nd.random_exponential(lam=4.0, shape=(N,)), 0.25,
     1 / 16, lambda v: (v >= 0).all()),
]


def _check_moments(v: np.ndarray, mean: float, var: float) -> None:
    n = v.size
    se_mean = math.sqrt(var / n)
    assert abs(v.mean() - mean) < 6 * se_mean, (v.mean(), mean)
    # the variance's standard error, from the sample's fourth central moment
    m4 = float(((v - v.mean()) ** 4).mean())
    se_var = math.sqrt(max(m4 - var ** 2, 1e-12) / n)
    assert abs(v.var() - var) < 6 * se_var, (v.var(), var)


@pytest.mark.parametrize("name,call,mean,var,support", CASES, ids=[c[0] for c in CASES])
def test_draws_have_the_distributions_moments_and_support(name, call, mean, var, support):
    mx.random.seed(11)
    v = call().asnumpy().astype(np.float64)
    assert v.shape == (N,)
    if support is not None:
        assert support(v)
    _check_moments(v, mean, var)


def test_sample_ops_draw_one_distribution_per_element():
    mx.random.seed(3)
    mu = mx.nd.array([[-5.0, 0.0], [10.0, 100.0]])
    sigma = mx.nd.array([[1.0, 0.1], [2.0, 5.0]])
    v = mx.nd.sample_normal(mu, sigma, shape=(50_000,)).asnumpy().astype(np.float64)
    assert v.shape == (2, 2, 50_000)
    for i in range(2):
        for j in range(2):
            s = float(sigma.asnumpy()[i, j])
            _check_moments(v[i, j], float(mu.asnumpy()[i, j]), s * s)
    lam = mx.nd.array([1.0, 20.0])
    p = mx.nd.sample_poisson(lam, shape=(50_000,)).asnumpy()
    for i, want in enumerate((1.0, 20.0)):
        _check_moments(p[i].astype(np.float64), want, want)


def test_multinomial_draws_the_categories_in_proportion():
    mx.random.seed(5)
    probs = mx.nd.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    draws, logp = mx.nd.random.multinomial(probs, shape=(40_000,), get_prob=True)
    d = draws.asnumpy()
    assert d.shape == (2, 40_000) and d.dtype == np.int32
    for row, pr in enumerate(probs.asnumpy()):
        counts = np.bincount(d[row], minlength=3) / d.shape[1]
        se = np.sqrt(pr * (1 - pr) / d.shape[1]) + 1e-12
        assert (np.abs(counts - pr) < 6 * se + 1e-9).all(), (counts, pr)
        np.testing.assert_allclose(logp.asnumpy()[row], np.log(pr[d[row]]), rtol=1e-6)


def test_shuffle_permutes_the_first_axis():
    mx.random.seed(1)
    a = mx.nd.arange(40).reshape((20, 2))
    s = mx.nd.random.shuffle(a).asnumpy()
    assert sorted(s[:, 0].tolist()) == list(range(0, 40, 2))
    assert (s[:, 1] == s[:, 0] + 1).all()  # rows move whole
    assert s[:, 0].tolist() != list(range(0, 40, 2))


@pytest.mark.parametrize("call", [
    lambda: mx.nd.random.uniform(shape=(6,)),
    lambda: mx.nd.random.gamma(2, 2, shape=(6,)),
    lambda: mx.nd.random.negative_binomial(2, 0.5, shape=(6,)),
    lambda: mx.nd.sample_uniform(mx.nd.zeros((2,)), mx.nd.ones((2,)), shape=(3,)),
    lambda: mx.nd.Dropout(mx.nd.ones((4, 4)), p=0.5, mode="always"),
], ids=["uniform", "gamma", "negative_binomial", "sample_uniform", "dropout_mask"])
def test_a_seed_repeats_the_draw(call):
    mx.random.seed(42)
    a = call().asnumpy()
    mx.random.seed(42)
    b = call().asnumpy()
    mx.random.seed(43)
    c = call().asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_always_keeps_the_expectation_and_zeroes_about_p():
    mx.random.seed(9)
    x = mx.nd.ones((400, 500))
    y = mx.nd.Dropout(x, p=0.3, mode="always").asnumpy()
    kept = (y != 0).mean()
    assert abs(kept - 0.7) < 6 * math.sqrt(0.21 / y.size)
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    shared = mx.nd.Dropout(x, p=0.5, mode="always", axes=(1,)).asnumpy()
    assert ((shared == 0).all(axis=1) | (shared != 0).all(axis=1)).all()  # one mask per row


def test_dropout_outside_training_is_the_identity():
    x = mx.nd.array(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.9).asnumpy(), x.asnumpy())


@pytest.mark.parametrize("call", [
    lambda: mx.nd.random.normal(0, 0, shape=(2,)),
    lambda: mx.nd.random.poisson(-1, shape=(2,)),
    lambda: mx.nd.random.uniform(0, 1, shape=(2,), dtype="int32"),
    lambda: mx.nd.random.randint(3, 3, shape=(2,)),
    lambda: mx.nd.sample_gamma(mx.nd.array([1.0, -1.0]), mx.nd.array([1.0, 1.0])),
    lambda: mx.nd.random.normal(mx.nd.zeros((2,)), 1.0),
], ids=["normal_zero_scale", "poisson_negative", "uniform_int_dtype", "randint_empty_range",
        "sample_gamma_negative_alpha", "mixed_parameter_types"])
def test_bad_parameters_raise(call):
    with pytest.raises(MXNetError):
        call()
