"""Gradient compression: MXNet's 2bit layout bit for bit, error feedback, checks.

Hand-computed words are written as little-endian uint32 hex: value ``j`` of a
2bit word sits in byte ``j // 4`` at bits ``7-2*(j%4)`` and ``6-2*(j%4)``
(``11`` = +threshold, ``10`` = -threshold); value ``j`` of a 1bit word sits
in byte ``j // 8`` at bit ``7 - j%8``. See docs/compression.md.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mxkv.base import MXNetError
from mxkv.kvstore import compression_kernels
from mxkv.kvstore.compression import (
    GradientCompression,
    OneBitCompression,
    TwoBitCompression,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "compression.json")
f32 = np.float32


def words(packed):
    return [int(w) for w in np.asarray(packed).view(np.uint32)]


# ---------------------------------------------------------------------------
# independent references: MXNet's kernels, one element at a time
# ---------------------------------------------------------------------------

def ref_quantize_2bit(grad, residual, threshold):
    t = f32(threshold)
    n = grad.size
    packed = bytearray(4 * (-(-n // 16)))
    for i in range(n):
        residual[i] = f32(residual[i] + grad[i])
        if residual[i] >= t:
            packed[i // 4] |= 0b11 << (6 - 2 * (i % 4))
            residual[i] = f32(residual[i] - t)
        elif residual[i] <= -t:
            packed[i // 4] |= 0b10 << (6 - 2 * (i % 4))
            residual[i] = f32(residual[i] - (-t))
    return np.frombuffer(bytes(packed), np.float32)


def ref_quantize_1bit(grad, residual, threshold):
    t = f32(threshold)
    n = grad.size
    packed = bytearray(4 * (-(-n // 32)))
    for i in range(n):
        residual[i] = f32(residual[i] + grad[i])
        if residual[i] > t:
            packed[i // 8] |= 1 << (7 - i % 8)
            residual[i] = f32(residual[i] - f32(1))
        else:
            residual[i] = f32(residual[i] + f32(1))
    return np.frombuffer(bytes(packed), np.float32)


# ---------------------------------------------------------------------------
# create / validation
# ---------------------------------------------------------------------------

def test_create_2bit_with_threshold():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    assert isinstance(gc, TwoBitCompression)
    assert gc.type == "2bit" and gc.threshold == 0.5
    assert gc.get_params() == {"type": "2bit", "threshold": 0.5}
    assert gc.compression_factor() == 16


def test_create_accepts_strings_as_mxnet_passes_them_to_cpp():
    gc = GradientCompression.create({"type": "2bit", "threshold": "0.25"})
    assert gc.threshold == 0.25


def test_create_default_thresholds():
    assert GradientCompression.create({"type": "2bit"}).threshold == 0.5
    assert GradientCompression.create({"type": "1bit"}).threshold == 0.0


def test_create_ignores_unknown_keys_like_mxnet():
    gc = GradientCompression.create({"type": "2bit", "threshold": 1, "bogus": "x"})
    assert gc.get_params() == {"type": "2bit", "threshold": 1.0}


def test_create_1bit_allows_any_threshold():
    gc = GradientCompression.create({"type": "1bit", "threshold": -0.25})
    assert isinstance(gc, OneBitCompression)
    assert gc.compression_factor() == 32 and gc.threshold == -0.25


def test_get_params_round_trips_through_create():
    gc = GradientCompression.create({"type": "2bit", "threshold": "0.3"})
    assert GradientCompression.create(gc.get_params()) == gc


@pytest.mark.parametrize("params, message", [
    ({"type": "2bit", "threshold": 0},
     "Check failed: params.threshold > 0 (0 vs. 0) : threshold must be greater than 0"),
    ({"type": "2bit", "threshold": -0.5}, "(-0.5 vs. 0) : threshold must be greater than 0"),
    ({"type": "2bit", "threshold": "nan"}, "(nan vs. 0) : threshold must be greater than 0"),
    ({"type": "2bit", "threshold": 1e-50}, "threshold must be greater than 0"),
    ({"type": "2bit", "threshold": "abc"},
     "Invalid Parameter format for threshold expect float but value='abc'"),
    ({"type": "3bit"}, "Unknown type for gradient compression 3bit (known types: '1bit', '2bit')"),
    ({"type": "foo", "threshold": -1}, "(-1 vs. 0) : threshold must be greater than 0"),
    ({"threshold": 0.5}, "Required parameter type of string is not presented"),
    (["2bit"], "unexpected type for param_dict: <class 'list'>"),
    ("2bit", "unexpected type for param_dict: <class 'str'>"),
    ({"type": "1bit", "threshold": "nan"}, "threshold must be a number"),
])
def test_create_rejects(params, message):
    with pytest.raises(MXNetError) as info:
        GradientCompression.create(params)
    assert message in str(info.value)


def test_packed_size():
    two = GradientCompression.create({"type": "2bit"})
    one = GradientCompression.create({"type": "1bit"})
    assert [two.packed_size(n) for n in (0, 1, 15, 16, 17, 32, 33)] == [0, 1, 1, 1, 2, 2, 3]
    assert [one.packed_size(n) for n in (0, 1, 31, 32, 33, 64, 65)] == [0, 1, 1, 1, 2, 2, 3]


# ---------------------------------------------------------------------------
# 2bit, bit for bit
# ---------------------------------------------------------------------------

# value: grad, residual before  -> grad+residual, code, residual after  (threshold 0.5)
TWO_BIT_CASE = [
    (0.5, 0.0),       # 0.5    >= t      11   0
    (-0.5, 0.0),      # -0.5   <= -t     10   0
    (0.25, 0.25),     # 0.5    >= t      11   0
    (0.25, 0.0),      # 0.25             00   0.25
    (-0.25, -0.25),   # -0.5   <= -t     10   0
    (0.0, 0.0),       # 0                00   0
    (1.0, 0.0),       # 1.0    one t out 11   0.5
    (-2.0, 0.0),      # -2.0             10   -1.5
    (0.375, 0.125),   # 0.5              11   0
    (0.125, 0.0),     # 0.125            00   0.125
    (-0.125, -0.25),  # -0.375           00   -0.375
    (0.75, -0.25),    # 0.5              11   0
    (0.0, 0.5),       # residual alone   11   0
    (0.0, -0.5),      #                  10   0
    (0.5, -1.0),      # -0.5             10   0
    (float(np.nextafter(f32(0.5), f32(0))), 0.0),   # just under t: 00, kept
]
# codes 11 10 11 00 | 10 00 11 10 | 11 00 00 11 | 11 10 10 00
#       byte0 0xEC    byte1 0x8E    byte2 0xC3    byte3 0xE8  -> uint32 0xE8C38EEC
TWO_BIT_WORD = 0xE8C38EEC
TWO_BIT_RESIDUAL = [0, 0, 0, 0.25, 0, 0, 0.5, -1.5, 0, 0.125, -0.375, 0, 0, 0, 0,
                    float(np.nextafter(f32(0.5), f32(0)))]
TWO_BIT_VALUES = [0.5, -0.5, 0.5, 0, -0.5, 0, 0.5, -0.5, 0.5, 0, 0, 0.5, 0.5, -0.5, -0.5, 0]


def test_2bit_quantize_hand_computed_word():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    grad = np.array([g for g, _ in TWO_BIT_CASE], f32)
    residual = np.array([r for _, r in TWO_BIT_CASE], f32)
    packed = gc.quantize(grad, residual)
    assert packed.dtype == np.float32 and packed.shape == (1,)
    assert hex(words(packed)[0]) == hex(TWO_BIT_WORD)
    assert residual.tolist() == TWO_BIT_RESIDUAL


def test_2bit_dequantize_hand_computed_word():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    out = np.full(16, 7.0, f32)
    gc.dequantize(np.array([TWO_BIT_WORD], np.uint32).view(f32), out)
    assert out.tolist() == TWO_BIT_VALUES


def test_2bit_dequantize_hand_built_words_and_code_01():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.25})
    # word 0: byte0 0xFF = 11 11 11 11, byte1 0x40 = 01 00 00 00 (01 decodes to 0),
    #         byte2 0xC0 = 11 00 00 00, byte3 0x03 = 00 00 00 11
    # word 1: byte0 0xAA = 10 10 10 10; only 4 of its 16 slots are values
    packed = np.array([0x03C040FF, 0x000000AA], np.uint32).view(f32)
    out = gc.dequantize(packed, np.empty((4, 5), f32))
    assert out.ravel().tolist() == [0.25] * 4 + [0] * 4 + [0.25, 0, 0, 0] + [0, 0, 0, 0.25] \
        + [-0.25] * 4
    assert out.shape == (4, 5)


def test_2bit_length_not_multiple_of_16_pads_with_zero_bits():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    grad = np.full(20, 0.75, f32)
    out = np.array([0xFFFFFFFF, 0xFFFFFFFF], np.uint32).view(f32)   # stale contents
    gc.quantize(grad, np.zeros(20, f32), out)
    assert [hex(w) for w in words(out)] == ["0xffffffff", "0xff"]


def test_2bit_exactly_at_threshold_is_sent_just_inside_is_kept():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.3})
    t = f32(0.3)
    inside = np.nextafter(t, f32(0))
    grad = np.array([t, -t, inside, -inside, 0.0, -0.0], f32)
    residual = np.zeros(6, f32)
    packed = gc.quantize(grad, residual)
    # 11 10 00 00 | 00 00 .. -> byte0 0xE0
    assert hex(words(packed)[0]) == "0xe0"
    assert residual.tolist() == [0, 0, inside, -inside, 0, 0]
    assert gc.dequantize(packed, np.empty(6, f32)).tolist() == [t, -t, 0, 0, 0, 0]


def test_2bit_nan_is_sent_as_zero_and_stays_in_residual():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    residual = np.zeros(2, f32)
    packed = gc.quantize(np.array([np.nan, 1.0], f32), residual)
    assert hex(words(packed)[0]) == "0x30"          # 00 11 00 00
    assert np.isnan(residual[0]) and residual[1] == 0.5


def test_2bit_error_feedback_accumulates_until_threshold_is_crossed():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    grad = np.array([0.125, -0.125, 0.2], f32)
    residual = np.zeros(3, f32)
    sent = []
    for _ in range(4):
        sent.append(gc.roundtrip(grad, residual).tolist())
    assert sent == [[0, 0, 0], [0, 0, 0], [0, 0, 0.5], [0.5, -0.5, 0]]
    # 0.125 * 4 = 0.5 exactly: crossed on the 4th push, nothing left over
    assert residual[:2].tolist() == [0, 0]
    # 0.2f added thrice is 0.6f, minus 0.5, plus 0.2f again (float32 arithmetic)
    assert residual[2] == f32(f32(f32(f32(0.2) * 2) + f32(0.2)) - f32(0.5)) + f32(0.2)


def test_2bit_matches_reference_kernel_on_random_data_across_chunks(monkeypatch):
    monkeypatch.setattr(compression_kernels, "CHUNK", 64)   # many chunks, ragged tail
    rng = np.random.default_rng(7)
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.4})
    for n in (1, 3, 15, 16, 17, 64, 100, 257):
        grad = rng.uniform(-1, 1, n).astype(f32)
        res0 = rng.uniform(-0.5, 0.5, n).astype(f32)
        r_ref, r_got = res0.copy(), res0.copy()
        expected = ref_quantize_2bit(grad, r_ref, 0.4)
        got = gc.quantize(grad, r_got)
        assert words(got) == words(expected), n
        assert np.array_equal(r_got, r_ref), n


# ---------------------------------------------------------------------------
# 1bit, bit for bit
# ---------------------------------------------------------------------------

def test_1bit_quantize_hand_computed_words():
    gc = GradientCompression.create({"type": "1bit", "threshold": 0})
    v0 = [1.0, -1.0, 0.0, 0.5, -0.5, 2.0, 1e-8, -0.0]    # > 0: 1 0 0 1 0 1 1 0 = 0x96
    v1 = [0.25] * 8                                      # all 1            = 0xFF
    v2 = [0.0, -3.0] * 4                                 # none             = 0x00
    v3 = [1.0, -1.0] * 4                                 # 1 0 1 0 1 0 1 0  = 0xAA
    tail = [3.0, 0.125, -0.125]                          # 1 1 0            = 0xC0
    grad = np.array(v0 + v1 + v2 + v3 + tail, f32)
    residual = np.zeros(grad.size, f32)
    packed = gc.quantize(grad, residual)
    assert [hex(w) for w in words(packed)] == ["0xaa00ff96", "0xc0"]
    # residual keeps v - 1 where the bit is 1, v + 1 where it is 0
    assert residual[:8].tolist() == [0, 0, 1, -0.5, 0.5, 1, -1, 1]
    assert residual[-3:].tolist() == [2, -0.875, 0.875]


def test_1bit_threshold_is_strict_and_dequantizes_to_plus_minus_one():
    gc = GradientCompression.create({"type": "1bit", "threshold": 0.5})
    residual = np.zeros(3, f32)
    packed = gc.quantize(np.array([0.5, 0.75, -4.0], f32), residual)
    assert hex(words(packed)[0]) == "0x40"                      # 0 1 0
    assert residual.tolist() == [1.5, -0.25, -3.0]
    assert gc.dequantize(packed, np.empty(3, f32)).tolist() == [-1, 1, -1]


def test_1bit_matches_reference_kernel_on_random_data_across_chunks(monkeypatch):
    monkeypatch.setattr(compression_kernels, "CHUNK", 64)
    rng = np.random.default_rng(11)
    gc = GradientCompression.create({"type": "1bit", "threshold": 0.1})
    for n in (1, 7, 31, 32, 33, 64, 65, 200):
        grad = rng.uniform(-1, 1, n).astype(f32)
        res0 = rng.uniform(-0.5, 0.5, n).astype(f32)
        r_ref, r_got = res0.copy(), res0.copy()
        expected = ref_quantize_1bit(grad, r_ref, 0.1)
        got = gc.quantize(grad, r_got)
        assert words(got) == words(expected), n
        assert np.array_equal(r_got, r_ref), n


# ---------------------------------------------------------------------------
# roundtrip == quantize then dequantize, for both types
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("params", [{"type": "2bit", "threshold": 0.3},
                                    {"type": "1bit", "threshold": 0.0}])
def test_roundtrip_equals_quantize_then_dequantize(params, monkeypatch):
    monkeypatch.setattr(compression_kernels, "CHUNK", 128)
    gc = GradientCompression.create(params)
    rng = np.random.default_rng(3)
    grad = rng.uniform(-1, 1, (7, 73)).astype(f32)
    res0 = rng.uniform(-0.3, 0.3, grad.shape).astype(f32)
    r_a, r_b, r_c = res0.copy(), res0.copy(), res0.copy()
    expected = gc.dequantize(gc.quantize(grad, r_a), np.empty(grad.shape, f32))
    got = gc.roundtrip(grad, r_b)
    assert got.shape == grad.shape
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    assert np.array_equal(r_a, r_b)
    merged = np.full(grad.shape, 2.0, f32)
    gc.roundtrip(grad, r_c, merged, accumulate=True)
    assert np.array_equal(merged, f32(2.0) + expected)


def test_non_contiguous_grad_is_read_not_written():
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    base = np.array([[0.75, 9.0], [-0.75, 9.0]], f32)
    residual = np.zeros(2, f32)
    out = gc.roundtrip(base[:, 0], residual)
    assert out.tolist() == [0.5, -0.5] and base[0, 1] == 9.0


def test_empty_arrays():
    for typ in ("2bit", "1bit"):
        gc = GradientCompression.create({"type": typ})
        packed = gc.quantize(np.zeros(0, f32), np.zeros(0, f32))
        assert packed.size == 0
        assert gc.dequantize(packed, np.zeros(0, f32)).size == 0


# ---------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------

def test_rejects_non_float32():
    gc = GradientCompression.create({"type": "2bit"})
    with pytest.raises(MXNetError, match="float32 only; grad is float16"):
        gc.quantize(np.zeros(4, np.float16), np.zeros(4, f32))


def test_rejects_residual_of_wrong_size_or_layout():
    gc = GradientCompression.create({"type": "2bit"})
    with pytest.raises(MXNetError, match="residual has 3 elements, expected 4"):
        gc.quantize(np.zeros(4, f32), np.zeros(3, f32))
    with pytest.raises(MXNetError, match="residual must be C-contiguous"):
        gc.quantize(np.zeros(4, f32), np.zeros(8, f32)[::2])


def test_rejects_packed_of_wrong_size():
    gc = GradientCompression.create({"type": "2bit"})
    with pytest.raises(MXNetError, match="17 values need 2 packed words, got 1"):
        gc.dequantize(np.zeros(1, f32), np.zeros(17, f32))


def test_accumulate_needs_out():
    gc = GradientCompression.create({"type": "2bit"})
    with pytest.raises(MXNetError, match="needs an `out`"):
        gc.roundtrip(np.zeros(4, f32), np.zeros(4, f32), accumulate=True)


# ---------------------------------------------------------------------------
# equivalence with real MXNet 1.9.1 (tools/golden_compression.py)
# ---------------------------------------------------------------------------

with open(GOLDEN) as _fh:
    _GOLDEN = json.load(_fh)


@pytest.mark.parametrize("scenario", _GOLDEN["scenarios"], ids=lambda s: s["name"])
def test_matches_mxnet_device_store_pushes(scenario):
    """Replay CommDevice::ReduceCompressed: per-device residual, dequantize, sum."""
    gc = GradientCompression.create(scenario["params"])
    shape = tuple(scenario["shape"])
    residuals = [np.zeros(shape, f32) for _ in range(scenario["devices"])]
    for step, (grads, pulled) in enumerate(zip(scenario["pushes"], scenario["pulled"])):
        merged = np.empty(shape, f32)
        for dev, g in enumerate(grads):
            grad = np.array(g, f32).reshape(shape)
            gc.roundtrip(grad, residuals[dev], merged, accumulate=dev > 0)
        expected = np.array(pulled, f32).reshape(shape)
        assert np.array_equal(merged, expected), (scenario["name"], step)


@pytest.mark.parametrize("case", sorted(k for k in _GOLDEN["errors"] if k != "1bit"))
def test_error_messages_carry_mxnets(case):
    rec = _GOLDEN["errors"][case]
    params = eval(rec["params"], {"nan": float("nan")})   # repr of a dict or a list
    with pytest.raises(MXNetError) as info:
        GradientCompression.create(params)
    assert rec["message"] in str(info.value)


def test_mxnet_1_9_has_no_1bit_but_mxkv_does():
    assert "Unknown type for gradient compression 1bit" in _GOLDEN["errors"]["1bit"]["message"]
    assert GradientCompression.create({"type": "1bit"}).type == "1bit"


# ---------------------------------------------------------------------------
# cupy: the fused CUDA kernels agree with numpy bit for bit (GPU machines only)
# ---------------------------------------------------------------------------

@pytest.mark.requires_gpu
@pytest.mark.parametrize("params", [{"type": "2bit", "threshold": 0.4},
                                    {"type": "1bit", "threshold": 0.1}])
def test_cupy_kernels_match_numpy(params):
    import cupy
    gc = GradientCompression.create(params)
    rng = np.random.default_rng(5)
    for n in (1, 17, 33, 1000, 100_003):
        grad = rng.uniform(-1, 1, n).astype(f32)
        res0 = rng.uniform(-0.5, 0.5, n).astype(f32)
        r_np, r_cp = res0.copy(), cupy.asarray(res0)
        p_np = gc.quantize(grad, r_np)
        p_cp = gc.quantize(cupy.asarray(grad), r_cp)
        assert words(p_np) == words(cupy.asnumpy(p_cp)), n
        assert np.array_equal(r_np, cupy.asnumpy(r_cp)), n
        d_np = gc.dequantize(p_np, np.empty(n, f32))
        d_cp = gc.dequantize(p_cp, cupy.empty(n, cupy.float32))
        assert np.array_equal(d_np, cupy.asnumpy(d_cp)), n
        r2_np, r2_cp = res0.copy(), cupy.asarray(res0)
        o_np = gc.roundtrip(grad, r2_np)
        o_cp = cupy.ones(n, cupy.float32)
        gc.roundtrip(cupy.asarray(grad), r2_cp, o_cp, accumulate=True)
        assert np.array_equal(o_np + f32(1), cupy.asnumpy(o_cp)), n
        assert np.array_equal(r2_np, cupy.asnumpy(r2_cp)), n
