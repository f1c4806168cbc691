"""A round streamed in chunks to shards on other nodes (transport.py): the
pushes leave as chunks of whole parts, at most a window of them in flight,
and each chunk's pull is fetched as soon as its shard answers it; results
equal a local store's, and a key whose parts come in different chunks is
copied out whole. (A key half in shared memory, half streamed from another
node: test_dist_relay.py's spread shards; a shard killed while chunks are
in flight: test_dist_faults.py.)"""
from __future__ import annotations

import local_reference
import numpy as np
import pytest
from local_reference import local_sgd, sgd_rounds

from mxkv.kvstore.dist.transport import chunks

ray = pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

# (test workers run in Ray's processes, which cannot import it)
ray.cloudpickle.register_pickle_by_value(local_reference)

# on one machine every shard is on the worker's node: without shared memory
# its pushes and pulls take the streamed path
STREAMED = {"MXKV_SHM": "0", "MXKV_STREAM_CHUNK_BYTES": "2048",
            "MXNET_KVSTORE_BIGARRAY_BOUND": "1000"}
# a big key split over both shards, keys of a chunk each, and small ones that share one
SHAPES = [(60, 50), (600,), (300,), (7,), (3, 3), (1,)]
ROUNDS = 5


# ---------------------------------------------------------------- units
def test_chunks_are_whole_items_of_about_the_limit_in_order():
    assert chunks([1000, 1000, 1000, 100, 5000, 10], 2048) == [(0, 2), (2, 4), (4, 5), (5, 6)]
    assert chunks([5000], 2048) == [(0, 1)]             # an item bigger than a chunk: alone
    assert chunks([10, 20, 30], 0) == [(0, 3)]          # 0: one message
    assert chunks([], 2048) == []
    ranges = chunks(list(range(1, 200)), 500)
    assert [r[0] for r in ranges[1:]] == [r[1] for r in ranges[:-1]]   # contiguous
    assert ranges[0][0] == 0 and ranges[-1][1] == 199


# ---------------------------------------------------------------- jobs
def value(rank, i, shape):
    return np.full(shape, (rank + 1.0) * ((i % 3) + 1.0), np.float32)


def train(kv, mx):
    outs = sgd_rounds(kv, mx, SHAPES, ROUNDS, value)
    sent = [tuple(names) for names in kv._stream.sent] if kv._stream is not None else []
    return outs, sent, _congestions(kv)


def _congestions(kv):
    """The congestion control of each of this worker's bulk connections."""
    from mxkv.kvstore.dist.bulk import congestion_of

    links = kv._transport.links
    clients = [] if links is None else [c for c in links._clients.values() if c is not None]
    return sorted(congestion_of(c.sock) for c in clients if c.sock is not None)


def _cubic_or_the_kernels():
    """What a bulk connection uses by default here (MXKV_BULK_CONGESTION)."""
    import socket

    with socket.socket() as s:
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        except OSError:
            pass
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()


def pulled_into_two_outs(kv, mx):
    keys = list(range(len(SHAPES)))
    kv.init(keys, [mx.nd.array(np.full(s, 1.0, np.float32)) for s in SHAPES])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.01, momentum=0.9))
    outs = [[mx.nd.zeros(s), mx.nd.ones(s) * -1] for s in SHAPES]
    for i in range(ROUNDS):
        kv.push(keys, [mx.nd.array(value(kv.rank, i, s)) for s in SHAPES])
        kv.pull(keys, out=outs)
    return [[o.asnumpy() for o in per_key] for per_key in outs]


def test_a_key_whose_parts_come_in_different_chunks_fills_every_out(jobs):
    # each part is written into the outs as its chunk comes (worker.py)
    job = jobs.job(2, 2)
    want = local_sgd(SHAPES, ROUNDS, value, 2)
    for outs in jobs.run(job, pulled_into_two_outs, env=STREAMED):
        for per_key, w in zip(outs, want):
            for got in per_key:
                np.testing.assert_allclose(got, w, rtol=1e-6)


@pytest.mark.parametrize("transport", ["tcp", "ray"])
@pytest.mark.parametrize("env", [STREAMED, {**STREAMED, "MXKV_STREAM_WINDOW": "1"},
                                 {**STREAMED, "MXKV_STREAM_CHUNK_BYTES": "0"}],
                         ids=["chunks", "window1", "whole"])
def test_a_streamed_round_gives_the_local_stores_values(jobs, env, transport):
    import ray

    job = jobs.job(2, 2)
    results = jobs.run(job, train, env={**env, "MXKV_BULK_TRANSPORT": transport})
    want = local_sgd(SHAPES, ROUNDS, value, 2)
    for outs, _, _ in results:
        for got, w in zip(outs, want):
            np.testing.assert_allclose(got, w, rtol=1e-6)
    # the chunks' bytes came on the workers' TCP connections (bulk.py); a
    # round in one message (no chunks), or MXKV_BULK_TRANSPORT=ray: through Ray
    stats = ray.get([s.stats.remote() for s in job.shards])
    received = [st["bulk_received"] for st in stats]
    if transport == "tcp" and env["MXKV_STREAM_CHUNK_BYTES"] != "0":
        assert all(r >= ROUNDS for r in received), received
        # later rounds' chunks came into the buffers of earlier ones, once
        # summed (bulk.BufferPool), and the values above are still right
        assert all(st["bulk_buffers"]["reused"] > 0 for st in stats), stats
        # both ends of every connection with MXKV_BULK_CONGESTION's default
        cc = _cubic_or_the_kernels()
        assert [st["bulk_congestion"] for st in stats] == [{cc: 2}, {cc: 2}], stats
        assert [r[2] for r in results] == [[cc, cc], [cc, cc]]
    else:
        assert received == [0, 0]
    for _, sent, _ in results:
        per_round = len(sent) // ROUNDS
        if env["MXKV_STREAM_CHUNK_BYTES"] == "0":
            assert sent == []            # one message per shard, sent at once
        else:
            # 2 shards; chunks of about 2 KB: more than one message per shard a round
            assert len(sent) % ROUNDS == 0 and per_round > 2, sent
            # no part twice in a round, and every part of both shards once
            assert sorted(map(str, sum(sent[:per_round], ()))) == \
                sorted(map(str, sum(sent[per_round:2 * per_round], ())))
