"""One store, many threads (DESIGN decision 10): every call is atomic per key,
different keys proceed in parallel, nothing deadlocks.

Each test runs 8 Python threads on one store and checks closed-form totals,
that no pull sees half a push, and that a thread's pull after its own push
sees at least that push. Threads run under a timeout: a deadlock fails the
test instead of hanging it.
"""
import sys
import threading

import numpy as np
import pytest

import mxkv as mx

THREADS = 8
TIMEOUT = 120  # seconds for a whole test's threads: a deadlock fails, never hangs
SHAPE = (512, 512)


@pytest.fixture(autouse=True)
def frequent_switches():
    """Switch threads every 10 us instead of 5 ms, so races show up within a test."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def run_threads(target, n=THREADS, args=lambda i: (i,)):
    """Run ``target(*args(i))`` on ``n`` threads; re-raise the first failure;
    fail if any thread is still running after TIMEOUT (a deadlock)."""
    errors = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait(TIMEOUT)
            target(*args(i))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"threads still running after {TIMEOUT} s (deadlock?): {alive}"
    if errors:
        raise errors[0]


def additive(key, grad, weight):
    weight += grad


def pulled(kv, key, shape=SHAPE):
    out = mx.nd.zeros(shape)
    kv.pull(key, out=out)
    return out.asnumpy()


@pytest.mark.parametrize("store", ["local", "device"])
def test_one_key_additive_updater_loses_no_update(store):
    kv = mx.kv.create(store)
    kv.init(0, mx.nd.zeros(SHAPE))
    kv._set_updater(additive)
    calls = 150

    def work(i):
        g = mx.nd.ones(SHAPE)
        for _ in range(calls):
            kv.push(0, g)

    run_threads(work)
    total = pulled(kv, 0)
    assert total.min() == total.max() == THREADS * calls


def test_two_device_pushes_count_every_device():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE))
    kv._set_updater(additive)
    calls = 100

    def work(i):
        grads = [mx.nd.ones(SHAPE, ctx=mx.cpu(d)) for d in range(2)]
        for _ in range(calls):
            kv.push(0, grads)

    run_threads(work)
    total = pulled(kv, 0)
    assert total.min() == total.max() == 2 * THREADS * calls


@pytest.mark.parametrize("devices", [1, 2])
def test_pulls_beside_pushes_are_never_torn(devices):
    # Each pusher stores its own constant array (a sum of `devices` copies),
    # so a whole push leaves every element equal; a torn pull would not.
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE))
    stop = threading.Event()
    pulls = 200
    torn = []

    def work(i):
        if i % 2 == 0:  # pushers
            vals = [mx.nd.ones(SHAPE, ctx=mx.cpu(d)) * (i + 1) for d in range(devices)]
            while not stop.is_set():
                kv.push(0, vals if devices > 1 else vals[0])
            return
        out = mx.nd.zeros(SHAPE)
        try:
            for _ in range(pulls):
                kv.pull(0, out=out)
                a = out.asnumpy()
                if a.min() != a.max():
                    torn.append((a.min(), a.max()))
        finally:
            stop.set()

    run_threads(work)
    assert torn == []


def test_distinct_keys_give_exact_totals_and_per_thread_order():
    kv = mx.kv.create("local")
    kv.init(list(range(THREADS)), [mx.nd.zeros((64, 64)) for _ in range(THREADS)])
    kv._set_updater(additive)
    calls = 300

    def work(i):
        g = mx.nd.ones((64, 64))
        out = mx.nd.zeros((64, 64))
        for j in range(calls):
            kv.push(i, g)
            kv.pull(i, out=out)
            a = out.asnumpy()
            # only this thread pushes key i: it sees exactly its own pushes
            assert a.min() == a.max() == j + 1, (i, j, a.min(), a.max())

    run_threads(work)
    for i in range(THREADS):
        assert pulled(kv, i, (64, 64)).max() == calls


def test_a_threads_pull_after_its_push_sees_at_least_its_pushes():
    kv = mx.kv.create("local")
    kv.init("k", mx.nd.zeros((128, 128)))
    kv._set_updater(additive)
    calls = 300

    def work(i):
        g, out = mx.nd.ones((128, 128)), mx.nd.zeros((128, 128))
        last = 0.0
        for j in range(calls):
            if j % 2:
                kv.pushpull("k", g, out=out)
            else:
                kv.push("k", g)
                kv.pull("k", out=out)
            a = out.asnumpy()
            assert a.min() == a.max(), "torn"
            seen = float(a.flat[0])
            assert seen >= j + 1, (i, j, seen)   # includes this thread's own pushes
            assert seen >= last, (i, j, seen, last)  # and never goes back
            last = seen

    run_threads(work)
    assert pulled(kv, "k", (128, 128)).max() == THREADS * calls


def test_batched_calls_in_opposite_orders_do_not_deadlock():
    keys = [f"k{i}" for i in range(20)]
    kv = mx.kv.create("local")
    kv.init(keys, [mx.nd.zeros((16,)) for _ in keys])
    kv._set_updater(additive)
    calls = 200

    def work(i):
        order = keys if i % 2 else keys[::-1]
        sub = order[i % 5:] if i < 4 else order
        grads = [mx.nd.ones((16,)) for _ in sub]
        outs = [mx.nd.zeros((16,)) for _ in sub]
        for _ in range(calls):
            kv.push(sub, grads)
            kv.pull(sub, out=outs)

    run_threads(work)
    totals = {k: pulled(kv, k, (16,))[0] for k in keys}
    expected = {k: 0 for k in keys}
    for i in range(THREADS):
        order = keys if i % 2 else keys[::-1]
        for k in (order[i % 5:] if i < 4 else order):
            expected[k] += calls
    assert totals == expected


def test_a_batch_is_atomic_per_key():
    # Pushers store (i, i, ..., i) into every key of a batch at once; a pull
    # of the batch sees, for each key, one whole push.
    keys = list(range(6))
    kv = mx.kv.create("local")
    kv.init(keys, [mx.nd.zeros((300, 300)) for _ in keys])
    stop = threading.Event()

    def work(i):
        if i < 4:
            vals = [[mx.nd.ones((300, 300), ctx=mx.cpu(d)) * (i + 1) for d in range(2)]
                    for _ in keys]
            while not stop.is_set():
                kv.push(keys, vals)
            return
        outs = [mx.nd.zeros((300, 300)) for _ in keys]
        try:
            for _ in range(100):
                kv.pull(keys, out=outs)
                for o in outs:
                    a = o.asnumpy()
                    assert a.min() == a.max(), "a pull saw part of a push"
        finally:
            stop.set()

    run_threads(work)


def test_different_keys_proceed_in_parallel():
    # An updater blocked on key 'slow' must not hold up a push to key 'fast'.
    kv = mx.kv.create("local")
    kv.init(["slow", "fast"], [mx.nd.zeros((4,)), mx.nd.zeros((4,))])
    entered, release = threading.Event(), threading.Event()

    def updater(key, grad, weight):
        if key == "slow":
            entered.set()
            assert release.wait(TIMEOUT)
        weight += grad

    kv._set_updater(updater)
    slow = threading.Thread(target=kv.push, args=("slow", mx.nd.ones((4,))), daemon=True)
    slow.start()
    assert entered.wait(TIMEOUT)
    done = threading.Event()

    def fast():
        kv.push("fast", mx.nd.ones((4,)))
        kv.pull("fast", out=out)
        done.set()

    out = mx.nd.zeros((4,))
    t = threading.Thread(target=fast, daemon=True)
    t.start()
    finished = done.wait(TIMEOUT)
    release.set()
    slow.join(TIMEOUT)
    t.join(TIMEOUT)
    assert finished, "a push to another key waited for the blocked one"
    assert out.asnumpy().tolist() == [1.0] * 4
    assert pulled(kv, "slow", (4,)).tolist() == [1.0] * 4


def test_copy_on_write_pushes_beside_writers_and_pulls():
    # One-device pushes of big arrays are shared copy-on-write. Each thread
    # rewrites its array (which makes the store copy first), pushes it, and
    # pulls: it must see exactly what it pushed; readers of the other keys
    # never see a half-rewritten array.
    n = THREADS
    kv = mx.kv.create("local")
    shape = (256, 256)  # 256 KiB: shared, not copied
    kv.init(list(range(n)), [mx.nd.zeros(shape) for _ in range(n)])
    arrays = [mx.nd.zeros(shape) for _ in range(n)]
    rounds = 120

    def work(i):
        a, out = arrays[i], mx.nd.zeros(shape)
        other = mx.nd.zeros(shape)
        for j in range(rounds):
            a[:] = j                      # writes into a buffer the store may share
            kv.push(i, a)                 # shared again
            kv.pull(i, out=out)
            v = out.asnumpy()
            assert v.min() == v.max() == j, (i, j, v.min(), v.max())
            kv.pull((i + 1) % n, out=other)  # the neighbour rewrites its array meanwhile
            w = other.asnumpy()
            assert w.min() == w.max(), "a pull saw a half-written shared buffer"

    run_threads(work)
    for i in range(n):
        assert pulled(kv, i, shape).max() == rounds - 1


def test_optimizer_counts_every_update_from_threads():
    kv = mx.kv.create("local")
    keys = list(range(THREADS))
    kv.init(keys, [mx.nd.zeros((8,)) for _ in keys])
    opt = mx.optimizer.Adam(learning_rate=0.01)
    kv.set_optimizer(opt)
    calls = 100

    def work(i):
        g = mx.nd.ones((8,))
        for _ in range(calls):
            kv.push(i, g)

    run_threads(work)
    assert opt._index_update_count == {k: calls for k in keys}
    assert opt.num_update == calls
    # the same numbers as one thread pushing each key `calls` times
    ref = mx.kv.create("local")
    ref.init(0, mx.nd.zeros((8,)))
    ref.set_optimizer(mx.optimizer.Adam(learning_rate=0.01))
    for _ in range(calls):
        ref.push(0, mx.nd.ones((8,)))
    expect = pulled(ref, 0, (8,))
    for k in keys:
        np.testing.assert_array_equal(pulled(kv, k, (8,)), expect)


def test_factor_scheduler_steps_once_per_count_under_threads():
    sched = mx.lr_scheduler.FactorScheduler(step=10, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(learning_rate=1.0, lr_scheduler=sched)
    kv = mx.kv.create("local")
    keys = list(range(THREADS))
    kv.init(keys, [mx.nd.zeros((4,)) for _ in keys])
    kv.set_optimizer(opt)

    def work(i):
        for _ in range(45):
            kv.push(i, mx.nd.zeros((4,)))

    run_threads(work)
    # num_update reached 45: four steps of 10 passed, each halving once
    assert opt.num_update == 45
    assert sched.base_lr == 1.0 * 0.5 ** 4


def test_init_from_threads_gives_each_key_once():
    kv = mx.kv.create("local")
    won = []

    def work(i):
        for k in range(40):
            try:
                kv.init(k, mx.nd.ones((4,)) * i)
                won.append(k)
            except mx.MXNetError as exc:
                assert "duplicate init" in str(exc)
        kv.init(1000 + i, mx.nd.ones((4,)) * i)

    run_threads(work)
    assert sorted(won) == list(range(40))  # each key initialized exactly once
    for i in range(THREADS):
        assert pulled(kv, 1000 + i, (4,)).tolist() == [float(i)] * 4


def test_device_comm_places_each_key_once_under_threads():
    kv = mx.kv.create("device")
    keys = list(range(32))
    kv.init(keys, [mx.nd.zeros((1000 + k,)) for k in keys])

    def work(i):
        mine = keys[i::THREADS]
        for _ in range(20):
            for k in mine:
                kv.push(k, [mx.nd.ones((1000 + k,), ctx=mx.cpu(d)) for d in range(2)])

    run_threads(work)
    comm = kv._comm
    assert sorted(comm._merge_ctx) == keys
    placed = sum((1000 + k) * 4 for k in keys)
    assert sum(comm._load.values()) == placed  # every key's bytes counted exactly once
    for k in keys:
        assert pulled(kv, k, (1000 + k,)).tolist() == [2.0] * (1000 + k)


def test_save_states_beside_pushes_writes_loadable_states(tmp_path):
    kv = mx.kv.create("local")
    keys = list(range(THREADS))
    kv.init(keys, [mx.nd.zeros((128, 128)) for _ in keys])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    fname = str(tmp_path / "opt.states")

    def work(i):
        if i == 0:
            for _ in range(30):
                kv.save_optimizer_states(fname, dump_optimizer=True)
                fresh = mx.kv.create("local")
                fresh.init(keys, [mx.nd.zeros((128, 128)) for _ in keys])
                fresh.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
                fresh.load_optimizer_states(fname)
            return
        g = mx.nd.ones((128, 128))
        for _ in range(100):
            kv.push(i, g)

    run_threads(work)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opt.states"]
