"""The reference the distributed tests compare against: what a local store
holds after the same rounds of pushes (each round's pushes of every worker
summed, as ``dist_sync`` does) with SGD and momentum on it."""
import numpy as np

import mxkv as mx


def local_sgd(shapes, rounds, value, workers):
    """The values of keys ``0..len(shapes)-1`` (initialised to ones) after
    ``rounds`` rounds in which worker ``r`` pushes ``value(r, i, shape)`` in
    round ``i``, on a local store with ``SGD(learning_rate=0.01,
    momentum=0.9)``: a list of numpy arrays."""
    local = mx.kv.create("local")
    keys = list(range(len(shapes)))
    local.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in shapes])
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    for i in range(rounds):
        local.push(keys, [[mx.nd.array(value(r, i, s)) for r in range(workers)]
                          for s in shapes])
    outs = [mx.nd.zeros(s) for s in shapes]
    local.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def sgd_rounds(kv, mx, shapes, rounds, value):
    """On a dist store ``kv``: keys ``0..len(shapes)-1`` initialised to
    ones, SGD as :func:`local_sgd` on the servers, ``rounds`` rounds of
    pushing ``value(kv.rank, i, shape)`` and pulling; the pulled values."""
    keys = list(range(len(shapes)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in shapes])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in shapes]
    for i in range(rounds):
        kv.push(keys, [mx.nd.array(value(kv.rank, i, s)) for s in shapes])
        kv.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]
