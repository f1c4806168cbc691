"""NDArray operations of the Engine facade: create, arithmetic, views,
conversions, files, and the data-plane operations (``nd.read`` copies into
the scratch arena, ``nd.read_region`` into a region of the region file the
JVM allocated, ``nd.from_arena`` copies out of the scratch arena)."""
from __future__ import annotations

import base64
import operator

import numpy as np

from ..base import MXNetIndexError, MXNetValueError
from . import nd_bytes, nd_dispatch
from .arena import HEADER
from .registry import op

__all__ = ["NDArrayOps"]


class NDArrayOps:
    """Mixin of EngineFacade: needs ``mx``, ``arena``, ``regions``, ``nd``, ``ctx``, ``meta``,
    ``host``."""

    @op("nd.create")
    def _nd_create(self, kind, shape, dev_type, dev_id, dtype, value=None):
        nd = self.mx.nd
        ctx = self.ctx(dev_type, dev_id)
        shape = tuple(shape)
        make = {"zeros": nd.zeros, "ones": nd.ones, "empty": nd.empty}.get(kind)
        if make is None and kind != "full":
            raise MXNetValueError(f"unknown array kind {kind!r}")
        try:
            arr = (nd.full(shape, value, ctx=ctx, dtype=dtype) if make is None
                   else make(shape, ctx=ctx, dtype=dtype))
        except (MemoryError, ValueError) as exc:
            # numpy's "array is too big" names no shape: say which
            raise MXNetValueError(f"cannot make an array of shape {shape} and dtype {dtype} on "
                                  f"{ctx}: {exc}") from None
        return self.meta(arr)

    @op("nd.arange")
    def _nd_arange(self, start, stop, step, repeat, dev_type, dev_id, dtype):
        arr = self.mx.nd.arange(start, stop, step=step, repeat=int(repeat),
                                ctx=self.ctx(dev_type, dev_id), dtype=dtype)
        return self.meta(arr)

    @op("nd.from_arena")
    def _nd_from_arena(self, src_dtype, shape, dev_type, dev_id, dtype):
        """A new array from data the JVM wrote into the arena's data area."""
        view = self.arena.view_in(src_dtype, tuple(shape))
        try:
            arr = self.mx.nd.array(view, ctx=self.ctx(dev_type, dev_id), dtype=dtype)
            own = getattr(arr, "_array", None)
            if isinstance(own, np.ndarray) and np.shares_memory(own, view):
                arr = self.mx.nd.array(view.copy(), ctx=self.ctx(dev_type, dev_id), dtype=dtype)
        finally:
            del view
        return self.meta(arr)

    @op("nd.read")
    def _nd_read(self, h, dtype, start=0, count=None, follow=False):
        """Copy elements [start, start+count) of array ``h`` into the arena's
        data area as ``dtype`` ("raw" keeps the array's own); return
        [offset, nbytes, path, size]. With ``follow`` the copy publishes its
        progress so the JVM can copy out concurrently."""
        src = self.host(self.nd(h)).reshape(-1)
        if count is None:
            count = src.size - start
        part = src[start:start + count]
        target = src.dtype if dtype == "raw" else dtype
        if np.dtype(target) == np.int32 and part.dtype.kind == "f":
            # as the JVM converts (Float.toInt): truncate, saturate, NaN -> 0
            info = np.iinfo(np.int32)
            part = np.clip(np.nan_to_num(part.astype(np.float64), nan=0.0), info.min, info.max)
        nbytes = self.arena.copy_in(part, target, follow=bool(follow))
        return [HEADER, nbytes, self.arena.path, self.arena.size]

    @op("nd.read_region")
    def _nd_read_region(self, h, offset, reserve=0):
        """Copy array ``h``, as float32, into the region file at byte
        ``offset``: a region the JVM allocated for a vector and owns until
        that vector is garbage-collected. Nothing else in the file is
        written. The file is first grown to ``reserve`` bytes (the JVM's
        whole region space, so that both sides map it once; it is sparse:
        memory is used only where regions were written) and, if the region
        ends past that, further. Return [nbytes, path, size]."""
        src = self.host(self.nd(h))
        self.regions.ensure(int(reserve))
        nbytes = self.regions.copy_in(src, np.float32, offset=int(offset))
        return [nbytes, self.regions.path, self.regions.size]

    _BINOPS = {
        "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
        "%": operator.mod, "**": operator.pow,
        "==": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
        "<": operator.lt, "<=": operator.le,
    }
    _INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
                "/=": operator.itruediv}

    def _binary_fn(self, name):
        if name in ("maximum", "minimum"):
            return getattr(self.mx.nd, name)
        fn = self._BINOPS.get(name)
        if fn is None:
            raise MXNetValueError(f"unknown operator {name!r}; known: "
                                  f"{', '.join([*self._BINOPS, 'maximum', 'minimum'])} "
                                  f"and {', '.join(self._INPLACE)}, %=, **=")
        return fn

    @op("nd.binop")
    def _nd_binop(self, name, h, other, other_is_handle, reverse=False):
        """``a <name> other`` (``other <name> a`` with ``reverse``), where other is
        an array handle or a number: a new array, or None for an in-place
        name ending in ``=`` (the result is written into ``a``)."""
        a = self.nd(h)
        b = self.nd(other) if other_is_handle else other
        if name in self._INPLACE:
            self._INPLACE[name](a, b)  # in place in the engine's buffer
            return None
        if name in ("%=", "**="):
            res = self._binary_fn(name[:-1])(a, b)
            a[:] = res
            return None
        fn = self._binary_fn(name)
        return self.meta(fn(b, a) if reverse else fn(a, b))

    @op("nd.invoke")
    def _nd_invoke(self, name, hs, positional=(), kwargs=None, out=None):
        """Operator ``name`` of the engine's table (see nd_dispatch) on arrays
        ``hs`` with parameters by position and by name: a new array's meta, a
        list of metas (several outputs), or, with ``out`` (a handle, or a list
        of handles for several outputs), those arrays written and their metas."""
        arrays = [self.nd(h) for h in hs]
        target = None
        if out is not None:
            target = [self.nd(h) for h in out] if isinstance(out, list) else self.nd(out)
        res = nd_dispatch.invoke(self.mx, name, arrays, positional or (), kwargs, target)
        if out is not None:
            return ([self.meta(a, h) for a, h in zip(target, out)] if isinstance(out, list)
                    else self.meta(target, out))
        if isinstance(res, (list, tuple)):
            return [self.meta(a) for a in res]
        return self.meta(res)

    @op("nd.onehot_encode")
    def _nd_onehot_encode(self, indices, out):
        self.mx.nd.onehot_encode(self.nd(indices), self.nd(out))

    @op("nd.set_value")
    def _nd_set_value(self, h, value):
        self.nd(h)[:] = value

    @op("nd.set_from_arena")
    def _nd_set_from_arena(self, h, src_dtype, count):
        """Fill array ``h`` from ``count`` values the JVM wrote into the arena."""
        a = self.nd(h)
        size = int(np.prod(a.shape, dtype=np.int64))
        if int(count) != size:
            raise MXNetValueError(f"set: {count} values for an array of {size} elements "
                                  f"(shape {tuple(a.shape)})")
        view = self.arena.view_in(src_dtype, tuple(a.shape))
        try:
            a[:] = view  # copies (converting to the array's dtype)
        finally:
            del view

    @op("nd.at")
    def _nd_at(self, h, idx):
        """Row ``idx`` of the first axis, sharing memory (MXNet's NDArray::At):
        the shape drops the first axis, except a 1-d array's row is shape (1,)."""
        a = self.nd(h)
        n = a.shape[0] if len(a.shape) else 0
        if not 0 <= idx < n:
            raise MXNetIndexError(f"at: index {idx} is out of range for an array of shape "
                                  f"{tuple(a.shape)}")
        row = a[idx:idx + 1]
        return self.meta(row.reshape(tuple(a.shape[1:])) if len(a.shape) > 1 else row)

    @op("nd.copyto_ctx")
    def _nd_copyto_ctx(self, h, dev_type, dev_id):
        """A new array on the context, holding a copy (always a copy)."""
        return self.meta(self.nd(h).copyto(self.ctx(dev_type, dev_id)))

    @op("nd.serialize")
    def _nd_serialize(self, h):
        return base64.b64encode(nd_bytes.dumps(self.nd(h))).decode("ascii")

    @op("nd.deserialize")
    def _nd_deserialize(self, text):
        return self.meta(nd_bytes.loads(self.mx, base64.b64decode(text)))

    @op("nd.wait_to_read")
    def _nd_wait_to_read(self, h):
        self.nd(h).wait_to_read()

    @op("nd.waitall")
    def _nd_waitall(self):
        self.mx.nd.waitall()

    @op("nd.slice")
    def _nd_slice(self, h, start, stop):
        a = self.nd(h)
        if not 0 <= start < stop <= a.shape[0]:
            raise MXNetIndexError(f"slice [{start}, {stop}) is out of range for an array of "
                             f"shape {tuple(a.shape)}")
        return self.meta(a[start:stop])

    @op("nd.reshape")
    def _nd_reshape(self, h, shape):
        return self.meta(self.nd(h).reshape(tuple(shape)))

    @op("nd.copy")
    def _nd_copy(self, h):
        return self.meta(self.nd(h).copy())

    @op("nd.copyto")
    def _nd_copyto(self, h, dst):
        self.nd(h).copyto(self.nd(dst))
        return None

    @op("nd.as_in_context")
    def _nd_as_in_context(self, h, dev_type, dev_id):
        a = self.nd(h)
        out = a.as_in_context(self.ctx(dev_type, dev_id))
        if out is a:
            return [h] + self.meta(a, h)[1:]
        return self.meta(out)

    @op("nd.astype")
    def _nd_astype(self, h, dtype):
        return self.meta(self.nd(h).astype(dtype))

    @op("nd.tostype")
    def _nd_tostype(self, h, stype):
        return self.meta(self.nd(h).tostype(stype))

    @op("nd.concat")
    def _nd_concat(self, hs, axis):
        return self.meta(self.mx.nd.concat(*[self.nd(h) for h in hs], dim=int(axis)))

    @op("nd.equal")
    def _nd_equal(self, h1, h2):
        """clojure-mxnet's NDArray equality: the same shape and the same
        elements read as float32 (whatever the dtypes; NaN equals nothing)."""
        a, b = self.nd(h1), self.nd(h2)
        if tuple(a.shape) != tuple(b.shape):
            return False
        return bool(np.array_equal(self.host(a).astype(np.float32, copy=False),
                                   self.host(b).astype(np.float32, copy=False)))

    @op("nd.save")
    def _nd_save(self, fname, names, hs):
        arrays = [self.nd(h) for h in hs]
        data = dict(zip(names, arrays)) if names is not None else arrays
        self.mx.nd.save(fname, data)
        return None

    @op("nd.load")
    def _nd_load(self, fname):
        data = self.mx.nd.load(fname)
        if isinstance(data, dict):
            return {"names": list(data), "arrays": [self.meta(a) for a in data.values()]}
        return {"names": None, "arrays": [self.meta(a) for a in data]}

