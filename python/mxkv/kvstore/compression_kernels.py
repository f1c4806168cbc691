"""Bit-packing kernels for gradient compression, on numpy or cupy arrays.

These are the arithmetic of :mod:`mxkv.kvstore.compression`, kept apart so
that the registry and its validation read without them. Every function takes
flat, C-contiguous float32 arrays of one array module (numpy or cupy), a
float32 threshold, and writes into arrays it is given; none allocates a
result the size of the gradient.

The packed layout is MXNet's, bit for bit (``docs/compression.md``):

* 2bit: 16 values per float32 word. Value ``j`` of a word lives in byte
  ``j // 4`` (memory order) at bits ``7 - 2*(j % 4)`` and ``6 - 2*(j % 4)``:
  ``11`` for +threshold, ``10`` for -threshold, ``00`` for 0.
* 1bit: 32 values per float32 word. Value ``j`` lives in byte ``j // 8`` at
  bit ``7 - j % 8``: ``1`` for +1, ``0`` for -1.

The numpy path runs in chunks that fit in L2 cache, with no Python loop over
elements; the cupy path runs one fused CUDA kernel per call (:data:`CUDA_SOURCE`).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "array_module",
    "dequantize_1bit",
    "dequantize_2bit",
    "quantize_1bit",
    "quantize_2bit",
    "roundtrip_1bit",
    "roundtrip_2bit",
]

#: Elements per chunk on the numpy path: the working set of one chunk (grad,
#: residual, two masks, a float scratch) stays inside a 1-2 MiB L2 cache.
CHUNK = 1 << 16

# 4 one-byte codes c0..c3 in a little-endian uint32 ``c0 | c1<<8 | c2<<16 |
# c3<<24``, multiplied by this constant (mod 2**32), leave
# ``c0<<6 | c1<<4 | c2<<2 | c3`` in the top byte: the copies shifted by 30,
# 20, 10 and 0 bits land on disjoint 2-bit fields, so nothing carries.
# The same constant, applied to one byte and shifted right by 6, spreads the
# byte's four 2-bit fields back into four bytes.
_SPREAD = 0x40100401
_POS_2BIT = np.uint32((3 * _SPREAD) & 0xFFFFFFFF)   # a ``True`` byte -> code 11
_NEG_2BIT = np.uint32((2 * _SPREAD) & 0xFFFFFFFF)   # a ``True`` byte -> code 10


def array_module(arr):
    """The array module (numpy or cupy) that holds ``arr``."""
    if isinstance(arr, np.ndarray):
        return np
    try:
        import cupy
    except ImportError:  # pragma: no cover - cupy arrays cannot exist then
        return np
    return cupy.get_array_module(arr)


# --------------------------------------------------------------------------
# numpy: lookup tables for dequantize (a byte -> its 4 or 8 float values)
# --------------------------------------------------------------------------

_LUT_CACHE: dict = {}


def _lut_2bit(t: np.float32) -> np.ndarray:
    key = ("2bit", t.tobytes())
    lut = _LUT_CACHE.get(key)
    if lut is None:
        shifts = 6 - 2 * np.arange(4)
        codes = (np.arange(256)[:, None] >> shifts) & 3
        lut = np.zeros((256, 4), np.float32)
        lut[codes == 3] = t
        lut[codes == 2] = -t
        if len(_LUT_CACHE) > 64:
            _LUT_CACHE.clear()
        _LUT_CACHE[key] = lut
    return lut


def _lut_1bit() -> np.ndarray:
    lut = _LUT_CACHE.get("1bit")
    if lut is None:
        bits = (np.arange(256)[:, None] >> (7 - np.arange(8))) & 1
        lut = np.where(bits == 1, np.float32(1), np.float32(-1)).astype(np.float32)
        _LUT_CACHE["1bit"] = lut
    return lut


def _expand(lut: np.ndarray, packed_bytes: np.ndarray, out: np.ndarray) -> None:
    """out[i] = value i of the packed bytes, through a (256, k) float32 table."""
    k = lut.shape[1]
    n = out.size
    full = n // k
    rows = out[: full * k].reshape(full, k)
    step = CHUNK // k
    for s in range(0, full, step):
        e = min(s + step, full)
        np.take(lut, packed_bytes[s:e], axis=0, out=rows[s:e])
    rest = n - full * k
    if rest:
        out[full * k:] = lut[packed_bytes[full], :rest]


# --------------------------------------------------------------------------
# numpy: 2bit
# --------------------------------------------------------------------------

def _np_update_2bit(g, r, t, nt, pos, neg, sgn, q):
    """residual += grad; threshold; residual -= quantized (q gets quantized)."""
    np.add(r, g, out=r)
    np.greater_equal(r, t, out=pos)
    np.less_equal(r, nt, out=neg)
    # pos and neg never both hold: the sign is pos - neg, the value sign * t
    np.subtract(pos.view(np.int8), neg.view(np.int8), out=sgn)
    np.multiply(sgn, t, out=q)
    np.subtract(r, q, out=r)


def _np_quantize_2bit(g, r, t, out_bytes):
    n = g.size
    nt = np.float32(-t)
    pos = np.empty(CHUNK, np.bool_)
    neg = np.empty(CHUNK, np.bool_)
    sgn = np.empty(CHUNK, np.int8)
    q = np.empty(CHUNK, np.float32)
    acc = np.empty(CHUNK // 4, np.uint32)
    tmp = np.empty(CHUNK // 4, np.uint32)
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        m = e - s
        _np_update_2bit(g[s:e], r[s:e], t, nt, pos[:m], neg[:m], sgn[:m], q[:m])
        mp = -(-m // 16) * 16              # the chunk's values, padded to whole words
        if mp != m:
            pos[m:mp] = False
            neg[m:mp] = False
        nb = mp // 4                       # one byte per 4 values
        a, b = acc[:nb], tmp[:nb]
        np.multiply(pos[:mp].view(np.uint32), _POS_2BIT, out=a)
        np.multiply(neg[:mp].view(np.uint32), _NEG_2BIT, out=b)
        np.bitwise_or(a, b, out=a)
        np.right_shift(a, 24, out=a)
        np.copyto(out_bytes[s // 4: s // 4 + nb], a, casting="unsafe")


def _np_roundtrip_2bit(g, r, t, out, accumulate):
    n = g.size
    nt = np.float32(-t)
    pos = np.empty(CHUNK, np.bool_)
    neg = np.empty(CHUNK, np.bool_)
    sgn = np.empty(CHUNK, np.int8)
    scratch = np.empty(CHUNK, np.float32) if accumulate else None
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        m = e - s
        q = scratch[:m] if accumulate else out[s:e]
        _np_update_2bit(g[s:e], r[s:e], t, nt, pos[:m], neg[:m], sgn[:m], q)
        if accumulate:
            np.add(out[s:e], q, out=out[s:e])


# --------------------------------------------------------------------------
# numpy: 1bit
# --------------------------------------------------------------------------

def _np_update_1bit(g, r, t, pos, sgn, q):
    """residual += grad; bit = residual > t; residual -= (+1 or -1)."""
    np.add(r, g, out=r)
    np.greater(r, t, out=pos)
    # sign = 2*pos - 1, in {-1, +1}
    np.add(pos.view(np.int8), pos.view(np.int8), out=sgn)
    np.subtract(sgn, np.int8(1), out=sgn)
    np.copyto(q, sgn, casting="unsafe")
    np.subtract(r, q, out=r)


def _np_quantize_1bit(g, r, t, out_bytes):
    n = g.size
    pos = np.empty(CHUNK, np.bool_)
    sgn = np.empty(CHUNK, np.int8)
    q = np.empty(CHUNK, np.float32)
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        m = e - s
        _np_update_1bit(g[s:e], r[s:e], t, pos[:m], sgn[:m], q[:m])
        packed = np.packbits(pos[:m])      # big bit order: value 0 -> 0x80
        out_bytes[s // 8: s // 8 + packed.size] = packed
    # bytes past the last value's byte, up to the word boundary, stay zero
    used = -(-n // 8)
    out_bytes[used:] = 0


def _np_roundtrip_1bit(g, r, t, out, accumulate):
    n = g.size
    pos = np.empty(CHUNK, np.bool_)
    sgn = np.empty(CHUNK, np.int8)
    scratch = np.empty(CHUNK, np.float32) if accumulate else None
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        m = e - s
        q = scratch[:m] if accumulate else out[s:e]
        _np_update_1bit(g[s:e], r[s:e], t, pos[:m], sgn[:m], q)
        if accumulate:
            np.add(out[s:e], q, out=out[s:e])


# --------------------------------------------------------------------------
# cupy: one fused kernel per call, compiled on first use
# --------------------------------------------------------------------------

#: The CUDA source of every GPU kernel. The element math (what one value
#: becomes, where its bits go) is in small ``__device__`` functions that the
#: kernels share; ``tests/gpu/test_compression_cuda_source.py`` compiles this very
#: string with a C++ compiler and runs the kernels on the CPU (emulating the
#: warp shuffles with threads) against the numpy path, and with NVRTC when
#: it is installed, so the source is checked on machines without a GPU.
CUDA_SOURCE = r"""
// 2bit: v >= t sends +t (code 3), v <= -t sends -t (code 2), else 0 (code 0).
__device__ __forceinline__ unsigned int mxkv_code_2bit(float* r, float g, float t) {
  float v = *r + g;
  unsigned int c = 0u;
  if (v >= t) { c = 3u; v -= t; }
  else if (v <= -t) { c = 2u; v += t; }
  *r = v;
  return c;
}
__device__ __forceinline__ int mxkv_shift_2bit(int j) {  // value j of a word: byte j/4
  return 8 * (j >> 2) + 6 - 2 * (j & 3);
}
__device__ __forceinline__ float mxkv_value_2bit(unsigned int c, float t) {
  return c == 3u ? t : (c == 2u ? -t : 0.0f);
}

// 1bit: v > t sends +1 (bit 1), else -1 (bit 0).
__device__ __forceinline__ unsigned int mxkv_code_1bit(float* r, float g, float t) {
  float v = *r + g;
  unsigned int c = 0u;
  if (v > t) { c = 1u; v -= 1.0f; }
  else { v += 1.0f; }
  *r = v;
  return c;
}
__device__ __forceinline__ int mxkv_shift_1bit(int j) {  // value j of a word: byte j/8
  return 8 * (j >> 3) + 7 - (j & 7);
}
__device__ __forceinline__ float mxkv_value_1bit(unsigned int c, float t) {
  return c ? 1.0f : -1.0f;
}

template <int BITS>
__device__ __forceinline__ unsigned int mxkv_code(float* r, float g, float t) {
  return BITS == 2 ? mxkv_code_2bit(r, g, t) : mxkv_code_1bit(r, g, t);
}
template <int BITS>
__device__ __forceinline__ int mxkv_shift(int j) {
  return BITS == 2 ? mxkv_shift_2bit(j) : mxkv_shift_1bit(j);
}
template <int BITS>
__device__ __forceinline__ float mxkv_value(unsigned int c, float t) {
  return BITS == 2 ? mxkv_value_2bit(c, t) : mxkv_value_1bit(c, t);
}

// One thread per value (the grid covers every slot of every word); the
// 32 / BITS threads of a word OR their bits together with warp shuffles.
template <int BITS>
__device__ __forceinline__ void mxkv_quantize(const float* grad, float* residual,
                                              unsigned int* out, long long n,
                                              long long nwords, float t) {
  const int per = 32 / BITS;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int bits = 0u;
  if (i < n) {
    float r = residual[i];
    unsigned int c = mxkv_code<BITS>(&r, grad[i], t);
    bits = c << mxkv_shift<BITS>((int)(i & (per - 1)));
    residual[i] = r;
  }
  for (int off = per / 2; off > 0; off >>= 1) {
    bits |= __shfl_xor_sync(0xffffffffu, bits, off);
  }
  long long w = i / per;
  if ((i & (per - 1)) == 0 && w < nwords) out[w] = bits;
}

template <int BITS>
__device__ __forceinline__ void mxkv_dequantize(const unsigned int* packed, float* out,
                                                long long n, float t) {
  const int per = 32 / BITS;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned int w = packed[i / per];
    unsigned int c = (w >> mxkv_shift<BITS>((int)(i & (per - 1)))) & ((1u << BITS) - 1u);
    out[i] = mxkv_value<BITS>(c, t);
  }
}

template <int BITS>
__device__ __forceinline__ void mxkv_roundtrip(const float* grad, float* residual, float* out,
                                               long long n, float t, int accumulate) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float r = residual[i];
    float q = mxkv_value<BITS>(mxkv_code<BITS>(&r, grad[i], t), t);
    residual[i] = r;
    out[i] = accumulate ? out[i] + q : q;
  }
}

extern "C" __global__ void mxkv_quantize_2bit(const float* g, float* r, unsigned int* o,
                                              long long n, long long nw, float t) {
  mxkv_quantize<2>(g, r, o, n, nw, t);
}
extern "C" __global__ void mxkv_quantize_1bit(const float* g, float* r, unsigned int* o,
                                              long long n, long long nw, float t) {
  mxkv_quantize<1>(g, r, o, n, nw, t);
}
extern "C" __global__ void mxkv_dequantize_2bit(const unsigned int* p, float* o, long long n,
                                                float t) {
  mxkv_dequantize<2>(p, o, n, t);
}
extern "C" __global__ void mxkv_dequantize_1bit(const unsigned int* p, float* o, long long n,
                                                float t) {
  mxkv_dequantize<1>(p, o, n, t);
}
extern "C" __global__ void mxkv_roundtrip_2bit(const float* g, float* r, float* o, long long n,
                                               float t, int acc) {
  mxkv_roundtrip<2>(g, r, o, n, t, acc);
}
extern "C" __global__ void mxkv_roundtrip_1bit(const float* g, float* r, float* o, long long n,
                                               float t, int acc) {
  mxkv_roundtrip<1>(g, r, o, n, t, acc);
}
"""

KERNEL_NAMES = ("mxkv_quantize_2bit", "mxkv_quantize_1bit", "mxkv_dequantize_2bit",
                "mxkv_dequantize_1bit", "mxkv_roundtrip_2bit", "mxkv_roundtrip_1bit")

#: Threads per block of every kernel (a multiple of the 32-thread warp).
BLOCK = 256

_CUPY_CACHE: dict = {}


def launch_grid(threads: int) -> int:
    """Blocks of :data:`BLOCK` threads covering ``threads`` threads."""
    return (threads + BLOCK - 1) // BLOCK


def quantize_threads(nwords: int, bits: int) -> int:
    """Threads a quantize launch runs: every value slot of every word."""
    return nwords * (32 // bits)


def _cupy_kernels(cupy):
    dev = cupy.cuda.Device().id
    ks = _CUPY_CACHE.get(dev)
    if ks is None:
        module = cupy.RawModule(code=CUDA_SOURCE, options=("--std=c++11",))
        ks = {name: module.get_function(name) for name in KERNEL_NAMES}
        _CUPY_CACHE[dev] = ks
    return ks


def _run(xp, name, threads, args) -> None:
    """Launch kernel ``name`` on the device of its first array argument."""
    grid = launch_grid(threads)
    if grid:
        with xp.cuda.Device(args[0].device.id):
            _cupy_kernels(xp)[name]((grid,), (BLOCK,), args)


def _cupy_quantize(xp, bits, g, r, t, out_words):
    nwords = out_words.size
    _run(xp, f"mxkv_quantize_{bits}bit", quantize_threads(nwords, bits),
         (g, r, out_words, np.int64(g.size), np.int64(nwords), np.float32(t)))


def _cupy_dequantize(xp, bits, packed_words, t, out):
    _run(xp, f"mxkv_dequantize_{bits}bit", out.size,
         (packed_words, out, np.int64(out.size), np.float32(t)))


def _cupy_roundtrip(xp, bits, g, r, t, out, accumulate):
    _run(xp, f"mxkv_roundtrip_{bits}bit", g.size,
         (g, r, out, np.int64(g.size), np.float32(t), np.int32(bool(accumulate))))


# --------------------------------------------------------------------------
# public kernels: flat float32 arrays, packed given as float32 words
# --------------------------------------------------------------------------

def quantize_2bit(xp, grad, residual, threshold, packed) -> None:
    """Quantize ``grad`` (+ ``residual``) into ``packed``; update ``residual``."""
    if xp is np:
        _np_quantize_2bit(grad, residual, threshold, packed.view(np.uint8))
    else:
        _cupy_quantize(xp, 2, grad, residual, threshold, packed.view(xp.uint32))


def dequantize_2bit(xp, packed, threshold, out) -> None:
    """Write the ``out.size`` values held by ``packed`` into ``out``."""
    if xp is np:
        _expand(_lut_2bit(threshold), packed.view(np.uint8), out)
    else:
        _cupy_dequantize(xp, 2, packed.view(xp.uint32), threshold, out)


def roundtrip_2bit(xp, grad, residual, threshold, out, accumulate=False) -> None:
    """``dequantize(quantize(grad, residual))`` into ``out`` (or added to it)."""
    if xp is np:
        _np_roundtrip_2bit(grad, residual, threshold, out, accumulate)
    else:
        _cupy_roundtrip(xp, 2, grad, residual, threshold, out, accumulate)


def quantize_1bit(xp, grad, residual, threshold, packed) -> None:
    """1bit twin of :func:`quantize_2bit`."""
    if xp is np:
        _np_quantize_1bit(grad, residual, threshold, packed.view(np.uint8))
    else:
        _cupy_quantize(xp, 1, grad, residual, threshold, packed.view(xp.uint32))


def dequantize_1bit(xp, packed, threshold, out) -> None:
    """1bit twin of :func:`dequantize_2bit` (values are +1 and -1)."""
    if xp is np:  # MXNet dequantizes 1bit to +-1 whatever the threshold
        _expand(_lut_1bit(), packed.view(np.uint8), out)
    else:
        _cupy_dequantize(xp, 1, packed.view(xp.uint32), threshold, out)


def roundtrip_1bit(xp, grad, residual, threshold, out, accumulate=False) -> None:
    """1bit twin of :func:`roundtrip_2bit`."""
    if xp is np:
        _np_roundtrip_1bit(grad, residual, threshold, out, accumulate)
    else:
        _cupy_roundtrip(xp, 1, grad, residual, threshold, out, accumulate)
