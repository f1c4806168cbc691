"""Gradient compression for the kvstore: MXNet's 2bit, and a 1bit scheme.

A :class:`GradientCompression` turns a float32 gradient into a packed array
16 (2bit) or 32 (1bit) times smaller, keeping what it rounded away in a
*residual* that is added to the next gradient (error feedback), and turns the
packed array back into float32 values on the receiving side.

This is what ``kv.set_gradient_compression(params)`` installs: a ``device``
store quantizes every device's gradient with that device's own residual,
then dequantizes it on the merge context and sums (even with one device),
as MXNet 1.9's ``CommDevice::ReduceCompressed`` does; a ``dist`` store
compresses what a worker sends to the servers.

Example
-------
>>> gc = GradientCompression.create({'type': '2bit', 'threshold': 0.5})
>>> grad = numpy.array([0.75, -0.25, -0.625, 0.125], numpy.float32)
>>> residual = numpy.zeros(4, numpy.float32)
>>> packed = gc.quantize(grad, residual)       # 1 float32 word
>>> hex(packed.view(numpy.uint32)[0])
'0xc8'
>>> residual                                    # what was rounded away
array([ 0.25 , -0.25 , -0.125,  0.125], dtype=float32)
>>> gc.dequantize(packed, numpy.empty(4, numpy.float32))
array([ 0.5,  0. , -0.5,  0. ], dtype=float32)

Layout, bit for bit, and a worked example: ``docs/compression.md``.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..base import MXNetError
from . import compression_kernels as _k

__all__ = ["GradientCompression", "OneBitCompression", "TwoBitCompression", "register"]

_REGISTRY: dict[str, type[GradientCompression]] = {}


def register(klass: type[GradientCompression]) -> type[GradientCompression]:
    """Class decorator: make ``klass`` creatable by its ``type`` name."""
    name = klass.type
    if not name:
        raise MXNetError(f"{klass.__name__} has no compression type name")
    _REGISTRY[name] = klass
    return klass


def _known() -> str:
    return ", ".join(repr(name) for name in sorted(_REGISTRY))


def _parse_threshold(value: Any) -> float:
    """Parse ``threshold`` as MXNet does: the C++ side reads ``str(value)``."""
    text = str(value).strip()
    try:
        threshold = float(text)
    except ValueError:
        raise MXNetError(
            f"Invalid Parameter format for threshold expect float but value='{value}'"
        ) from None
    if math.isinf(threshold):  # (MXNet refuses it for 1bit; a 2bit one would send nothing)
        raise MXNetError(f"gradient compression: threshold must be finite, got {value!r}")
    return threshold


class GradientCompression:
    """Base class and registry of gradient compression types.

    Create one with :meth:`create` from the dictionary a user passes to
    ``kv.set_gradient_compression``; subclasses register under their ``type``
    name with :func:`register`.

    Attributes
    ----------
    type : str
        ``'2bit'`` or ``'1bit'``.
    threshold : float
        The threshold as given (the kernels use it rounded to float32, as
        MXNet's C++ ``float`` does).
    """

    type: ClassVar[str] = ""
    #: values packed into one float32 word
    factor: ClassVar[int] = 0
    #: threshold when the parameters name none
    default_threshold: ClassVar[float] = 0.5

    def __init__(self, threshold: float | None = None) -> None:
        if threshold is None:
            threshold = self.default_threshold
        self.threshold = float(threshold)
        self._t = np.float32(self.threshold)
        self._check_threshold()

    # ---------------------------------------------------------------- create

    @staticmethod
    def create(params: dict) -> GradientCompression:
        """Build a compression from user parameters, checked as MXNet 1.9 does.

        Parameters
        ----------
        params : dict
            ``{'type': '2bit', 'threshold': 0.5}``. ``type`` is required;
            ``threshold`` is optional. Keys and values may be strings (MXNet
            hands them to C++ as strings, so ``'threshold': '0.5'`` works);
            unknown keys are ignored, as MXNet ignores them.

        Raises
        ------
        MXNetError
            ``params`` is not a dict; ``type`` is missing or unknown; the
            threshold is not a number, or (2bit) not greater than 0.
        """
        if not isinstance(params, dict):
            raise MXNetError(f"unexpected type for param_dict: {type(params)}")
        kwargs = {str(k): v for k, v in params.items()}
        if "type" not in kwargs:
            raise MXNetError(
                "Required parameter type of string is not presented: gradient compression "
                f"needs a 'type' (one of {_known()})")
        name = str(kwargs["type"])
        threshold = _parse_threshold(kwargs["threshold"]) if "threshold" in kwargs else None
        klass = _REGISTRY.get(name)
        if klass is None:
            # MXNet 1.9 checks the threshold before the type name
            if threshold is not None:
                TwoBitCompression._require_positive(np.float32(threshold), threshold)
            raise MXNetError(
                f"Unknown type for gradient compression {name} (known types: {_known()})")
        return klass(threshold)

    def get_params(self) -> dict:
        """The parameters that :meth:`create` turns back into this object."""
        return {"type": self.type, "threshold": self.threshold}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, GradientCompression) and other.type == self.type
                and other._t == self._t)

    def __hash__(self) -> int:
        return hash((self.type, float(self._t)))

    def _check_threshold(self) -> None:
        """Subclasses refuse thresholds they cannot use."""

    # ----------------------------------------------------------------- sizes

    def compression_factor(self) -> int:
        """How many gradient values one packed float32 word holds."""
        return self.factor

    def packed_size(self, n: int) -> int:
        """Number of float32 words that hold ``n`` packed values."""
        n = int(n)
        if n < 0:
            raise MXNetError(f"packed_size of a negative size {n}")
        return -(-n // self.factor)

    # --------------------------------------------------------------- kernels

    def quantize(self, grad, residual, out=None):
        """Pack ``grad + residual``; leave the rounding error in ``residual``.

        Parameters
        ----------
        grad : numpy or cupy float32 array, any shape
            The gradient; read only.
        residual : float32 array of the same size, C-contiguous
            This sender's error-feedback buffer (zeros at first); updated in
            place to ``grad + residual - dequantized``.
        out : float32 array of ``packed_size(grad.size)`` words, optional
            Where to write the packed words; allocated when not given.

        Returns
        -------
        The packed float32 words (``out`` when given), bit-identical to
        MXNet's ``quantize_2bit`` (or MXNet master's ``quantize_1bit``).
        """
        xp = _k.array_module(grad)
        g = self._flat_input(xp, grad, "grad")
        r = self._flat_inout(xp, residual, "residual", g.size)
        words = self.packed_size(g.size)
        if out is None:
            out = xp.empty(words, dtype=xp.float32)
        else:
            out = self._flat_inout(xp, out, "out", words)
        self._quantize(xp, g, r, out)
        return out

    def dequantize(self, packed, out):
        """Unpack ``out.size`` values from ``packed`` into ``out``; return ``out``.

        ``out`` is a C-contiguous float32 array of any shape on the same
        array module as ``packed``; its size says how many values to unpack.
        """
        xp = _k.array_module(packed)
        o = self._flat_inout(xp, out, "out")
        p = self._flat_input(xp, packed, "packed")
        words = self.packed_size(o.size)
        if p.size != words:
            raise MXNetError(
                f"{self.type} dequantize: {o.size} values need {words} packed words, "
                f"got {p.size}")
        self._dequantize(xp, p, o)
        return out

    def roundtrip(self, grad, residual, out=None, accumulate: bool = False):
        """``dequantize(quantize(grad, residual))``: what one device contributes.

        Bit-identical to quantizing then dequantizing, but fused: no packed
        array is made. With ``accumulate=True`` the values are added to
        ``out`` (a merge buffer) instead of written over it.

        Returns ``out`` (allocated, float32, shaped like ``grad``, when not given).
        """
        xp = _k.array_module(grad)
        g = self._flat_input(xp, grad, "grad")
        r = self._flat_inout(xp, residual, "residual", g.size)
        if out is None:
            if accumulate:
                raise MXNetError("roundtrip(accumulate=True) needs an `out` to add into")
            out = xp.empty(grad.shape, dtype=xp.float32)
        o = self._flat_inout(xp, out, "out", g.size)
        self._roundtrip(xp, g, r, o, bool(accumulate))
        return out

    # ------------------------------------------------------- argument checks

    def _flat_input(self, xp, arr, what):
        if not isinstance(arr, xp.ndarray):
            raise MXNetError(f"{self.type} compression: {what} must be a numpy or cupy array, "
                             f"got {type(arr).__name__}")
        if arr.dtype != np.float32:
            raise MXNetError(f"{self.type} compression supports float32 only; {what} is "
                             f"{np.dtype(arr.dtype).name}")
        return arr.reshape(-1)  # a view when contiguous, else a copy (read only)

    def _flat_inout(self, xp, arr, what, size=None):
        if not isinstance(arr, xp.ndarray):
            raise MXNetError(f"{self.type} compression: {what} must be an array of the same "
                             f"module as the input ({xp.__name__}), got {type(arr).__name__}")
        if arr.dtype != np.float32:
            raise MXNetError(f"{self.type} compression supports float32 only; {what} is "
                             f"{np.dtype(arr.dtype).name}")
        if not arr.flags.c_contiguous:
            raise MXNetError(f"{self.type} compression: {what} must be C-contiguous, since it "
                             "is written in place")
        if xp is np and not arr.flags.writeable:
            raise MXNetError(f"{self.type} compression: {what} is read-only")
        if size is not None and arr.size != size:
            raise MXNetError(f"{self.type} compression: {what} has {arr.size} elements, "
                             f"expected {size}")
        return arr.reshape(-1)

    # -------------------------------------------------- subclass kernel hooks

    def _quantize(self, xp, g, r, packed) -> None:
        raise NotImplementedError

    def _dequantize(self, xp, packed, out) -> None:
        raise NotImplementedError

    def _roundtrip(self, xp, g, r, out, accumulate) -> None:
        raise NotImplementedError


@register
class TwoBitCompression(GradientCompression):
    """MXNet 1.9's 2bit compression.

    ``v = grad + residual`` is sent as ``+threshold`` (bits ``11``) when
    ``v >= threshold``, as ``-threshold`` (bits ``10``) when
    ``v <= -threshold``, else as 0 (bits ``00``); the residual keeps
    ``v`` minus what was sent. 16 values per float32 word.
    """

    type = "2bit"
    factor = 16
    default_threshold = 0.5

    @staticmethod
    def _require_positive(t32: np.float32, given: float) -> None:
        # MXNet: CHECK_GT(params.threshold, 0), on the C++ float
        if not t32 > 0:
            raise MXNetError(
                f"Check failed: params.threshold > 0 ({given:g} vs. 0) : "
                "threshold must be greater than 0")

    def _check_threshold(self) -> None:
        self._require_positive(self._t, self.threshold)

    def _quantize(self, xp, g, r, packed):
        _k.quantize_2bit(xp, g, r, self._t, packed)

    def _dequantize(self, xp, packed, out):
        _k.dequantize_2bit(xp, packed, self._t, out)

    def _roundtrip(self, xp, g, r, out, accumulate):
        _k.roundtrip_2bit(xp, g, r, self._t, out, accumulate)


@register
class OneBitCompression(GradientCompression):
    """1bit (sign) compression, as MXNet master defines it (1.9 has none).

    ``v = grad + residual`` is sent as ``+1`` (bit 1) when
    ``v > threshold``, else as ``-1`` (bit 0); the residual keeps ``v``
    minus what was sent. 32 values per float32 word. The threshold may be
    any number (default 0); only NaN is refused.
    """

    type = "1bit"
    factor = 32
    default_threshold = 0.0

    def _check_threshold(self) -> None:
        if math.isnan(self.threshold):
            raise MXNetError("1bit compression: threshold must be a number, got nan")

    def _quantize(self, xp, g, r, packed):
        _k.quantize_1bit(xp, g, r, self._t, packed)

    def _dequantize(self, xp, packed, out):
        _k.dequantize_1bit(xp, packed, self._t, out)

    def _roundtrip(self, xp, g, r, out, accumulate):
        _k.roundtrip_1bit(xp, g, r, self._t, out, accumulate)
