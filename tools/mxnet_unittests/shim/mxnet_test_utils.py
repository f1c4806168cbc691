"""mxkv's stand-in for ``mxnet.test_utils``: the helpers MXNet's kvstore,
optimizer, ndarray and sparse unit tests call, written for mxkv over numpy
(random data, tolerances by dtype, optimizer comparison). It contains no
MXNet code; the behaviour follows MXNet's documentation of these helpers.

mxkv's csr arrays have a subset of MXNet's csr operators (``docs/ndarray.md``).
``rand_ndarray``/``rand_sparse_ndarray`` make csr arrays as MXNet's uniform
dataset does (without scipy; the powerlaw one raises :class:`NotClaimed`);
``compare_optimizer`` asked for csr weights or gradients (csr optimizers are
not claimed) records the call in :data:`CSR_SKIPPED` and returns without
checking, so a test mixing csr sub-checks with others still runs the others
(the runner reports how many csr sub-checks were not run, per test).
"""
from __future__ import annotations

import contextlib
import numbers
import os
from typing import Any, Dict

import mxnet as mx
import numpy as np
import numpy.random as rnd

array = mx.nd.array  # MXNet's test_utils re-exports nd.array (tests use it bare)
Context = mx.Context  # ... and Context

CSR_SKIPPED: Dict[str, int] = {}
CURRENT_TEST = {"name": "?"}


class NotClaimed(Exception):
    """A feature mxkv does not claim (csr storage, symbols, ...)."""


def default_context():
    return mx.current_context()


def set_default_context(ctx) -> None:
    raise NotClaimed("set_default_context: use `with ctx:` in mxkv")


def default_dtype():
    return np.float32


_RTOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-5}
_ATOL = {np.float16: 1e-1, np.float32: 1e-3, np.float64: 1e-20}


def default_rtols() -> dict:
    out = {np.dtype(k): v for k, v in _RTOL.items()}
    for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        out[np.dtype(t)] = 0
    return out


def default_atols() -> dict:
    out = {np.dtype(k): v for k, v in _ATOL.items()}
    for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        out[np.dtype(t)] = 0
    return out


def _tol(x: Any, tol: Any, table: dict) -> float:
    if isinstance(tol, numbers.Number):
        return tol
    dt = np.dtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)
    tol = tol or {}
    return tol.get(dt, table.get(dt, 0))


def get_tols(x: Any, y: Any, rtol: Any, atol: Any):
    return (max(_tol(x, rtol, default_rtols()), _tol(y, rtol, default_rtols())),
            max(_tol(x, atol, default_atols()), _tol(y, atol, default_atols())))


def get_rtol(rtol=None, dtype=np.float64):
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.float64):
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def _np(x: Any) -> Any:
    return x.asnumpy() if hasattr(x, "asnumpy") else x


def same(a: Any, b: Any) -> bool:
    return np.array_equal(_np(a), _np(b))


def almost_equal(a: Any, b: Any, rtol=None, atol=None, equal_nan=False,
                 use_broadcast=True) -> bool:
    a, b = _np(a), _np(b)
    if not use_broadcast and np.shape(a) != np.shape(b):
        return False
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def assert_almost_equal(a: Any, b: Any, rtol=None, atol=None, names=("a", "b"),
                        equal_nan=False, use_broadcast=True, mismatches=(10, 10)) -> None:
    """Assert ``|a - b| <= atol + rtol * |b|`` elementwise, with MXNet's
    per-dtype default tolerances (the larger of the two operands')."""
    if not use_broadcast and np.shape(_np(a)) != np.shape(_np(b)):
        raise AssertionError(f"shapes differ: {np.shape(_np(a))} vs {np.shape(_np(b))}")
    rtol, atol = get_tols(a, b, rtol, atol)
    x, y = _np(a), _np(b)
    if getattr(x, "dtype", None) == np.bool_ and getattr(y, "dtype", None) == np.bool_:
        np.testing.assert_equal(x, y)
        return
    if np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    diff = np.abs(xa - ya) - (atol + rtol * np.abs(ya))
    where = np.unravel_index(int(np.nanargmax(diff)), diff.shape) if diff.ndim else ()
    raise AssertionError(f"{names[0]} and {names[1]} differ beyond rtol={rtol}, atol={atol}: "
                         f"at {where} {names[0]}={xa[where]!r}, {names[1]}={ya[where]!r}\n"
                         f"{names[0]}={x!r}\n{names[1]}={y!r}")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_exception(f, exception_type, *args, **kwargs) -> None:
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{f} did not raise {exception_type}")


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    if isinstance(axis, int):
        axis = [axis]
    axes = list(axis) if axis is not None else list(range(len(dat.shape)))
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def random_arrays(*shapes):
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    dt = dtype or default_dtype()
    return [np.random.uniform(low, high, size=s).astype(dt) for s in shapes]


def random_sample(population, k):
    if not 0 <= k <= len(population):
        raise ValueError(f"cannot sample {k} of {len(population)}")
    pop = list(population)
    np.random.shuffle(pop)
    return pop[:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(rnd.randint(low, dim + 1, size=num_dim))


def assign_each(the_input, function):
    if function is None:
        return np.array(the_input)
    return np.vectorize(function)(the_input)


def assign_each2(input1, input2, function):
    if function is None:
        return np.array(input1)
    return np.vectorize(function)(input1, input2)


def _rand_csr(shape, density, dtype, data_init, modifier_func, distribution, ctx):
    """A random csr array and ``(indptr, indices, data)``, as MXNet's uniform
    dataset (without scipy): each element kept with probability ``density``."""
    if distribution not in (None, "uniform"):
        raise NotClaimed(f"csr datasets of the {distribution} distribution")
    assert len(shape) == 2
    keep = rnd.rand(*shape) < density
    val = rnd.rand(*shape).astype(dtype) if data_init is None else \
        np.full(shape, data_init, dtype=dtype)
    if modifier_func is not None:
        val = assign_each(val, modifier_func)
    csr = mx.nd.array(np.where(keep, val, 0), dtype=dtype, ctx=ctx).tostype("csr")
    return csr, (csr.indptr, csr.indices, csr.data)


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random row_sparse array and ``(values, indices)``: each row kept with
    probability ``density`` (random when None), values uniform in [0, 1); or a
    csr array and ``(indptr, indices, data)``, each element kept so."""
    ctx = ctx or default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    if stype == "csr":
        return _rand_csr(shape, density, dtype, data_init, modifier_func, distribution, ctx)
    if stype != "row_sparse":
        raise ValueError(f"unknown storage type {stype!r}")
    if rsp_indices is not None:
        indices = np.asarray(rsp_indices)
    else:
        indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
    if indices.shape[0] == 0:
        return (mx.nd.zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx),
                (np.array([], dtype=dtype), np.array([])))
    val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
    if data_init is not None:
        val.fill(data_init)
    if modifier_func is not None:
        val = assign_each(val, modifier_func)
    arr = mx.nd.sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
    return arr, (val, indices)


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    ctx = ctx or default_context()
    if stype == "default":
        return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func,
                                 dtype=dtype, distribution=distribution, ctx=ctx)
    return arr


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    idx = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                 rsp_indices=idx, dtype=dtype, modifier_func=modifier_func)
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    if stype == "row_sparse":
        density = 0.0
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density)


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None) -> None:
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _uniform(shape, dtype):
    return mx.nd.array(np.random.uniform(0, 1, size=shape), dtype=dtype,
                       ctx=default_context())


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1) -> None:
    """One update by ``opt1`` (the tests' Python reference) and ``opt2`` (mxkv)
    from the same random weight and gradient; states and weights must agree."""
    if "csr" in (w_stype, g_stype):
        CSR_SKIPPED[CURRENT_TEST["name"]] = CSR_SKIPPED.get(CURRENT_TEST["name"], 0) + 1
        return
    if isinstance(shape, list):
        w1 = tuple(_uniform(s, dtype) for s in shape)
        g1 = tuple(_uniform(s, dtype) for s in shape)
        w2 = tuple(w.copy() for w in w1)
        g2 = tuple(g.copy() for g in g1)
        state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
        opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
        for i in range(ntensors):
            state1 = opt1.create_state_multi_precision(i, w1[i])
            opt1.update_multi_precision(i, w1[i], g1[i], state1)
            if compare_states:
                compare_ndarray_tuple(state1, state2[i], rtol, atol)
            compare_ndarray_tuple(w1[i], w2[i], rtol, atol)
        return
    if w_stype == "default":
        w2 = _uniform(shape, dtype)
        w1 = w2.copyto(default_context())
    else:
        w2 = rand_ndarray(shape, w_stype, density=1, dtype=dtype)
        w1 = w2.copyto(default_context()).tostype("default")
    if g_stype == "default":
        g2 = _uniform(shape, dtype)
        g1 = g2.copyto(default_context())
    else:
        g2 = rand_ndarray(shape, g_stype, dtype=dtype)
        g1 = g2.copyto(default_context()).tostype("default")
    state1 = opt1.create_state_multi_precision(0, w1)
    state2 = opt2.create_state_multi_precision(0, w2)
    if compare_states:
        compare_ndarray_tuple(state1, state2)
    opt1.update_multi_precision(0, w1, g1, state1)
    opt2.update_multi_precision(0, w2, g2, state2)
    if compare_states:
        compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
    assert_almost_equal(w1, w2, rtol=rtol, atol=atol)


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for a block (a dict, or one name and value)."""
    env = args[0] if len(args) == 1 and isinstance(args[0], dict) else {args[0]: args[1]}
    saved = {k: os.environ.get(k) for k in env}

    def apply(d):
        for k, v in d.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    apply(env)
    try:
        yield
    finally:
        apply(saved)


def retry(n):
    def deco(f):
        def run(*a, **kw):
            for i in range(n):
                try:
                    return f(*a, **kw)
                except AssertionError:
                    if i == n - 1:
                        raise
        run.__name__ = f.__name__
        return run
    return deco
