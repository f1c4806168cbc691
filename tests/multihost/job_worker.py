"""A worker of the two-host job (test_multihost_job.py): SGD with momentum
on the servers, a big key split over both shards and small ones; saves its
pulls and its host's name to OUTDIR/rank<R>.npz."""
import socket
import sys

import numpy as np

import mxkv as mx

SHAPES = [(1100, 1000), (30, 10), (7,)]
ROUNDS = 5


def value(rank, i, shape):
    return np.full(shape, (rank + 1.0) * ((i % 3) + 1.0), np.float32)


def main(outdir):
    kv = mx.kv.create("dist_sync")
    keys = list(range(len(SHAPES)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in SHAPES]
    for i in range(ROUNDS):
        kv.push(keys, [mx.nd.array(value(kv.rank, i, s)) for s in SHAPES])
        kv.pull(keys, out=outs)
    np.savez(f"{outdir}/rank{kv.rank}.npz", host=socket.gethostname(),
             **{f"k{k}": o.asnumpy() for k, o in zip(keys, outs)})
    kv._barrier()


if __name__ == "__main__":
    main(sys.argv[1])
