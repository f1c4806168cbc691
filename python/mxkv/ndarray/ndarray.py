"""The dense NDArray, as MXNet 1.9's ``mxnet.nd.NDArray``, over numpy or cupy.

``NDArray(array, ctx)`` wraps ``array`` without copying: ``nd._array`` is the
numpy (CPU contexts) or cupy (``gpu(i)``) buffer, ``nd._ctx`` its context.
Creation functions (``array``, ``zeros``...) always copy their source.
Basic slices along the first axis (``a[1]``, ``a[1:3]``) and ``reshape`` are
views sharing ``a``'s buffer, as in MXNet; every other index copies. Two
contexts never share memory: each cross-context operation copies.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..base import MXNetError, numeric_types
from ..context import Context, current_context, synchronize_streams, xp_for
from ._reshape import infer_reshape
from ._util import (
    QUIET,
    MXNetIndexError,
    MXNetTypeError,
    MXNetValueError,
    check_wrappable,
    copy_into,
    ctx_of,
    device_scope,
    is_host,
    is_scalar,
    local_operand,
    normalize_dtype,
    quiet_reset,
    quiet_set,
    to_device,
)
from .cow import before_write

__all__ = [
    "NDArray",
    "py_slice",
    "check_same_device_kind",
    "peer_array",
]


py_slice = slice  # MXNet's name for the builtin slice (mxnet.ndarray.ndarray.py_slice)


def _int_dims(shape: Any) -> tuple:
    """``shape`` as a tuple of ints; anything but ints (or what has ``__index__``)
    is refused with TypeError, as MXNet's ctypes conversion refuses it."""
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise MXNetTypeError(f"reshape: shape {shape!r} must be a sequence of ints") from None


_RESHAPE_ERRORS = {  # NDArray.reshape's wording of each problem (_reshape.PROBLEMS)
    problem: "reshape {src} to {spec}: " + why for problem, why in {
        "zero_past_end": "dim {i} is 0 (copy) but the input has only {n} dims",
        "merge_past_end": "-3 needs two more input dims",
        "split_short": "-4 needs an input dim and two output dims after it",
        "split_past_end": "-4 needs an input dim and two output dims after it",
        "split_both_infer": "split dims cannot both be -1",
        "split_mismatch": "split dims {d0}, {d1} do not divide input dim {whole}",
        "two_infer": "one and only one dim can be inferred",
        "invalid_dim": "{d} is not a valid dim (special dims are 0, -1, -2, -3, -4)",
        "cannot_infer": "the inferred dim does not divide the size",
    }.items()}
_RESHAPE_ERRORS["size"] = "cannot reshape an array of shape {src} into shape {spec}"


def _shape_str(shape: tuple) -> str:
    return "x".join(str(d) for d in shape)


def _ctx_arg(ctx: Context | str | None) -> Context:
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def check_same_device_kind(a: Context, b: Context, what: str) -> None:
    """Raise an MXNetError naming both contexts when one is a GPU and the other not."""
    if a.is_gpu != b.is_gpu:
        raise MXNetError(f"{what}: operands are on {a} and {b}; move one with "
                         f"as_in_context first")


def peer_array(src: NDArray, ctx: Context, what: str) -> Any:
    """``src``'s buffer readable on ``ctx`` (shared on CPU, peer-copied between GPUs)."""
    check_same_device_kind(ctx, src._ctx, what)
    if not ctx.uses_cupy or src._ctx == ctx:
        return src._array
    return to_device(src._array, ctx)


# NDArray's methods that are functions of the modules above this one (``sum``
# and ``abs`` of ops, ``max`` of reduce, ``zeros_like`` of creation, the DLPack
# exports of dlpack, ``tostype`` of row_sparse, pickling of io) call them through
# this table, which those modules fill with :func:`provide` when they are
# imported; importing ``mxkv.ndarray`` imports them all. So this module, the
# array core, imports none of them: the package's imports go one way, down to
# here (tools/import_cycles.py).
_PROVIDED: dict = {}


def provide(**functions: Callable[..., Any]) -> None:
    """Register the functions NDArray's methods call by these names
    (``provide(sum=sum)`` in ``ops``); for the modules above the core."""
    _PROVIDED.update(functions)


def _provided(name: str) -> Callable[..., Any]:
    try:
        return _PROVIDED[name]
    except KeyError:
        raise MXNetError(f"NDArray needs {name!r}, which no loaded module provides: import "
                         f"mxkv.ndarray, which loads them all") from None


def _scalar_for(dtype: np.dtype, value: Any) -> Any:
    """A scalar operand computed as MXNet does: cast to int for integer arrays."""
    if dtype.kind in "biu":
        return np.int64(int(value))
    return float(value)


def _int_true_divide(xp, x, y):
    """C-style integer division (truncation toward zero), as MXNet's ``/`` on ints."""
    q = xp.true_divide(x, y)
    xp.trunc(q, out=q)
    return q


_BINARY = {
    # name: (symbol, xp function name)
    "add": ("+", "add"), "subtract": ("-", "subtract"), "multiply": ("*", "multiply"),
    "divide": ("/", "true_divide"), "mod": ("%", "mod"), "power": ("**", "power"),
    "equal": ("==", "equal"), "not_equal": ("!=", "not_equal"), "greater": (">", "greater"),
    "greater_equal": (">=", "greater_equal"), "lesser": ("<", "less"),
    "lesser_equal": ("<=", "less_equal"),
}


class NDArray:
    """A dense n-dimensional array on a context (``mx.nd.NDArray``).

    Parameters
    ----------
    array : numpy.ndarray or cupy.ndarray
        The buffer, C-contiguous, wrapped without a copy.
    ctx : Context, optional
        Where ``array`` lives; defaults to the current context for numpy
        arrays (``cpu(0)`` if that is a GPU) and to ``gpu(i)`` for cupy ones.
    """

    __array_ufunc__ = None  # numpy operands defer to NDArray's reflected operators
    __array_priority__ = 1000.0
    #: True on an array over a DLPack producer's memory (kvstore.foreign.wrap
    #: sets it; declared only: other arrays have no such attribute)
    _foreign: bool

    def __init__(self, array: Any, ctx: Context | None = None) -> None:
        if ctx is None:
            if is_host(array):
                cur = current_context()
                ctx = cur if not cur.uses_cupy else ctx_of(array)
            elif hasattr(array, "device"):
                ctx = ctx_of(array)
            else:
                raise MXNetTypeError(f"NDArray wraps a numpy or cupy array, got "
                                     f"{type(array).__name__}")
        check_wrappable(array, ctx)
        self._array = array
        self._ctx = ctx

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple:
        """The array's dimensions, a tuple of ints."""
        return tuple(self._array.shape)

    @property
    def dtype(self) -> type:
        """The numpy scalar type, e.g. ``numpy.float32`` (as MXNet)."""
        return self._array.dtype.type

    @property
    def context(self) -> Context:
        """The device the array lives on (``cpu(0)``, ``gpu(1)``...); also ``ctx``."""
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        """The storage type: ``'default'`` (dense) here, ``'row_sparse'`` for a
        RowSparseNDArray."""
        return "default"

    @property
    def size(self) -> int:
        """The number of elements (the product of ``shape``)."""
        return int(self._array.size)

    @property
    def ndim(self) -> int:
        """The number of dimensions (``len(shape)``)."""
        return self._array.ndim

    @property
    def T(self) -> NDArray:
        """The transpose, a copy (as MXNet)."""
        xp = self._xp()
        with device_scope(self._ctx):
            return NDArray(xp.array(self._array.T, order="C", copy=True), self._ctx)

    @property
    def writable(self) -> bool:
        """Whether the array may be written (always, as MXNet's NDArrays)."""
        return True

    def _xp(self):
        return np if not self._ctx.uses_cupy else xp_for(self._ctx)

    # ------------------------------------------------------------------ conversion
    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the data (never shares memory with the NDArray)."""
        if is_host(self._array):
            return np.array(self._array, copy=True)
        return self._array.get()

    def asscalar(self) -> Any:
        """The single element of a shape-``(1,)`` array, as a numpy scalar."""
        if self.shape != (1,):
            raise MXNetValueError("The current array is not a scalar")
        return self.asnumpy()[0]

    def __bool__(self) -> bool:
        if self.size == 0:
            return False
        if self.size == 1:
            return bool(self.asnumpy().reshape(-1)[0])
        raise MXNetValueError("The truth value of an NDArray with multiple elements "
                              "is ambiguous.")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise MXNetTypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __hash__(self) -> int:
        return id(self) // 16

    def __repr__(self) -> str:
        return (f"\n{self.asnumpy()}\n<{type(self).__name__} {_shape_str(self.shape)} "
                f"@{self._ctx}>")

    def __getstate__(self) -> dict:
        """MXNet's pickle state: the array's ``NDArray::Save`` record as ``handle``."""
        return _provided("pickle_state")(self)

    def __setstate__(self, state: dict) -> None:
        """Restore from MXNet's state (``handle``) or mxkv 0.1's (``ctx``, ``array``):
        onto the saved context, or ``cpu(0)`` when that GPU is absent."""
        restored = _provided("from_pickle_state")(state)
        self.__dict__.update(restored.__dict__)
        if type(restored) is not type(self):
            self.__class__ = type(restored)

    def wait_to_read(self) -> None:
        """Block until pending work writing this array is done: the current
        stream's, and the comms' streams on its device (docs/gpu.md, Streams)."""
        if self._ctx.is_gpu:
            synchronize_streams(self._ctx)
        if self._ctx.uses_cupy:
            with device_scope(self._ctx):
                xp_for(self._ctx).cuda.get_current_stream().synchronize()

    wait_to_write = wait_to_read

    # ------------------------------------------------------------------ copies
    def copy(self) -> NDArray:
        """A deep copy on the same context."""
        return NDArray(to_device(self._array, self._ctx), self._ctx)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into ``other``'s buffer (an NDArray, any context) or onto a new
        array on ``other`` (a Context). Returns the destination."""
        if isinstance(other, Context):
            return NDArray(to_device(self._array, other), other)
        if self._copy_is_noop(other):
            return self
        if other.stype != "default":
            other[:] = self  # cast storage: the destination keeps the nonzero rows
            return other
        copy_into(other._array, self._array)
        return other

    def _copy_is_noop(self, other: Any) -> bool:
        """Check ``other`` as a ``copyto`` destination (an NDArray of this
        shape, of any storage type); True when it is this array itself."""
        if not isinstance(other, NDArray):
            raise MXNetTypeError(f"copyto does not support type {type(other)}")
        if other is self:
            return True
        if other.shape != self.shape:
            raise MXNetValueError(f"copyto: source shape {self.shape} differs from "
                                  f"destination shape {other.shape}")
        return False

    def as_in_context(self, context: Context) -> NDArray:
        """Self when already on ``context``, else a copy there."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        """Cast to ``dtype``; ``copy=False`` returns self when the dtype already matches."""
        dt = normalize_dtype(dtype)
        if not copy and dt == self._array.dtype:
            return self
        return NDArray(to_device(self._array, self._ctx, dt), self._ctx)

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage ``stype``: ``'default'`` or ``'row_sparse'``."""
        return _provided("cast_storage")(self, stype)

    def as_nd_ndarray(self) -> NDArray:
        """This array as an ``mx.nd`` NDArray: itself (MXNet's ``np`` arrays convert)."""
        return self

    # ------------------------------------------------------------------ shape
    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        """A view with a new shape, as MXNet's ``reshape``.

        Special dims: ``0`` copies the input's dim, ``-1`` infers one dim,
        ``-2`` copies all remaining input dims, ``-3`` merges two input dims,
        ``-4, a, b`` splits an input dim in two (one of them may be -1).
        ``reverse=True`` matches the special dims from the right.
        """
        reverse = bool(kwargs.pop("reverse", False))
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        elif len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        if kwargs:
            raise MXNetTypeError(f"reshape got unexpected arguments {sorted(kwargs)}; "
                                 f"accepted are 'shape' and 'reverse'")
        dims = infer_reshape(self.shape, _int_dims(shape), reverse, _RESHAPE_ERRORS)
        return NDArray(self._array.reshape(dims), self._ctx)

    def flatten(self, inplace: bool = False) -> NDArray:
        """Collapse all but the first axis: shape ``(n, rest)``. A copy, or with
        ``inplace=True`` a view sharing this array's memory (as MXNet)."""
        first = self.shape[0] if self.ndim else 1
        view = self.reshape((first, -1) if first else (0, 0))
        return view if inplace else view.copy()

    # ------------------------------------------------------------------ indexing
    def _index(self, key: Any) -> Any:
        if isinstance(key, NDArray):
            return local_operand(key._array, self._array).astype(np.int64)
        if isinstance(key, list):
            return np.asarray(key, dtype=np.int64) if not self._ctx.uses_cupy else \
                to_device(np.asarray(key, dtype=np.int64), self._ctx)
        if isinstance(key, tuple):
            return tuple(self._index(k) for k in key)
        if isinstance(key, np.ndarray) and self._ctx.uses_cupy:
            return to_device(key, self._ctx)
        return key

    def __getitem__(self, key: Any) -> NDArray:
        xp = self._xp()
        idx = self._index(key)
        with device_scope(self._ctx):
            try:
                res = self._array[idx]
            except IndexError as exc:
                if str(exc).startswith("only integers"):  # a key of no index type: as MXNet
                    raise MXNetValueError(f"NDArray does not support slicing with key {key!r} "
                                          f"of type {type(key)}") from None
                raise MXNetIndexError(f"{exc} (NDArray of shape {self.shape})") from None
            except (ValueError, TypeError) as exc:  # (a zero step...)
                cls = MXNetTypeError if isinstance(exc, TypeError) else MXNetValueError
                raise cls(f"NDArray does not support slicing with key {key!r} of type "
                          f"{type(key)}: {exc}") from None
            if res.ndim == 0:
                # full integer indexing: MXNet returns a shape-(1,) view
                ints = idx if isinstance(idx, tuple) else (idx,)
                if 0 < self.ndim == len(ints) and all(
                        isinstance(i, (int, np.integer)) for i in ints):
                    sl = tuple(slice(int(i) % self.shape[k], int(i) % self.shape[k] + 1)
                               for k, i in enumerate(ints))
                    res = self._array[sl].reshape(1)
                else:
                    res = xp.asarray(res)
                    res = res.reshape(1) if self.ndim else res
            if not res.flags.c_contiguous:
                res = xp.ascontiguousarray(res)
        return NDArray(res, self._ctx)

    def __setitem__(self, key: Any, value: Any) -> None:
        idx = self._index(key)
        if isinstance(value, NDArray):
            if value.stype != "default":
                value = value.tostype("default")
            src = local_operand(value._array, self._array)
        elif isinstance(value, numeric_types) and not isinstance(value, np.ndarray):
            src = value
        elif isinstance(value, (np.ndarray, list, tuple)) or hasattr(value, "__array__"):
            src = value if is_host(value) or hasattr(value, "device") else np.asarray(value)
            src = local_operand(src, self._array)
        else:
            raise MXNetTypeError(f"NDArray does not support assignment with {type(value)}")
        with device_scope(self._ctx):
            try:
                if isinstance(idx, slice) and idx == slice(None) or idx is Ellipsis:
                    copy_into(self._array, src)
                else:
                    before_write(self._array)
                    self._array[idx] = _fit(src, self._array, idx)
            except IndexError as exc:
                raise MXNetIndexError(f"{exc} (NDArray of shape {self.shape})") from None
            except ValueError as exc:
                raise MXNetValueError(
                    f"cannot assign a value of shape {np.shape(src)} to NDArray{_key_str(key)} "
                    f"of shape {self.shape}: {exc}") from None

    # ------------------------------------------------------------------ arithmetic
    def _binary(self, other: Any, name: str, reverse: bool = False,
                inplace: bool = False) -> NDArray:
        sym, fname = _BINARY[name]
        a = self._array
        if isinstance(other, NDArray):
            if other.stype != "default":
                other = other.tostype("default")
            b = peer_array(other, self._ctx, f"operator {sym}")
            if b.dtype != a.dtype:
                raise MXNetTypeError(f"operator {sym}: operands have dtypes {a.dtype.name} "
                                     f"and {b.dtype.name}; cast one with astype first")
            try:
                out_shape = a.shape if a.shape == b.shape else \
                    tuple(np.broadcast_shapes(a.shape, b.shape))
            except ValueError:
                raise MXNetValueError(f"operator {sym}: shapes {self.shape} and {other.shape} "
                                      f"cannot be broadcast together") from None
        elif is_scalar(other):
            b = _scalar_for(a.dtype, other)
            out_shape = self.shape
        else:
            raise MXNetTypeError(f"type {type(other)} not supported")
        if inplace and out_shape != self.shape:
            raise MXNetValueError(f"operator {sym}=: the result shape {out_shape} differs from "
                                  f"the destination's shape {self.shape}")
        xp = self._xp()
        x, y = (b, a) if reverse else (a, b)
        if inplace:
            before_write(a)
        if not self._ctx.uses_cupy:
            tok = quiet_set(QUIET)
            try:
                return self._compute(xp, x, y, a, name, fname, inplace)
            finally:
                quiet_reset(tok)
        with device_scope(self._ctx), np.errstate(all="ignore"):
            return self._compute(xp, x, y, a, name, fname, inplace)

    def _compute(self, xp: Any, x: Any, y: Any, a: Any, name: str, fname: str,
                 inplace: bool) -> NDArray:
        """``x OP y`` (``OP`` the xp function ``fname``) with MXNet's integer rules;
        written into ``a`` (this array's buffer) when ``inplace``."""
        integer = a.dtype.kind in "biu"
        if integer and name == "divide":
            res = _int_true_divide(xp, x, y)
        elif integer and name == "power":
            res = xp.power(xp.asarray(x, dtype=np.float64), xp.asarray(y, dtype=np.float64))
        elif name == "mod":  # MXNet: x % 0 is 0 (not NaN)
            res = xp.where(xp.asarray(y) == 0, xp.zeros((), a.dtype), xp.mod(x, y))
        elif inplace:
            getattr(xp, fname)(x, y, out=a, casting="unsafe")
            return self
        else:
            res = getattr(xp, fname)(x, y)
        if inplace:
            xp.copyto(a, res, casting="unsafe")
            return self
        if res.dtype != a.dtype:
            res = res.astype(a.dtype)
        if type(res) is np.ndarray and res.flags.c_contiguous:  # (fresh: skip the checks)
            out = object.__new__(NDArray)
            out._array, out._ctx = res, self._ctx
            return out
        return NDArray(res, self._ctx)

    def __add__(self, o): return self._binary(o, "add")
    def __radd__(self, o): return self._binary(o, "add", reverse=True)
    def __iadd__(self, o): return self._binary(o, "add", inplace=True)
    def __sub__(self, o): return self._binary(o, "subtract")
    def __rsub__(self, o): return self._binary(o, "subtract", reverse=True)
    def __isub__(self, o): return self._binary(o, "subtract", inplace=True)
    def __mul__(self, o): return self._binary(o, "multiply")
    def __rmul__(self, o): return self._binary(o, "multiply", reverse=True)
    def __imul__(self, o): return self._binary(o, "multiply", inplace=True)
    def __truediv__(self, o): return self._binary(o, "divide")
    def __rtruediv__(self, o): return self._binary(o, "divide", reverse=True)
    def __itruediv__(self, o): return self._binary(o, "divide", inplace=True)
    def __mod__(self, o): return self._binary(o, "mod")
    def __rmod__(self, o): return self._binary(o, "mod", reverse=True)
    def __imod__(self, o): return self._binary(o, "mod", inplace=True)
    def __pow__(self, o): return self._binary(o, "power")
    def __rpow__(self, o): return self._binary(o, "power", reverse=True)
    def __eq__(self, o): return self._binary(o, "equal")  # type: ignore[override]
    def __ne__(self, o): return self._binary(o, "not_equal")  # type: ignore[override]
    def __gt__(self, o): return self._binary(o, "greater")
    def __ge__(self, o): return self._binary(o, "greater_equal")
    def __lt__(self, o): return self._binary(o, "lesser")
    def __le__(self, o): return self._binary(o, "lesser_equal")

    def __neg__(self) -> NDArray:
        return self._binary(0, "subtract", reverse=True)

    def __pos__(self) -> NDArray:
        return self

    def __abs__(self) -> NDArray:
        return _provided("abs")(self)

    # ------------------------------------------------------------------ a few ops as methods
    def zeros_like(self) -> NDArray:
        """A new array of zeros with this array's shape, dtype, context and storage type."""
        return _provided("zeros_like")(self)

    def ones_like(self) -> NDArray:
        """A new array of ones with this array's shape, dtype and context."""
        return _provided("ones_like")(self)

    # ------------------------------------------------------------------ DLPack
    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        """The DLPack capsule of this array's memory (shared, not copied)."""
        return self._array.__dlpack__(stream=stream, **kwargs) if stream is not None \
            or kwargs else self._array.__dlpack__()

    def __dlpack_device__(self) -> tuple:
        """``(device type, device id)`` as DLPack numbers them (1: CPU, 2: CUDA)."""
        return self._array.__dlpack_device__()

    def to_dlpack_for_read(self) -> Any:
        """A DLPack capsule of this array's memory, for reading."""
        return _provided("to_dlpack_for_read")(self)

    def to_dlpack_for_write(self) -> Any:
        """A DLPack capsule of this array's memory, for writing through it."""
        return _provided("to_dlpack_for_write")(self)

    # The operators' methods (sum, max, exp, transpose, topk...) are set on this class by
    # the operator table (optable/frontend.py install_methods) when mxkv.ndarray loads.


def _fit(src: Any, dst: Any, idx: Any) -> Any:
    """``src`` shaped for ``dst[idx] = src``: as MXNet, a value with as many
    elements as the target (``b[0, 1] = nd.array([7])``) is reshaped to it
    when it would not broadcast."""
    if isinstance(src, (int, float, np.generic)) or not hasattr(src, "shape"):
        return src
    target = dst[idx].shape
    if src.shape == target:
        return src
    try:
        if np.broadcast_shapes(src.shape, target) == target:
            return src
    except ValueError:
        pass
    if src.size == int(np.prod(target)):
        return src.reshape(target)
    return src  # numpy's own error follows


def _key_str(key: Any) -> str:
    if isinstance(key, slice) and key == slice(None):
        return "[:]"
    return f"[{key!r}]"
