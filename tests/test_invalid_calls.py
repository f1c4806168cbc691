"""Property-based: generated invalid calls across the Python API each raise the
documented error with a message naming the fault, and leave every stored value
(and every optimizer state) exactly as it was.

Hypothesis draws lists of calls from the families below (wrong key types,
mixed keys, unknown keys, duplicate init, wrong shapes and dtypes, wrong
contexts, empty and mismatched lists, None, NaN/Inf, huge and negative
shapes, bad optimizer and compression parameters, bad file paths, truncated
and corrupt files). The run is deterministic (``derandomize``, no example
database) and tries ``MXKV_TEST_EXAMPLES`` lists of ``CALLS`` calls (default:
the hypothesis profile's, 1000 in ``make test``, over 10,000 invalid calls in
a few seconds; 150 in ``make test-fast``, tests/conftest.py). Raise the knob
for a longer hunt, e.g. ``MXKV_TEST_EXAMPLES=20000``.
"""
import os
import pickle
import re
import zlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxkv as mx
from mxkv.base import (
    MXNetError,
    MXNetIOError,
    MXNetMemoryError,
    MXNetTypeError,
    MXNetValueError,
    UnknownOptimizerError,
    env,
)

EXAMPLES = env("MXKV_TEST_EXAMPLES", settings().max_examples, minimum=1)
CALLS = 12
TARGET = 10_000  # invalid calls per run at the default setting

KEY_SHAPES = {"a": (2, 3), "b": (4,), "h": (3,)}   # 'h' is float64
INT_SHAPES = {0: (2, 3), 1: (5,)}
RSP_SHAPE = (6, 2)


class Call:
    """One invalid call: what it does, the error it must raise, and a regex
    its message must match (the fault it names)."""

    def __init__(self, family, fn, errors, fault):
        self.family, self.fn, self.errors, self.fault = family, fn, errors, fault

    def __repr__(self):
        return f"<{self.family}: {self.fault}>"


# ------------------------------------------------------------------ the world
class World:
    """The stores and files every invalid call runs against (made once)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.kv = mx.kv.create("local")           # str keys, an optimizer
        self.kv.init(list(KEY_SHAPES), [mx.nd.arange(0, int(np.prod(s))).reshape(s)
                                        .astype("float64" if k == "h" else "float32")
                                        for k, s in KEY_SHAPES.items()])
        self.kv.init("r", mx.nd.sparse.row_sparse_array(
            (np.ones((2, 2), np.float32), [1, 4]), shape=RSP_SHAPE))
        self.kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        self.kv.push(["a", "b"], [mx.nd.ones((2, 3)), mx.nd.ones((4,))])  # states exist
        self.dev = mx.kv.create("device")         # int keys, 2-bit compression
        self.dev.init(list(INT_SHAPES), [mx.nd.ones(s) * 3 for s in INT_SHAPES.values()])
        self.dev.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        self.nd_file = os.path.join(tmp, "w.params")
        mx.nd.save(self.nd_file, {"w": mx.nd.arange(0, 12).reshape((3, 4)),
                                  "r": mx.nd.sparse.row_sparse_array(
                                      (np.ones((1, 4), np.float32), [2]), shape=(5, 4))})
        self.nd_bytes = open(self.nd_file, "rb").read()
        self.states_file = os.path.join(tmp, "opt.states")
        self.kv.save_optimizer_states(self.states_file, dump_optimizer=True)
        self.states_bytes = open(self.states_file, "rb").read()
        self.scratch = os.path.join(tmp, "scratch")

    def checksum(self):
        """Every stored value of both stores, the updater's states and optimizer,
        and the files' bytes."""
        h = 0
        outs = [mx.nd.zeros(s, dtype="float64" if k == "h" else "float32")
                for k, s in KEY_SHAPES.items()]
        self.kv.pull(list(KEY_SHAPES), out=outs)
        for o in outs:
            h = zlib.crc32(o.asnumpy().tobytes(), h)
        r = mx.nd.sparse.zeros("row_sparse", RSP_SHAPE)
        self.kv.row_sparse_pull("r", out=r, row_ids=mx.nd.arange(0, RSP_SHAPE[0]))
        h = zlib.crc32(r.asnumpy().tobytes(), h)
        outs = [mx.nd.zeros(s) for s in INT_SHAPES.values()]
        self.dev.pull(list(INT_SHAPES), out=outs)
        for o in outs:
            h = zlib.crc32(o.asnumpy().tobytes(), h)
        u = self.kv._updater
        h = zlib.crc32(pickle.dumps(sorted(u.states)), h)
        for k in sorted(u.states):
            h = zlib.crc32(u.states[k].asnumpy().tobytes(), h)
        h = zlib.crc32(repr(sorted(vars(u.optimizer).items(), key=str)).encode(), h)
        keys = (sorted(self.kv._data.values), sorted(self.dev._data.values))
        files = (open(self.nd_file, "rb").read(), open(self.states_file, "rb").read())
        return h, keys, files, sorted(os.listdir(self.tmp))


# ------------------------------------------------------------------ strategies
NOT_KEYS = st.sampled_from([1.5, None, b"a", object(), True, False, float("nan"), {"k": 1},
                            1j, 2 ** 40, -2 ** 31 - 1, np.float32(3)])
UNKNOWN = st.sampled_from(["zz", "A", "a ", "", "é", "b\x00"])
BAD_DIMS = st.one_of(st.integers(-10 ** 6, -1), st.sampled_from(
    [float("nan"), float("inf"), 2.5, "3", None, [2]]))


def shapes_other_than(shape):
    return st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple).filter(
        lambda s: s != shape)


@st.composite
def bad_key_type(draw, w):
    key = draw(NOT_KEYS)
    op = draw(st.sampled_from(["push", "pull", "init", "pushpull"]))
    v = mx.nd.ones((2, 3))
    fn = {"push": lambda: w.kv.push(key, v), "pull": lambda: w.kv.pull(key, out=v),
          "init": lambda: w.kv.init(key, v), "pushpull": lambda: w.kv.pushpull(key, v)}[op]
    if key is True or key is False:
        fault = r"is a bool"
    elif isinstance(key, int):
        fault = r"does not fit in 32 bits"
    else:
        fault = rf"unexpected type for key: {type(key).__name__}"
    return Call("wrong key type", fn, MXNetError, fault)


@st.composite
def mixed_keys(draw, w):
    i = draw(st.integers(0, 2 ** 31 - 1))
    first_str = draw(st.booleans())
    keys = ["a", i] if first_str else [i, "a"]
    vals = [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))]
    op = draw(st.sampled_from(["push", "pull"]))
    fn = (lambda: w.kv.push(keys, vals)) if op == "push" else (lambda: w.kv.pull(keys, out=vals))
    return Call("mixed keys", fn, MXNetError,
                r"inconsistent types of keys|mixed key types")


@st.composite
def int_key_on_str_store(draw, w):
    k = draw(st.integers(0, 2 ** 31 - 1))
    return Call("mixed keys", lambda: w.kv.push(k, mx.nd.ones((2, 3))), MXNetError,
                rf"key {k} is int but this store uses str keys")


@st.composite
def unknown_key(draw, w):
    k = draw(UNKNOWN)
    batch = draw(st.booleans())
    keys = ["a", k] if batch else k
    vals = [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))] if batch else mx.nd.ones((2, 3))
    op = draw(st.sampled_from(["push", "pull", "pushpull"]))
    fn = {"push": lambda: w.kv.push(keys, vals), "pull": lambda: w.kv.pull(keys, out=vals),
          "pushpull": lambda: w.kv.pushpull(keys, vals)}[op]
    return Call("unknown key", fn, MXNetError,
                re.escape(f"key {k!r} has not been initialized"))


@st.composite
def duplicate_init(draw, w):
    existing = draw(st.sampled_from(list(KEY_SHAPES)))
    new = draw(st.sampled_from(["n1", "n2"]))
    how = draw(st.sampled_from(["existing", "twice", "batch"]))
    if how == "existing":
        keys, dup = existing, existing
    elif how == "twice":
        keys, dup = [new, new], new
    else:
        keys, dup = [new, existing], existing
    vals = [mx.nd.ones((2,))] * 2 if isinstance(keys, list) else mx.nd.ones((2,))
    op = draw(st.sampled_from(["init", "broadcast"]))
    fn = (lambda: w.kv.init(keys, vals)) if op == "init" else \
        (lambda: w.kv.broadcast(keys, vals, out=vals))
    return Call("duplicate init", fn, MXNetError, re.escape(f"duplicate init of key {dup!r}"))


@st.composite
def wrong_shape(draw, w):
    k = draw(st.sampled_from(["a", "b"]))
    shape = draw(shapes_other_than(KEY_SHAPES[k]))
    op = draw(st.sampled_from(["push", "pull", "push2", "batch"]))
    v = mx.nd.ones(shape)
    if op == "push":
        fn, verb = (lambda: w.kv.push(k, v)), "pushed"
    elif op == "pull":
        fn, verb = (lambda: w.kv.pull(k, out=v)), "pulled into"
    elif op == "push2":
        fn, verb = (lambda: w.kv.push(k, [mx.nd.ones(KEY_SHAPES[k]), v])), "pushed"
    else:
        other = "b" if k == "a" else "a"
        fn, verb = (lambda: w.kv.push([other, k], [mx.nd.ones(KEY_SHAPES[other]), v])), "pushed"
    return Call("wrong shape", fn, MXNetError,
                re.escape(f"key {k!r} was {verb} shape {shape} but was initialized with "
                          f"shape {KEY_SHAPES[k]}"))


@st.composite
def wrong_dtype(draw, w):
    which = draw(st.sampled_from(["optimizer", "compression", "create", "unsupported"]))
    if which == "optimizer":  # one value of another dtype under an optimizer
        dt = draw(st.sampled_from(["float64", "float16", "int32"]))
        return Call("wrong dtype", lambda: w.kv.push("a", mx.nd.ones((2, 3), dtype=dt)),
                    MXNetError, rf"key 'a' was pushed dtype {dt} but holds dtype float32")
    if which == "compression":
        k = draw(st.sampled_from(list(INT_SHAPES)))
        return Call("wrong dtype", lambda: w.dev.push(
            k, mx.nd.ones(INT_SHAPES[k], dtype="float64")), MXNetError,
            rf"key {k} has dtype float32; 2bit gradient compression needs float32 values")
    if which == "create":
        dt = draw(st.sampled_from(["foo", "float7", 3.5, "str"]))
        return Call("wrong dtype", lambda: mx.nd.zeros((2,), dtype=dt), MXNetTypeError,
                    r"not understood|is not supported")
    dt = draw(st.sampled_from([np.complex64, np.uint16, object, "U3", np.float128]))
    return Call("wrong dtype", lambda: mx.nd.ones((2,), dtype=dt), MXNetTypeError,
                r"is not supported")


@st.composite
def wrong_context(draw, w):
    which = draw(st.sampled_from(["type", "id", "gpu"]))
    if which == "type":
        name = draw(st.sampled_from(["tpu", "cuda", "GPU ", "", "cpu0"]))
        return Call("wrong context", lambda: mx.nd.ones((2,), ctx=mx.Context(name, 0)),
                    MXNetError, re.escape(f"unknown device type {name!r}"))
    if which == "id":
        i = draw(st.integers(-10 ** 9, -1))
        return Call("wrong context", lambda: mx.nd.ones((2,), ctx=mx.cpu(i)), MXNetError,
                    rf"device id must be a non-negative integer, got {i}")
    i = draw(st.integers(64, 1000))  # beyond any machine's GPUs
    return Call("wrong context", lambda: w.kv.push("a", mx.nd.ones((2, 3), ctx=mx.gpu(i))),
                MXNetError, rf"gpu\({i}\)|CuPy|cupy|GPU")


@st.composite
def empty_or_mismatched(draw, w):
    which = draw(st.sampled_from(["empty values", "empty outs", "more keys", "more values",
                                  "single value"]))
    op = draw(st.sampled_from(["push", "pull"]))
    what = "value" if op == "push" else "out"

    def call(keys, vals):
        return (lambda: w.kv.push(keys, vals)) if op == "push" else \
            (lambda: w.kv.pull(keys, out=vals))
    if which in ("empty values", "empty outs"):
        return Call("empty list", call("a", []), MXNetError,
                    rf"empty list of {what}s for key 'a'")
    if which == "more keys":
        return Call("mismatched lists", call(["a", "b"], [mx.nd.ones((2, 3))]), MXNetError,
                    rf"2 keys but 1 {what}s")
    if which == "more values":
        return Call("mismatched lists", call(["a"], [mx.nd.ones((2, 3))] * 3), MXNetError,
                    rf"1 keys but 3 {what}s")
    return Call("mismatched lists", call(["a", "b"], mx.nd.ones((2, 3))), MXNetError,
                rf"2 keys were given but the {what}s are a single NDArray")


@st.composite
def nones(draw, w):
    which = draw(st.sampled_from(["push", "pull", "batch", "shape", "optimizer", "row_ids",
                                  "key", "updater"]))
    if which == "push":
        return Call("None", lambda: w.kv.push("a", None), MXNetError,
                    r"value for key 'a' must be an NDArray, got NoneType")
    if which == "pull":
        return Call("None", lambda: w.kv.pull("a", out=None), MXNetError, r"out is required")
    if which == "batch":
        return Call("None", lambda: w.kv.push(["a", "b"], [mx.nd.ones((2, 3)), None]),
                    MXNetError, r"value for key 'b' must be an NDArray, got NoneType")
    if which == "shape":
        fn = draw(st.sampled_from([mx.nd.ones, mx.nd.zeros, mx.nd.empty]))
        return Call("None", lambda: fn(None), MXNetValueError, r"invalid shape None")
    if which == "optimizer":
        return Call("None", lambda: w.kv.set_optimizer(None), MXNetError,
                    r"expected an mx.optimizer.Optimizer, got NoneType")
    if which == "row_ids":
        return Call("None", lambda: w.kv.row_sparse_pull(
            "r", out=mx.nd.sparse.zeros("row_sparse", RSP_SHAPE), row_ids=None), MXNetError,
            r"row_ids is required")
    if which == "key":
        return Call("None", lambda: w.kv.init(None, mx.nd.ones((2,))), MXNetError,
                    r"unexpected type for key: NoneType")
    return Call("None", lambda: w.kv._set_updater(None), MXNetError,
                r"updater must be callable, got NoneType")


NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf"), np.float32("nan"),
                              np.float64("inf")])


@st.composite
def nan_inf(draw, w):
    which = draw(st.sampled_from(["optimizer", "threshold", "shape", "lr"]))
    bad = draw(NON_FINITE)
    if which == "optimizer":
        name, param = draw(st.sampled_from(OPT_PARAMS))
        return Call("NaN/Inf", lambda: mx.optimizer.create(name, **{param: bad}),
                    MXNetValueError, rf"{param} must be finite")
    if which == "threshold":
        kind = draw(st.sampled_from(["1bit", "2bit"]))
        return Call("NaN/Inf", lambda: w.dev.set_gradient_compression(
            {"type": kind, "threshold": bad}), MXNetError, r"threshold")
    if which == "lr":
        return Call("NaN/Inf", lambda: w.kv._updater.optimizer.set_learning_rate(bad),
                    MXNetValueError, r"learning_rate must be finite")
    return Call("NaN/Inf", lambda: mx.nd.zeros((2, bad)), MXNetValueError, r"invalid shape")


@st.composite
def huge_or_negative_shape(draw, w):
    which = draw(st.sampled_from(["negative", "bad dim", "huge", "rsp negative"]))
    if which == "negative":
        shape = (draw(st.integers(0, 4)), draw(st.integers(-10 ** 12, -1)))
        return Call("negative shape", lambda: mx.nd.zeros(shape), MXNetValueError,
                    re.escape(f"invalid shape {shape!r}"))
    if which == "bad dim":
        shape = (2, draw(BAD_DIMS))
        return Call("bad shape", lambda: mx.nd.ones(shape), MXNetValueError, r"invalid shape")
    if which == "huge":
        shape = (draw(st.integers(2 ** 40, 2 ** 50)), draw(st.integers(2 ** 10, 2 ** 20)))
        fn = draw(st.sampled_from([mx.nd.zeros, mx.nd.ones, mx.nd.empty]))
        return Call("huge shape", lambda: fn(shape), MXNetMemoryError,
                    re.escape(f"cannot allocate an array of shape {shape}"))
    shape = (draw(st.integers(-10 ** 6, -1)), 2)
    return Call("negative shape", lambda: mx.nd.sparse.zeros("row_sparse", shape),
                MXNetValueError, r"invalid shape")


OPT_PARAMS = [("sgd", "learning_rate"), ("sgd", "momentum"), ("sgd", "wd"),
              ("sgd", "rescale_grad"), ("adam", "beta1"), ("adam", "beta2"),
              ("adam", "epsilon"), ("rmsprop", "gamma1"), ("rmsprop", "gamma2"),
              ("adadelta", "rho"), ("ftrl", "lamda1"), ("ftrl", "beta"), ("nadam",
                                                                          "schedule_decay"),
              ("signum", "wd_lh"), ("dcasgd", "lamda"), ("adagrad", "eps"), ("lamb", "beta1")]


@st.composite
def bad_optimizer(draw, w):
    which = draw(st.sampled_from(["type", "name", "kwarg", "clip", "counts"]))
    if which == "type":
        name, param = draw(st.sampled_from(OPT_PARAMS))
        bad = draw(st.sampled_from(["abc", "0.1", [0.1], {}, (1,), b"1", True, 1j]
                                   + ([] if param == "learning_rate" else [None])))
        return Call("bad optimizer parameter", lambda: mx.optimizer.create(name, **{param: bad}),
                    MXNetTypeError, rf"{param} must be a finite number, got {re.escape(repr(bad))}")
    if which == "name":
        name = draw(st.sampled_from(["nope", "sgdd", "", "Adam2", None, 3]))
        return Call("unknown optimizer", lambda: mx.optimizer.create(name),
                    UnknownOptimizerError, rf"Cannot find optimizer {re.escape(str(name))}")
    if which == "kwarg":
        kw = draw(st.sampled_from(["foo", "lr", "momentom", "learningrate"]))
        return Call("bad optimizer parameter", lambda: mx.optimizer.create("sgd", **{kw: 1}),
                    MXNetTypeError, rf"unexpected keyword argument '{kw}'")
    if which == "clip":
        bad = draw(st.sampled_from(["x", [1], {}]))
        return Call("bad optimizer parameter",
                    lambda: mx.optimizer.SGD(clip_gradient=bad), MXNetTypeError,
                    r"clip_gradient must be a finite number or None")
    bad = draw(st.sampled_from([-1, "3", 2.5]))
    return Call("bad optimizer parameter", lambda: mx.optimizer.SGD(begin_num_update=bad),
                (MXNetTypeError, MXNetValueError), r"begin_num_update must be")


@st.composite
def bad_compression(draw, w):
    which = draw(st.sampled_from(["type", "threshold", "not a dict", "no type", "local"]))
    if which == "type":
        t = draw(st.sampled_from(["3bit", "", "2BIT ", "none", "fp16"]))
        return Call("bad compression", lambda: w.dev.set_gradient_compression({"type": t}),
                    MXNetError, r"Unknown type for gradient compression")
    if which == "threshold":
        t = draw(st.sampled_from(["abc", "", "0.5.1", [0.5]]))
        return Call("bad compression", lambda: w.dev.set_gradient_compression(
            {"type": "2bit", "threshold": t}), MXNetError,
            r"Invalid Parameter format for threshold")
    if which == "not a dict":
        p = draw(st.sampled_from([None, [("type", "2bit")], "2bit", 2]))
        return Call("bad compression", lambda: w.dev.set_gradient_compression(p), MXNetError,
                    r"unexpected type for param_dict")
    if which == "no type":
        return Call("bad compression", lambda: w.dev.set_gradient_compression(
            {"threshold": 0.5}), MXNetError, r"Required parameter type")
    return Call("bad compression", lambda: w.kv.set_gradient_compression(
        {"type": "2bit"}), MXNetError, r"not supported for this type of kvstore")


@st.composite
def bad_path(draw, w):
    which = draw(st.sampled_from(["not a path", "missing dir", "directory", "nul", "empty",
                                  "load missing", "states missing", "states directory"]))
    v = mx.nd.ones((2,))
    if which == "not a path":
        p = draw(st.sampled_from([42, None, 1.5, ["a"], {}]))
        op = draw(st.sampled_from(["save", "load"]))
        fn = (lambda: mx.nd.save(p, v)) if op == "save" else (lambda: mx.nd.load(p))
        return Call("bad file path", fn, MXNetTypeError,
                    rf"must be a str or os.PathLike, got {type(p).__name__}")
    if which == "missing dir":
        p = os.path.join(w.tmp, "no-such-dir", draw(st.sampled_from(["x", "y.params"])))
        return Call("bad file path", lambda: mx.nd.save(p, v), MXNetIOError,
                    re.escape(repr(p)) + r".*No such file or directory")
    if which == "directory":
        return Call("bad file path", lambda: mx.nd.save(w.tmp, v), MXNetIOError,
                    r"Is a directory")
    if which == "nul":
        return Call("bad file path", lambda: mx.nd.save(w.scratch + "\0x", v), MXNetIOError,
                    r"NUL byte")
    if which == "empty":
        return Call("bad file path", lambda: mx.nd.save("", v), MXNetIOError, r"name is empty")
    if which == "load missing":
        p = os.path.join(w.tmp, "missing.params")
        return Call("bad file path", lambda: mx.nd.load(p), MXNetIOError,
                    re.escape(repr(p)) + r".*No such file")
    if which == "states missing":
        p = os.path.join(w.tmp, "missing.states")
        return Call("bad file path", lambda: w.kv.load_optimizer_states(p), MXNetIOError,
                    re.escape(repr(p)) + r".*No such file")
    return Call("bad file path", lambda: w.kv.load_optimizer_states(w.tmp), MXNetIOError,
                r"Is a directory")


@st.composite
def corrupt_file(draw, w):
    which = draw(st.sampled_from(["nd truncated", "nd flipped", "states truncated",
                                  "states flipped", "states wrong thing"]))
    if which.startswith("nd"):
        data = bytearray(w.nd_bytes)
        if which == "nd truncated":  # (cutting exactly the trailer leaves MXNet's format)
            data = data[:draw(st.integers(0, len(data) - 1).filter(
                lambda n: n != len(data) - mx.fileio.TRAILER_LEN))]
        else:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        return Call("corrupt file", lambda: mx.nd.load_frombuffer(bytes(data)), MXNetIOError,
                    r"NDArray buffer: .*(truncated|corrupted|not an NDArray file|too short)")
    if which == "states wrong thing":
        thing = draw(st.sampled_from([42, {"a": "b"}, [1], ({}, 3), {0: ("x",)}, {1.5: None},
                                      "states", None, ({}, None, None)]))
        data = pickle.dumps(thing)
    else:
        data = bytearray(w.states_bytes)
        if which == "states truncated":
            data = data[:draw(st.integers(0, len(data) - 1))]
        else:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
    path = w.scratch + ".states"

    def load():
        with open(path, "wb") as f:
            f.write(bytes(data))
        try:
            w.kv.load_optimizer_states(path)
        finally:
            os.unlink(path)
    return Call("corrupt file", load, (MXNetIOError, MXNetValueError), re.escape(repr(path)))


@st.composite
def bad_row_sparse_pull(draw, w):
    which = draw(st.sampled_from(["dense key", "dense out", "out of range", "ids type"]))
    out = mx.nd.sparse.zeros("row_sparse", RSP_SHAPE)
    if which == "dense key":
        return Call("bad row_sparse_pull", lambda: w.kv.row_sparse_pull(
            "a", out=mx.nd.sparse.zeros("row_sparse", (2, 3)), row_ids=mx.nd.array([0])),
            MXNetError, r"key 'a' holds a dense value")
    if which == "dense out":
        return Call("bad row_sparse_pull", lambda: w.kv.row_sparse_pull(
            "r", out=mx.nd.zeros(RSP_SHAPE), row_ids=mx.nd.array([0])), MXNetError,
            r"out for key 'r' must be row_sparse")
    if which == "out of range":
        i = draw(st.one_of(st.integers(RSP_SHAPE[0], 10 ** 6), st.integers(-10 ** 6, -1)))
        return Call("bad row_sparse_pull", lambda: w.kv.row_sparse_pull(
            "r", out=out, row_ids=mx.nd.array([0, i])), MXNetError,
            rf"row id {i} is out of range for key 'r'")
    ids = draw(st.sampled_from([[0, 1], np.array([0]), "0", 3]))
    return Call("bad row_sparse_pull", lambda: w.kv.row_sparse_pull("r", out=out, row_ids=ids),
                MXNetError, r"row_ids")


BAD_PRIORITIES = [("a", "str"), (None, "NoneType"), (1.5, "float"), (float("nan"), "float"),
                  (np.float32(1), "float32"), ([1], "list"), (b"1", "bytes"), (1j, "complex")]


@st.composite
def bad_priority(draw, w):
    bad, name = draw(st.sampled_from(BAD_PRIORITIES + [(None, "NDArray")]))
    if name == "NDArray":
        bad = mx.nd.ones((1,))
    op = draw(st.sampled_from(["push", "pull", "pushpull", "broadcast", "row_sparse_pull",
                               "dev push", "dev pull", "dev pushpull", "batch"]))
    v = mx.nd.ones((2, 3))
    fn = {"push": lambda: w.kv.push("a", v, priority=bad),
          "pull": lambda: w.kv.pull("a", out=v, priority=bad),
          "pushpull": lambda: w.kv.pushpull("a", v, priority=bad),
          "broadcast": lambda: w.kv.broadcast("new", v, out=v, priority=bad),
          "row_sparse_pull": lambda: w.kv.row_sparse_pull(
              "r", out=mx.nd.sparse.zeros("row_sparse", RSP_SHAPE),
              row_ids=mx.nd.array([0]), priority=bad),
          "dev push": lambda: w.dev.push(0, [v, v], priority=bad),
          "dev pull": lambda: w.dev.pull(0, out=v, priority=bad),
          "dev pushpull": lambda: w.dev.pushpull(1, mx.nd.ones((5,)), priority=bad),
          "batch": lambda: w.kv.push(["a", "b"], [v, mx.nd.ones((4,))], priority=bad)}[op]
    return Call("bad priority", fn, MXNetTypeError, rf"priority must be an int, got {name}")


@st.composite
def bad_reshape(draw, w):
    dims = draw(st.sampled_from([(2.0, 3), (np.float32(2), 3), ("2", 3), (None,), "ab",
                                 ((2, 3),), (2, [3])]))
    varargs = draw(st.booleans()) and isinstance(dims, tuple) and len(dims) > 1
    a = mx.nd.ones((6,))
    fn = (lambda: a.reshape(*dims)) if varargs else (lambda: a.reshape(dims))
    return Call("bad reshape", fn, MXNetTypeError, r"reshape: shape .* must be a sequence of ints")


@st.composite
def empty_key_list(draw, w):
    op = draw(st.sampled_from(["init", "push", "pull", "pushpull", "broadcast",
                               "row_sparse_pull"]))
    fn = {"init": lambda: w.kv.init([], []), "push": lambda: w.kv.push([], []),
          "pull": lambda: w.kv.pull([], out=[]), "pushpull": lambda: w.kv.pushpull([], []),
          "broadcast": lambda: w.kv.broadcast([], [], out=[]),
          "row_sparse_pull": lambda: w.kv.row_sparse_pull([], out=[], row_ids=[])}[op]
    return Call("empty key list on a str store", fn, MXNetError,
                r"an empty key list counts as int keys but this store uses str keys")


@st.composite
def bad_nd_argument(draw, w):
    which = draw(st.sampled_from(["full", "eye", "clip", "zeros_like", "ones_like", "step",
                                  "random", "rsp indices", "arange", "index"]))
    if which == "full":
        bad = draw(st.sampled_from(["x", None, b"1", object()]))
        return Call("bad nd argument", lambda: mx.nd.full((2,), bad), MXNetTypeError,
                    r"fill value must be a number")
    if which == "eye":
        n = draw(st.integers(-10 ** 6, -1))
        return Call("bad nd argument", lambda: mx.nd.eye(n), MXNetValueError,
                    r"eye: N and M must not be negative")
    if which == "clip":
        lo, hi = draw(st.sampled_from([(None, None), (0, None), ("a", 1), (0, [1])]))
        return Call("bad nd argument", lambda: mx.nd.clip(mx.nd.ones((2,)), lo, hi),
                    MXNetError, r"clip: invalid parameter format for a_m(in|ax)")
    if which in ("zeros_like", "ones_like"):
        bad = draw(st.sampled_from([3, None, np.ones(2), [1.0]]))
        fn = getattr(mx.nd, which)
        return Call("bad nd argument", lambda: fn(bad), MXNetTypeError,
                    rf"{which}: argument data must have NDArray type")
    if which == "step":
        return Call("bad nd argument", lambda: mx.nd.ones((4,))[::0], MXNetValueError,
                    r"slice step cannot be zero")
    if which == "random":
        kind = draw(st.sampled_from(["uniform", "normal"]))
        return Call("bad nd argument", lambda: getattr(mx.nd.random, kind)("a", 1, shape=(2,)),
                    MXNetValueError, r"parameters must be either NDArray or numbers")
    if which == "rsp indices":
        return Call("bad nd argument", lambda: mx.nd.sparse.row_sparse_array(
            (np.ones((2, 2)), ["a", "b"]), shape=(3, 2)), MXNetTypeError,
            r"row_sparse indices must be numbers")
    if which == "arange":
        bad = draw(st.sampled_from(["a", None, [1]]))
        return Call("bad nd argument", lambda: mx.nd.arange(bad), MXNetError,
                    r"arange: start must be a number")
    bad = draw(st.sampled_from(["a", 1.5, {}]))
    return Call("bad nd argument", lambda: mx.nd.ones((4,))[bad], MXNetError,
                r"NDArray does not support slicing with key")


FAMILIES = [bad_key_type, mixed_keys, int_key_on_str_store, unknown_key, duplicate_init,
            wrong_shape, wrong_dtype, wrong_context, empty_or_mismatched, nones, nan_inf,
            huge_or_negative_shape, bad_optimizer, bad_compression, bad_path, corrupt_file,
            bad_row_sparse_pull, bad_priority, bad_reshape, empty_key_list, bad_nd_argument]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return World(str(tmp_path_factory.mktemp("invalid-calls")))


def test_generated_invalid_calls_raise_the_documented_error_and_change_nothing(world):
    tried, classes = Counter(), Counter()
    before = world.checksum()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.one_of([f(world) for f in FAMILIES]), min_size=CALLS, max_size=CALLS))
    def run(calls):
        for call in calls:
            with pytest.raises(call.errors) as info:
                call.fn()
            assert re.search(call.fault, str(info.value)), (call, str(info.value))
            assert not isinstance(info.value, (AssertionError, KeyError, AttributeError))
            # only MXNet's error class (each of ours is also the builtin MXNet raises)
            assert isinstance(info.value, MXNetError), (call, repr(info.value))
            tried[call.family] += 1
            classes[type(info.value).__name__] += 1
        assert world.checksum() == before, calls

    run()
    total = sum(tried.values())
    print(f"\ninvalid calls tried: {total} ({dict(sorted(tried.items()))})")
    print(f"exception classes seen: {dict(sorted(classes.items()))}")
    assert set(tried) >= {"wrong key type", "mixed keys", "unknown key", "duplicate init",
                          "wrong shape", "wrong dtype", "wrong context", "empty list",
                          "mismatched lists", "None", "NaN/Inf", "huge shape",
                          "negative shape", "bad optimizer parameter", "bad compression",
                          "bad file path", "corrupt file", "bad priority", "bad reshape",
                          "empty key list on a str store", "bad nd argument"}
    assert total >= min(TARGET, EXAMPLES * CALLS)
    assert total >= TARGET or EXAMPLES < 1000


def test_the_stores_still_work_after_the_invalid_calls(world):
    # 2-bit compression, threshold 0.5, fresh residuals: each device sends 0.5
    world.dev.push(1, [mx.nd.ones((5,)), mx.nd.ones((5,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((5,))
    world.dev.pull(1, out=out)
    assert out.asnumpy().tolist() == [1.0] * 5
    # SGD, momentum 0.9, lr 0.1: mom' = 0.9 mom - 0.1 g; w' = w + mom'
    w = mx.nd.zeros((4,))
    world.kv.pull("b", out=w)
    mom = world.kv._updater.states["b"].asnumpy()
    np.testing.assert_allclose(mom, [-0.1] * 4, rtol=1e-6)  # one push of ones so far
    world.kv.push("b", mx.nd.ones((4,)))
    after = mx.nd.zeros((4,))
    world.kv.pull("b", out=after)
    np.testing.assert_allclose(after.asnumpy(), w.asnumpy() + 0.9 * mom - 0.1, rtol=1e-6)
