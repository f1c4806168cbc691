"""Checkpoint records prove themselves: a byte flipped anywhere in a record
(header, pickle, array data, footer) of any kind the shards write is found,
the log is never loaded with it and never cut short, and what does load is
exactly what was written. No Ray: the reader and writer the shards use, on
copies of logs written the way the shards write them."""
from __future__ import annotations

import json
import os
import pickle
import random
import shutil

import numpy as np
import pytest

import mxkv as mx
from mxkv.kvstore.dist.checkpoint import CheckpointLog, CorruptCheckpoint, load_log, record_spans
from mxkv.kvstore.dist.checkpoint_dir import IDENTITY, CheckpointDirInUse, claim, read_identity
from mxkv.kvstore.dist.sharding import layout_of


def _states():
    """A real optimizer state, frozen as the shard freezes it."""
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((8, 3)))
    kv.set_optimizer(mx.optimizer.create("adam", learning_rate=0.01))
    kv.push(0, mx.nd.ones((8, 3)) * 0.5)
    return pickle.dumps(kv._updater.states[0], protocol=5), pickle.dumps(kv._updater.optimizer)


def _logs(tmp_path):
    """Logs holding every record kind a shard writes: an init (values from
    their payloads, a row-sparse one too), a command (the optimizer, in the
    settings), a push (values with optimizer states, rounds, seen), a whole
    state written as a new log, and a compaction. Returns {kind: (path,
    record index)}, and the state each log loads."""
    rng = np.random.default_rng(7)
    state_blob, optimizer = _states()
    dense = rng.standard_normal((64, 16)).astype(np.float32)
    rsp = ("rsp", rng.standard_normal((3, 4)).astype(np.float32), np.array([1, 5, 9], np.int64))
    init = {"parts": {0: {"value": dense, "shape": (64, 16), "round": 0, "seen": {}},
                      1: {"value": rsp, "shape": (12, 4), "round": 0, "seen": {}}},
            "meta": {"sync": True, "cmd_seq": 0, "run": "r1", "gc": None,
                     "reset_states": False}}
    command = {"parts": {}, "meta": {"cmd_seq": 2, "updater": ("optimizer", optimizer),
                                     "reset_states": True}}
    push = {"parts": {0: {"value": dense * 3, "state": state_blob, "round": 4,
                          "seen": {0: 4, 1: 4}, "shape": (64, 16)}},
            "meta": {"cmd_seq": 2, "reset_states": False}}
    out = {}
    appended = str(tmp_path / "appended" / "shard-0.ckpt")
    w = CheckpointLog(appended, lambda r: None)
    w.load()
    for delta in (init, command, push):
        w.write_now(delta)
    w.close()
    out.update({"init": (appended, 0), "command": (appended, 1), "push": (appended, 2)})
    whole = str(tmp_path / "whole" / "shard-0.ckpt")
    w = CheckpointLog(whole, lambda r: None)
    w.load()
    w.write_now(init)
    w.write_now({"parts": {n: {**e, "value": e["value"], "round": 5}
                           for n, e in init["parts"].items()}, "meta": {"cmd_seq": 3}})
    assert w.rewrites == 1 and len(record_spans(whole)) == 1
    w.close()
    out["whole state"] = (whole, 0)
    compacted = str(tmp_path / "compacted" / "shard-0.ckpt")
    w = CheckpointLog(compacted, lambda r: None, slack=0)
    w.load()
    w.write_now(init)
    for i in range(3):
        w.write_now({"parts": {0: {"value": dense + i, "round": i + 1}}, "meta": {}})
    assert w.compactions >= 1
    w.close()
    out["compaction"] = (compacted, len(record_spans(compacted)) - 1)
    return out


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, memoryview):
        return bytes(a) == bytes(b)
    return a == b


@pytest.mark.parametrize("kind", ["init", "command", "push", "whole state", "compaction"])
def test_a_byte_flipped_anywhere_in_a_record_is_found_and_never_loaded(tmp_path, kind):
    path, index = _logs(tmp_path)[kind]
    good, _, _ = load_log(path)
    start, body, footer, end = record_spans(path)[index]
    rng = random.Random(f"{kind}-flips")
    # the header, the footer and the pickle's first bytes always; the rest at random
    fixed = {start, start + 9, start + 17, start + 25, body, body + 20, footer, end - 1}
    offsets = sorted(fixed | set(rng.sample(sorted(set(range(start, end)) - fixed),
                                            100 - len(fixed))))
    assert len(offsets) == 100
    copy = str(tmp_path / "copy.ckpt")
    found = loaded_equal = wrong = 0
    for at in offsets:
        shutil.copyfile(path, copy)
        with open(copy, "r+b") as f:
            f.seek(at)
            byte = f.read(1)[0]
            f.seek(at)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        try:
            state, _, _ = load_log(copy)
        except CorruptCheckpoint as exc:
            found += 1
            assert exc.record == index and exc.offset == start and exc.path == copy
            continue
        if _same(state, good):
            loaded_equal += 1
        else:
            wrong += 1
    print(f"{kind}: {len(offsets)} flips, {found} found, {loaded_equal} loaded unchanged, "
          f"{wrong} wrong")
    assert wrong == 0 and found == len(offsets)


def test_a_corrupt_log_is_renamed_aside_whole_never_truncated(tmp_path):
    path, _ = _logs(tmp_path)["push"]
    start, body, footer, end = record_spans(path)[0]
    size = os.path.getsize(path)
    with open(path, "r+b") as f:   # the first record's header: its length field
        f.seek(start + 16)
        f.write(b"\xff\xff")
    w = CheckpointLog(path, lambda r: None)
    with pytest.raises(CorruptCheckpoint) as err:
        w.load()
    aside = f"{path}.corrupt-header-checksum-at-{start}"
    assert err.value.path == aside and aside in str(err.value)
    assert not os.path.exists(path) and os.path.getsize(aside) == size


def test_zeros_where_a_crash_left_the_last_record_count_as_torn(tmp_path):
    path, _ = _logs(tmp_path)["push"]
    spans = record_spans(path)
    with open(path, "r+b") as f:
        f.truncate(spans[-1][0])
        f.seek(spans[-1][0])
        f.write(b"\0" * 4096)
    state, end, _ = load_log(path)
    assert end == spans[-1][0] and state["meta"]["cmd_seq"] == 2


def test_log_files_are_private(tmp_path):
    path, _ = _logs(tmp_path)["whole state"]
    for name in os.listdir(os.path.dirname(path)):
        assert os.stat(os.path.join(os.path.dirname(path), name)).st_mode & 0o777 == 0o600


def test_a_directory_holding_another_jobs_logs_is_refused_unless_resumed(tmp_path):
    d = str(tmp_path / "ckpt")
    first = claim(d, "job-a")
    assert first["resumed_from"] is None and os.stat(d).st_mode & 0o777 == 0o700
    claim(d, "job-b")   # no logs yet: nothing to lose
    with open(os.path.join(d, "shard-0.ckpt"), "wb") as f:
        f.write(b"x")
    with pytest.raises(CheckpointDirInUse) as err:
        claim(d, "job-c")
    assert d in str(err.value) and "'job-b'" in str(err.value) and "--resume" in str(err.value)
    assert read_identity(d)["job"] == "job-b"   # refused: unchanged
    resumed = claim(d, "job-c", resume=True)
    assert resumed["resumed_job"] == "job-b" and read_identity(d)["run"] == resumed["run"]


def test_a_resume_that_would_split_the_keys_otherwise_is_refused(tmp_path):
    d = str(tmp_path / "ckpt")
    mine = layout_of(2, 65536, 0)
    assert claim(d, "job-a", layout=mine)["layout"] == mine
    with open(os.path.join(d, "shard-0.ckpt"), "wb") as f:
        f.write(b"x")
    for other, named in [(layout_of(2, 10 ** 6, 0), "MXNET_KVSTORE_BIGARRAY_BOUND=1000000"),
                         (layout_of(3, 65536, 0), "3 servers"),
                         (layout_of(2, 65536, 40000), "P3 slices of 40000 elements")]:
        with pytest.raises(CheckpointDirInUse) as err:
            claim(d, "job-b", resume=True, layout=other)
        msg = str(err.value)
        assert d in msg and "'job-a'" in msg and named in msg and "same settings" in msg
        assert read_identity(d)["job"] == "job-a"   # refused: unchanged
    assert claim(d, "job-b", resume=True, layout=mine)["resumed_job"] == "job-a"
    # an identity that kept no layout (an older mxkv's) is not checked
    ident = read_identity(d)
    del ident["layout"]
    with open(os.path.join(d, IDENTITY), "w") as f:
        json.dump(ident, f)
    assert claim(d, "job-c", resume=True, layout=layout_of(2, 10, 0))["resumed_job"] == "job-b"


@pytest.mark.parametrize("mode", [0o770, 0o1777, 0o757])
def test_a_directory_others_may_write_to_is_refused(tmp_path, mode):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(mode)
    with pytest.raises(mx.base.MXNetIOError) as err:
        claim(str(d), "job-a")
    assert str(d) in str(err.value) and "other users may write" in str(err.value)
    assert not os.listdir(d)
