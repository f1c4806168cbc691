"""Record real MXNet 1.9.1 results for the layer operators: tests/golden/nn_ops.json.gz.

Each case is one imperative ``mx.nd.<op>(*inputs, **params)`` call, as
``autograd`` leaves it outside a recording scope (inference: BatchNorm with the
moving statistics, Dropout in ``mode='training'`` the identity); the
``train`` cases are recorded inside ``autograd.record(train_mode=True)`` and
replayed on the kernel with ``training=True``. Inputs are
described, not stored: ``{"rand": [seed, shape, dtype, kind]}`` is
``inputs.make`` below (numpy's legacy RandomState, whose streams numpy keeps
fixed across versions), ``{"values": [...], "dtype": d}`` an explicit array.
Outputs are stored as raw little-endian bytes (base64), one per output (a
list for BatchNorm/LayerNorm/GroupNorm with ``output_mean_var``), or the last
line of MXNet's error for the bad-shape cases (``*_bad_*``), which mxkv must
refuse too. ``random`` holds calls of ``mx.nd.random.*``, ``random_*`` and
``sample_*`` with what is fixed: the output's shape and dtype, or MXNet's error.

Replayed through ``mx.nd`` by ``tests/test_nn_ops_golden.py``.

Regenerate (needs the real MXNet, not mxkv)::

    PY=$(bash tools/mxnet-venv.sh) && "$PY" tools/golden_nn_ops.py
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import sys

import mxnet as mx
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from nn_golden_inputs import make  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "nn_ops.json.gz")
F, D, H = "float32", "float64", "float16"
_seed = [0]


def r(shape, dtype=F, kind="normal"):
    """A random input of ``shape`` (a fresh seed per input)."""
    _seed[0] += 1
    return {"rand": [_seed[0], list(shape), dtype, kind]}


def v(values, dtype=F):
    return {"values": np.asarray(values).ravel().tolist(), "shape": list(np.shape(values)),
            "dtype": dtype}


CASES: list = []
TRAIN: list = []  # names of the cases recorded inside autograd.record(train_mode=True)


def case(name, op, inputs, **params):
    CASES.append((name, op, inputs, params))


def _conv_cases():
    for dt in (F, D):
        for nd, (shape, k, s, d, p, g) in enumerate([
                ((2, 4, 9), (3,), (2,), (1,), (1,), 2),
                ((2, 4, 7, 6), (3, 2), (2, 1), (1, 2), (1, 0), 1),
                ((1, 4, 5, 6), (3, 3), (1, 1), (1, 1), (1, 1), 4),
                ((1, 2, 4, 5, 6), (2, 3, 2), (1, 2, 1), (2, 1, 1), (1, 1, 0), 2)]):
            c, f = shape[1], 6 if g != 4 else 8
            for nb in (False, True):
                ins = [r(shape, dt), r((f, c // g) + k, dt)] + ([] if nb else [r((f,), dt)])
                case(f"conv{len(k)}d_{nd}_{dt}_nobias{int(nb)}", "Convolution", ins,
                     kernel=k, stride=s, dilate=d, pad=p, num_filter=f, num_group=g,
                     no_bias=nb)
            full = tuple(s[i] * (shape[2 + i] - 1) + k[i] for i in range(len(k)))
            for tag, extra in (("", {}), ("_adj", {"adj": tuple(min(1, x - 1) for x in s)}),
                               ("_target", {"target_shape": tuple(x - 1 for x in full)})):
                if dt == D and len(k) == 3:
                    continue  # (MXNet's CPU Deconvolution is 1-D/2-D only in float64)
                dd = (1,) * len(k)  # (MXNet's CPU Deconvolution refuses dilation)
                case(f"deconv{len(k)}d_{nd}_{dt}{tag}", "Deconvolution",
                     [r(shape, dt), r((c, f // g) + k, dt), r((f,), dt)],
                     kernel=k, stride=s, dilate=dd, pad=p, num_filter=f, num_group=g,
                     no_bias=False, **extra)
    case("conv_1x1", "Convolution", [r((2, 3, 4, 4)), r((5, 3, 1, 1)), r((5,))],
         kernel=(1, 1), num_filter=5)
    case("conv_bad_weight_shape", "Convolution", [r((2, 3, 5, 5)), r((4, 2, 3, 3)), r((4,))],
         kernel=(3, 3), num_filter=4)
    case("conv_bad_data_rank", "Convolution", [r((3, 5, 5)), r((4, 3, 3, 3)), r((4,))],
         kernel=(3, 3), num_filter=4)
    for dt in (F, D):
        for shape, k, s, d, p in (((2, 2, 4, 5), (2, 3), (1, 2), (1, 1), (1, 0)),
                                  ((1, 3, 6, 6), (3, 3), (2, 2), (1, 1), (1, 1)),
                                  ((1, 2, 7, 6), (2, 2), (1, 1), (2, 2), (0, 1))):
            case(f"im2col_{k}_{dt}", "im2col", [r(shape, dt)], kernel=k, stride=s, dilate=d,
                 pad=p)
            out = [(shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
                   for i in range(2)]
            case(f"col2im_{k}_{dt}", "col2im",
                 [r((shape[0], shape[1] * k[0] * k[1], out[0] * out[1]), dt)],
                 output_size=shape[2:], kernel=k, stride=s, dilate=d, pad=p)
    case("im2col_bad_kernel_too_big", "im2col", [r((1, 1, 2, 2))], kernel=(3, 3))
    case("col2im_bad_columns", "col2im", [r((1, 5, 4))], output_size=(3, 3), kernel=(2, 2))
    case("convolution_v1", "Convolution_v1", [r((2, 4, 6, 6)), r((6, 2, 3, 3)), r((6,))],
         kernel=(3, 3), pad=(1, 1), stride=(2, 1), num_filter=6, num_group=2)
    case("convolution_v1_bad_weight_shape", "Convolution_v1",
         [r((2, 4, 6, 6)), r((6, 3, 3, 3)), r((6,))], kernel=(3, 3), num_filter=6)
    case("deconv_default_no_bias", "Deconvolution", [r((1, 2, 3, 3)), r((2, 3, 2, 2))],
         kernel=(2, 2), stride=(2, 2), num_filter=3)
    case("deconv_bad_weight_shape", "Deconvolution", [r((1, 2, 3, 3)), r((3, 3, 2, 2))],
         kernel=(2, 2), num_filter=3)


def _pool_cases():
    for dt in (F, D):
        for shape, k, s, p in (((2, 3, 9), (3,), (2,), (1,)),
                               ((2, 3, 7, 8), (3, 2), (2, 2), (1, 0)),
                               ((1, 2, 5, 6, 7), (2, 3, 2), (1, 2, 2), (1, 1, 0))):
            for pt in ("max", "avg", "sum", "lp"):
                for conv in ("valid", "full"):
                    for cip in ((None, False) if pt == "avg" else (None,)):
                        extra = {"p_value": 2} if pt == "lp" else {}
                        if cip is not None:
                            extra["count_include_pad"] = cip
                        case(f"pool{len(k)}d_{pt}_{conv}_{dt}_cip{cip}", "Pooling",
                             [r(shape, dt)], kernel=k, stride=s, pad=p, pool_type=pt,
                             pooling_convention=conv, **extra)
                extra = {"p_value": 3} if pt == "lp" else {}
                case(f"pool{len(k)}d_{pt}_global_{dt}", "Pooling", [r(shape, dt)],
                     global_pool=True, pool_type=pt, **extra)
    for pt in ("max", "avg", "sum"):
        case(f"pooling_v1_{pt}", "Pooling_v1", [r((2, 3, 7, 6))], kernel=(3, 2), stride=(2, 2),
             pad=(1, 0), pool_type=pt, pooling_convention="full")
    case("pooling_v1_bad_data_rank", "Pooling_v1", [r((4, 4))], kernel=(2, 2))
    case("pooling_v1_global", "Pooling_v1", [r((2, 3, 7, 6))], global_pool=True,
         pool_type="avg")
    case("pool_default_stride", "Pooling", [r((1, 1, 5, 5))], kernel=(2, 2), pool_type="avg")
    case("pool_bad_kernel_too_big", "Pooling", [r((1, 1, 3, 3))], kernel=(5, 5))
    case("pool_bad_data_rank", "Pooling", [r((4, 4))], kernel=(2, 2))


def _dense_cases():
    for dt in (F, D):
        case(f"fc_{dt}", "FullyConnected", [r((3, 4, 5), dt), r((6, 20), dt), r((6,), dt)],
             num_hidden=6)
        case(f"fc_noflatten_nobias_{dt}", "FullyConnected", [r((3, 4, 5), dt), r((6, 5), dt)],
             num_hidden=6, no_bias=True, flatten=False)
    case("fc_bad_weight_shape", "FullyConnected", [r((3, 5)), r((6, 4)), r((6,))],
         num_hidden=6)
    case("fc_bad_num_hidden", "FullyConnected", [r((3, 5)), r((6, 5)), r((6,))],
         num_hidden=7)
    for dt in (F, D, H):
        for a in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
            case(f"act_{a}_{dt}", "Activation", [r((3, 4, 5), dt, "wide")], act_type=a)
        for a in ("leaky", "elu", "selu", "gelu", "rrelu"):
            case(f"leaky_{a}_{dt}", "LeakyReLU", [r((3, 4, 5), dt, "wide")], act_type=a,
                 slope=0.3)
        case(f"leaky_prelu_{dt}", "LeakyReLU", [r((3, 4, 5), dt, "wide"), r((4,), dt, "pos")],
             act_type="prelu")
    case("act_bad_type", "Activation", [r((2, 3))], act_type="swish")
    case("prelu_bad_gamma_shape", "LeakyReLU", [r((2, 3, 4)), r((5,))], act_type="prelu")
    for dt in (F, D, H):
        case(f"embedding_{dt}", "Embedding", [v([[0, 3, 9], [2, 1, 7]], F), r((10, 4), dt)],
             input_dim=10, output_dim=4, dtype=dt)
    case("embedding_int_indices", "Embedding", [v([1, 0, 2], "int32"), r((3, 2))],
         input_dim=3, output_dim=2)
    case("embedding_bad_weight_shape", "Embedding", [v([0, 1], F), r((5, 4))],
         input_dim=4, output_dim=4)
    case("dropout_inference_identity", "Dropout", [r((4, 5))], p=0.3)
    case("dropout_p0_always", "Dropout", [r((4, 5))], p=0.0, mode="always")
    for f in ("softmax", "log_softmax", "softmin"):
        for dt in (F, D):
            for ax in (-1, 0, 1):
                for t in (None, 2.0):
                    extra = {} if t is None else {"temperature": t}
                    case(f"{f}_{dt}_ax{ax}_t{t}", f, [r((3, 4, 5), dt, "wide")], axis=ax,
                         **extra)
        case(f"{f}_f16", f, [r((3, 7), H)])
        case(f"{f}_f16_to_f32", f, [r((3, 7), H)], dtype=F)
        case(f"{f}_f32_to_f64", f, [r((3, 7))], dtype=D)
        case(f"{f}_bad_axis", f, [r((3, 4))], axis=2)
    case("softmax_length", "softmax", [r((3, 4, 5)), v([[1, 3, 5, 2], [2, 2, 4, 5],
                                                        [5, 1, 1, 1]], "int32")],
         axis=-1, use_length=True)
    case("softmax_length_axis1", "softmax", [r((3, 4, 5)), v([[1, 3, 4, 2, 2]] * 3, "int32")],
         axis=1, use_length=True)
    case("softmax_cross_entropy", "softmax_cross_entropy", [r((4, 5), F, "wide"),
                                                             v([0, 4, 2, 2], F)])
    case("softmax_cross_entropy_f64", "softmax_cross_entropy", [r((3, 2), D), v([1, 0, 1], D)])
    case("softmax_cross_entropy_bad_label_shape", "softmax_cross_entropy",
         [r((4, 5)), v([0, 1], F)])
    for m in ("instance", "channel"):
        case(f"softmax_activation_{m}", "SoftmaxActivation", [r((3, 4, 5))], mode=m)


def _norm_cases():
    for dt in (F, D):
        x = (4, 3, 5, 2)
        for fg in (True, False):
            for omv in (False, True):
                for ugs in (False, True):
                    case(f"batchnorm_{dt}_fix{int(fg)}_omv{int(omv)}_ugs{int(ugs)}",
                         "BatchNorm", [r(x, dt), r((3,), dt, "pos"), r((3,), dt),
                                       r((3,), dt), r((3,), dt, "pos")],
                         fix_gamma=fg, output_mean_var=omv, use_global_stats=ugs)
        for fg in (True, False):  # (training mode: kernel-level, mxkv has no autograd)
            TRAIN.append(f"batchnorm_train_{dt}_fix{int(fg)}")
            case(TRAIN[-1], "BatchNorm", [r(x, dt), r((3,), dt, "pos"), r((3,), dt),
                                          r((3,), dt), r((3,), dt, "pos")],
                 fix_gamma=fg, output_mean_var=True)
        case(f"batchnorm_axis_last_{dt}", "BatchNorm",
             [r((4, 5, 3), dt), r((3,), dt, "pos"), r((3,), dt), r((3,), dt),
              r((3,), dt, "pos")], axis=-1, fix_gamma=False, eps=0.01)
        for omv in (False, True):
            case(f"layernorm_{dt}_omv{int(omv)}", "LayerNorm",
                 [r((4, 3, 5), dt), r((5,), dt, "pos"), r((5,), dt)], output_mean_var=omv)
            case(f"layernorm_axis1_{dt}_omv{int(omv)}", "LayerNorm",
                 [r((4, 3, 5), dt), r((3,), dt, "pos"), r((3,), dt)], axis=1,
                 output_mean_var=omv)
            for ng in (1, 2, 3):
                case(f"groupnorm_{ng}_{dt}_omv{int(omv)}", "GroupNorm",
                     [r((2, 6, 3, 2), dt), r((ng,), dt, "pos"), r((ng,), dt)],
                     num_groups=ng, output_mean_var=omv)
        for m in ("instance", "channel", "spatial"):
            case(f"l2norm_{m}_{dt}", "L2Normalization", [r((2, 3, 4, 5), dt)], mode=m)
        if dt == D:
            continue  # (MXNet's CPU InstanceNorm and LRN take float32 only)
        case(f"instancenorm_{dt}", "InstanceNorm",
             [r((2, 3, 4, 5), dt), r((3,), dt, "pos"), r((3,), dt)], eps=0.01)
        for ns in (1, 3, 5):
            case(f"lrn_{ns}_{dt}", "LRN", [r((2, 6, 3, 3), dt)], nsize=ns, alpha=0.1)
    case("batchnorm_bad_axis", "BatchNorm",
         [r((2, 3, 4)), r((3,)), r((3,)), r((3,)), r((3,), F, "pos")], axis=3)
    case("layernorm_bad_gamma_shape", "LayerNorm", [r((2, 3)), r((2,)), r((3,))])
    case("groupnorm_bad_groups", "GroupNorm", [r((2, 5, 3)), r((2,)), r((2,))], num_groups=2)
    case("instancenorm_bad_gamma_shape", "InstanceNorm", [r((2, 3, 4)), r((2,)), r((3,))])


def _seq_cases():
    x = (2, 3, 4, 5)
    for s in (1, 2, 3):
        case(f"upsampling_nearest_{s}", "UpSampling", [r(x)], scale=s, sample_type="nearest")
        for m in ("concat", "sum"):
            case(f"upsampling_nearest_two_{m}_{s}", "UpSampling",
                 [r(x), r((2, 3 if m == "sum" else 2, 4, 5))], scale=s,
                 sample_type="nearest", multi_input_mode=m, num_args=2)
        k = 2 * s - s % 2
        case(f"upsampling_bilinear_{s}", "UpSampling", [r(x), r((3, 1, k, k))], scale=s,
             sample_type="bilinear", num_filter=3, num_args=2)
    case("crop_offset", "Crop", [r(x)], num_args=1, offset=(1, 2), h_w=(2, 3))
    case("crop_like_center", "Crop", [r((2, 3, 7, 8)), r((1, 1, 4, 5))], num_args=2,
         center_crop=True)
    case("crop_bad_window", "Crop", [r(x)], num_args=1, offset=(3, 0), h_w=(2, 3))
    case("crop_like", "Crop", [r((2, 3, 7, 8)), r((1, 1, 4, 5))], num_args=2, offset=(2, 1))
    for m in ("constant", "edge", "reflect"):
        case(f"pad4_{m}", "Pad", [r(x)], mode=m, pad_width=(0, 0, 0, 0, 1, 2, 3, 1),
             constant_value=2.5)
        case(f"pad5_{m}", "Pad", [r((1, 2, 3, 4, 3))], mode=m,
             pad_width=(0, 0, 0, 0, 1, 2, 2, 1, 0, 1))
    case("pad_bad_batch_axis", "Pad", [r(x)], mode="constant",
         pad_width=(1, 0, 0, 0, 1, 1, 1, 1))
    for op in ("SequenceMask", "SequenceLast", "SequenceReverse"):
        extra = {"value": -1.0} if op == "SequenceMask" else {}
        case(f"{op}_plain", op, [r((5, 3, 2))], **extra)
        case(f"{op}_length", op, [r((5, 3, 2)), v([2, 5, 1])], use_sequence_length=True,
             **extra)
        if op != "SequenceReverse":
            case(f"{op}_axis1", op, [r((3, 5, 2)), v([1, 2, 3])], use_sequence_length=True,
                 axis=1, **extra)
        case(f"{op}_bad_length_shape", op, [r((5, 3, 2)), v([2, 5])],
             use_sequence_length=True, **extra)


# Random calls: only what is fixed is recorded (shape, dtype, or MXNet's error).
# name, function path under mx.nd, positional args ({"nd": [...]} an array), kwargs
P2 = {"nd": [[0.5, 1.0], [2.0, 3.0]]}
RANDOM = [
    ("uniform_scalar_default_shape", "random.uniform", [], {}),
    ("uniform_shape", "random.uniform", [-1, 2], {"shape": (2, 3)}),
    ("uniform_float64", "random.uniform", [0, 1], {"shape": (4,), "dtype": "float64"}),
    ("uniform_float16", "random.uniform", [0, 1], {"shape": (4,), "dtype": "float16"}),
    ("uniform_int_dtype_fails", "random.uniform", [0, 1], {"shape": (4,), "dtype": "int32"}),
    ("uniform_low_above_high_fails", "random.uniform", [2, 1], {"shape": (2,)}),
    ("uniform_arrays", "random.uniform", [P2, P2], {"shape": (3,)}),
    ("uniform_arrays_no_shape", "random.uniform", [P2, P2], {}),
    ("uniform_mixed_types_fails", "random.uniform", [P2, 1], {}),
    ("normal_shape", "random.normal", [0, 1], {"shape": (5,)}),
    ("normal_bad_scale_fails", "random.normal", [0, -1], {"shape": (2,)}),
    ("normal_arrays", "random.normal", [P2, P2], {"shape": (2, 2)}),
    ("randn", "random.randn", [2, 3], {}),
    ("gamma_shape", "random.gamma", [2, 3], {"shape": (4,)}),
    ("gamma_bad_alpha_fails", "random.gamma", [0, 1], {"shape": (2,)}),
    ("gamma_arrays_f16", "random.gamma", [P2, P2], {"shape": (2,), "dtype": "float16"}),
    ("exponential", "random.exponential", [2.0], {"shape": (3,)}),
    ("exponential_bad_scale_fails", "random.exponential", [-1.0], {"shape": (3,)}),
    ("exponential_arrays", "random.exponential", [P2], {"shape": (2,)}),
    ("poisson", "random.poisson", [3.0], {"shape": (3,)}),
    ("poisson_bad_lam_fails", "random.poisson", [-1.0], {"shape": (3,)}),
    ("negative_binomial", "random.negative_binomial", [3, 0.4], {"shape": (3,)}),
    ("generalized_negative_binomial", "random.generalized_negative_binomial", [2.0, 0.5],
     {"shape": (3,)}),
    ("gnb_bad_mu_fails", "random.generalized_negative_binomial", [-1.0, 0.5],
     {"shape": (3,)}),
    ("randint", "random.randint", [0, 5], {"shape": (2, 3)}),
    ("randint_int64", "random.randint", [-5, 5], {"shape": (3,), "dtype": "int64"}),
    ("randint_high_below_low_fails", "random.randint", [5, 3], {"shape": (2,)}),
    ("randint_float_dtype_fails", "random.randint", [0, 5], {"shape": (2,), "dtype": "float32"}),
    ("multinomial", "random.multinomial", [{"nd": [[0.1, 0.9], [0.5, 0.5]]}], {}),
    ("multinomial_shape", "random.multinomial", [{"nd": [[0.1, 0.9], [0.5, 0.5]]}],
     {"shape": (3,)}),
    ("multinomial_float32", "random.multinomial", [{"nd": [0.2, 0.8]}],
     {"shape": (4,), "dtype": "float32"}),
    ("multinomial_int64_fails", "random.multinomial", [{"nd": [0.2, 0.8]}],
     {"dtype": "int64"}),
    ("shuffle", "random.shuffle", [{"nd": [[1, 2], [3, 4], [5, 6]]}], {}),
    ("random_uniform_op", "random_uniform", [], {"low": 0, "high": 2, "shape": (2, 2)}),
    ("random_normal_op", "random_normal", [], {"shape": (3,), "dtype": "float64"}),
    ("random_gamma_op", "random_gamma", [], {"alpha": 2.0, "shape": (3,)}),
    ("random_exponential_op", "random_exponential", [], {"lam": 2.0, "shape": (3,)}),
    ("random_poisson_op", "random_poisson", [], {"lam": 2.0, "shape": (3,)}),
    ("random_negative_binomial_op", "random_negative_binomial", [],
     {"k": 2, "p": 0.5, "shape": (3,)}),
    ("random_generalized_negative_binomial_op", "random_generalized_negative_binomial", [],
     {"mu": 2.0, "alpha": 0.3, "shape": (3,)}),
    ("random_randint_op", "random_randint", [], {"low": 0, "high": 9, "shape": (3,)}),
    ("sample_uniform_op", "sample_uniform", [P2, P2], {"shape": (2,)}),
    ("sample_normal_op", "sample_normal", [P2, P2], {}),
    ("sample_gamma_op", "sample_gamma", [P2, P2], {"shape": (2,), "dtype": "float64"}),
    ("sample_exponential_op", "sample_exponential", [P2], {"shape": (3,)}),
    ("sample_poisson_op", "sample_poisson", [P2], {"shape": (3,)}),
    ("sample_negative_binomial_op", "sample_negative_binomial",
     [{"nd": [1.0, 3.0]}, {"nd": [0.3, 0.6]}], {"shape": (2,)}),
    ("sample_generalized_negative_binomial_op", "sample_generalized_negative_binomial",
     [P2, P2], {"shape": (2,)}),
    ("sample_multinomial_op", "sample_multinomial", [{"nd": [[0.1, 0.9], [0.5, 0.5]]}],
     {"shape": (2,)}),
    ("sample_normal_shape_mismatch_fails", "sample_normal", [P2, {"nd": [1.0, 2.0]}], {}),
]


def _arg(a):
    return mx.nd.array(a["nd"]) if isinstance(a, dict) else a


def run_random(name, path, args, kwargs):
    fn = mx.nd
    for part in path.split("."):
        fn = getattr(fn, part)
    try:
        out = fn(*[_arg(a) for a in args], **kwargs)
        out.wait_to_read()
        result = {"shape": list(out.shape), "dtype": np.dtype(out.dtype).name}
    except (mx.base.MXNetError, AssertionError, ValueError) as exc:
        result = {"error": _error(exc)}
    return {"name": name, "fn": path, "args": args,
            "kwargs": {k: list(x) if isinstance(x, tuple) else x for k, x in kwargs.items()},
            "mxnet": result}


def _pdf_cases():
    P = (2, 3)
    for dt in (F, D):
        for log in (False, True):
            for kind, sample, params in (
                    ("uniform", r(P + (4,), dt, "pos"), [v([[0.0] * 3] * 2, dt),
                                                         v([[2.0, 3.0, 4.0]] * 2, dt)]),
                    ("normal", r(P + (4,), dt), [r(P, dt), r(P, dt, "pos")]),
                    ("gamma", r(P + (4,), dt, "pos"), [r(P, dt, "pos"), r(P, dt, "pos")]),
                    ("exponential", r(P, dt, "pos"), [r(P, dt, "pos")]),
                    ("poisson", r(P + (4,), dt, "int"), [r(P, dt, "pos")]),
                    ("negative_binomial", r(P + (4,), dt, "int"),
                     [v([[1.0, 2.0, 5.0]] * 2, dt), v([[0.2, 0.5, 0.9]] * 2, dt)]),
                    ("generalized_negative_binomial", r(P + (4,), dt, "int"),
                     [r(P, dt, "pos"), r(P, dt, "pos")])):
                case(f"pdf_{kind}_{dt}_log{int(log)}", f"random_pdf_{kind}",
                     [sample] + params, is_log=log)
            simplex = np.array([[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], [[0.6, 0.2, 0.2],
                                                                    [0.3, 0.3, 0.4]]])
            case(f"pdf_dirichlet_{dt}_log{int(log)}", "random_pdf_dirichlet",
                 [v(simplex, dt), r((2, 3), dt, "pos")], is_log=log)
    case("pdf_normal_bad_sample_shape", "random_pdf_normal", [r((3, 4)), r((2,)), r((2,))])


def _encode(arr) -> dict:
    a = np.ascontiguousarray(arr.asnumpy())
    return {"shape": list(a.shape), "dtype": a.dtype.name,
            "b64": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode()}


def _error(exc) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return next((ln for ln in lines if "Check failed" in ln or "Error" in ln), lines[-1])[:300]


def run(name, op, inputs, params):
    arrays = [mx.nd.array(make(i), dtype=make(i).dtype) for i in inputs]
    try:
        if name in TRAIN:
            with mx.autograd.record(train_mode=True):
                out = getattr(mx.nd, op)(*arrays, **params)
        else:
            out = getattr(mx.nd, op)(*arrays, **params)
        outs = out if isinstance(out, list) else [out]
        for o in outs:
            o.wait_to_read()
        # rrelu's second output (its slopes) is left unwritten outside training
        unset = 1 if params.get("act_type") == "rrelu" else 0
        result = {"outputs": [_encode(o) for o in outs[:len(outs) - unset]],
                  "list": isinstance(out, list), "unset_outputs": unset}
    except mx.base.MXNetError as exc:
        result = {"error": _error(exc)}
    return {"name": name, "op": op, "inputs": inputs, "train": name in TRAIN,
            "params": {k: list(x) if isinstance(x, tuple) else x for k, x in params.items()},
            "mxnet": result}


def main() -> None:
    for build in (_conv_cases, _pool_cases, _dense_cases, _norm_cases, _seq_cases,
                  _pdf_cases):
        build()
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    doc = {"generator": "tools/golden_nn_ops.py", "mxnet": mx.__version__,
           "cases": [run(*c) for c in CASES], "random": [run_random(*c) for c in RANDOM]}
    with gzip.open(out, "wt") as f:
        json.dump(doc, f, separators=(",", ":"), sort_keys=True)
    errors = sum("error" in c["mxnet"] for c in doc["cases"])
    print(f"wrote {len(doc['cases'])} cases ({errors} recorded errors) of "
          f"{len({c['op'] for c in doc['cases']})} operators and {len(doc['random'])} random "
          f"calls to {out}")


if __name__ == "__main__":
    main()
