"""A worker of the jobs on emulated hosts (tests/multihost): SGD with
momentum on the servers, a big key split over both shards and small ones;
saves its pulls and its host's name to OUTDIR/rank<R>.npz. Also what the
tests check them against (:func:`check_pulls`).

``job_worker.py OUTDIR [ROUNDS PAUSE_AT]``: after round PAUSE_AT each rank
writes OUTDIR/ready-<rank> and waits for OUTDIR/go (the fault tests strike
then); OUTDIR/times-<rank> gets the wall time each round ended."""
import os
import socket
import sys
import time

import numpy as np

import mxkv as mx

SHAPES = [(1100, 1000), (30, 10), (7,)]
ROUNDS = 5


def value(rank, i, shape):
    return np.full(shape, (rank + 1.0) * ((i % 3) + 1.0), np.float32)


def check_pulls(out, workers, rounds=ROUNDS):
    """Every rank's pulls equal a local store's; returns each rank's host."""
    from local_reference import local_sgd  # (tests/: on the tests' path)

    want = local_sgd(SHAPES, rounds, value, workers)
    hosts = []
    for rank in range(workers):
        got = np.load(os.path.join(out, f"rank{rank}.npz"))
        hosts.append(str(got["host"]))
        for k, w in enumerate(want):
            np.testing.assert_allclose(got[f"k{k}"], w, rtol=1e-6, err_msg=f"key {k}")
    return hosts


def wait_for(path, timeout=300):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"{path} did not appear in {timeout} s")
        time.sleep(0.05)


def main(outdir, rounds=ROUNDS, pause_at=None):
    kv = mx.kv.create("dist_sync")
    keys = list(range(len(SHAPES)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in SHAPES]
    times = open(f"{outdir}/times-{kv.rank}", "w")
    for i in range(rounds):
        kv.push(keys, [mx.nd.array(value(kv.rank, i, s)) for s in SHAPES])
        kv.pull(keys, out=outs)
        outs[0].wait_to_read()
        print(time.time(), file=times, flush=True)
        if i == pause_at:
            open(f"{outdir}/ready-{kv.rank}", "w").close()
            wait_for(f"{outdir}/go")
    np.savez(f"{outdir}/rank{kv.rank}.npz", host=socket.gethostname(),
             **{f"k{k}": o.asnumpy() for k, o in zip(keys, outs)})
    kv._barrier()


if __name__ == "__main__":
    main(sys.argv[1], *[int(a) for a in sys.argv[2:4]])
