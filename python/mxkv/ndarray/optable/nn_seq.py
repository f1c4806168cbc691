"""Resampling, padding and sequence layers (MXNet 1.9's ``nd.*``), forward.

UpSampling (nearest, and bilinear as MXNet computes it: a grouped
Deconvolution with the given weight), Pad, SequenceMask, SequenceLast and
SequenceReverse as plain functions over an array module ``xp`` (numpy or
cupy) and its arrays, registered as operators in the operator table.
"""
from __future__ import annotations

from typing import Any, Sequence

from .._util import MXNetValueError
from ._layer import params, register_layer
from .nn_conv import deconvolution

__all__ = ["crop", "pad", "sequence_last", "sequence_mask", "sequence_reverse", "upsampling"]


def upsampling(xp: Any, *data: Any, scale: int, num_filter: int = 0, sample_type: str,
               multi_input_mode: str = "concat") -> Any:
    """Nearest: each (N, C, H, W) input repeated to the first input's size times
    ``scale``, then concatenated on axis 1 (or summed). Bilinear: ``data`` is
    (input, weight) and the result a Deconvolution with kernel 2*scale - scale%2,
    stride scale, pad ceil((scale-1)/2), one group per channel."""
    s = int(scale)
    if s < 1:
        raise MXNetValueError(f"UpSampling: scale must be at least 1, got {s}")
    if sample_type == "bilinear":
        if len(data) != 2:
            raise MXNetValueError("UpSampling: sample_type 'bilinear' takes data and weight")
        x, w = data
        if x.ndim != 4:
            raise MXNetValueError(f"UpSampling: data must be 4-D (N, C, H, W), got shape "
                                  f"{tuple(x.shape)}")
        c = x.shape[1]
        if int(num_filter) != c:
            raise MXNetValueError(f"UpSampling: bilinear needs num_filter equal to the "
                                  f"channels {c}, got {num_filter}")
        k = 2 * s - s % 2
        p = (s - 1 + 1) // 2
        return deconvolution(xp, x, w, kernel=(k, k), stride=(s, s), pad=(p, p),
                             num_filter=c, num_group=c, no_bias=True)
    if sample_type != "nearest":
        raise MXNetValueError(f"UpSampling: sample_type {sample_type!r} is not 'nearest' "
                              f"or 'bilinear'")
    if multi_input_mode not in ("concat", "sum"):
        raise MXNetValueError(f"UpSampling: multi_input_mode {multi_input_mode!r} is not "
                              f"'concat' or 'sum'")
    if not data:
        raise MXNetValueError("UpSampling: needs at least one input")
    for x in data:
        if x.ndim != 4:
            raise MXNetValueError(f"UpSampling: every input must be 4-D (N, C, H, W), got "
                                  f"shape {tuple(x.shape)}")
    oh, ow = data[0].shape[2] * s, data[0].shape[3] * s
    parts = []
    for x in data:
        h, w = x.shape[2:]
        if oh % h or ow % w or oh // h != ow // w:
            raise MXNetValueError(f"UpSampling: input of shape {tuple(x.shape)} does not "
                                  f"scale to the output size ({oh}, {ow})")
        f = oh // h
        parts.append(xp.repeat(xp.repeat(x, f, axis=2), f, axis=3))
    if len(parts) == 1:
        return parts[0]
    if multi_input_mode == "sum":
        res = parts[0].copy()
        for q in parts[1:]:
            res += q
        return res
    return xp.concatenate(parts, axis=1)


def crop(xp: Any, *data: Any, offset: Sequence[int] = (0, 0), h_w: Sequence[int] = (0, 0),
         center_crop: bool = False) -> Any:
    """The (h, w) window of the first (N, C, H, W) input: h_w, or the second
    input's spatial size; at ``offset``, or centred with ``center_crop``."""
    if not 1 <= len(data) <= 2:
        raise MXNetValueError(f"Crop: takes one or two inputs, got {len(data)}")
    x = data[0]
    if x.ndim != 4:
        raise MXNetValueError(f"Crop: data must be 4-D (N, C, H, W), got shape "
                              f"{tuple(x.shape)}")
    h, w = (data[1].shape[2:4] if len(data) == 2 else tuple(int(v) for v in h_w))
    big_h, big_w = x.shape[2:]
    if center_crop:
        top, left = (big_h - h) // 2, (big_w - w) // 2
    else:
        top, left = (int(v) for v in offset)
    if h <= 0 or w <= 0 or top < 0 or left < 0 or top + h > big_h or left + w > big_w:
        raise MXNetValueError(f"Crop: the window ({h}, {w}) at ({top}, {left}) does not fit "
                              f"data of shape {tuple(x.shape)}")
    return xp.ascontiguousarray(x[:, :, top:top + h, left:left + w])


def pad(xp: Any, data: Any, *, mode: str, pad_width: Sequence[int],
        constant_value: float = 0) -> Any:
    """Pad the spatial axes of 4-D or 5-D data; ``pad_width`` gives (before,
    after) per axis, flattened, and must be 0 for the first two axes."""
    if mode not in ("constant", "edge", "reflect"):
        raise MXNetValueError(f"Pad: mode {mode!r} is not one of ('constant', 'edge', "
                              f"'reflect')")
    if data.ndim not in (4, 5):
        raise MXNetValueError(f"Pad: only 4-D and 5-D data are supported, got shape "
                              f"{tuple(data.shape)}")
    pw = tuple(int(v) for v in pad_width)
    if len(pw) != 2 * data.ndim:
        raise MXNetValueError(f"Pad: pad_width {pw} must have 2 entries per axis of data "
                              f"{tuple(data.shape)}")
    if any(pw[:4]):
        raise MXNetValueError(f"Pad: the first two axes cannot be padded, pad_width {pw}")
    pairs = [(pw[2 * i], pw[2 * i + 1]) for i in range(data.ndim)]
    if mode == "reflect" and any(b >= data.shape[i] or a >= data.shape[i]
                                 for i, (b, a) in enumerate(pairs)):
        raise MXNetValueError(f"Pad: reflect padding {pw} must be smaller than each padded "
                              f"axis of data {tuple(data.shape)}")
    if mode == "constant":
        return xp.pad(data, pairs, mode="constant",
                      constant_values=data.dtype.type(constant_value))
    return xp.pad(data, pairs, mode=mode)


def _seq_args(op: str, data: Any, sequence_length: Any, use: bool, axis: int) -> tuple:
    ax = int(axis)
    if ax not in (0, 1):
        raise MXNetValueError(f"{op}: axis must be 0 or 1, got {ax}")
    if data.ndim < 2:
        raise MXNetValueError(f"{op}: data must have at least 2 dimensions, got shape "
                              f"{tuple(data.shape)}")
    batch = data.shape[1 - ax]
    if not use:
        return ax, None
    if sequence_length is None:
        raise MXNetValueError(f"{op}: use_sequence_length needs the sequence_length input")
    if tuple(sequence_length.shape) != (batch,):
        raise MXNetValueError(f"{op}: sequence_length has shape "
                              f"{tuple(sequence_length.shape)}, expected ({batch},) for data "
                              f"{tuple(data.shape)} and axis {ax}")
    return ax, sequence_length.astype("int64")


def _bshape(data: Any, ax: int) -> tuple:
    """Shape that puts a (batch,) vector on the batch axis of ``data``."""
    return (1, -1) if ax == 0 else (-1, 1)


def sequence_mask(xp: Any, data: Any, sequence_length: Any = None, *,
                  use_sequence_length: bool = False, value: float = 0, axis: int = 0) -> Any:
    """Set the steps at and past each sequence's length (along ``axis``) to ``value``."""
    ax, lens = _seq_args("SequenceMask", data, sequence_length, use_sequence_length, axis)
    if lens is None:
        return data.copy()
    steps = xp.arange(data.shape[ax])
    pos = steps.reshape(-1, 1) if ax == 0 else steps.reshape(1, -1)
    keep = (pos < lens.reshape(_bshape(data, ax))).reshape(data.shape[:2] + (1,) * (data.ndim - 2))
    return xp.where(keep, data, data.dtype.type(value))


def sequence_last(xp: Any, data: Any, sequence_length: Any = None, *,
                  use_sequence_length: bool = False, axis: int = 0) -> Any:
    """Each sequence's last step (its length - 1 along ``axis``, or the last one)."""
    ax, lens = _seq_args("SequenceLast", data, sequence_length, use_sequence_length, axis)
    if lens is None:
        return xp.ascontiguousarray(xp.take(data, data.shape[ax] - 1, axis=ax))
    idx = xp.clip(lens - 1, 0, data.shape[ax] - 1)
    b = xp.arange(data.shape[1 - ax])
    return data[idx, b] if ax == 0 else data[b, idx]


def sequence_reverse(xp: Any, data: Any, sequence_length: Any = None, *,
                     use_sequence_length: bool = False, axis: int = 0) -> Any:
    """Reverse the first length steps of each sequence along axis 0, the rest kept."""
    if int(axis) != 0:
        raise MXNetValueError(f"SequenceReverse: only axis 0 is supported, got {axis}")
    ax, lens = _seq_args("SequenceReverse", data, sequence_length, use_sequence_length, axis)
    t = data.shape[0]
    if lens is None:
        return xp.ascontiguousarray(data[::-1])
    steps = xp.arange(t).reshape(-1, 1)
    lens = lens.reshape(1, -1)
    src = xp.where(steps < lens, lens - 1 - steps, steps)      # (T, batch)
    return data[src, xp.arange(data.shape[1]).reshape(1, -1)]


register_layer(
    "UpSampling", ("*data",), params(
        ("scale", "int"), ("num_filter", "int", 0),
        ("sample_type", "{'bilinear', 'nearest'}"),
        ("multi_input_mode", "{'concat', 'sum'}", "concat"), ("num_args", "int"),
        ("workspace", "long (non-negative)", 512)),
    upsampling,
    doc="Nearest-neighbour upsampling of one or more inputs (concatenated or summed), or "
        "bilinear (data and weight, a grouped Deconvolution).")

register_layer(
    "Pad", ("data",), params(
        ("mode", "{'constant', 'edge', 'reflect'}"), ("pad_width", "Shape(tuple)"),
        ("constant_value", "double", 0.0)),
    pad, methods=("pad",), aliases=("pad",),
    doc="Pads the spatial axes of 4-D or 5-D data (constant, edge or reflect).")

_SEQ = (("use_sequence_length", "boolean", False),)

register_layer(
    "SequenceMask", ("data", "sequence_length"), params(
        *_SEQ, ("value", "float", 0.0), ("axis", "int", 0)),
    sequence_mask, optional=("sequence_length",),
    doc="Sets the steps past each sequence's length to value.")

register_layer(
    "SequenceLast", ("data", "sequence_length"), params(*_SEQ, ("axis", "int", 0)),
    sequence_last, optional=("sequence_length",),
    doc="Each sequence's last step.",
    differences="a length beyond the sequence axis is clipped to it (MXNet reads past "
                "the array).")

register_layer(
    "SequenceReverse", ("data", "sequence_length"), params(*_SEQ, ("axis", "int", 0)),
    sequence_reverse, optional=("sequence_length",),
    doc="Reverses the first length steps of each sequence (axis 0).")

register_layer(
    "Crop", ("*data",), params(
        ("num_args", "int"), ("offset", "Shape(tuple)", (0, 0)), ("h_w", "Shape(tuple)", (0, 0)),
        ("center_crop", "boolean", False)),
    crop,
    doc="A spatial window of 4-D data: h_w (or the second input's size) at offset, or "
        "centred.")
