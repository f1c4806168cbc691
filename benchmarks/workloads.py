"""The benchmark workloads, written once against MXNet's Python API.

Every workload is a function ``setup(mx, **params) -> Bench`` that takes the
module under test (``mxnet`` or ``mxkv``, imported as ``mx``), builds its
store and arrays, and returns the step to time plus a correctness check. The
worker (``worker.py``) calls ``step`` between two ``mx.nd.waitall()`` so the
clock covers completion of MXNet's asynchronous work.

Adding a row: write a setup function and register it with ``@workload``.
Rows that need hardware or services that may be absent (GPUs, Ray, JPype)
pass ``needs=`` a function that returns the reason they cannot run, or None;
the row is then reported as skipped instead of failing the run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from floors import step_traffic  # noqa: F401 - re-exported for the driver
from resnet50 import resnet50_param_shapes

BIG = 4_194_304  # 16 MiB of float32


@dataclass
class Bench:
    """What a workload's setup returns: the timed step and its check."""

    step: Callable[[], None]
    # Called once, after exactly one step on a fresh store; raises if wrong.
    check: Callable[[], None] = lambda: None
    # Called when the row is done (stop a cluster a setup started, say).
    teardown: Callable[[], None] = lambda: None


@dataclass
class Workload:
    name: str
    title: str            # the table's row label
    size: str             # what is moved, in words
    setup: Callable[..., Bench]
    params: Dict[str, Any]
    target: float         # mxkv time / MXNet time must be <= target
    quick: Dict[str, Any] = field(default_factory=dict)  # overrides for `quick`
    needs: Optional[Callable[[Any], Optional[str]]] = None
    # The numpy floor of one step, for the bandwidth table (or None):
    # params -> (element counts of the keys, devices k). See floors.py.
    floor: Optional[Callable[[Dict[str, Any]], Tuple[List[int], int]]] = None
    # What mxkv's time must reach as a fraction of that floor's (None: shown only).
    floor_target: Optional[float] = None

    def params_for(self, mode: str) -> Dict[str, Any]:
        p = dict(self.params)
        if mode == "quick":
            p.update(self.quick)
        return p

    def unavailable(self, mx: Any) -> Optional[str]:
        return self.needs(mx) if self.needs else None


REGISTRY: Dict[str, Workload] = {}


def find(name: str) -> Workload:
    """The row ``name``, or the sweep point ``name`` (``sweeps.py``)."""
    if name in REGISTRY:
        return REGISTRY[name]
    import sweeps  # (imported here: it builds its points from this module)
    try:
        return sweeps.POINTS[name]
    except KeyError:
        raise KeyError("no row or sweep point named %r" % name) from None


def workload(name: str, **meta: Any) -> Callable[[Callable[..., Bench]], Callable[..., Bench]]:
    """Register ``setup`` under ``name`` with the row's metadata."""
    def deco(setup: Callable[..., Bench]) -> Callable[..., Bench]:
        if name in REGISTRY:
            raise ValueError("workload %r registered twice" % name)
        REGISTRY[name] = Workload(name=name, setup=setup, **meta)
        return setup
    return deco


# ---------------------------------------------------------------- helpers

def _ctxs(mx: Any, k: int, dev: str) -> List[Any]:
    return [mx.gpu(i) if dev == "gpu" else mx.cpu(i) for i in range(k)]


def _expect_all(arrays: List[Any], value: float, what: str, tol: float = 0.0) -> None:
    for i, a in enumerate(arrays):
        x = a.asnumpy()
        bad = abs(x - value) > tol
        if bad.any():
            raise AssertionError("%s: output %d holds %r, expected %r everywhere"
                                 % (what, i, float(x[bad.argmax()]), value))


def _gpus_needed(k: int) -> Callable[[Any], Optional[str]]:
    def needs(mx: Any) -> Optional[str]:
        try:
            n = mx.context.num_gpus()
        except Exception as e:  # noqa: BLE001 - any failure means "no GPU here"
            return "no GPU support (%s)" % e
        return None if n >= k else "needs %d GPUs, found %d" % (k, n)
    return needs


def one_key_floor(p: Dict[str, Any]) -> Tuple[List[int], int]:
    return [p["n"]], p["k"]


def resnet50_floor(p: Dict[str, Any]) -> Tuple[List[int], int]:
    sizes = []
    for _, shape in resnet50_param_shapes():
        n = 1
        for d in shape:
            n *= d
        sizes.append(n)
    return sizes, p["devices"]


# ---------------------------------------------------------------- one big key

def big_key(mx: Any, n: int, k: int, store: str = "local", dev: str = "cpu",
            compression: Optional[Dict[str, Any]] = None) -> Bench:
    """Push one key of ``n`` float32 from ``k`` devices, pull it to ``k`` outputs."""
    kv = mx.kv.create(store)
    if compression:
        kv.set_gradient_compression(compression)
    ctxs = _ctxs(mx, k, dev)
    kv.init(0, mx.nd.zeros((n,)))
    grads = [mx.nd.ones((n,), ctx=c) for c in ctxs]
    outs = [mx.nd.zeros((n,), ctx=c) for c in ctxs]

    def step() -> None:
        kv.push(0, grads)
        kv.pull(0, out=outs)

    # 2-bit with threshold t sends +t for a gradient of 1 (and keeps 1 - t).
    expected = float(k) * (compression["threshold"] if compression else 1.0)
    return Bench(step, lambda: _expect_all(outs, expected, "key 0"))


# One device: MXNet keeps a reference to the pushed array, so push + pull is
# one copy; mxkv keeps it copy-on-write, also one copy.
workload("big_key_k1", title="1 key, push from 1 cpu device + pull",
         size="4,194,304 float32 x 1", params=dict(n=BIG, k=1), target=0.9,
         floor=one_key_floor, floor_target=0.8)(big_key)

for _k, _target in ((4, 0.5), (8, 0.7)):
    workload("big_key_k%d" % _k,
             title="1 key, push from %d cpu devices + pull" % _k,
             size="4,194,304 float32 x %d" % _k,
             params=dict(n=BIG, k=_k), target=_target,
             floor=one_key_floor, floor_target=0.8)(big_key)

workload("device_2bit_k4",
         title="`device` store, 4 devices, 2-bit compression",
         size="4,194,304 float32 x 4, threshold 0.5",
         params=dict(n=BIG, k=4, store="device",
                     compression={"type": "2bit", "threshold": 0.5}),
         target=0.5)(big_key)

# A slot for the GPU comms: skipped (with the reason) where there are no GPUs.
workload("gpu_device_k2",
         title="`device` store, push from 2 GPUs + pull",
         size="4,194,304 float32 x 2",
         params=dict(n=BIG, k=2, store="device", dev="gpu"), target=1.0,
         needs=_gpus_needed(2))(big_key)


# ---------------------------------------------------------------- ResNet-50

def resnet50(mx: Any, devices: int, per_key: bool = False, sgd: bool = False) -> Bench:
    """ResNet-50's 161 parameters pushed from and pulled to ``devices`` devices."""
    shapes = resnet50_param_shapes()
    keys = [name for name, _ in shapes]
    ctxs = _ctxs(mx, devices, "cpu")
    kv = mx.kv.create("local")
    kv.init(keys, [mx.nd.zeros(s) for _, s in shapes])
    if sgd:  # as Module does: init the store, then hand it the optimizer
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    grads = [[mx.nd.ones(s, ctx=c) for c in ctxs] for _, s in shapes]
    outs = [[mx.nd.zeros(s, ctx=c) for c in ctxs] for _, s in shapes]

    if per_key:  # as Module's _update_params_on_kvstore: push then pull, key by key
        def step() -> None:
            for key, g, o in zip(keys, grads, outs):
                kv.push(key, g)
                kv.pull(key, out=o)
    else:
        def step() -> None:
            kv.push(keys, grads)
            kv.pull(keys, out=outs)

    # After one step: the sum of the pushes, or one SGD step from 0: -lr * sum.
    expected = -0.1 * devices if sgd else float(devices)

    def check() -> None:
        for key, o in zip(keys, outs):
            _expect_all(o, expected, "key %r" % key, tol=1e-6)
    return Bench(step, check)


_R50 = "161 keys, 25,557,032 float32 x 2"
workload("resnet50_batched", title="ResNet-50 params, 2 devices, one batched push + pull",
         size=_R50, params=dict(devices=2), target=0.6, floor=resnet50_floor)(resnet50)
workload("resnet50_per_key", title="ResNet-50 params, 2 devices, one call per key",
         size=_R50, params=dict(devices=2, per_key=True), target=1.0,
         floor=resnet50_floor)(resnet50)
workload("resnet50_sgd", title="ResNet-50 params, 2 devices, batched, SGD on the store",
         size=_R50 + ", SGD(lr=0.1, momentum=0.9)",
         params=dict(devices=2, sgd=True), target=0.7)(resnet50)


# ---------------------------------------------------------------- many small keys

def small_keys(mx: Any, nkeys: int, devices: int = 1) -> Bench:
    """``nkeys`` keys of one float32 each, one batched push and one batched pull."""
    keys = list(range(nkeys))
    ctxs = _ctxs(mx, devices, "cpu")
    kv = mx.kv.create("local")
    kv.init(keys, [mx.nd.zeros((1,)) for _ in keys])
    if devices == 1:
        grads: List[Any] = [mx.nd.ones((1,)) for _ in keys]
        outs: List[Any] = [mx.nd.zeros((1,)) for _ in keys]
        flat = outs
    else:
        grads = [[mx.nd.ones((1,), ctx=c) for c in ctxs] for _ in keys]
        outs = [[mx.nd.zeros((1,), ctx=c) for c in ctxs] for _ in keys]
        flat = [o for row in outs for o in row]

    def step() -> None:
        kv.push(keys, grads)
        kv.pull(keys, out=outs)
    return Bench(step, lambda: _expect_all(flat, float(devices), "small keys"))


workload("small_keys_1000", title="1000 keys of 1 float32, batched push + pull",
         size="1000 x 1 float32, 1 device", params=dict(nkeys=1000), target=0.5)(small_keys)


ORDER = ["big_key_k1", "big_key_k4", "big_key_k8", "resnet50_batched", "resnet50_per_key",
         "resnet50_sgd", "small_keys_1000", "device_2bit_k4", "gpu_device_k2"]
if sorted(ORDER) != sorted(REGISTRY):
    raise RuntimeError("ORDER and REGISTRY disagree: %s" % sorted(set(ORDER) ^ set(REGISTRY)))
