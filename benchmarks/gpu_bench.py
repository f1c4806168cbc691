"""GPU bandwidth benchmark (needs CuPy and a GPU; run by tools/gpu-check.sh).

Measured in one run, on one machine:

1. the device-to-device copy bandwidth of one 256 MB array on GPU 0
   (``copy_GBps`` = bytes / time), and between real GPUs 0 and 1 when there
   are two (``peer_GBps``);
2. the ``device`` comm's reduce of 4 x 256 MB float32 arrays on 4 virtual GPUs
   (all on GPU 0), and on real GPUs when there are at least 2: ``algbw`` =
   (n-1) x 256 MB / time, the data that must reach the merge device per
   second; ``ratio`` = algbw / the copy bandwidth of the same kind of link
   (target 0.8);
3. the 2-bit (and 1-bit) kernels' throughput on 64 Mi float32 values, in
   GB/s of gradient read and in G values/s;
4. host copies of 64 MB to and from pinned (``cpu_pinned``) and pageable
   memory, GB/s: what every GPU push and pull of a stored value crosses;
5. store-level steps: ``kv.push`` from every GPU then ``kv.pull`` into every
   GPU, 64 MB per GPU, for the ``local``, ``device`` and (on 2 or more real
   GPUs) ``nccl`` stores: milliseconds per step and the GB/s of gradients
   pushed (n x 64 MB / time).

``GPU_BENCH_REPS`` (default 5) sets the repetitions; the median is reported.

Prints one JSON object per line, then a summary line.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

SIZE = 256 * 1024 * 1024        # bytes per array
N_VALUES = SIZE // 4            # float32 values per array
REPS = int(os.environ.get("GPU_BENCH_REPS", "5"))


def _sync(cp) -> None:
    for d in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(d):
            cp.cuda.Device(d).synchronize()


def _time(cp, fn, reps: int = REPS) -> float:
    fn()
    _sync(cp)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        _sync(cp)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _emit(**row) -> dict:
    print(json.dumps(row), flush=True)
    return row


def copy_bandwidth(cp, src_dev: int = 0, dst_dev: int = 0) -> float:
    with cp.cuda.Device(src_dev):
        a = cp.ones(N_VALUES, cp.float32)
    with cp.cuda.Device(dst_dev):
        b = cp.empty(N_VALUES, cp.float32)

    def copy():
        cp.cuda.runtime.memcpyPeer(b.data.ptr, dst_dev, a.data.ptr, src_dev, SIZE)

    return SIZE / _time(cp, copy) / 1e9


def reduce_bandwidth(devs, comm_name: str = "device") -> float:
    import mxkv as mx
    from mxkv.kvstore.comm import create_comm

    comm = create_comm(comm_name)
    vals = [mx.nd.ones((N_VALUES,), ctx=d) for d in devs]
    cp = mx.context.cupy_or_none()
    t = _time(cp, lambda: comm.reduce(0, vals))
    got = comm.reduce(0, vals)
    if float(got[0:1].asnumpy()[0]) != len(devs):
        raise SystemExit(f"wrong reduce result on {devs}")
    return (len(devs) - 1) * SIZE / t / 1e9


STEP_VALUES = 16 * 1024 * 1024  # float32 values per GPU in a store step (64 MB)


def host_copies(cp) -> dict:
    """Device-to-host and host-to-device GB/s of 64 MB, pinned and pageable."""
    from mxkv import context

    nbytes = STEP_VALUES * 4
    with cp.cuda.Device(0):
        dev = cp.ones(STEP_VALUES, cp.float32)
        pinned = context.empty_host(context.cpu_pinned(0), (STEP_VALUES,), np.float32)
        pageable = np.empty(STEP_VALUES, np.float32)
        res = {}
        for name, host in (("pinned", pinned), ("pageable", pageable)):
            down = _time(cp, lambda h=host: dev.get(out=h))
            up = _time(cp, lambda h=host: dev.set(h))
            res[f"d2h_{name}_GBps"] = round(nbytes / down / 1e9, 1)
            res[f"h2d_{name}_GBps"] = round(nbytes / up / 1e9, 1)
    return res


def store_step(devs, kind: str) -> dict:
    """One training step's store traffic: push from every GPU, pull into every GPU."""
    import mxkv as mx

    cp = mx.context.cupy_or_none()
    with mx.kv.create(kind) as kv:
        kv.init(0, mx.nd.zeros((STEP_VALUES,)))
        grads = [mx.nd.ones((STEP_VALUES,), ctx=d) for d in devs]
        outs = [mx.nd.zeros((STEP_VALUES,), ctx=d) for d in devs]

        def step():
            kv.push(0, grads)
            kv.pull(0, out=outs)

        t = _time(cp, step)
        got = {float(o[0:1].asnumpy()[0]) for o in outs}
        if got != {float(len(devs))}:
            raise SystemExit(f"wrong push+pull result on the {kind} store: {got}")
    return {"ms": round(t * 1e3, 2),
            "push_GBps": round(len(devs) * STEP_VALUES * 4 / t / 1e9, 1)}


def kernel_throughput(cp, kind: str) -> dict:
    from mxkv.kvstore.compression import GradientCompression

    gc = GradientCompression.create({"type": kind, "threshold": 0.5})
    g = cp.random.standard_normal(N_VALUES, dtype=cp.float32)
    r = cp.zeros(N_VALUES, cp.float32)
    packed = cp.empty(gc.packed_size(N_VALUES), cp.float32)
    out = cp.empty(N_VALUES, cp.float32)
    res = {}
    for name, fn in (("quantize", lambda: gc.quantize(g, r, packed)),
                     ("dequantize", lambda: gc.dequantize(packed, out)),
                     ("roundtrip", lambda: gc.roundtrip(g, r, out))):
        t = _time(cp, fn)
        res[name] = {"ms": round(t * 1e3, 3), "GBps": round(SIZE / t / 1e9, 1),
                     "Gvalues_per_s": round(N_VALUES / t / 1e9, 2)}
    return res


def main() -> int:
    os.environ.pop("MXKV_SIMULATE_GPUS", None)
    os.environ["MXKV_VIRTUAL_GPUS"] = "4"
    import mxkv as mx
    from mxkv import context

    cp = context.cupy_or_none()
    if cp is None:
        print("gpu_bench: needs CuPy and a CUDA GPU (pip install 'mxkv[gpu]')", file=sys.stderr)
        return 2
    real = context.cuda_device_count()
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    _emit(what="device", name=name, real_gpus=real, cupy=cp.__version__)
    copy_bw = copy_bandwidth(cp)
    _emit(what="d2d_copy", GBps=round(copy_bw, 1), bytes=SIZE)
    rows = []
    for comm in ("device", "tree"):
        bw = reduce_bandwidth([mx.gpu(i) for i in range(4)], comm)
        rows.append(_emit(what=f"reduce_4x256MB_virtual_{comm}", algbw_GBps=round(bw, 1),
                          ratio=round(bw / copy_bw, 3)))
    if real >= 2:
        peer_bw = copy_bandwidth(cp, 1, 0)
        _emit(what="peer_copy_1_to_0", GBps=round(peer_bw, 1))
        os.environ.pop("MXKV_VIRTUAL_GPUS")
        context._reset_devices()
        n = min(real, 4)
        for comm in ("device", "tree"):
            bw = reduce_bandwidth([mx.gpu(i) for i in range(n)], comm)
            rows.append(_emit(what=f"reduce_{n}x256MB_real_{comm}", algbw_GBps=round(bw, 1),
                              ratio=round(bw / peer_bw, 3)))
    _emit(what="host_copies_64MB", **host_copies(cp))
    if real >= 2:
        for kind in ("local", "device", "nccl"):
            _emit(what=f"store_push_pull_{n}x64MB_real_{kind}", **store_step(
                [mx.gpu(i) for i in range(n)], kind))
        os.environ["MXKV_VIRTUAL_GPUS"] = "4"
        context._reset_devices()
    for kind in ("local", "device"):
        _emit(what=f"store_push_pull_4x64MB_virtual_{kind}", **store_step(
            [mx.gpu(i) for i in range(4)], kind))
    for kind in ("2bit", "1bit"):
        _emit(what=f"kernels_{kind}", values=N_VALUES, **kernel_throughput(cp, kind))
    best = max(r["ratio"] for r in rows)
    print(f"gpu_bench: best reduce ratio {best:.2f} of the copy bandwidth (target 0.80)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
