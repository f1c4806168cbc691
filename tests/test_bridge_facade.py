"""The bridge's Python side without a JVM: the Engine facade, the handle
table, the shared-memory arena and stale-file cleanup."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mxkv.bridge import Arena, EngineFacade, remove_stale
from mxkv.bridge.arena import HEADER
from mxkv.bridge.registry import group as _group


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


def test_engine_errors_come_back_as_data(facade):
    kv = ok(facade.call("kv.create", '["local"]'))[0]
    a = create(facade)[0]
    ok(facade.call("kv.init", json.dumps([kv, ["3"], [a]])))
    e = err(facade.call("kv.init", json.dumps([kv, ["3"], [a]])))
    assert "duplicate init" in e["message"]
    assert e["type"] == "mxnet-error" and e["python_class"] == "mxkv.base.MXNetError"
    assert "Traceback" in e["traceback"]


def test_unknown_ops_and_handles_are_errors(facade):
    assert err(facade.call("nope", "[]"))["type"] == "value-error"
    assert "unknown handle 999" in err(facade.call("nd.copy", "[999]"))["message"]


def test_release_drops_objects(facade):
    hs = [create(facade)[0] for _ in range(5)]
    before = ok(facade.call("stats", "[]"))["handles"]
    ok(facade.call("release", json.dumps([hs])))
    assert ok(facade.call("stats", "[]"))["handles"] == before - 5
    assert err(facade.call("nd.copy", json.dumps([hs[0]])))["type"] == "value-error"


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
    removed = remove_stale(str(tmp_path))
    assert removed == [str(stale)]
    assert live.exists() and other.exists()


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
