"""The GPU compression kernels' CUDA source, checked on a machine without a GPU.

``compression_kernels.CUDA_SOURCE`` is the exact string CuPy compiles on a
GPU. Here a C++ compiler builds it with a small prelude that makes CUDA's
names plain C++ (``blockIdx``/``threadIdx`` per host thread, and
``__shfl_xor_sync`` emulated by 32 host threads that run the 32 lanes of a
warp in lockstep), and the kernels run on the CPU with the launch grid the
GPU path uses. Their packed words, residuals and values must equal the numpy
path's bit for bit. Where NVRTC is installed (``cupy-cuda12x`` and
``nvidia-cuda-nvrtc-cu12``) the source is also compiled to PTX for real.
On a GPU, ``test_compression.py::test_cupy_kernels_match_numpy`` runs them.
"""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from mxkv.kvstore import compression_kernels as ck
from mxkv.kvstore.compression import GradientCompression

CXX = shutil.which("g++") or shutil.which("clang++") or shutil.which("c++")

PRELUDE = r"""
#include <pthread.h>
#include <thread>
#include <vector>
struct mxkv_dim3 { unsigned int x, y, z; };
static thread_local mxkv_dim3 threadIdx, blockIdx;
static mxkv_dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
static pthread_barrier_t mxkv_warp;
static unsigned int mxkv_lanes[32];
// Every lane publishes its value, waits for the warp, reads its partner's.
static unsigned int __shfl_xor_sync(unsigned int, unsigned int v, int off) {
  unsigned int lane = threadIdx.x & 31u;
  mxkv_lanes[lane] = v;
  pthread_barrier_wait(&mxkv_warp);
  unsigned int r = mxkv_lanes[lane ^ (unsigned int)off];
  pthread_barrier_wait(&mxkv_warp);
  return r;
}
"""

HARNESS = r"""
// 32 host threads are the lanes of one warp; together they walk every warp
// of every block of the launch, in the same order, so shuffles line up.
template <class F> static void mxkv_launch(long long grid, int block, F body) {
  blockDim = {(unsigned int)block, 1u, 1u};
  gridDim = {(unsigned int)grid, 1u, 1u};
  pthread_barrier_init(&mxkv_warp, nullptr, 32);
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < 32; ++lane) {
    lanes.emplace_back([=]() {
      for (long long b = 0; b < grid; ++b) {
        for (int w = 0; w < block; w += 32) {
          blockIdx = {(unsigned int)b, 0u, 0u};
          threadIdx = {(unsigned int)(w + lane), 0u, 0u};
          body();
        }
      }
    });
  }
  for (auto& t : lanes) t.join();
  pthread_barrier_destroy(&mxkv_warp);
}
extern "C" void run_quantize(int bits, long long grid, int block, const float* g, float* r,
                             unsigned int* o, long long n, long long nw, float t) {
  mxkv_launch(grid, block, [=]() {
    if (bits == 2) mxkv_quantize_2bit(g, r, o, n, nw, t);
    else mxkv_quantize_1bit(g, r, o, n, nw, t);
  });
}
extern "C" void run_dequantize(int bits, long long grid, int block, const unsigned int* p,
                               float* o, long long n, float t) {
  mxkv_launch(grid, block, [=]() {
    if (bits == 2) mxkv_dequantize_2bit(p, o, n, t);
    else mxkv_dequantize_1bit(p, o, n, t);
  });
}
extern "C" void run_roundtrip(int bits, long long grid, int block, const float* g, float* r,
                              float* o, long long n, float t, int acc) {
  mxkv_launch(grid, block, [=]() {
    if (bits == 2) mxkv_roundtrip_2bit(g, r, o, n, t, acc);
    else mxkv_roundtrip_1bit(g, r, o, n, t, acc);
  });
}
"""

f32 = np.float32
P_F = ctypes.POINTER(ctypes.c_float)
P_U = ctypes.POINTER(ctypes.c_uint)
LL = ctypes.c_longlong


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    if CXX is None:
        pytest.skip("needs a C++ compiler (apt-get install g++) to build the CUDA source on CPU")
    d = tmp_path_factory.mktemp("cuda_on_cpu")
    src = d / "kernels.cpp"
    src.write_text(PRELUDE + ck.CUDA_SOURCE + HARNESS)
    lib = d / "kernels.so"
    res = subprocess.run([CXX, "-std=c++17", "-O1", "-ffp-contract=off", "-pthread", "-shared",
                          "-fPIC", "-o", str(lib), str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    so = ctypes.CDLL(str(lib))
    so.run_quantize.argtypes = [ctypes.c_int, LL, ctypes.c_int, P_F, P_F, P_U, LL, LL,
                                ctypes.c_float]
    so.run_dequantize.argtypes = [ctypes.c_int, LL, ctypes.c_int, P_U, P_F, LL, ctypes.c_float]
    so.run_roundtrip.argtypes = [ctypes.c_int, LL, ctypes.c_int, P_F, P_F, P_F, LL,
                                 ctypes.c_float, ctypes.c_int]
    return so


def _p(a, kind=P_F):
    return a.ctypes.data_as(kind)


def _inputs(n, t, seed):
    rng = np.random.default_rng(seed)
    grad = rng.uniform(-2, 2, n).astype(f32)
    res = rng.uniform(-0.5, 0.5, n).astype(f32)
    # values that land exactly on the thresholds (zero residual), and non-finite ones
    special = np.array([t, -t, 0, np.nan, np.inf, -np.inf, np.nextafter(t, f32(9))], f32)
    k = min(n, special.size)
    grad[:k] = special[:k]
    res[:k] = 0
    return grad, res


CASES = [("2bit", 0.5), ("2bit", 0.4), ("1bit", 0.0), ("1bit", 0.1), ("1bit", -0.3)]
SIZES = [1, 15, 16, 17, 31, 33, 100, 257, 1000, 4099]


@pytest.mark.parametrize("kind,t", CASES)
def test_quantize_kernel_source_matches_numpy_bit_for_bit(kernels, kind, t):
    gc = GradientCompression.create({"type": kind, "threshold": t})
    bits = 2 if kind == "2bit" else 1
    for n in SIZES:
        grad, res0 = _inputs(n, f32(t), n)
        r_np = res0.copy()
        packed_np = gc.quantize(grad, r_np)
        words = gc.packed_size(n)
        out = np.full(words, 0xDEADBEEF, np.uint32)  # stale contents must not survive
        r_cu = res0.copy()
        threads = ck.quantize_threads(words, bits)
        kernels.run_quantize(bits, ck.launch_grid(threads), ck.BLOCK, _p(grad), _p(r_cu),
                             _p(out, P_U), n, words, f32(t))
        assert out.tolist() == packed_np.view(np.uint32).tolist(), n
        assert np.array_equal(r_cu, r_np, equal_nan=True), n


@pytest.mark.parametrize("kind,t", CASES)
def test_dequantize_kernel_source_matches_numpy(kernels, kind, t):
    gc = GradientCompression.create({"type": kind, "threshold": t})
    bits = 2 if kind == "2bit" else 1
    rng = np.random.default_rng(3)
    for n in SIZES:
        packed = rng.integers(0, 2 ** 32, gc.packed_size(n), dtype=np.uint32)
        want = gc.dequantize(packed.view(f32), np.empty(n, f32))
        got = np.full(n, 7, f32)
        kernels.run_dequantize(bits, ck.launch_grid(n), ck.BLOCK, _p(packed, P_U), _p(got),
                               n, f32(t))
        assert np.array_equal(got, want), n


@pytest.mark.parametrize("kind,t", CASES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_roundtrip_kernel_source_matches_numpy(kernels, kind, t, accumulate):
    gc = GradientCompression.create({"type": kind, "threshold": t})
    bits = 2 if kind == "2bit" else 1
    for n in SIZES:
        grad, res0 = _inputs(n, f32(t), n + 1)
        base = np.linspace(-1, 1, n).astype(f32)
        r_np, o_np = res0.copy(), base.copy()
        gc.roundtrip(grad, r_np, o_np, accumulate=accumulate)
        r_cu, o_cu = res0.copy(), base.copy()
        kernels.run_roundtrip(bits, ck.launch_grid(n), ck.BLOCK, _p(grad), _p(r_cu), _p(o_cu),
                              n, f32(t), int(accumulate))
        assert np.array_equal(o_cu, o_np, equal_nan=True), n
        assert np.array_equal(r_cu, r_np, equal_nan=True), n


def test_the_emulated_shuffle_ors_each_word_of_a_warp(kernels):
    # 2 words of 2bit values in one warp: lanes 0-15 and 16-31 must not mix
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    grad = np.array([1.0] * 16 + [0.0] * 15 + [-1.0], f32)
    out = np.zeros(2, np.uint32)
    res = np.zeros(32, f32)
    kernels.run_quantize(2, 1, ck.BLOCK, _p(grad), _p(res), _p(out, P_U), 32, 2, f32(0.5))
    assert out.tolist() == [0xFFFFFFFF, 0x02000000]
    assert out.tolist() == gc.quantize(grad, np.zeros(32, f32)).view(np.uint32).tolist()


def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
    except Exception:  # absent package or library: the test says so
        return None
    return nvrtc


@pytest.mark.skipif(_nvrtc() is None, reason="needs cupy-cuda12x and nvidia-cuda-nvrtc-cu12 "
                                             "to compile CUDA (no GPU needed)")
@pytest.mark.parametrize("arch", ["compute_70", "compute_90"])
def test_cuda_source_compiles_with_nvrtc(arch):
    nvrtc = _nvrtc()
    prog = nvrtc.createProgram(ck.CUDA_SOURCE, "mxkv_compression.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch={arch}", "--std=c++11"])
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    for name in ck.KERNEL_NAMES:
        assert f".entry {name}(" in text, name
