"""The bridge's Python side without a JVM: the Engine facade, the handle
table, the shared-memory arena, the region file and stale-file cleanup;
calls that are never applied twice (a call carries its deadline and the
engine drops it unrun once the deadline passed before it could start; a
ticket marks on the arena's call board that a call started, and a ticket
delivered twice runs once; the JVM's side is clojure/test/.../faults_test.clj).

Regions of the region file are allocated and freed by the JVM
(``Regions.java``, tested in clojure/test/.../regions_test.clj); the engine
writes where it is told, never elsewhere, and grows the file without moving
what the JVM already mapped. That is what is tested here."""
from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetError
from mxkv.bridge import Arena, EngineFacade, remove_stale
from mxkv.bridge.arena import BOARD, BOARD_SLOTS, HEADER
from mxkv.bridge.registry import OPS
from mxkv.bridge.registry import group as _group

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def facade(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    yield f
    f.close()


def ok(result: str):
    assert result[0] == "o", result
    return json.loads(result[1:]) if len(result) > 1 else None


def err(result: str) -> dict:
    assert result[0] == "e", result
    return json.loads(result[1:])


def create(f, kind="ones", shape=(2, 3), dev=("cpu", 0), dtype="float32", value=None):
    return ok(f.call("nd.create", json.dumps([kind, list(shape), dev[0], dev[1], dtype, value])))


def read(f, h, dtype="float32", follow=False):
    off, nbytes, path, size = ok(f.call("nd.read", json.dumps([h, dtype, 0, None, follow])))
    assert path == f.arena.path and size >= off + nbytes
    return f.arena.view(dtype, nbytes // np.dtype(dtype).itemsize, off).copy()


def test_noop_answers_o(facade):
    assert facade.call("noop", "") == "o"


def test_info_names_the_arena_and_pid(facade):
    info = json.loads(facade.info())
    assert info["pid"] == os.getpid()
    assert info["arena"] == facade.arena.path and info["arena_header"] == HEADER
    assert info["backend"] == "mxkv"


def test_engine_javadoc_lists_every_info_key(facade):
    # Engine.info's javadoc is the JVM side's reference for these keys
    java = (ROOT / "clojure" / "java" / "org" / "apache" / "clojure_mxnet" / "bridge"
            / "Engine.java").read_text()
    doc = java[:java.index("String info();")]
    doc = doc[doc.rindex("/**"):]
    documented = set(re.findall(r"\{@code (\w+)\}", doc))
    assert documented == set(json.loads(facade.info()))


def test_created_arrays_are_described_by_meta(facade):
    h, shape, dtype, dev, dev_id, stype = create(facade, "full", (2, 2), ("cpu", 1), "float64", 7)
    assert (shape, dtype, dev, dev_id, stype) == ([2, 2], "float64", "cpu", 1, "default")
    assert read(facade, h, "float64").tolist() == [7.0] * 4


def test_tutorial_push_and_pull_through_the_facade(facade):
    kv, kv_type = ok(facade.call("kv.create", '["local"]'))
    assert kv_type == "local"
    two = ok(facade.call("nd.binop", json.dumps(["*", create(facade)[0], 2, False])))[0]
    ok(facade.call("kv.init", json.dumps([kv, ["3"], [two]])))
    ones = [create(facade, dev=("cpu", i))[0] for i in range(3)]
    ok(facade.call("kv.push", json.dumps([kv, ["3", "3", "3"], ones, 0])))
    a = create(facade, "zeros")[0]
    ok(facade.call("kv.pull", json.dumps([kv, ["3"], [a], 0])))
    assert read(facade, a).tolist() == [3.0] * 6


@pytest.mark.parametrize("op", ["kv.push", "kv.pull", "kv.pushpull", "kv.broadcast"])
@pytest.mark.parametrize("priority", ["1", 1.5, None])
def test_a_priority_that_is_not_an_int_is_refused_as_mxnet_refuses_it(facade, op, priority):
    kv = ok(facade.call("kv.create", '["local"]'))[0]
    a = create(facade)[0]
    ok(facade.call("kv.init", json.dumps([kv, ["3"], [a]])))
    args = {"kv.push": [kv, ["3"], [a], priority], "kv.pull": [kv, ["3"], [a], priority],
            "kv.pushpull": [kv, ["3"], [a], ["3"], [a], priority],
            "kv.broadcast": [kv, ["4"], [a], ["4"], [a], priority]}[op]
    e = err(facade.call(op, json.dumps(args)))
    assert e["python_class"] == "mxkv.base.MXNetTypeError"
    assert "priority must be an int" in e["message"]
    ok(facade.call("kv.init", json.dumps([kv, ["4"], [a]])))  # the broadcast left no key


def test_engine_errors_come_back_as_data(facade):
    kv = ok(facade.call("kv.create", '["local"]'))[0]
    a = create(facade)[0]
    ok(facade.call("kv.init", json.dumps([kv, ["3"], [a]])))
    e = err(facade.call("kv.init", json.dumps([kv, ["3"], [a]])))
    assert "duplicate init" in e["message"]
    assert e["type"] == "mxnet-error" and e["python_class"] == "mxkv.base.MXNetError"
    assert "Traceback" in e["traceback"]


def test_unknown_ops_and_handles_are_errors(facade):
    e = err(facade.call("nope", "[]"))
    assert e["type"] == "mxnet-error" and e["python_class"] == "mxkv.base.MXNetValueError"
    assert "unknown handle 999" in err(facade.call("nd.copy", "[999]"))["message"]


def test_every_engine_error_has_one_type_and_its_class(facade):
    # an MXNetError subclass, a bridge argument error, and a stray builtin
    kv = ok(facade.call("kv.create", '["local"]'))[0]
    unknown_opt = err(facade.call("kv.set_optimizer", json.dumps([kv, "nosuch", {}])))
    assert unknown_opt["type"] == "mxnet-error"
    assert unknown_opt["python_class"] == "mxkv.base.UnknownOptimizerError"
    wrong_kind = err(facade.call("kv.push", json.dumps([create(facade)[0], ["a"], []])))
    assert (wrong_kind["type"], wrong_kind["python_class"]) == ("mxnet-error",
                                                                "mxkv.base.MXNetTypeError")
    bad_json = err(facade.call("noop", "[not json"))
    assert bad_json["type"] == "mxnet-error"
    assert bad_json["python_class"] == "json.decoder.JSONDecodeError"


def test_release_drops_objects(facade):
    hs = [create(facade)[0] for _ in range(5)]
    before = ok(facade.call("stats", "[]"))["handles"]
    ok(facade.call("release", json.dumps([hs])))
    assert ok(facade.call("stats", "[]"))["handles"] == before - 5
    assert "unknown handle" in err(facade.call("nd.copy", json.dumps([hs[0]])))["message"]


def test_from_arena_copies_what_the_jvm_wrote(facade):
    data = np.arange(6, dtype=np.float32)
    facade.arena.ensure(HEADER + data.nbytes)
    facade.arena.view(np.float32, 6, HEADER)[:] = data
    h = ok(facade.call("nd.from_arena", json.dumps(["float32", [2, 3], "cpu", 0, "int32"])))
    assert h[1:3] == [[2, 3], "int32"]
    facade.arena.view(np.float32, 6, HEADER)[:] = -1  # the array must not share the arena
    assert read(facade, h[0], "int32").tolist() == list(range(6))


@pytest.mark.parametrize("follow", [False, True])
def test_read_converts_and_follows(facade, follow):
    n = 3 * 1024 * 1024  # 12 MB: several followed chunks
    h = ok(facade.call("nd.arange", json.dumps([0, n, 1, 1, "cpu", 0, "float32"])))[0]
    out = read(facade, h, "float32", follow=follow)
    assert out[0] == 0 and out[-1] == n - 1 and out.size == n
    if follow:
        progress = int(facade.arena.view(np.int64, 1, 0)[0])
        assert progress == 4 * n


def test_arena_grows_but_never_shrinks(tmp_path):
    a = Arena(str(tmp_path))
    try:
        s0 = a.size
        assert a.ensure(10) == s0
        s1 = a.ensure(3 * s0)
        assert s1 >= 3 * s0 and os.path.getsize(a.path) == s1
        assert a.ensure(1) == s1
    finally:
        a.close()
    assert not os.path.exists(a.path)


def test_stale_arenas_of_dead_engines_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f"mxkv-{dead.stdout.strip()}-arena"
    stale.write_bytes(b"x")
    live = tmp_path / f"mxkv-{os.getpid()}-arena"
    live.write_bytes(b"x")
    other = tmp_path / "unrelated-file"
    other.write_bytes(b"x")
    stale_regions = tmp_path / f"mxkv-{dead.stdout.strip()}-0123456789abcdef-regions"
    stale_regions.write_bytes(b"x")
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    stale_link = tmp_path / f"mxkv-{dead.stdout.strip()}-fedcba9876543210-arena"
    stale_link.symlink_to(target)
    removed = remove_stale(str(tmp_path))
    assert sorted(removed) == sorted([str(stale), str(stale_regions)])
    assert live.exists() and other.exists()
    assert stale_link.is_symlink() and target.read_bytes() == b"keep", "links are left alone"


def test_group_turns_repeated_keys_into_device_lists():
    assert _group(["3", "3", "5"], [1, 2, 3]) == (["3", "5"], [[1, 2], 3])
    assert _group([3, 4], ["a", "b"]) == ([3, 4], ["a", "b"])
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        _group(["a", "b"], [1])


def test_optimizer_and_scheduler_are_built_in_the_engine(facade):
    kv = ok(facade.call("kv.create", '["local"]'))[0]
    w = create(facade)[0]
    ok(facade.call("kv.init", json.dumps([kv, [0], [w]])))
    ok(facade.call("kv.set_optimizer", json.dumps(
        [kv, "sgd", {"learning_rate": 0.5, "wd": 0.0,
                     "lr_scheduler": {"type": "factor", "step": 10, "factor": 0.5}}])))
    ok(facade.call("kv.push", json.dumps([kv, [0], [create(facade)[0]], 0])))
    out = create(facade, "zeros")[0]
    ok(facade.call("kv.pull", json.dumps([kv, [0], [out], 0])))
    assert np.allclose(read(facade, out), 0.5)


# ---------------------------------------------------------------- the region file

PAGE = 4096


def read_region(f, h, offset, reserve=0):
    nbytes, path, size = ok(f.call("nd.read_region", json.dumps([h, offset, reserve])))
    assert path == f.regions.path and size >= offset + nbytes
    return nbytes


def arange(f, n, dtype="float32"):
    return ok(f.call("nd.arange", json.dumps([0, n, 1, 1, "cpu", 0, dtype])))[0]


def jvm_map(path):
    """A mapping of the file as it is now, as the JVM's FileChannel.map makes it."""
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def test_read_region_writes_its_region_and_nothing_else(facade):
    n = 3 * 1024  # 12 KiB: three pages
    a, b = arange(facade, n), create(facade, "full", (n,), value=-2)[0]
    facade.regions.ensure(8 * PAGE)
    facade.regions.view(np.uint8, 8 * PAGE, 0)[:] = 0xAB
    assert read_region(facade, a, PAGE) == 4 * n
    assert read_region(facade, b, 4 * PAGE) == 4 * n
    raw = facade.regions.view(np.uint8, 8 * PAGE, 0)
    assert (raw[:PAGE] == 0xAB).all() and (raw[7 * PAGE:] == 0xAB).all()
    assert facade.regions.view(np.float32, n, PAGE).tolist() == list(range(n))
    assert (facade.regions.view(np.float32, n, 4 * PAGE) == -2).all()
    del raw


def test_read_region_converts_to_float32(facade):
    h = arange(facade, 10, "int32")
    assert read_region(facade, h, 0) == 40
    assert facade.regions.view(np.float32, 10, 0).tolist() == [float(i) for i in range(10)]
    h = create(facade, "full", (2, 3), dtype="float64", value=1.5)[0]
    assert read_region(facade, h, PAGE) == 24
    assert facade.regions.view(np.float32, 6, PAGE).tolist() == [1.5] * 6


def test_the_region_file_is_reserved_sparse(facade):
    h = arange(facade, 1024)
    read_region(facade, h, 0, reserve=1 << 30)
    assert facade.regions.size >= 1 << 30
    assert os.path.getsize(facade.regions.path) == facade.regions.size
    # only the pages written use memory
    assert facade.regions.resident() < 16 << 20
    stats = ok(facade.call("stats", "[]"))
    assert stats["regions_size"] == facade.regions.size
    assert stats["regions_resident"] == facade.regions.resident()


def test_growing_the_region_file_keeps_mapped_regions_valid(facade):
    n = 64 * 1024
    a = arange(facade, n)
    read_region(facade, a, 0)
    before = jvm_map(facade.regions.path)  # the JVM's mapping of the small file
    size0 = facade.regions.size
    b = create(facade, "full", (n,), value=9)[0]
    far = 4 * size0  # past the end: the engine grows the file
    read_region(facade, b, far)
    assert facade.regions.size > far >= size0
    try:
        assert np.frombuffer(before, np.float32, n, 0).tolist() == list(range(n)), \
            "a region mapped before the growth reads the same"
        after = jvm_map(facade.regions.path)
        try:
            assert np.frombuffer(after, np.float32, n, 0).tolist() == list(range(n))
            assert (np.frombuffer(after, np.float32, n, far) == 9).all()
        finally:
            after.close()
    finally:
        before.close()


def test_read_region_refuses_bad_offsets(facade):
    h = arange(facade, 4)
    assert err(facade.call("nd.read_region", json.dumps([h, -PAGE])))["python_class"] == \
        "builtins.ValueError"
    assert err(facade.call("nd.read_region", json.dumps([h, 2])))["python_class"] == \
        "builtins.ValueError"
    assert "unknown handle" in err(facade.call("nd.read_region", json.dumps([12345, 0])))["message"]


def test_info_names_the_region_file_and_close_removes_it(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    info = json.loads(f.info())
    assert info["regions"] == f.regions.path
    assert re.fullmatch(rf"{tmp_path}/mxkv-{os.getpid()}-[0-9a-f]{{16}}-regions", info["regions"])
    assert os.path.exists(info["regions"])
    assert info["shm_bytes"] > 0
    f.close()
    assert not os.path.exists(info["regions"]) and not os.path.exists(info["arena"])


# ------------------------------------------------------------------ deadlines

def answer(result: str):
    return result[0], (json.loads(result[1:]) if len(result) > 1 else None)


def now_ms() -> int:
    return int(time.time() * 1000)


def store_with_adder(f):
    """A store whose key 'w' (2 zeros) adds every push to itself."""
    _, (kv, _) = answer(f.call("kv.create", '["local"]'))
    _, meta = answer(f.call("nd.create", json.dumps(["zeros", [2], "cpu", 0, "float32", None])))
    f.call("kv.init", json.dumps([kv, ["w"], [meta[0]]]))
    assert f.call("kv.set_optimizer", json.dumps([kv, "test", {"rescale_grad": 1.0}])) == "o"
    _, ones = answer(f.call("nd.create", json.dumps(["ones", [2], "cpu", 0, "float32", None])))
    return kv, ones[0]


def stored(f, kv) -> float:
    _, out = answer(f.call("nd.create", json.dumps(["zeros", [2], "cpu", 0, "float32", None])))
    f.call("kv.pull", json.dumps([kv, ["w"], [out[0]]]))
    return f.nd(out[0]).asnumpy().tolist()[0]


def test_a_call_past_its_deadline_is_dropped_unrun(facade):
    kv, g = store_with_adder(facade)
    kind, err = answer(facade.call("kv.push", json.dumps([kv, ["w"], [g]]), now_ms() - 1, 0))
    assert kind == "e" and err["type"] == "engine-timeout"
    assert err["may_have_run"] is False
    assert "was not run" in err["message"] and "safe to retry" in err["message"]
    assert stored(facade, kv) == 0.0, "nothing was applied"
    assert facade.call("kv.push", json.dumps([kv, ["w"], [g]]), now_ms() + 60000, 0) == "o"
    assert stored(facade, kv) == 1.0


@contextlib.contextmanager
def engine_busy(facade, monkeypatch):
    """Keep ``facade`` busy with a call (from another thread) that ends only
    when the block does; yields a list that the call's end appends to."""
    started, release, ended = threading.Event(), threading.Event(), []

    def hold(self):
        started.set()
        release.wait(120)
        ended.append("the busy call")

    monkeypatch.setitem(OPS, "test.hold", hold)
    busy = threading.Thread(target=facade.call, args=("test.hold", "[]"))
    busy.start()
    try:
        assert started.wait(120), "the busy call never started"
        yield ended
    finally:
        release.set()
        busy.join()


def test_a_call_waiting_behind_a_busy_engine_past_its_deadline_is_dropped(facade, monkeypatch):
    kv, g = store_with_adder(facade)
    with engine_busy(facade, monkeypatch) as ended:
        kind, err = answer(facade.call("kv.push", json.dumps([kv, ["w"], [g]]),
                                       now_ms() + 100, 0))
        assert ended == [], "it gave up at its deadline, not when the engine was free"
    assert kind == "e" and err["type"] == "engine-timeout" and err["may_have_run"] is False
    assert "busy" in err["message"]
    assert stored(facade, kv) == 0.0, "not applied after the engine became free either"


def test_a_started_call_is_marked_on_the_board(facade):
    ticket = 3 * BOARD_SLOTS + 5
    assert facade.call(f"noop@{now_ms() + 60000}#{ticket}", "[]") == "o", "as the JVM sends it"
    slot = facade.arena.view("int64", 1, BOARD + 8 * (ticket % BOARD_SLOTS))[0]
    assert slot == ticket


def test_a_ticket_delivered_twice_runs_once(facade):
    kv, g = store_with_adder(facade)
    args = json.dumps([kv, ["w"], [g]])
    assert facade.call("kv.push", args, now_ms() + 60000, 7) == "o"
    kind, err = answer(facade.call("kv.push", args, now_ms() + 60000, 7))
    assert kind == "e" and err["type"] == "engine-timeout"
    assert "delivered twice" in err["message"] and err["may_have_run"] is True
    assert stored(facade, kv) == 1.0
    assert facade.call("kv.push", args, now_ms() + 60000, 8) == "o", "the next ticket runs"
    assert stored(facade, kv) == 2.0


def test_calls_without_a_deadline_wait_for_the_engine(facade, monkeypatch):
    answers = []

    def call_noop():
        result = facade.call("noop", "[]")
        answers.append((list(ended), result))  # what had ended when it was answered

    with engine_busy(facade, monkeypatch) as ended:
        waiter = threading.Thread(target=call_noop)
        waiter.start()
        # Give it time to reach the busy engine; were it answered while the
        # engine is busy, ``ended`` would be empty (a slow machine only makes
        # this test weaker, never failing).
        waiter.join(0.2)
    waiter.join()
    assert answers == [(["the busy call"], "o")]


def test_memory_reports_held_arrays_and_the_process(facade):
    before = answer(facade.call("memory", "[]"))[1]
    _, meta = answer(facade.call("nd.create", json.dumps(["zeros", [1000], "cpu", 0, "float64",
                                                          None])))
    after = answer(facade.call("memory", "[true]"))[1]
    assert after["held"] - before["held"] == 8000
    assert after["rss"] > 0 and after["rss_peak"] >= after["rss"] * 0.5
    facade.call("release", json.dumps([meta[0]]))
    assert answer(facade.call("memory", "[]"))[1]["held"] == before["held"]


def test_a_call_that_finds_the_engine_closed_says_it_is_dead(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    _, meta = answer(f.call("nd.create", json.dumps(["ones", [2], "cpu", 0, "float32", None])))
    f.close()
    kind, err = answer(f.call("nd.equal", json.dumps([meta[0], meta[0]])))
    assert kind == "e" and err["type"] == "engine-dead" and err["may_have_run"] is False
    assert "closed" in err["message"]


def test_release_closes_a_store_the_engine_made_at_its_last_handle(facade):
    h, _ = ok(facade.call("kv.create", json.dumps(["local"])))
    kv = facade._objects[h]
    second = facade.describe(kv)["id"]          # a second handle to the same store
    ok(facade.call("release", json.dumps([h])))
    kv.init(0, mx.nd.ones((2,)))                # still held by the second handle: open
    ok(facade.call("release", json.dumps([second])))
    with pytest.raises(MXNetError, match="closed"):
        kv.init(1, mx.nd.ones((2,)))


def test_release_leaves_a_store_python_published_open(facade):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,)))
    facade.publish("kv", kv)
    h = ok(facade.call("obj.published", json.dumps(["kv"])))["id"]
    ok(facade.call("release", json.dumps([h])))
    out = mx.nd.zeros((2,))
    kv.pull(3, out=out)                          # Python's store lives on
    assert out.asnumpy().tolist() == [1.0, 1.0]


def test_close_closes_every_store_the_engine_made(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    made = []
    for kind in ("local", "device"):
        h, _ = ok(f.call("kv.create", json.dumps([kind])))
        made.append(f._objects[h])
    f.describe(made[0])                          # a second handle to the same store
    h, _ = ok(f.call("kv.create", json.dumps(["local"])))
    released = f._objects[h]
    ok(f.call("release", json.dumps([h])))       # closed already: closing again is harmless
    for kv in made:
        kv.init(0, mx.nd.ones((2,)))             # open until the engine closes
    f.close()
    for kv in [*made, released]:
        with pytest.raises(MXNetError, match="closed"):
            kv.init(1, mx.nd.ones((2,)))
    f.close()                                    # idempotent


def test_close_leaves_a_store_python_published_open(tmp_path):
    f = EngineFacade(arena=Arena(str(tmp_path)))
    with mx.kv.create("local") as kv:
        kv.init(3, mx.nd.ones((2,)))
        f.publish("kv", kv)
        ok(f.call("obj.published", json.dumps(["kv"])))
        f.close()
        out = mx.nd.zeros((2,))
        kv.pull(3, out=out)                      # Python's store lives on
        assert out.asnumpy().tolist() == [1.0, 1.0]


def test_close_closes_the_other_stores_and_the_files_when_one_store_fails(tmp_path, monkeypatch):
    from mxkv.kvstore import base
    from mxkv.kvstore.local import KVStore

    class FailingClose(KVStore):
        def close(self):
            super().close()
            raise RuntimeError("this store's close failed")

    monkeypatch.setattr(base, "_FAMILIES", dict(base._FAMILIES))
    base.register_family("failclose", lambda name: FailingClose(name))
    f = EngineFacade(arena=Arena(str(tmp_path)))
    stores = []
    for kind in ("local", "failclose_local", "local"):
        h, _ = ok(f.call("kv.create", json.dumps([kind])))
        stores.append(f._objects[h])
    with pytest.raises(RuntimeError, match="this store's close failed"):
        f.close()
    for kv in stores:
        with pytest.raises(MXNetError, match="closed"):
            kv.init(1, mx.nd.ones((2,)))
    assert not os.path.exists(f.arena.path) and f.closed
    f.close()                                    # nothing left to close: no error
