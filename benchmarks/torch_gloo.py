"""The peer users pick today: torch.distributed's gloo all_reduce of ResNet-50's
gradients, W processes on loopback, for the distributed rows (``dist_bench.py``).

    benchmarks/.venv-torch/bin/python benchmarks/torch_gloo.py -n 2 --mode bucket \\
        --iters 30 --warmup 10 --out times.json

``--mode bucket`` all-reduces one flat 102 MB tensor per iteration (as DDP
does with its gradient buckets, here one bucket holding every gradient);
``--mode tensor`` all-reduces the 161 tensors one by one (issued together,
``async_op=True``, then waited for). Across hosts (``multihost_bench.py``)
each rank is started alone: ``--rank R --port P --master ADDR`` with
``GLOO_SOCKET_IFNAME`` naming the host's interface. The first iteration is checked (ones
summed over W processes give W everywhere). Rank 0 writes the per-iteration
times. torch runs only here, in its own venv (``dist_bench.py`` makes it
with ``pip install torch==2.13.0``, a CPU build); mxkv never imports it.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(a: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from resnet50 import resnet50_param_shapes

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}",
                            rank=a.rank, world_size=a.n)
    shapes = [s for _, s in resnet50_param_shapes()]
    if a.mode == "bucket":
        tensors = [torch.ones(sum(int(torch.Size(s).numel()) for s in shapes))]
    else:
        tensors = [torch.ones(s) for s in shapes]

    def step() -> None:
        works = [dist.all_reduce(t, async_op=True) for t in tensors]
        for w in works:
            w.wait()

    times = []
    for i in range(a.warmup + a.iters):
        if i == a.warmup:
            loop_start = time.time()
        t = time.perf_counter()
        step()
        dt = time.perf_counter() - t
        if i == 0:
            for t_ in (tensors[0], tensors[-1]):
                if not bool((t_ == a.n).all()):
                    raise SystemExit(f"wrong all_reduce result: expected {a.n}")
            for t_ in tensors:
                t_.zero_()    # zeros stay zeros: no overflow over many iterations
        if i >= a.warmup:
            times.append(dt)
    loop_end = time.time()
    dist.barrier()
    if a.rank == 0:
        with open(a.out, "w") as f:
            json.dump({"module": f"torch-gloo-{a.mode}", "workers": a.n, "times_s": times,
                       "torch": torch.__version__, "loop_wall": [loop_start, loop_end]}, f)
    dist.destroy_process_group()
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=2)
    p.add_argument("--mode", choices=["bucket", "tensor"], default="bucket")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--out", required=True)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--master", default="127.0.0.1", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.rank >= 0:
        return worker(a)
    port = _free_port()
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "-n", str(a.n),
                               "--mode", a.mode, "--iters", str(a.iters), "--warmup",
                               str(a.warmup), "--out", a.out, "--rank", str(r),
                               "--port", str(port)], env=env) for r in range(a.n)]
    code = 0
    try:
        for proc in procs:
            code = code or proc.wait(timeout=600)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
