"""Dtypes and data movement shared by the dense, sparse and io modules.

Every function here that *copies* says so in its name or docstring
(``to_device`` always copies; ``copy_into`` writes into an existing buffer).
"""
from __future__ import annotations

import contextlib
import types
from typing import Any

import numpy as np

from ..base import MXNetError, MXNetIndexError, MXNetTypeError, MXNetValueError, numeric_types  # noqa: F401
from ..context import Context, cpu, cupy_or_none, empty_host, gpu, xp_for
from .cow import before_write

# The dtypes MXNet 1.9's NDArray supports (bfloat16 aside).
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    np.float32, np.float64, np.float16, np.uint8, np.int8, np.int32, np.int64, np.bool_))
_SUPPORTED_SET = frozenset(SUPPORTED_DTYPES)
DEFAULT_DTYPE = np.dtype(np.float32)


# numpy's floating-point warnings are off while an operator's kernel runs (MXNet
# warns of nothing: log(-1) is NaN). numpy 2 keeps its error state in a context
# variable, set and reset here in ~0.1 us, where ``np.errstate`` takes ~1.5 us.
try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj
    QUIET: Any = _make_extobj(all="ignore")
    quiet_set, quiet_reset = _extobj_contextvar.set, _extobj_contextvar.reset
except ImportError:  # numpy 1.x
    QUIET = None

    def quiet_set(_: Any) -> Any:
        """Turn numpy's floating-point warnings off; returns the token for quiet_reset."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def quiet_reset(state: Any) -> None:
        """Restore numpy's floating-point warnings as quiet_set found them."""
        state.__exit__(None, None, None)


def normalize_dtype(dtype: Any, default: np.dtype = DEFAULT_DTYPE) -> np.dtype:
    """``dtype`` (a name, numpy type or dtype object; None means ``default``) as np.dtype."""
    if dtype is None:
        return default
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise MXNetTypeError(f"data type {dtype!r} not understood") from None
    if dt not in _SUPPORTED_SET:
        raise MXNetTypeError(
            f"dtype {dt.name} is not supported: expected one of "
            f"{', '.join(d.name for d in SUPPORTED_DTYPES)}")
    return dt


def normalize_shape(shape: Any) -> tuple:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(int(d) for d in shape)
        ok = all(d >= 0 for d in dims) and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape)
    except (TypeError, ValueError, OverflowError):  # None, 'abc', nan, inf
        ok = False
    if not ok:
        raise MXNetValueError(f"invalid shape {shape!r}: expected a tuple of non-negative ints")
    return dims


def is_host(arr: Any) -> bool:
    """Whether ``arr`` lives in host memory (a numpy array, not a CuPy one)."""
    return isinstance(arr, np.ndarray)


def is_scalar(x: Any) -> bool:
    """Whether ``x`` is a real number an operator takes as a scalar operand
    (a numpy array, even 0-d, or a complex number is not)."""
    return isinstance(x, numeric_types) and not isinstance(x, (np.ndarray, complex))


#: Host arrays of at least this many bytes start on a 2 MiB boundary.
HUGE_PAGE = 2 << 20


def empty_aligned(shape: Any, dtype: Any) -> np.ndarray:
    """A new, uninitialized C-contiguous host array; from 2 MiB up it starts
    on a 2 MiB boundary.

    Why: numpy asks the kernel for transparent huge pages on allocations of
    4 MiB and more, but only the 2 MiB-aligned stretches inside one can get
    them, and ``malloc`` hands back addresses 16 bytes past a page. The
    first write of a fresh aligned 4 MiB array then costs two huge-page
    faults instead of ~1,000 small ones: 0.3 ms against 0.95 ms measured on
    this project's VMs (1.55 ms without huge pages), which is most of what a
    store's ``init`` of a big key costs. The extra 2 MiB of address space
    is never touched, so it takes no memory.
    """
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes < HUGE_PAGE:
        return np.empty(shape, dt)
    raw = np.empty(nbytes + HUGE_PAGE, np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    return raw[start:start + nbytes].view(dt).reshape(shape)


def device_scope(ctx: Context):
    """A ``with`` scope making ``ctx``'s GPU current (a null scope on CPU)."""
    if ctx.uses_cupy:
        return xp_for(ctx).cuda.Device(ctx.cuda_id)
    return contextlib.nullcontext()


def ctx_of(arr: Any) -> Context:
    """The natural context of a raw array: cpu(0) for numpy, gpu(i) for cupy."""
    return cpu(0) if is_host(arr) else gpu(arr.device.id)


def to_device(arr: Any, ctx: Context, dtype: np.dtype | None = None) -> Any:
    """Copy ``arr`` (numpy, or cupy on any GPU) into a new C-contiguous array on ``ctx``.

    Always copies, even when ``arr`` already lives on ``ctx``'s device.
    """
    dtype = arr.dtype if dtype is None else dtype
    if not ctx.uses_cupy:
        if ctx.device_typeid == 3:  # cpu_pinned: page-locked where a GPU is
            out = empty_host(ctx, tuple(arr.shape), dtype)
            if is_host(arr):
                np.copyto(out, arr, casting="unsafe")
            else:
                out[...] = arr.get()
            return out
        if is_host(arr):
            if arr.nbytes < HUGE_PAGE or np.dtype(dtype).kind == "O":
                return np.array(arr, dtype=dtype, order="C", copy=True)
            out = empty_aligned(arr.shape, dtype)
            np.copyto(out, arr, casting="unsafe")
            return out
        host = arr.get()  # a fresh host copy
        if host.dtype != dtype:
            host = host.astype(dtype, order="C")
        return np.ascontiguousarray(host)
    cp = xp_for(ctx)
    with cp.cuda.Device(ctx.cuda_id):
        if is_host(arr):
            out = cp.empty(arr.shape, dtype=dtype)
            if out.size:
                out.set(np.ascontiguousarray(arr, dtype=dtype))
            return out
        if arr.device.id == ctx.cuda_id:
            return cp.array(arr, dtype=dtype, order="C", copy=True)
    # peer copy between two GPUs: same bytes first, then cast on the target
    src = arr
    if not src.flags.c_contiguous:
        with cp.cuda.Device(src.device.id):
            src = cp.ascontiguousarray(src)
    with cp.cuda.Device(ctx.cuda_id):
        out = cp.empty(src.shape, dtype=src.dtype)
        if out.size:
            out.data.copy_from_device(src.data, src.nbytes)
        return out if out.dtype == dtype else out.astype(dtype)


def local_operand(arr: Any, dst: Any) -> Any:
    """``arr`` readable by ufuncs on ``dst``'s device: as is when it already is, else a copy."""
    if is_host(dst):
        return arr if is_host(arr) else arr.get()
    if not is_host(arr) and arr.device.id == dst.device.id:
        return arr
    return to_device(arr, gpu(dst.device.id))


def _device_cupy(dst: Any) -> types.ModuleType:
    """CuPy, for ``dst`` that is not a numpy array (so a CuPy one, which needs CuPy)."""
    cp = cupy_or_none()
    if cp is None:
        raise MXNetTypeError(f"{type(dst).__name__} is not a numpy array, and CuPy (for a "
                             "GPU array) is not available")
    return cp


def copy_into(dst: Any, src: Any) -> None:
    """Write ``src`` (scalar, numpy or cupy array on any device) into ``dst``'s buffer.

    ``src`` must broadcast to ``dst.shape``; values are cast to ``dst.dtype``.
    Holders sharing ``dst``'s buffer copy-on-write are told first.
    """
    before_write(dst)
    if not isinstance(src, (np.ndarray, np.generic, int, float, bool)) \
            and not hasattr(src, "device"):
        src = np.asarray(src)
    if np.isscalar(src) or isinstance(src, np.generic):
        if is_host(dst):
            dst.fill(src)
        else:
            with _device_cupy(dst).cuda.Device(dst.device.id):
                dst.fill(src)
        return
    if tuple(np.broadcast_shapes(src.shape, dst.shape)) != tuple(dst.shape):
        raise MXNetValueError(f"cannot copy an array of shape {tuple(src.shape)} into "
                              f"an array of shape {tuple(dst.shape)}")
    if is_host(dst):
        np.copyto(dst, src if is_host(src) else src.get(), casting="unsafe")
        return
    cp = _device_cupy(dst)
    with cp.cuda.Device(dst.device.id):
        cp.copyto(dst, local_operand(src, dst), casting="unsafe")


def check_wrappable(arr: Any, ctx: Context) -> None:
    """Raise unless ``arr`` may be wrapped, uncopied, as an array on ``ctx``."""
    if ctx.uses_cupy:
        cp = xp_for(ctx)
        if not isinstance(arr, cp.ndarray) or arr.device.id != ctx.cuda_id:
            where = "host memory" if is_host(arr) else (
                f"gpu({arr.device.id})" if hasattr(arr, "device") else type(arr).__name__)
            raise MXNetTypeError(f"an NDArray on {ctx} wraps a cupy array on that GPU, "
                                 f"got {where}")
    elif not is_host(arr):
        raise MXNetTypeError(f"an NDArray on {ctx} wraps a numpy.ndarray, "
                             f"got {type(arr).__name__}")
    if not arr.flags.c_contiguous:
        raise MXNetValueError("an NDArray wraps a C-contiguous array: pass "
                              "ascontiguousarray(a) (which copies)")
    if arr.dtype not in _SUPPORTED_SET:
        raise MXNetTypeError(f"dtype {arr.dtype.name} is not supported: expected one of "
                             f"{', '.join(d.name for d in SUPPORTED_DTYPES)}")
