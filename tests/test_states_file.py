"""Optimizer states files: read with a restricted unpickler, checked whole, and
a failed load leaves the updater exactly as it was. Files written by the real
MXNet 1.9.1 (tests/golden/mxnet_states, from tools/golden_states.py) load and
continue training with MXNet's numbers."""
import io
import json
import os
import pickle
import pickletools

import numpy as np
import pytest

import mxkv as mx
from mxkv.base import MXNetIOError, MXNetValueError
from mxkv.optimizer.saved_array import _SavedArray
from mxkv.optimizer.states_file import read_states, restricted_loads

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "mxnet_states")
EXPECTED = json.load(open(os.path.join(GOLDEN, "expected.json")))


def _dtype(case):
    return "float16" if case["kwargs"].get("multi_precision") else "float32"


@pytest.mark.parametrize("name", sorted(EXPECTED["cases"]))
def test_mxkv_writes_the_states_file_mxnet_writes_byte_for_byte(name, tmp_path):
    # The training tools/golden_states.py ran on MXNet, then save_optimizer_states:
    # the bytes are MXNet's own (mxkv's CRC trailer aside, which MXNet's pickle
    # never reads), so MXNet's load_optimizer_states resumes an mxkv run exactly.
    case = EXPECTED["cases"][name]
    keys, dt = EXPECTED["keys"], _dtype(case)
    kv = mx.kv.create("local")
    # (cases of 2-D-only optimizers carry their own init and gradients)
    init, grads = case.get("init", EXPECTED["init"]), case.get("grads", EXPECTED["grads"])
    kv.init(keys, [mx.nd.array(init[str(k)], dtype=dt) for k in keys])
    kv.set_optimizer(mx.optimizer.create(case["optimizer"], **case["kwargs"]))
    for step in range(2):
        g = grads[step]
        kv.push(keys, [mx.nd.array(g[str(k)], dtype=dt) for k in keys])
    path = str(tmp_path / "mxkv.states")
    kv.save_optimizer_states(path, dump_optimizer=case["dump_optimizer"])
    ours = open(path, "rb").read()
    assert ours[-12:-4] == mx.fileio.TRAILER
    theirs = open(os.path.join(GOLDEN, name + ".states"), "rb").read()
    assert ours[:-12] == theirs


@pytest.mark.parametrize("name", sorted(EXPECTED["cases"]))
def test_mxnet_states_files_load_and_training_continues_as_in_mxnet(name):
    # As tools/golden_states.py resumed on MXNet: the weights at the save, the
    # optimizer (a wrong learning rate when the file carries its own), the
    # file, one more push.
    case = EXPECTED["cases"][name]
    keys = EXPECTED["keys"]
    kwargs = dict(case["kwargs"])
    if case["dump_optimizer"]:
        kwargs["learning_rate"] = EXPECTED["wrong_learning_rate"]
    dt = _dtype(case)
    kv = mx.kv.create("local")
    kv.init(keys, [mx.nd.array(case["weights_at_save"][str(k)], dtype=dt) for k in keys])
    kv.set_optimizer(mx.optimizer.create(case["optimizer"], **kwargs))
    kv.load_optimizer_states(os.path.join(GOLDEN, name + ".states"))
    g = case.get("grads", EXPECTED["grads"])[2]
    kv.push(keys, [mx.nd.array(g[str(k)], dtype=dt) for k in keys])
    outs = [mx.nd.zeros(np.array(case["resumed"][str(k)]).shape, dtype=dt) for k in keys]
    kv.pull(keys, out=outs)
    for k, o in zip(keys, outs):
        np.testing.assert_array_equal(o.asnumpy(), np.array(case["resumed"][str(k)], dt),
                                      err_msg=f"{name}, key {k}")
    if case["dump_optimizer"]:
        assert type(kv._updater.optimizer).__name__.lower() == case["optimizer"]
        assert kv._updater.optimizer.lr == case["kwargs"]["learning_rate"]


# ------------------------------------------------------------ refused files
class Evil:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def evil_pickles(marker):
    import subprocess
    yield "os.system", pickle.dumps({0: Evil(os.system, f"touch {marker}")})
    yield "builtins.eval", pickle.dumps({0: Evil(eval, f"open({str(marker)!r}, 'w')")})
    yield "subprocess.Popen", pickle.dumps(Evil(subprocess.Popen, ["touch", str(marker)]))
    yield "mxkv.fileio.atomic_write", pickle.dumps(
        Evil(mx.fileio.atomic_write, str(marker), [b"x"]))
    yield "a class", pickle.dumps({0: io.BytesIO(b"x")})


@pytest.fixture
def trained(tmp_path):
    """A store trained two pushes, the file of its states, and a snapshot."""
    kv = mx.kv.create("local")
    kv.init([0, 1], [mx.nd.ones((4,)), mx.nd.ones((2, 3))])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    for _ in range(2):
        kv.push([0, 1], [mx.nd.ones((4,)), mx.nd.ones((2, 3))])
    yield kv
    kv.close()


def snapshot(kv):
    u = kv._updater
    return (u.optimizer, dict(u.states), dict(u.states_synced),
            {k: v.asnumpy().copy() for k, v in u.states.items()})


def assert_unchanged(kv, before):
    opt, states, synced, values = before
    u = kv._updater
    assert u.optimizer is opt
    assert u.states == states and u.states_synced == synced
    for k, v in values.items():
        np.testing.assert_array_equal(u.states[k].asnumpy(), v)
    # and the store still trains: one more push works and uses the old states
    kv.push([0, 1], [mx.nd.ones((4,)), mx.nd.ones((2, 3))])


def test_evil_pickles_are_refused_before_anything_runs(trained, tmp_path):
    marker = tmp_path / "pwned"
    before = snapshot(trained)
    for what, data in evil_pickles(marker):
        path = tmp_path / "evil.states"
        path.write_bytes(data)
        with pytest.raises(MXNetIOError, match="refuses to load"):
            trained.load_optimizer_states(str(path))
        assert not marker.exists(), what
    assert_unchanged(trained, before)


def saved(obj):
    return pickle.dumps(obj)


def sgd_with(**attrs):
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    opt.__dict__.update(attrs)
    return opt


def bad_record(**fields):
    rec = _SavedArray(mx.nd.ones((4,)))
    for k, v in fields.items():
        setattr(rec, k, v)
    return rec


def broken_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=2)
    sched.step = "abc"  # a file can set any field of a scheduler it names
    return sched


BAD_FILES = [
    ("the int 42", saved(42), MXNetIOError, "holds int 42"),
    ("a dict of strings", saved({"a": "b"}), MXNetIOError, "a state holds str 'b'"),
    ("a list", saved([1, 2]), MXNetIOError, "holds list"),
    ("a triple", saved(({}, None, None)), MXNetIOError, "tuple of 3"),
    ("a pair with 42", saved(({}, 42)), MXNetIOError, "saved optimizer is int 42"),
    ("a float key", saved({1.5: None}), MXNetIOError, "key float 1.5"),
    ("a bool key", saved({True: None}), MXNetIOError, "key bool True"),
    ("a numpy object array", saved({0: bad_record(array=np.array([None, 1], dtype=object))}),
     MXNetIOError, "not a numeric numpy array"),
    ("a record of another shape", saved({0: bad_record(shape=(5,))}), MXNetIOError,
     r"values of shape \(4,\) for shape \(5,\)"),
    ("a record on an unknown device", saved({0: bad_record(device_type="tpu")}),
     MXNetIOError, "names context 'tpu'"),
    ("a state of strings", saved({0: ("a", "b")}), MXNetIOError, "a state holds str 'a'"),
    ("an optimizer with learning_rate='abc'", saved(({}, sgd_with(lr="abc"))), MXNetIOError,
     "learning_rate must be a finite number, got 'abc'"),
    ("an optimizer with NaN momentum", saved(({}, sgd_with(momentum=float("nan")))),
     MXNetIOError, "momentum must be finite"),
    ("a scheduler with step='abc'", saved(({}, sgd_with(lr_scheduler=broken_scheduler()))),
     MXNetIOError, "lr_scheduler.step must be an int, got 'abc'"),
    ("an optimizer without counts", saved(({}, sgd_with(_all_index_update_counts="x"))),
     MXNetIOError, "update counts"),
    ("an empty file", b"", MXNetIOError, "not an optimizer states file"),
    ("random bytes", bytes(range(256)) * 3, MXNetIOError, "not an optimizer states file"),
    ("an nd.save file", None, MXNetIOError, "not an optimizer states file"),
]


@pytest.mark.parametrize("what,data,error,message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_states_file_raises_and_changes_nothing(trained, tmp_path, what, data, error,
                                                      message):
    path = tmp_path / "bad.states"
    if data is None:
        mx.nd.save(str(path), [mx.nd.ones((4,))])
    else:
        path.write_bytes(data)
    before = snapshot(trained)
    with pytest.raises(error, match=message) as info:
        trained.load_optimizer_states(str(path))
    assert "bad.states" in str(info.value)
    assert_unchanged(trained, before)


def test_states_of_the_wrong_shape_are_refused(trained, tmp_path):
    other = mx.kv.create("local")
    other.init([0, 1], [mx.nd.ones((5,)), mx.nd.ones((2, 3))])
    other.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    other.push([0, 1], [mx.nd.ones((5,)), mx.nd.ones((2, 3))])
    path = str(tmp_path / "other.states")
    other.save_optimizer_states(path)
    before = snapshot(trained)
    with pytest.raises(MXNetValueError, match=r"state of shape \(5,\) for key 0, which has "
                                              r"shape \(4,\)"):
        trained.load_optimizer_states(path)
    assert_unchanged(trained, before)


def test_a_state_for_a_key_initialized_later_is_checked_at_its_first_push(tmp_path):
    src = mx.kv.create("local")
    src.init(7, mx.nd.ones((3,)))
    src.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    src.push(7, mx.nd.ones((3,)))
    path = str(tmp_path / "s.states")
    src.save_optimizer_states(path)
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.load_optimizer_states(path)   # key 7 is unknown here: accepted for now
    kv.init(7, mx.nd.ones((4,)))     # ... and initialized with another shape
    with pytest.raises(MXNetValueError, match=r"shape \(3,\) for key 7, which has shape \(4,\)"):
        kv.push([0, 7], [mx.nd.ones((2,)), mx.nd.ones((4,))])
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [1.0, 1.0]  # the batch changed nothing


def test_every_truncation_of_a_states_file_is_refused_cleanly(trained):
    data = open(os.path.join(GOLDEN, "adam_dump.states"), "rb").read()
    for n in range(len(data)):
        with pytest.raises(MXNetIOError):
            read_states(data[:n], "truncated")


def test_flipped_bytes_load_or_raise_the_documented_errors():
    data = open(os.path.join(GOLDEN, "sgd_momentum_dump.states"), "rb").read()
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        try:
            read_states(bytes(bad), "flipped")
            outcomes["loaded"] += 1
        except (MXNetIOError, MXNetValueError):
            outcomes["refused"] += 1
    assert outcomes["refused"] > len(data) // 2


def test_restricted_loads_reads_what_mxkv_writes():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((3,)))
    kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.01,
                                       lr_scheduler=mx.lr_scheduler.FactorScheduler(2)))
    kv.push("w", mx.nd.ones((3,)))
    states, opt = restricted_loads(kv._updater.get_states(dump_optimizer=True))
    assert isinstance(opt, mx.optimizer.Adam)
    assert isinstance(opt.lr_scheduler, mx.lr_scheduler.FactorScheduler)
    assert set(states) == {"w"}


def test_mxnet_pickled_ndarrays_hold_only_their_bytes():
    # MXNet pickles NDArray(None) then {'handle': bytes}; anything else is refused.
    good = open(os.path.join(GOLDEN, "sgd_momentum_states.states"), "rb").read()
    assert set(restricted_loads(good)) == {3, 5}
    forged = good.replace(b"\x8c\x06handle", b"\x8c\x06handlX")
    with pytest.raises(MXNetIOError, match="pickled NDArray holds"):
        restricted_loads(forged)


def test_every_flipped_byte_of_an_mxkv_states_file_is_caught(trained, tmp_path):
    # mxkv's files end with a CRC-32 trailer after pickle's STOP opcode.
    path = str(tmp_path / "opt.states")
    trained.save_optimizer_states(path, dump_optimizer=True)
    data = open(path, "rb").read()
    assert data[-12:-4] == mx.fileio.TRAILER
    ops = list(pickletools.genops(data))  # pickle itself never reads past STOP
    assert ops[-1][0].name == "STOP" and ops[-1][2] == len(data) - 13
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x10
        with pytest.raises(MXNetIOError, match="corrupted"):
            read_states(bytes(bad), "flipped")


def test_states_files_of_earlier_mxkv_versions_still_load(monkeypatch):
    # mxkv before MXNet's format pickled each array as a _SavedArray record
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    old = pickle.dumps(({3: _SavedArray(mx.nd.array([0.5, -1.0]))}, opt))
    loaded = read_states(old, "old file")
    assert loaded.states[3].asnumpy().tolist() == [0.5, -1.0]
    assert isinstance(loaded.optimizer, mx.optimizer.SGD) and loaded.optimizer.momentum == 0.9
    # those files name the record by its old home, mxkv.optimizer.updater
    import mxkv.optimizer.updater as updater_module
    monkeypatch.setattr(_SavedArray, "__module__", "mxkv.optimizer.updater")
    monkeypatch.setattr(updater_module, "_SavedArray", _SavedArray, raising=False)
    legacy = pickle.dumps({3: _SavedArray(mx.nd.array([0.5, -1.0]))})
    assert b"mxkv.optimizer.updater" in legacy
    assert read_states(legacy, "old file").states[3].asnumpy().tolist() == [0.5, -1.0]


def test_a_groupadagrad_store_loads_the_states_it_saved_and_refuses_a_wrong_shape(tmp_path):
    # its state is one history value per row, (rows, 1), not the weight's shape
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((4, 5)))
    kv.set_optimizer(mx.optimizer.create("groupadagrad", learning_rate=0.1))
    kv.push(0, mx.nd.ones((4, 5)))
    path = str(tmp_path / "ga.states")
    kv.save_optimizer_states(path)
    kv.load_optimizer_states(path)
    kv.push(0, mx.nd.ones((4, 5)))
    other = mx.kv.create("local")
    other.init(0, mx.nd.ones((3, 5)))
    other.set_optimizer(mx.optimizer.create("groupadagrad", learning_rate=0.1))
    with pytest.raises(MXNetValueError, match=r"state of shape \(4, 1\) for key 0, which has "
                                              r"shape \(3, 5\) \(states of shape \(3, 1\) or "
                                              r"\(3, 5\)\)"):
        other.load_optimizer_states(path)
