"""dist_sync / dist_async / dist_device_sync on a real Ray cluster, workers
in separate processes: results against closed forms and a local store."""
from __future__ import annotations

import os

import numpy as np
import pytest
from dist_waits import wait_for_file, wait_until

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.kvstore.dist.cluster import create_job
from mxkv.kvstore.dist.shm import data_dir

SPLIT = {"MXNET_KVSTORE_BIGARRAY_BOUND": "100"}  # arrays of >= 100 elements are split


# ---------------------------------------------------------------- worker bodies
def sync_rounds(kv, mx, rounds, shapes):
    keys = list(range(len(shapes)))
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    outs = [mx.nd.zeros(s) for s in shapes]
    seen = []
    for i in range(rounds):
        kv.push(keys, [mx.nd.ones(s) * (kv.rank + 1) * (i + 1) for s in shapes])
        kv.pull(keys, out=outs)
        seen.append([float(o.asnumpy().min()) for o in outs] +
                    [float(o.asnumpy().max()) for o in outs])
    return kv.rank, kv.num_workers, kv.type, seen


def multi_device_push(kv, mx):
    kv.init("w", mx.nd.zeros((3, 4)))
    vals = [mx.nd.ones((3, 4), ctx=mx.cpu(d)) * (d + 1) for d in range(3)]
    outs = [mx.nd.zeros((3, 4), ctx=mx.cpu(d)) for d in range(2)]
    kv.pushpull("w", vals, out=outs)
    return [o.asnumpy().tolist() for o in outs]


def pushpull_to_outs_on_several_gpus(kv, mx, shapes):
    from mxkv import context

    context._reset_devices()   # the pool's process may have read the knobs before
    try:
        gpus = [mx.gpu(0), mx.gpu(1)]
        keys = list(range(len(shapes)))
        kv.init(keys, [mx.nd.zeros(s) for s in shapes])
        got = []
        for i in range(2):
            vals = [[mx.nd.ones(s, ctx=g) * (kv.rank + 1) * (d + 1) * (i + 1)
                     for d, g in enumerate(gpus)] for s in shapes]
            # several outs per key: one per GPU, and a second one on gpu(0)
            outs = [[mx.nd.zeros(s, ctx=g) for g in (*gpus, gpus[0])] for s in shapes]
            kv.pushpull(keys, vals, out=outs)
            got.append([[(str(o.context), float(o.asnumpy().min()), float(o.asnumpy().max()))
                         for o in per_key] for per_key in outs])
        return got
    finally:
        context._reset_devices()


def init_from_rank0(kv, mx):
    kv.init(["a", "b"], [mx.nd.ones((2, 2)) * (kv.rank + 7), mx.nd.ones((300,)) * (kv.rank + 1)])
    a, b = mx.nd.zeros((2, 2)), mx.nd.zeros((300,))
    kv.pull(["a", "b"], out=[a, b])
    return a.asnumpy().tolist(), float(b.asnumpy().min()), float(b.asnumpy().max())


def optimizer_rounds(kv, mx, rounds, shapes, seed):
    keys = list(range(len(shapes)))
    rng = np.random.RandomState(seed)
    grads = [[[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(2)]
             for _ in range(rounds)]
    kv.init(keys, [mx.nd.array(np.full(s, 0.5, np.float32)) for s in shapes])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    outs = [mx.nd.zeros(s) for s in shapes]
    for i in range(rounds):
        kv.push(keys, [mx.nd.array(g) for g in grads[i][kv.rank]])
        kv.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def async_sgd(kv, mx, pushes):
    kv.init(5, mx.nd.ones((4,)) * 10)
    try:
        kv.push(5, mx.nd.ones((4,)))
        refused = None
    except MXNetError as exc:
        refused = str(exc)
    kv._barrier()
    if kv.rank == 0:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv._barrier()
    out = mx.nd.zeros((4,))
    mine = []
    for _ in range(pushes):
        kv.push(5, mx.nd.ones((4,)) * (kv.rank + 1))
        kv.pull(5, out=out)
        mine.append(float(out.asnumpy()[0]))
    kv._barrier()
    kv.pull(5, out=out)
    return refused, mine, out.asnumpy().tolist()


def compressed_rounds(kv, mx, rounds, shape):
    kv.init(0, mx.nd.zeros(shape))
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    rng = np.random.RandomState(100 + kv.rank)
    out = mx.nd.zeros(shape)
    got = []
    for _ in range(rounds):
        kv.push(0, mx.nd.array(rng.uniform(-1, 1, shape).astype(np.float32)))
        kv.pull(0, out=out)
        got.append(out.asnumpy())
    return got


def row_sparse(kv, mx):
    shape = (6, 2)
    kv.init("e", mx.nd.zeros(shape).tostype("row_sparse"))
    rows = [0, 2] if kv.rank == 0 else [2, 5]
    data = np.zeros(shape, np.float32)
    data[rows] = kv.rank + 1
    kv.push("e", mx.nd.array(data).tostype("row_sparse"))
    out = mx.nd.sparse.zeros("row_sparse", shape)
    kv.row_sparse_pull("e", out=out, row_ids=mx.nd.array([5, 0, 2, 2], dtype="int64"))
    try:
        kv.pull("e", out=mx.nd.zeros(shape))
        pull_error = None
    except MXNetError as exc:
        pull_error = str(exc)
    return out.asnumpy().tolist(), out.indices.asnumpy().tolist(), pull_error


def cluster_calls(kv, mx):
    kv._barrier()
    info = (kv.rank, kv.num_workers, kv.num_dead_node(4, 60), kv.is_capable("optimizer"))
    kv.init(1, mx.nd.zeros((2,)))
    if kv.rank == 0:
        import pickle
        kv._send_command_to_servers(0, pickle.dumps(mx.optimizer.SGD(learning_rate=1.0),
                                                    0).decode("latin-1"))
    kv._barrier()
    kv.push(1, mx.nd.ones((2,)))
    out = mx.nd.zeros((2,))
    kv.pull(1, out=out)
    errors = []
    for bad in (lambda: kv.pull(99, out=mx.nd.zeros((2,))),
                lambda: kv.push(1, mx.nd.ones((3,))),
                lambda: kv.pull(1, out=mx.nd.zeros((2,)), ignore_sparse=False),
                lambda: kv.init(1, mx.nd.zeros((2,)))):
        try:
            bad()
            errors.append(None)
        except MXNetError as exc:
            errors.append(str(exc))
    return info, out.asnumpy().tolist(), errors


def save_states(kv, mx, path, shapes):
    keys = list(range(len(shapes)))
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    outs = [mx.nd.zeros(s) for s in shapes]
    for i in range(3):
        kv.push(keys, [mx.nd.ones(s) * (i + 1) for s in shapes])
    kv.pull(keys, out=outs)
    kv._barrier()
    if kv.rank == 0:
        kv.save_optimizer_states(path, dump_optimizer=True)
    kv._barrier()
    kv.push(keys, [mx.nd.ones(s) for s in shapes])
    kv.pull(keys, out=outs)
    kv._barrier()
    if kv.rank == 1:
        kv.load_optimizer_states(path)   # back to the saved momentum
    kv._barrier()
    kv.push(keys, [mx.nd.ones(s) for s in shapes])
    kv.pull(keys, out=outs)
    return [o.asnumpy() for o in outs]


def p3_order(kv, mx):
    shapes = [(250,), (90,), (400,)]
    kv.init([0, 1, 2], [mx.nd.zeros(s) for s in shapes])
    kv._sender.hold()
    for k, prio in ((0, -3), (1, -1), (2, -2)):
        kv.push(k, mx.nd.ones(shapes[k]) * (kv.rank + 1), priority=prio)
    outs = [mx.nd.zeros(s) for s in shapes]
    kv.pull([0, 1, 2], out=outs)  # releases the queue, highest priority first
    errors = []
    for bad in (lambda: kv.set_optimizer(mx.optimizer.SGD()),
                lambda: kv.set_gradient_compression({"type": "2bit"}),
                lambda: kv.push(0, mx.nd.ones((250,)), priority="a"),
                lambda: kv.pushpull(0, mx.nd.ones((250,)), priority=1.5),
                lambda: kv.pull(0, out=mx.nd.ones((250,)), priority=None)):
        try:
            bad()
            errors.append(None)
        except MXNetError as exc:
            errors.append(str(exc))
    sent = [int(str(name).split("#")[0]) for names in kv._sender.sent for name in names]
    return [float(o.asnumpy().min()) for o in outs], errors, sent


def p3_overtake(kv, mx, flag, look):
    """Rank 0 fills its window with a push the shard must hold (round 2 of
    'b' before rank 1 has pushed round 1), queues six low-priority pushes,
    then one high-priority push, looks which of them reached the shard (up
    to ``look`` s after the first did: on a loaded machine even the first
    may take a while), then lets rank 1 release 'b'."""
    import time

    import ray

    lows = [f"l{i}" for i in range(6)]
    keys = ["b"] + lows + ["h"]
    kv.init(keys, [mx.nd.zeros((1000,)) for _ in keys])
    one = mx.nd.ones((1000,))
    early = None
    if kv.rank == 0:
        kv.push("b", one, priority=0)      # round 1: pending until rank 1 pushes
        kv.push("b", one, priority=10)     # round 2: the shard holds it
        for k in lows:
            kv.push(k, one, priority=-1)
        kv.push("h", one, priority=5)      # pushed last
        first = None
        give_up = time.monotonic() + 240
        while True:
            early = sorted({str(n).split("#")[0] for r, n in
                            ray.get(kv._chan.shards[0].stats.remote())["arrivals"] if r == 0})
            now = time.monotonic()
            first = first if first is not None or not early else now
            if len(early) == 8 or (first is not None and now - first > look) or now > give_up:
                break
            time.sleep(0.05)
        open(flag, "w").close()
    else:
        wait_for_file(flag, "rank 0 to queue its pushes")
        kv.push("b", one)
        kv.push(keys, [one] * len(keys))
    outs = [mx.nd.zeros((1000,)) for _ in keys]
    kv.pull(keys, out=outs)
    return [float(o.asnumpy().min()) for o in outs], early


# ---------------------------------------------------------------- tests
def test_sync_rounds_equal_the_closed_form_sums(jobs):
    job = jobs.job(3, 2)
    shapes = [(2, 3), (10,), (7, 50), (1,)]   # (7, 50) is split over both shards
    results = jobs.run(job, sync_rounds, 12, shapes, env=SPLIT)
    assert [r[0] for r in results] == [0, 1, 2]
    for rank, num, kind, seen in results:
        assert (num, kind) == (3, "dist_sync")
        for i, row in enumerate(seen):
            assert row == [6.0 * (i + 1)] * (2 * len(shapes)), (rank, i, row)


def test_big_arrays_are_split_over_every_shard(jobs):
    import ray

    job = jobs.job(1, 3)
    jobs.run(job, sync_rounds, 2, [(3000,), (5,), (6,), (7,)], env=SPLIT)
    stats = ray.get([s.stats.remote() for s in job.shards])
    holders = [sorted(s["rounds"]) for s in stats]
    assert all(0 in h for h in holders)            # key 0 has a part on every shard
    assert sum(len(h) for h in holders) == 3 + 3   # keys 1..3 live whole on one shard each
    assert all(s["rounds"][0] == 2 for s in stats)


def test_a_worker_that_would_split_keys_otherwise_cannot_join(jobs):
    import ray

    def joined(kv, mx):
        return kv.rank

    job = jobs.job(2, 2)
    first, second = jobs.pool(2)
    # the first to join sets the job's layout; the other, with another bound, is refused
    ray.get(jobs.submit(job, joined, env=SPLIT, workers=[first], ranks=[0]), timeout=120)
    with pytest.raises(ray.exceptions.RayTaskError) as err:
        ray.get(jobs.submit(job, joined, env={"MXNET_KVSTORE_BIGARRAY_BOUND": "1000"},
                            workers=[second], ranks=[1]), timeout=120)
    msg = str(err.value.cause)
    assert isinstance(err.value.cause, MXNetError), err.value
    assert "cannot join job" in msg and "MXNET_KVSTORE_BIGARRAY_BOUND=1000," in msg, msg
    assert "MXNET_KVSTORE_BIGARRAY_BOUND=100," in msg, msg


def test_device_sync_merges_a_workers_devices_before_sending(jobs):
    job = jobs.job(2, 1)
    results = jobs.run(job, multi_device_push, kind="dist_device_sync")
    for outs in results:
        assert outs == [[[12.0] * 4] * 3] * 2   # (1+2+3) per worker, 2 workers


def test_device_sync_pushpull_fills_several_outs_on_several_gpus(jobs):
    # (2, 3) lives whole on one shard; (40, 5) (200 >= 100 elements) is split over both
    shapes = [(2, 3), (40, 5)]
    job = jobs.job(2, 2)
    results = jobs.run(job, pushpull_to_outs_on_several_gpus, shapes, kind="dist_device_sync",
                       env={**SPLIT, "MXKV_SIMULATE_GPUS": "2"})
    for got in results:
        for i, per_key in enumerate(got):
            # each round: workers 1 and 2 push (1 + 2) * (i + 1) each, stored as the sum
            want = 9.0 * (i + 1)
            for outs in per_key:
                assert [c for c, _, _ in outs] == ["gpu(0)", "gpu(1)", "gpu(0)"]
                assert all(lo == hi == want for _, lo, hi in outs), (i, outs)


def test_init_takes_rank_0s_values(jobs):
    job = jobs.job(2, 2)
    for a, lo, hi in jobs.run(job, init_from_rank0, env=SPLIT):
        assert a == [[7.0, 7.0], [7.0, 7.0]]
        assert lo == hi == 1.0


def push_the_same_array_three_times(kv, mx):
    kv.init("p", mx.nd.zeros((3,)))
    a = mx.nd.ones((3,)) * (kv.rank + 1)
    pulled = []
    for _ in range(3):
        kv.push("p", a)
        o = mx.nd.zeros((3,))
        kv.pull("p", out=o)
        pulled.append(float(o.asnumpy()[0]))
    return pulled, a.asnumpy().tolist()


def test_a_pull_never_writes_into_the_pushed_array(jobs):
    # A deviation (docs/parity.md): MXNet's dist stores pull into the array a
    # one-device push handed over, so pushing it again sends the last pull
    # (3, 6, 12 with 2 workers); mxkv's pushed array stays what it was.
    job = jobs.job(2, 1)
    for rank, (pulled, a) in enumerate(jobs.run(job, push_the_same_array_three_times)):
        assert pulled == [3.0, 3.0, 3.0]
        assert a == [rank + 1.0] * 3


def test_optimizer_on_the_servers_equals_a_local_store(jobs):
    shapes = [(3, 4), (200,), (5,)]
    job = jobs.job(2, 2)
    results = jobs.run(job, optimizer_rounds, 6, shapes, 3, env=SPLIT)
    rng = np.random.RandomState(3)
    grads = [[[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(2)]
             for _ in range(6)]
    local = mx.kv.create("local")
    keys = list(range(len(shapes)))
    local.init(keys, [mx.nd.array(np.full(s, 0.5, np.float32)) for s in shapes])
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    for i in range(6):
        local.push(keys, [[mx.nd.array(grads[i][0][k]), mx.nd.array(grads[i][1][k])]
                          for k in keys])
    expect = [mx.nd.zeros(s) for s in shapes]
    local.pull(keys, out=expect)
    for outs in results:
        for got, want in zip(outs, expect):
            np.testing.assert_array_equal(got, want.asnumpy())


# the data path to a shard on another node, taken here: no shared memory,
# each round's messages in chunks of a part or two (transport.py)
STREAMED = {"MXKV_SHM": "0", "MXKV_STREAM_CHUNK_BYTES": "64"}


@pytest.mark.parametrize("path", ["default", "streamed"])
def test_async_applies_each_push_and_needs_an_optimizer(jobs, path):
    job = jobs.job(2, 1)
    results = jobs.run(job, async_sgd, 5, kind="dist_async",
                       env=STREAMED if path == "streamed" else None)
    for refused, _, final in results:
        assert refused is not None and "set_optimizer" in refused
        assert final == [10 - 0.5 * 5 * (1 + 2)] * 4
    # each pull sees at least this worker's own pushes applied
    for rank, (_, mine, _) in enumerate(results):
        for i, v in enumerate(mine):
            assert v <= 10 - 0.5 * (rank + 1) * (i + 1) + 1e-6


@pytest.mark.parametrize("path", ["default", "streamed"])
def test_two_bit_compression_on_the_wire(jobs, path):
    from mxkv.kvstore.compression import GradientCompression

    shape = (40, 30)   # split over both shards: each part quantized apart
    job = jobs.job(2, 2)
    results = jobs.run(job, compressed_rounds, 3, shape,
                       env={**SPLIT, **(STREAMED if path == "streamed" else {})})
    gc = GradientCompression.create({"type": "2bit", "threshold": 0.5})
    rngs = [np.random.RandomState(100 + r) for r in range(2)]
    res = [np.zeros(shape, np.float32) for _ in range(2)]
    for i in range(3):
        total = np.zeros(shape, np.float32)
        for r in range(2):
            g = rngs[r].uniform(-1, 1, shape).astype(np.float32)
            total += gc.dequantize(gc.quantize(g, res[r]), np.empty(shape, np.float32))
        for got in results:
            np.testing.assert_array_equal(got[i], total)
    assert set(np.unique(results[0][0])) <= {-1.0, -0.5, 0.0, 0.5, 1.0}


@pytest.mark.parametrize("path", ["default", "streamed"])
def test_row_sparse_push_and_row_sparse_pull(jobs, path):
    job = jobs.job(2, 2)
    for dense, idx, pull_error in jobs.run(job, row_sparse, env={
            "MXNET_KVSTORE_BIGARRAY_BOUND": "4", **(STREAMED if path == "streamed" else {})}):
        assert idx == [0, 2, 5]
        assert dense == [[1, 1], [0, 0], [3, 3], [0, 0], [0, 0], [2, 2]]
        assert "row_sparse_pull" in pull_error


def test_barrier_ranks_commands_and_errors(jobs):
    job = jobs.job(2, 1)
    results = jobs.run(job, cluster_calls)
    assert [r[0][0] for r in results] == [0, 1]
    for (_, num, dead, capable), out, errors in results:
        assert (num, dead, capable) == (2, 0, True)
        assert out == [-2.0, -2.0]     # SGD(lr=1) from command 0, the sum of 2 pushes
        assert "99" in errors[0] and "not been initialized" in errors[0]
        assert "(3,)" in errors[1] and "(2,)" in errors[1]
        assert "ignore_sparse" in errors[2]
        assert "duplicate init" in errors[3]


def close_times(kv, mx, barrier_before_exit, closed):
    """Rank 1 starts to close once rank 0 waits at the exit barrier or has
    closed (then it wrote the file ``closed``), whichever comes first."""
    import os
    import time

    import ray

    kv.init(0, mx.nd.zeros((2,)))
    kv._barrier()                 # both ranks start from here
    kv.set_barrier_before_exit(barrier_before_exit)
    if kv.rank == 1:
        wait_until(lambda: os.path.exists(closed) or
                   0 in ray.get(kv._coord.info.remote())["at_barrier"],
                   "rank 0 to wait at the exit barrier or to close")
    start = time.time()
    kv.close()
    end = time.time()
    if kv.rank == 0:
        open(closed, "w").close()
    return kv.rank, start, end


@pytest.mark.parametrize("barrier_before_exit", [True, False])
def test_close_meets_the_other_workers_unless_told_not_to(jobs, tmp_path, barrier_before_exit):
    job = jobs.job(2, 1)
    (_, _, end0), (_, start1, _) = jobs.run(job, close_times, barrier_before_exit,
                                            str(tmp_path / "rank-0-closed"))
    if barrier_before_exit:
        assert end0 >= start1     # rank 0 waited at the exit barrier for rank 1
    else:
        assert end0 < start1      # rank 0 left without waiting


def test_a_job_that_cannot_start_removes_what_it_made_and_nothing_of_another(jobs):
    ray = pytest.importorskip("ray")
    first = jobs.job(1, 1)
    os.makedirs(data_dir(first.name), mode=0o700, exist_ok=True)   # as its first push would
    made = []
    with pytest.raises(ValueError, match=first.name):   # its coordinator's name is taken
        create_job(1, 1, name=first.name, made=made.append)
    assert len(made) == 1 and made[0] != first.checkpoint_dir
    assert not os.path.exists(made[0])                  # the new job's own directory: gone
    assert os.path.isdir(first.checkpoint_dir) and os.path.isdir(data_dir(first.name))
    assert ray.get(first.coordinator.info.remote(), timeout=30)["num_workers"] == 1


def test_optimizer_states_round_trip_through_a_file(jobs, tmp_path):
    shapes = [(4, 30), (3,)]
    job = jobs.job(2, 2)
    path = str(tmp_path / "states")
    results = jobs.run(job, save_states, path, shapes, env=SPLIT)
    # the file is a local store's: load it into one and replay the last step
    local = mx.kv.create("local")
    local.init([0, 1], [mx.nd.zeros(s) for s in shapes])
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    local.load_optimizer_states(path)
    state = local._updater.states[0]
    # momentum after pushes of 2, 4, 6 (two workers): -(0.1*6 + 0.9*(0.1*4 + 0.9*0.1*2))
    np.testing.assert_allclose(state.asnumpy(), np.full((4, 30), -1.122, np.float32),
                               rtol=1e-6)
    # after the reload, both workers' last step repeated the 4th step from the saved state
    for outs in results:
        np.testing.assert_allclose(outs[0], outs[0][0, 0])
    w3 = -(0.1 * 2) + -(0.1 * 4 + 0.9 * 0.2) + -1.122
    step4 = 0.9 * -1.122 - 0.1 * 2
    assert results[0][0][0, 0] == pytest.approx(w3 + step4 + step4, rel=1e-5)


def test_p3_sends_in_priority_order_and_refuses_what_mxnet_refuses(jobs):
    import ray

    job = jobs.job(2, 2, p3=True)
    results = jobs.run(job, p3_order, env={"MXNET_KVSTORE_SLICE_THRESHOLD": "100"})
    for mins, errors, sent in results:
        assert mins == [3.0, 3.0, 3.0]
        assert "P3" in errors[0] and "P3" in errors[1]
        # a priority that is not an int: refused (TypeError, as MXNet), nothing sent
        assert all("priority must be an int" in e for e in errors[2:]), errors
        # What P3 orders is when messages leave the worker: every slice of
        # key 1 (priority -1), then key 2 (-2), then key 0 (-3). 250, 90 and
        # 400 elements in slices of 100 are 3, 1 and 4 slices.
        assert sent[-8:] == [1] + [2] * 4 + [0] * 3, sent
    # Every slice reached a shard (a shard is an async actor: it may start
    # concurrent pushes in another order, as a network may deliver them).
    arrived = [str(n) for s in ray.get([s.stats.remote() for s in job.shards])
               for _, n in s["arrivals"]]
    for key, slices in ((0, 3), (1, 1), (2, 4)):
        names = {n for n in arrived if n.split("#")[0] == str(key)}
        assert len(names) == slices, (key, sorted(names))


@pytest.mark.parametrize("window", ["4000", "0"])
def test_a_p3_push_of_high_priority_overtakes_queued_ones_at_the_shard(jobs, tmp_path, window):
    import ray

    job = jobs.job(2, 1, p3=True)
    held = window == "4000"
    (values, early), (values1, _) = jobs.run(job, p3_overtake, str(tmp_path / "queued"),
                                            1.0 if held else 60.0,
                                            env={"MXKV_P3_WINDOW_BYTES": window})
    assert values == values1 == [2.0] * 8
    arrived = [str(n).split("#")[0] for rank, n in
               ray.get(job.shards[0].stats.remote())["arrivals"] if rank == 0]
    lows = [f"l{i}" for i in range(6)]
    if held:
        # one push (4000 bytes) in flight at a time: the six low-priority pushes
        # waited while 'b' was held, and 'h' left first once 'b' was answered
        assert early == ["b"], early
        assert arrived == ["b", "b", "h"] + lows, arrived
    else:
        # no window: every push was on its way at once, and the six reached the
        # shard while 'b' was held, before 'h' could overtake them
        assert early == ["b", "h"] + lows, early
        assert arrived[-1] == "b", arrived


def test_p3_refuses_async(jobs):
    job = jobs.job(1, 1, p3=True)
    with pytest.raises(Exception, match="P3"):
        jobs.run(job, sync_rounds, 1, [(2,)], kind="dist_async")


def custom_updater(kv, mx):
    def double_step(key, merged, stored):
        stored += merged * 2

    kv.init("u", mx.nd.ones((3,)))
    kv._set_updater(double_step)
    out = mx.nd.zeros((3,))
    kv.pushpull("u", mx.nd.ones((3,)), out=out)
    return out.asnumpy().tolist()


def test_set_updater_ships_the_function_to_the_servers(jobs):
    job = jobs.job(2, 2)
    assert jobs.run(job, custom_updater) == [[5.0, 5.0, 5.0]] * 2   # 1 + 2 * (1 + 1)


def held_update(kv, mx, started, go):
    import os
    import time

    def held(key, merged, stored):
        open(started, "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(go):    # held until the test has asked the shard
            assert time.monotonic() < deadline, "never let go"
            time.sleep(0.01)
        stored += merged

    kv.init("h", mx.nd.ones((4,)))
    kv._set_updater(held)
    out = mx.nd.zeros((4,))
    kv.pushpull("h", mx.nd.ones((4,)) * 2, out=out)
    return out.asnumpy().tolist()


def test_a_round_is_summed_off_the_shards_event_loop(jobs, tmp_path):
    # while a round's update runs on the shard, the shard still answers
    # other calls: with the update on the event loop, stats() would wait
    # for it, and the update waits for the test, which waits for stats()
    import ray

    job = jobs.job(1, 1)
    started, go = str(tmp_path / "started"), str(tmp_path / "go")
    [ref] = jobs.submit(job, held_update, started, go)
    wait_for_file(started, "the update to start on the shard")
    stats = ray.get(job.shards[0].stats.remote(), timeout=60)
    assert stats["rounds"]["h"] == 0          # the round is not done while it is summed
    open(go, "w").close()
    assert ray.get(ref, timeout=120) == [3.0] * 4
    assert ray.get(job.shards[0].stats.remote(), timeout=60)["rounds"]["h"] == 1


def threaded_pushes(kv, mx, threads, calls):
    """``threads`` threads of one worker push one shared key and a key each."""
    import threading

    def add(key, merged, stored):
        stored += merged

    own = [f"k{i}" for i in range(threads)]
    kv.init(["one"] + own, [mx.nd.zeros((64,)) for _ in range(threads + 1)])
    kv._set_updater(add)
    errors = []

    def work(i):
        try:
            g, out = mx.nd.ones((64,)), mx.nd.zeros((64,))
            for j in range(calls):
                kv.push("one", g)
                kv.push(own[i], g)
                kv.pull(own[i], out=out)
                a = out.asnumpy()
                if not a.min() == a.max() == j + 1:
                    errors.append((i, j, float(a.min()), float(a.max())))
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(repr(exc))

    ts = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    alive = sum(t.is_alive() for t in ts)
    out = mx.nd.zeros((64,))
    kv.pull("one", out=out)
    return errors, alive, float(out.asnumpy().min()), float(out.asnumpy().max())


def test_threads_of_one_worker_push_and_pull_atomically(jobs):
    # 8 threads of one worker: each key's pushes are applied once each, in
    # order, and a thread's pull after its push sees it (dist_sync, 1 worker).
    job = jobs.job(1, 2)
    (errors, alive, lo, hi), = jobs.run(job, threaded_pushes, 8, 25)
    assert errors == [] and alive == 0
    assert lo == hi == 8 * 25
