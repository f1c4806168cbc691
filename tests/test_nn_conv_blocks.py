"""Convolution's blocked kernel (optable/nn_conv.py) against a direct float64
reference, with the block budgets shrunk so that small inputs take every path:
many blocks per sample, blocks over several samples, work items split across
threads, padding rows zeroed at the edges, both strategies (by rows, by columns).
MXNet's own outputs for the operator are checked in tests/test_nn_ops_golden.py
(whose small shapes take one block)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from mxkv.ndarray.optable import nn_conv


def reference(x, w, b, k, s, d, p, g):
    """Convolution by its definition, one output position at a time (float64)."""
    nd = len(k)
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(q, q) for q in p])
    n, c = x.shape[:2]
    f = w.shape[0]
    out = tuple((x.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd))
    res = np.zeros((n, f) + out)
    fg, cg = f // g, c // g
    for pos in itertools.product(*map(range, out)):
        win = x[(slice(None), slice(None)) + tuple(
            slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(nd))]
        for gi in range(g):
            part = win[:, gi * cg:(gi + 1) * cg].reshape(n, -1)
            res[(slice(None), slice(gi * fg, (gi + 1) * fg)) + pos] = \
                part @ w[gi * fg:(gi + 1) * fg].reshape(fg, -1).astype(np.float64).T
    if b is not None:
        res += b.astype(np.float64).reshape((1, f) + (1,) * nd)
    return res


CASES = [  # data shape, filters, kernel, stride, dilate, pad, groups, bias
    ((2, 4, 11, 12), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, True),
    ((1, 6, 13, 15), 4, (3, 5), (2, 3), (1, 2), (2, 3), 2, True),
    ((3, 4, 9, 14), 8, (2, 3), (3, 1), (1, 1), (0, 1), 4, False),
    ((2, 3, 6, 9, 8), 6, (3, 2, 3), (1, 2, 1), (1, 1, 2), (1, 0, 2), 3, True),
    ((2, 6, 9, 7), 4, (3, 2), (2, 1), (2, 2), (2, 1), 2, True),  # dilated first axis
    ((2, 4, 13), 8, (5,), (2,), (2,), (4,), 4, True),
    ((2, 3, 4, 4), 2, (3, 3), (1, 1), (1, 1), (5, 5), 1, True),  # rows of padding only
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-k{c[2]}-s{c[3]}-d{c[4]}-g{c[6]}")
@pytest.mark.parametrize("budget", ["default", "tiny", "tiny-threads"])
def test_blocked_convolution_matches_the_definition(monkeypatch, case, budget):
    shape, f, k, s, d, p, g, with_bias = case
    plans = []
    plan = nn_conv._conv_plan
    monkeypatch.setattr(nn_conv, "_conv_plan", lambda *a: plans.append(plan(*a)) or plans[-1])
    if budget != "default":  # blocks of a row or two; every row long enough for by-rows
        monkeypatch.setattr(nn_conv, "_BLOCK_BYTES", 600)
        monkeypatch.setattr(nn_conv, "_ROWS_BYTES", 900)
        monkeypatch.setattr(nn_conv, "_ROW_MIN_POSITIONS", 1)
    if budget == "tiny-threads":
        monkeypatch.setattr(nn_conv, "_THREAD_MIN_MACS", 1)
        monkeypatch.setattr(nn_conv, "_CONV_THREADS", 3)
        monkeypatch.setattr(nn_conv.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    rs = np.random.RandomState(len(shape) * 7 + f)
    x = rs.standard_normal(shape).astype(np.float32)
    w = rs.standard_normal((f, shape[1] // g) + k).astype(np.float32)
    b = rs.standard_normal(f).astype(np.float32) if with_bias else None
    got = nn_conv.convolution(np, x, w, b, kernel=k, stride=s, dilate=d, pad=p, num_filter=f,
                              num_group=g, no_bias=not with_bias)
    want = reference(x, w, b, k, s, d, p, g)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    (by_rows, m, rows, item, threads), = plans
    if budget != "default":
        assert by_rows == (len(k) > 1 and d[0] == 1)
        assert rows < got.shape[2] or m > 1 or got.shape[2] == 1
    if budget == "tiny-threads":
        assert threads == 3


def test_blocked_convolution_keeps_float64_and_float16():
    rs = np.random.RandomState(3)
    for dtype, tol in ((np.float64, 1e-10), (np.float16, 2e-2)):
        x = rs.standard_normal((2, 3, 40, 36)).astype(dtype)
        w = (rs.standard_normal((5, 3, 3, 3)) * 0.2).astype(dtype)
        b = rs.standard_normal(5).astype(dtype)
        got = nn_conv.convolution(np, x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=5)
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float64),
                                   reference(x, w, b, (3, 3), (1, 1), (1, 1), (1, 1), 1),
                                   rtol=tol, atol=tol)


def deconv_reference(x, w, k, s, d, p, g):
    """Deconvolution by its definition: each input position's filters added at
    position*stride + tap*dilate of the full output, then ``p`` cropped (float64)."""
    nd = len(k)
    n, c = x.shape[:2]
    cg, fg = c // g, w.shape[1]
    ins = x.shape[2:]
    full = np.zeros((n, g * fg) + tuple(s[i] * (ins[i] - 1) + d[i] * (k[i] - 1) + 1
                                        for i in range(nd)))
    for pos in itertools.product(*map(range, ins)):
        for tap in itertools.product(*map(range, k)):
            at = tuple(pos[i] * s[i] + tap[i] * d[i] for i in range(nd))
            for gi in range(g):
                xs = x[(slice(None), slice(gi * cg, (gi + 1) * cg)) + pos].astype(np.float64)
                ws = w[(slice(gi * cg, (gi + 1) * cg), slice(None)) + tap].astype(np.float64)
                full[(slice(None), slice(gi * fg, (gi + 1) * fg)) + at] += xs @ ws
    return full[(slice(None), slice(None)) + tuple(slice(q, full.shape[2 + i] - q)
                                                   for i, q in enumerate(p))]


@pytest.mark.parametrize("case", [  # data shape, filters, kernel, stride, dilate, pad, groups
    ((2, 4, 9, 10), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1),        # as a Convolution
    ((1, 6, 7, 8), 4, (3, 2), (1, 1), (2, 1), (1, 0), 2),
    ((2, 2, 5, 6, 4), 4, (3, 3, 2), (1, 1, 1), (1, 1, 1), (1, 2, 0), 2),
    ((2, 4, 9, 10), 6, (3, 3), (1, 1), (1, 1), (3, 3), 1),        # pad past d*(k-1)
    ((2, 4, 6, 5), 6, (3, 3), (2, 2), (1, 1), (1, 1), 2),         # strided: col2im
], ids=lambda c: f"{c[0]}-k{c[2]}-s{c[3]}-d{c[4]}-p{c[5]}-g{c[6]}")
def test_deconvolution_matches_the_definition(monkeypatch, case):
    shape, f, k, s, d, p, g = case
    monkeypatch.setattr(nn_conv, "_BLOCK_BYTES", 600)
    monkeypatch.setattr(nn_conv, "_ROWS_BYTES", 900)
    monkeypatch.setattr(nn_conv, "_ROW_MIN_POSITIONS", 1)
    rs = np.random.RandomState(sum(shape) + f)
    x = rs.standard_normal(shape).astype(np.float32)
    w = rs.standard_normal((shape[1], f // g) + k).astype(np.float32)
    b = rs.standard_normal(f).astype(np.float32)
    got = nn_conv.deconvolution(np, x, w, b, kernel=k, stride=s, dilate=d, pad=p,
                                num_filter=f, num_group=g, no_bias=False)
    want = deconv_reference(x, w, k, s, d, p, g) + b.reshape((1, f) + (1,) * len(k))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
