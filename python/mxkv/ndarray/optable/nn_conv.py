"""Convolution, Deconvolution, im2col and col2im (MXNet 1.9's ``nd.*``), forward.

Plain functions over an array module ``xp`` (numpy or cupy) and its arrays,
registered as operators in the operator table. Layout is MXNet's default,
channels first (NCW, NCHW, NCDHW). Convolution is im2col, one strided slice
per kernel tap, then one batched matmul per group (BLAS on numpy, cuBLAS on
CuPy), or at stride 1 a thin im2col (only the last axis's taps stacked) and
one matmul per tap of the other axes; Deconvolution is the transpose: a matmul,
then col2im by strided adds.
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

from .._util import MXNetValueError
from ._layer import params, register_layer

__all__ = ["col2im", "convolution", "deconv_pad_adj", "deconvolution", "im2col",
           "spatial_params"]

_COLS_BYTES = 32 << 20  # the im2col buffer Convolution fills per batch slice
_SHIFT_BYTES = 48 << 20  # the stacked rows a stride-1 Convolution holds per slice


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


def _taps(xp: Any, xpad: Any, k: tuple, s: tuple, d: tuple, out: tuple) -> Any:
    """im2col: (N, C, prod(k), prod(out)), one strided slice per kernel tap."""
    n, c = xpad.shape[:2]
    cols = xp.empty((n, c) + (len(list(itertools.product(*map(range, k)))),) + out,
                    dtype=xpad.dtype)
    for t, idx in enumerate(itertools.product(*map(range, k))):
        sl = tuple(slice(i * dd, i * dd + ss * (o - 1) + 1, ss)
                   for i, dd, ss, o in zip(idx, d, s, out))
        cols[:, :, t] = xpad[(slice(None), slice(None)) + sl]
    return cols.reshape(n, c, -1, _prod(out))


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


def _conv_shifted(xp: Any, data: Any, weight: Any, res: Any, k: tuple, d: tuple, p: tuple,
                  g: int) -> None:
    """Stride-1 convolution into ``res`` with a thin im2col: a slice of samples is
    padded and laid out channel-first, flattened to (C, samples*positions); the
    last axis's kw taps are stacked as rows, (C*kw, positions) (kw shifted copies,
    not prod(kernel)); then per tap of the other axes one matmul (F, C*kw) @ the
    rows at that tap's offset, summed (the positions past a row's end are
    computed and dropped). Few large BLAS calls: small ones lose to OpenBLAS's
    thread start-up."""
    n, c = data.shape[:2]
    f = weight.shape[0]
    nd = len(k)
    kw, dw = k[-1], d[-1]
    padded = tuple(data.shape[2 + i] + 2 * p[i] for i in range(nd))
    out = res.shape[2:]
    row = [_prod(padded[i + 1:]) for i in range(nd)]
    offs = [sum(idx[i] * d[i] * row[i] for i in range(nd - 1))
            for idx in itertools.product(*map(range, k[:-1]))]
    reach = max(offs) + (kw - 1) * dw
    fg, cg = f // g, c // g
    # (T', G, Fg, Cg*kw): the weights of each tap of the leading axes
    w = weight.reshape((g, fg, cg, _prod(k[:-1]), kw)).transpose(3, 0, 1, 2, 4).reshape(
        -1, g, fg, cg * kw)
    per = _prod(padded)
    inner = (slice(None), slice(None)) + tuple(slice(q, q + data.shape[2 + i])
                                               for i, q in enumerate(p))
    step = max(1, _SHIFT_BYTES // max(1, c * kw * per * data.dtype.itemsize))
    for b in range(0, n, step):
        m = min(step, n - b)
        total = m * per
        x = xp.zeros((c, total + reach), dtype=data.dtype)
        x[:, :total].reshape((c, m) + padded)[inner] = data[b:b + m].swapaxes(0, 1)
        span = total + max(offs)
        cols = xp.empty((c, kw, span), dtype=data.dtype)
        for j in range(kw):
            cols[:, j] = x[:, j * dw:j * dw + span]
        cols = cols.reshape(g, cg * kw, span)
        acc = None
        for t, off in enumerate(offs):
            prod = xp.matmul(w[t], cols[:, :, off:off + total]) if g > 1 else \
                xp.matmul(w[t, 0], cols[0, :, off:off + total])[None]
            if acc is None:
                acc = prod
            else:
                acc += prod
        full = acc.reshape((f, m) + padded)
        res[b:b + m] = full[(slice(None), slice(None))
                            + tuple(slice(0, o) for o in out)].swapaxes(0, 1)


def convolution(xp: Any, data: Any, weight: Any, bias: Any = None, *, kernel: Sequence[int],
                stride: Sequence[int] = (), dilate: Sequence[int] = (),
                pad: Sequence[int] = (), num_filter: int, num_group: int = 1,
                no_bias: bool = False) -> Any:
    """Convolution forward: (N, C, *in) with weight (F, C/group, *kernel) -> (N, F, *out)."""
    k, s, d, p = spatial_params("Convolution", data.shape, kernel, stride, dilate, pad)
    n, c = data.shape[:2]
    g, f = _check_weights("Convolution", data, weight, bias, k, num_filter, num_group, no_bias)
    out = tuple(_conv_out("Convolution", data.shape[2 + i], k[i], s[i], d[i], p[i])
                for i in range(len(k)))
    res = xp.empty((n, f) + out, dtype=data.dtype)
    if all(v == 1 for v in s):
        _conv_shifted(xp, data, weight, res, k, d, p, g)
    else:
        w = weight.reshape(g, f // g, -1)                           # (G, Fg, Cg*K)
        # A few samples at a time: the columns (K times the input) stay near the cache.
        step = max(1, _COLS_BYTES // max(1, c * _prod(k) * _prod(out) * data.dtype.itemsize))
        for b in range(0, n, step):
            x = _pad_spatial(xp, data[b:b + step], p)
            cols = _taps(xp, x, k, s, d, out)                       # (n, C, K, L)
            cols = cols.reshape(x.shape[0], g, (c // g) * _prod(k), _prod(out))
            res[b:b + step] = xp.matmul(w[None], cols).reshape((x.shape[0], f) + out)
    if not no_bias:
        res += bias.reshape((1, f) + (1,) * len(k))
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
    cols = _taps(xp, _pad_spatial(xp, data, p), k, s, d, out)
    return cols.reshape(data.shape[0], -1, _prod(out))


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
    doc="Transposed convolution (1-D, 2-D, 3-D): a matmul per group, then col2im.",
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
