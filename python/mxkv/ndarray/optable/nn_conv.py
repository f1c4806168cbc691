"""Convolution, Deconvolution, im2col and col2im (MXNet 1.9's ``nd.*``), forward.

Plain functions over an array module ``xp`` (numpy or cupy) and its arrays,
registered as operators in the operator table. Layout is MXNet's default,
channels first (NCW, NCHW, NCDHW). Convolution goes by blocks of a few output
rows, each block's working set about L2's size, and one matmul call per block
(BLAS on numpy, cuBLAS on CuPy) writing straight into the NCHW result: by rows
(each input row's taps of the other axes copied once; every output row's im2col
matrix is then a strided view) or by columns (a block's im2col copied from a
strided window view, the bias as one more column of the filters); on numpy the
blocks are shared among threads. Deconvolution at stride 1 is such a
Convolution (filters flipped, their channels swapped, padding d*(k-1) - pad);
with a stride it is the transpose: a matmul, then col2im by strided adds.
"""
from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from .._util import MXNetValueError
from ._layer import params, register_layer

__all__ = ["col2im", "convolution", "deconv_pad_adj", "deconvolution", "im2col",
           "spatial_params"]

# Convolution's blocks on numpy: a block's columns stay in L2 (about 1 MB a core),
# and its GEMM stays under ~1M multiply-adds, where OpenBLAS runs it on the
# calling thread (larger ones go to its thread pool, whose spin-waits collapse
# on a loaded machine); the blocks are shared among up to _CONV_THREADS Python
# threads (numpy's copies and BLAS release the GIL). On CuPy a block is one
# large im2col buffer, no threads.
_BLOCK_BYTES = 256 << 10
_BLOCK_MACS = 3 << 18
_GPU_BLOCK_BYTES = 64 << 20
_ROWS_BYTES = 512 << 10  # (the by-rows buffer: the input rows of a block, other axes' taps)
_ROW_MIN_POSITIONS = 32  # (shorter output rows: too thin a GEMM each, so by columns)
_CONV_THREADS = 8
_THREAD_MIN_MACS = 1 << 24  # (a call smaller than this runs on the calling thread alone)

def spatial_params(op: str, data_shape: tuple, kernel: Sequence[int], stride: Sequence[int],
                   dilate: Sequence[int], pad: Sequence[int]) -> tuple:
    """``kernel``, ``stride``, ``dilate``, ``pad`` as tuples of the kernel's rank
    (MXNet's empty defaults: stride and dilate 1, pad 0), checked against ``data_shape``."""
    k = tuple(int(v) for v in kernel)
    nd = len(k)
    if nd not in (1, 2, 3):
        raise MXNetValueError(f"{op}: kernel must have 1, 2 or 3 dimensions, got {k}")
    if len(data_shape) != nd + 2:
        raise MXNetValueError(f"{op}: data of shape {tuple(data_shape)} does not fit a {nd}-D "
                              f"kernel {k}: expected {nd + 2} dimensions (N, C, spatial...)")

    def fill(name: str, v: Sequence[int], default: int) -> tuple:
        v = tuple(int(x) for x in v) if v else (default,) * nd
        if len(v) != nd:
            raise MXNetValueError(f"{op}: {name} {v} must have as many dimensions as kernel {k}")
        return v
    s, d, p = fill("stride", stride, 1), fill("dilate", dilate, 1), fill("pad", pad, 0)
    if any(v <= 0 for v in s) or any(v <= 0 for v in d):
        raise MXNetValueError(f"{op}: stride {s} and dilate {d} must be positive")
    return k, s, d, p


def _conv_out(op: str, size: int, k: int, s: int, d: int, p: int) -> int:
    dk = d * (k - 1) + 1
    if size + 2 * p < dk:
        raise MXNetValueError(f"{op}: kernel size {k} (dilated {dk}) exceeds the padded input "
                              f"size {size + 2 * p}")
    return (size + 2 * p - dk) // s + 1


def _pad_spatial(xp: Any, x: Any, pad: tuple, value: float = 0) -> Any:
    if not any(pad):
        return x
    return xp.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in pad], mode="constant",
                  constant_values=value)


def _windows(xp: Any, xpad: Any, k: tuple, s: tuple, d: tuple, out: tuple) -> Any:
    """im2col as a view, no copy: (N, C, *k, *out), element [n, c, *tap, *pos] =
    ``xpad[n, c, pos*s + tap*d]`` (``xpad`` the padded data; read-only use)."""
    st = xpad.strides
    nd = len(k)
    return xp.lib.stride_tricks.as_strided(
        xpad, xpad.shape[:2] + tuple(k) + tuple(out),
        st[:2] + tuple(st[2 + i] * d[i] for i in range(nd))
        + tuple(st[2 + i] * s[i] for i in range(nd)))


def _prod(t: Sequence[int]) -> int:
    r = 1
    for v in t:
        r *= int(v)
    return r


def _check_weights(op: str, data: Any, weight: Any, bias: Any, k: tuple, num_filter: int,
                   num_group: int, no_bias: bool) -> tuple:
    """(groups, filters) once the weight (Convolution: (F, C/g, *k); Deconvolution:
    (C, F/g, *k)) and bias (F,) fit ``data``."""
    c, g, f = data.shape[1], int(num_group), int(num_filter)
    if g <= 0 or c % g or f % g:
        raise MXNetValueError(f"{op}: num_group {g} must divide the input channels {c} and "
                              f"num_filter {f}")
    wshape = ((f, c // g) if op == "Convolution" else (c, f // g)) + k
    if tuple(weight.shape) != wshape:
        raise MXNetValueError(f"{op}: weight has shape {tuple(weight.shape)}, expected "
                              f"{wshape} for data {tuple(data.shape)}")
    if not no_bias and (bias is None or tuple(bias.shape) != (f,)):
        raise MXNetValueError(f"{op}: bias must have shape ({f},), got "
                              f"{None if bias is None else tuple(bias.shape)}")
    return g, f


def _conv_plan(xp: Any, data: Any, out: tuple, f: int, g: int, k: tuple, s: tuple,
               d: tuple, has_bias: bool) -> tuple:
    """How Convolution's blocks go: (by_rows, samples per block, output rows (of the
    first spatial axis) per block, output rows per work item, threads)."""
    n, c = data.shape[:2]
    rest, taps, isz = _prod(out[1:]), _prod(k), data.dtype.itemsize
    gpu = xp is not np
    by_rows = not gpu and len(k) > 1 and d[0] == 1 and rest >= _ROW_MIN_POSITIONS
    if by_rows:  # the block's buffer: each input row's columns of the other axes' taps
        rows = max(1, (_ROWS_BYTES // max(1, c * taps // k[0] * rest * isz) - k[0]) // s[0] + 1)
        gemm = f // g * (c // g * taps) * rest  # (one BLAS call: one output row, one group)
    else:  # the block's buffer: its im2col columns, the bias's ones too
        depth = g * (c // g * taps + has_bias)
        rows = max(1, (_GPU_BLOCK_BYTES if gpu else _BLOCK_BYTES) // max(1, depth * rest * isz))
        gemm = f * depth * rest  # (one output row's)
        if gemm <= _BLOCK_MACS:
            rows = min(rows, _BLOCK_MACS // max(1, gemm))
    threads = 1
    if not gpu and gemm <= _BLOCK_MACS and f * c * taps * rest * out[0] * n >= _THREAD_MIN_MACS:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
        threads = max(1, min(_CONV_THREADS, cpus))  # (BLAS keeps each call on its thread)
    m = 1 if by_rows else max(1, min(n, rows // out[0]))
    rows = min(rows, out[0])
    # a work item: one sample's rows, or part of them when there are fewer samples than
    # threads (or when its padded rows, the thread's input buffer, pass 64 blocks' bytes)
    item = out[0]
    if m == 1:
        in_row = c * _prod(data.shape[3:]) * isz
        item = max(1, _BLOCK_BYTES * 64 // max(1, in_row * s[0]))
        if threads > n:
            item = min(item, -(-out[0] // -(-threads // n)))
        item = min(out[0], max(rows, item // rows * rows))
    return by_rows, m, rows, item, threads


def _conv_blocks(xp: Any, data: Any, weight: Any, bias: Any, res: Any, k: tuple, s: tuple,
                 d: tuple, p: tuple, g: int) -> None:
    """Convolution into ``res`` (N, F, *out), block by block of output positions (a few
    rows of the first spatial axis, or several whole samples). A work item's input rows
    are padded into the thread's buffer; then per block, one of two ways:

    - by rows (numpy, 2-D/3-D, no dilation on the first axis, rows of at least
      _ROW_MIN_POSITIONS positions): the block's input rows laid out (row, channel,
      tap of the other axes, position), one copy, in which every output row's im2col
      matrix is a view with one row stride ((first-axis tap, channel, other taps) x
      positions): one matmul call, a (F/G, C/G*K) @ (C/G*K, positions) GEMM per output
      row, writes the block into ``res``, then the bias is added;
    - by columns (otherwise): the block's im2col columns (the taps of a strided window
      view, one copy) and a row of ones (the bias) in a buffer of about L2's size, one
      matmul, (F/G, C/G*K + 1) @ columns, writes the block into ``res``.

    Either way NCHW comes out directly (no transpose, no output copy), and on numpy
    the blocks are shared among threads (see _BLOCK_MACS)."""
    n, c = data.shape[:2]
    f, nd = weight.shape[0], len(k)
    fg, cg, taps = f // g, c // g, _prod(k)
    out = tuple(res.shape[2:])
    rest, height = _prod(out[1:]), data.shape[2]
    by_rows, m, rows, item, threads = _conv_plan(xp, data, out, f, g, k, s, d,
                                                 bias is not None)
    items = [(b, r, min(r + item, out[0])) for b in range(0, n, m)
             for r in range(0, out[0], item)]
    padded_rest = tuple(data.shape[3 + i] + 2 * p[1 + i] for i in range(nd - 1))
    inner_rest = tuple(slice(q, q + data.shape[3 + i]) for i, q in enumerate(p[1:]))
    rin_max = (item - 1) * s[0] + d[0] * (k[0] - 1) + 1
    nxt = itertools.count().__next__
    if by_rows:
        other = taps // k[0]  # the taps of the other axes
        w = weight.reshape(g, fg, cg, k[0], other).transpose(0, 1, 3, 2, 4).reshape(
            g, fg, k[0] * cg * other)
        res_rows = res.reshape(n, g, fg, out[0], rest)
        bias_g = None if bias is None else bias.reshape(g, fg, 1)
        # (G, row, C/G, *other taps, *positions): where a buffer row goes in the window view
        order = (0, nd + 1, 1) + tuple(range(2, nd + 1)) + tuple(range(nd + 2, 2 * nd + 1))
    else:
        depth = cg * taps + (bias is not None)  # per group: the taps, then the bias's ones
        w = weight.reshape(g, fg, cg * taps)
        if bias is not None:
            w = xp.concatenate([w, bias.reshape(g, fg, 1).astype(w.dtype)], axis=2)
        res_cols = res.reshape(n, g, fg, out[0] * rest)

    def columns(bufs: dict, mm: int, rr: int) -> tuple:
        """The thread's column buffer for blocks of ``mm`` samples and ``rr`` rows:
        (mm, G, depth, positions), and its taps' part shaped as the window view."""
        if (mm, rr) not in bufs:
            cols = xp.empty((mm, g, depth, rr * rest), dtype=data.dtype)
            if bias is not None:
                cols[:, :, -1] = 1
            bufs[mm, rr] = cols, cols[:, :, :cg * taps].reshape((mm, g, cg) + k + (rr,)
                                                               + out[1:])
        return bufs[mm, rr]

    def row_buffers(bufs: dict, ybuf: Any, rr: int) -> tuple:
        """The thread's buffer for blocks of ``rr`` rows: (G, input rows, C/G, *other
        taps, *positions), and the view of its output rows' im2col matrices."""
        if rr not in bufs:
            yin = (rr - 1) * s[0] + k[0]
            rows_in = ybuf[:g * yin * cg * other * rest].reshape((g, yin, cg) + k[1:] + out[1:])
            row = cg * other * rest * ybuf.itemsize  # the buffer's row stride
            bufs[rr] = rows_in, xp.lib.stride_tricks.as_strided(
                rows_in, (rr, g, k[0] * cg * other, rest),
                (row * s[0], row * yin, rest * ybuf.itemsize, ybuf.itemsize))
        return bufs[rr]

    def by_row_blocks(x: Any, b: int, ra: int, rb: int, ybuf: Any, bufs: dict) -> None:
        win = _windows(xp, x, (1,) + k[1:], (1,) + s[1:], (1,) + d[1:],
                       (x.shape[2],) + out[1:])[0, :, 0]
        win = win.reshape((g, cg) + win.shape[1:]).transpose(order)
        for r in range(ra, rb, rows):
            rr = min(rows, rb - r)
            rows_in, mats = row_buffers(bufs, ybuf, rr)
            y0 = (r - ra) * s[0]
            xp.copyto(rows_in, win[:, y0:y0 + rows_in.shape[1]])
            dst = res_rows[b, :, :, r:r + rr].transpose(2, 0, 1, 3)
            xp.matmul(w, mats, out=dst)
            if bias_g is not None:
                dst += bias_g

    def by_column_blocks(x: Any, b: int, mm: int, ra: int, rb: int, bufs: dict) -> None:
        win = _windows(xp, x, k, s, d, (rb - ra,) + out[1:]).reshape(
            (mm, g, cg) + k + (rb - ra,) + out[1:])
        for r in range(ra, rb, rows):
            rr = min(rows, rb - r)
            cols, taps_part = columns(bufs, mm, rr)
            xp.copyto(taps_part, win[(slice(None),) * (3 + nd) + (slice(r - ra, r - ra + rr),)])
            xp.matmul(w, cols, out=res_cols[b:b + mm, :, :, r * rest:(r + rr) * rest])

    def work() -> None:
        xbuf = xp.zeros((m, c, rin_max) + padded_rest, dtype=data.dtype)
        bufs: dict = {}
        ybuf = xp.empty(((rows - 1) * s[0] + k[0]) * c * taps // k[0] * rest,
                        dtype=data.dtype) if by_rows else None
        while True:
            i = nxt()
            if i >= len(items):
                return
            b, ra, rb = items[i]
            mm = min(m, n - b)
            u0 = ra * s[0] - p[0]  # the item's first input row (unpadded)
            rin = (rb - ra - 1) * s[0] + d[0] * (k[0] - 1) + 1
            x = xbuf[:mm, :, :rin]
            lo = max(u0, 0)
            hi = max(lo, min(u0 + rin, height))
            if lo > u0:
                x[:, :, :lo - u0] = 0
            if hi < u0 + rin:
                x[:, :, hi - u0:] = 0
            x[(slice(None), slice(None), slice(lo - u0, hi - u0)) + inner_rest] = \
                data[b:b + mm, :, lo:hi]
            if by_rows:
                by_row_blocks(x, b, ra, rb, ybuf, bufs)
            else:
                by_column_blocks(x, b, mm, ra, rb, bufs)

    threads = min(threads, len(items))
    if threads == 1:
        work()
        return
    with ThreadPoolExecutor(threads - 1) as pool:
        helpers = [pool.submit(work) for _ in range(threads - 1)]
        work()
        for h in helpers:
            h.result()


def convolution(xp: Any, data: Any, weight: Any, bias: Any = None, *, kernel: Sequence[int],
                stride: Sequence[int] = (), dilate: Sequence[int] = (),
                pad: Sequence[int] = (), num_filter: int, num_group: int = 1,
                no_bias: bool = False) -> Any:
    """Convolution forward: (N, C, *in) with weight (F, C/group, *kernel) -> (N, F, *out)."""
    k, s, d, p = spatial_params("Convolution", data.shape, kernel, stride, dilate, pad)
    n = data.shape[0]
    g, f = _check_weights("Convolution", data, weight, bias, k, num_filter, num_group, no_bias)
    out = tuple(_conv_out("Convolution", data.shape[2 + i], k[i], s[i], d[i], p[i])
                for i in range(len(k)))
    res = xp.empty((n, f) + out, dtype=data.dtype)
    if res.size:
        _conv_blocks(xp, data, weight, None if no_bias else bias, res, k, s, d, p, g)
    return res


def _col2im(xp: Any, cols: Any, k: tuple, s: tuple, d: tuple, grid: tuple,
            full: tuple) -> Any:
    """The transpose of im2col: (N, C, K, *grid) columns summed into (N, C, *full),
    each tap's grid added at its offset (stride ``s``, dilation ``d``)."""
    buf = xp.zeros(cols.shape[:2] + tuple(full), dtype=cols.dtype)
    for t, idx in enumerate(itertools.product(*map(range, k))):
        sl = tuple(slice(i * dd, i * dd + ss * (m - 1) + 1, ss)
                   for i, dd, ss, m in zip(idx, d, s, grid))
        buf[(slice(None), slice(None)) + sl] += cols[:, :, t]
    return buf


def im2col(xp: Any, data: Any, *, kernel: Sequence[int], stride: Sequence[int] = (),
           dilate: Sequence[int] = (), pad: Sequence[int] = ()) -> Any:
    """Each position's receptive field as a column: (N, C, *in) -> (N, C*K, L),
    rows channel-major then kernel taps, L the convolution's output positions."""
    k, s, d, p = spatial_params("im2col", data.shape, kernel, stride, dilate, pad)
    out = tuple(_conv_out("im2col", data.shape[2 + i], k[i], s[i], d[i], p[i])
                for i in range(len(k)))
    cols = _windows(xp, _pad_spatial(xp, data, p), k, s, d, out)
    return xp.ascontiguousarray(cols).reshape(data.shape[0], -1, _prod(out))


def col2im(xp: Any, data: Any, *, output_size: Sequence[int], kernel: Sequence[int],
           stride: Sequence[int] = (), dilate: Sequence[int] = (),
           pad: Sequence[int] = ()) -> Any:
    """im2col's transpose: (N, C*K, L) columns summed back into (N, C, *output_size)."""
    size = tuple(int(v) for v in output_size)
    if data.ndim != 3:
        raise MXNetValueError(f"col2im: data must be 3-D (N, C*K, L), got shape "
                              f"{tuple(data.shape)}")
    k, s, d, p = spatial_params("col2im", (1, 1) + size, kernel, stride, dilate, pad)
    grid = tuple(_conv_out("col2im", size[i], k[i], s[i], d[i], p[i]) for i in range(len(k)))
    taps = _prod(k)
    if data.shape[1] % taps or data.shape[2] != _prod(grid):
        raise MXNetValueError(f"col2im: data of shape {tuple(data.shape)} does not fit "
                              f"kernel {k} over output_size {size}: expected (N, C*{taps}, "
                              f"{_prod(grid)})")
    cols = data.reshape((data.shape[0], data.shape[1] // taps, taps) + grid)
    buf = _col2im(xp, cols, k, s, d, grid, tuple(size[i] + 2 * p[i] for i in range(len(k))))
    crop = tuple(slice(q, q + m) for q, m in zip(p, size))
    return xp.ascontiguousarray(buf[(slice(None), slice(None)) + crop])


def deconv_pad_adj(k: tuple, s: tuple, d: tuple, pad: tuple, adj: Sequence[int],
                   target_shape: Sequence[int], in_spatial: tuple) -> tuple:
    """MXNet's Deconvolution padding: from ``target_shape`` when it has a nonzero
    entry (``pad`` and ``adj`` then ignored), else ``pad`` and ``adj``."""
    nd = len(k)
    if target_shape and any(int(t) for t in target_shape):
        pads, adjs = [], []
        for i in range(nd):
            total = s[i] * (in_spatial[i] - 1) + d[i] * (k[i] - 1) + 1
            if total < int(target_shape[i]):
                raise MXNetValueError(f"Deconvolution: too big target shape {tuple(target_shape)}")
            total -= int(target_shape[i])
            adjs.append(total % 2)
            pads.append((total + 1) // 2)
        return tuple(pads), tuple(adjs)
    a = tuple(int(v) for v in adj) if adj else (0,) * nd
    if len(a) != nd:
        raise MXNetValueError(f"Deconvolution: adj {a} must have as many dimensions as kernel {k}")
    return pad, a


def deconvolution(xp: Any, data: Any, weight: Any, bias: Any = None, *, kernel: Sequence[int],
                  stride: Sequence[int] = (), dilate: Sequence[int] = (),
                  pad: Sequence[int] = (), adj: Sequence[int] = (),
                  target_shape: Sequence[int] = (), num_filter: int, num_group: int = 1,
                  no_bias: bool = True) -> Any:
    """Deconvolution (transposed convolution) forward: (N, C, *in) with weight
    (C, F/group, *kernel) -> (N, F, *out), out = s*(in-1) + d*(k-1) + 1 - 2*pad + adj."""
    k, s, d, p = spatial_params("Deconvolution", data.shape, kernel, stride, dilate, pad)
    n, c = data.shape[:2]
    g, f = _check_weights("Deconvolution", data, weight, bias, k, num_filter, num_group,
                          no_bias)
    ins = tuple(data.shape[2:])
    p, a = deconv_pad_adj(k, s, d, p, adj, target_shape, ins)
    if any(a[i] >= s[i] for i in range(len(k))):
        raise MXNetValueError(f"Deconvolution: adj {a} must be smaller than stride {s}")
    full = tuple(s[i] * (ins[i] - 1) + d[i] * (k[i] - 1) + 1 + a[i] for i in range(len(k)))
    out = tuple(full[i] - 2 * p[i] for i in range(len(k)))
    if any(o <= 0 for o in out):
        raise MXNetValueError(f"Deconvolution: output shape {out} is not positive (pad {p})")
    nd = len(k)
    cpad = tuple(d[i] * (k[i] - 1) - p[i] for i in range(nd))
    if all(v == 1 for v in s) and min(cpad) >= 0 and data.size:
        # at stride 1, a Convolution (Convolution's blocks) of the data padded by
        # d*(k-1) - pad, with the filters flipped and their in/out channels swapped:
        # no (N, F*K, *in) columns and no col2im
        flipped = weight.reshape((g, c // g, f // g) + k).swapaxes(1, 2).reshape(
            (f, c // g) + k)[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
        res = xp.empty((n, f) + out, dtype=data.dtype)
        _conv_blocks(xp, data, xp.ascontiguousarray(flipped), None if no_bias else bias, res,
                     k, s, d, cpad, g)
        return res
    x = data.reshape(n, g, c // g, _prod(ins))                       # (N, G, Cg, L)
    w = weight.reshape(g, c // g, -1).transpose(0, 2, 1)             # (G, Fg*K, Cg)
    cols = xp.matmul(w[None], x).reshape((n, f, _prod(k)) + ins)     # (N, F, K, *in)
    buf = _col2im(xp, cols, k, s, d, ins, full)
    res = buf[(slice(None), slice(None)) + tuple(slice(q, q + o) for q, o in zip(p, out))]
    res = xp.ascontiguousarray(res)
    if not no_bias:
        res += bias.reshape((1, f) + (1,) * len(k))
    return res


_CONV_COMMON = (
    ("kernel", "Shape(tuple)"),
    ("stride", "Shape(tuple)", ()),
    ("dilate", "Shape(tuple)", ()),
    ("pad", "Shape(tuple)", ()))
_CONV_BACKEND = (
    ("cudnn_tune", "{None, 'fastest', 'limited_workspace', 'off'}", None),
    ("cudnn_off", "boolean", False),
    ("layout", "{None, 'NCDHW', 'NCHW', 'NCW', 'NDHWC', 'NHWC'}", None))

_CONV = (*_CONV_COMMON,
         ("num_filter", "int (non-negative)"),
         ("num_group", "int (non-negative)", 1),
         ("workspace", "long (non-negative)", 1024),
         ("no_bias", "boolean", False))

register_layer(
    "Convolution", ("data", "weight", "bias"), params(*_CONV, *_CONV_BACKEND),
    convolution, optional=("bias",),
    doc="Convolution over 1-D, 2-D or 3-D data (NCW, NCHW, NCDHW): im2col and a "
        "batched matmul per group.",
    differences="channels-first layouts only (MXNet's CPU kernels too); float16 computes "
                "in float16 matmuls.")

register_layer(
    "Deconvolution", ("data", "weight", "bias"), params(
        *_CONV_COMMON,
        ("adj", "Shape(tuple)", ()),
        ("target_shape", "Shape(tuple)", ()),
        ("num_filter", "int (non-negative)"),
        ("num_group", "int (non-negative)", 1),
        ("workspace", "long (non-negative)", 512),
        ("no_bias", "boolean", True),
        *_CONV_BACKEND),
    deconvolution, optional=("bias",),
    doc="Transposed convolution (1-D, 2-D, 3-D): at stride 1 a Convolution with the "
        "filters flipped; with a stride a matmul per group, then col2im.",
    differences="dilation and 3-D float64 are computed (MXNet's CPU kernel refuses "
                "them).")

_WINDOW = (("kernel", "Shape(tuple)"), ("stride", "Shape(tuple)", ()),
           ("dilate", "Shape(tuple)", ()), ("pad", "Shape(tuple)", ()))

register_layer(
    "im2col", ("data",), params(*_WINDOW), im2col,
    doc="Each output position's receptive field as a column: (N, C*prod(kernel), L).")

register_layer(
    "col2im", ("data",), params(("output_size", "Shape(tuple)"), *_WINDOW), col2im,
    doc="The transpose of im2col: columns summed back into (N, C, *output_size).")

register_layer(
    "Convolution_v1", ("data", "weight", "bias"), params(
        *_CONV, *_CONV_BACKEND[:2], ("layout", "{None, 'NCDHW', 'NCHW', 'NDHWC', 'NHWC'}", None)),
    convolution, optional=("bias",),
    doc="MXNet's deprecated first Convolution: the same computation as Convolution.")
