"""Files that survive crashes: nd.save and save_optimizer_states replace their
file atomically, leave no temporary behind on any failure, let threads save
to one path at once, and a process killed mid-save leaves the previous file
loadable and a temporary that the next save removes."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import mxkv as mx
from mxkv import fileio
from mxkv.base import MXNetIOError, MXNetTypeError

TIMEOUT = 120


def leftovers(directory, name):
    return sorted(p for p in os.listdir(directory) if p != name)


def save_states(kv, fname):
    kv.save_optimizer_states(fname, dump_optimizer=True)


def small_store():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((4,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.push(0, mx.nd.ones((4,)))
    return kv


# ------------------------------------------------------------ failures in-process
STEPS = ["open", "write", "fsync", "replace"]


def fail_at(monkeypatch, step, exc):
    """Make one step of a write raise ``exc`` (fault injection)."""
    if step == "open":
        real = os.open
        monkeypatch.setattr(fileio.os, "open", lambda p, *a, **k: (_ for _ in ()).throw(exc)
                            if fileio.TEMP_MARK in str(p) else real(p, *a, **k))
    elif step == "write":
        def chunks():
            yield b"x" * 1000
            raise exc
        return chunks()
    elif step == "fsync":
        monkeypatch.setattr(fileio.os, "fsync", lambda fd: (_ for _ in ()).throw(exc))
    elif step == "replace":
        monkeypatch.setattr(fileio.os, "replace", lambda a, b: (_ for _ in ()).throw(exc))
    return None


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt(),
                                 RuntimeError("encoder failed")],
                         ids=["enospc", "ctrl-c", "exception"])
@pytest.mark.parametrize("step", STEPS)
def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch,
                                                                   step, exc):
    path = tmp_path / "a.bin"
    fileio.atomic_write(path, [b"previous"])
    chunks = fail_at(monkeypatch, step, exc) or [b"new contents"]
    expected = MXNetIOError if isinstance(exc, OSError) else type(exc)
    with pytest.raises(expected):
        fileio.atomic_write(path, chunks, "test file")
    monkeypatch.undo()
    assert path.read_bytes() == b"previous"
    assert leftovers(tmp_path, "a.bin") == []


def test_nd_save_interrupted_by_ctrl_c_leaves_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "w.params")
    mx.nd.save(path, {"w": mx.nd.ones((10,))})
    monkeypatch.setattr(fileio.os, "fsync", lambda fd: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        mx.nd.save(path, {"w": mx.nd.zeros((1000, 1000))})
    monkeypatch.undo()
    assert mx.nd.load(path)["w"].asnumpy().tolist() == [1.0] * 10
    assert leftovers(tmp_path, "w.params") == []


def test_nd_save_of_unsavable_data_changes_nothing(tmp_path):
    path = str(tmp_path / "w.params")
    mx.nd.save(path, [mx.nd.ones((3,))])
    with pytest.raises(MXNetTypeError, match="save only accept"):
        mx.nd.save(path, {"w": "not an array"})
    assert mx.nd.load(path)[0].asnumpy().tolist() == [1.0] * 3
    assert leftovers(tmp_path, "w.params") == []


def test_save_optimizer_states_failing_keeps_the_previous_states(tmp_path, monkeypatch):
    kv = small_store()
    fname = str(tmp_path / "opt.states")
    save_states(kv, fname)
    before = open(fname, "rb").read()
    kv.push(0, mx.nd.ones((4,)))
    monkeypatch.setattr(fileio.os, "replace", lambda a, b: (_ for _ in ()).throw(
        OSError(5, "Input/output error")))
    with pytest.raises(MXNetIOError, match="optimizer states file .*Input/output error"):
        save_states(kv, fname)
    monkeypatch.undo()
    assert open(fname, "rb").read() == before
    assert leftovers(tmp_path, "opt.states") == []


def test_bad_paths_raise_naming_the_path(tmp_path):
    with pytest.raises(MXNetIOError, match="no/such/dir"):
        mx.nd.save(str(tmp_path / "no/such/dir/x"), mx.nd.ones((2,)))
    with pytest.raises(MXNetIOError, match="Is a directory"):
        mx.nd.save(str(tmp_path), mx.nd.ones((2,)))
    with pytest.raises(MXNetTypeError, match="must be a str or os.PathLike, got int"):
        mx.nd.save(42, mx.nd.ones((2,)))
    with pytest.raises(MXNetIOError, match="NUL"):
        mx.nd.save("a\0b", mx.nd.ones((2,)))
    with pytest.raises(MXNetIOError, match="nope"):
        small_store().load_optimizer_states(str(tmp_path / "nope"))
    assert os.listdir(tmp_path) == []


def test_the_replaced_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "w.params"
    mx.nd.save(str(path), mx.nd.ones((2,)))
    os.chmod(path, 0o600)
    mx.nd.save(str(path), mx.nd.zeros((2,)))
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_symlink_at_the_path_is_replaced_not_followed(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"someone else's file")
    link = tmp_path / "w.params"
    link.symlink_to(target)
    mx.nd.save(str(link), mx.nd.ones((2,)))
    assert target.read_bytes() == b"someone else's file"
    assert not link.is_symlink()
    assert mx.nd.load(str(link))[0].asnumpy().tolist() == [1.0, 1.0]


# ------------------------------------------------------------ threads
def test_eight_threads_saving_to_one_path_all_succeed(tmp_path):
    path = str(tmp_path / "shared.params")
    mx.nd.save(path, {f"a{j}": mx.nd.zeros((64, 64)) for j in range(4)})
    errors, loads = [], []
    saves = 25
    stop = threading.Event()

    def saver(i):
        data = {f"a{j}": mx.nd.ones((64, 64)) * i for j in range(4)}
        for _ in range(saves):
            mx.nd.save(path, data)

    def reader():
        while not stop.is_set():
            got = mx.nd.load(path)
            vals = {float(v.asnumpy()[0, 0]) for v in got.values()}
            arrays = [v.asnumpy() for v in got.values()]
            loads.append(len(vals) == 1 and all(a.min() == a.max() for a in arrays))

    def guarded(fn, *args):
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(saver, i)) for i in range(8)]
    readers = [threading.Thread(target=guarded, args=(reader,)) for _ in range(2)]
    for t in threads + readers:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    stop.set()
    for t in readers:
        t.join(TIMEOUT)
    assert errors == []
    assert loads and all(loads), f"{loads.count(False)} of {len(loads)} loads saw a mix"
    assert leftovers(tmp_path, "shared.params") == []


# ------------------------------------------------------------ a process killed mid-save
KILLED_SAVER = textwrap.dedent("""
    import sys
    import mxkv as mx
    path, what, ready = sys.argv[1], sys.argv[2], sys.argv[3]
    big = mx.nd.ones((16, 1024, 1024))   # 64 MiB: a save takes a while
    if what == "nd":
        mx.nd.save(path, [mx.nd.ones((3,)) * 2])
    else:
        kv = mx.kv.create("local")
        kv.init(0, mx.nd.ones((4,)))
        kv.init(1, big)
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        kv.push(0, mx.nd.ones((4,)))
        kv.save_optimizer_states(path)     # the previous states: key 0 only
        kv.push(1, big)                    # key 1's momentum: 64 MiB
    open(ready, "w").close()
    while True:
        if what == "nd":
            mx.nd.save(path, [big])
        else:
            kv.save_optimizer_states(path)
""")


def wait_for_temporary(path, proc, deadline):
    name = os.path.basename(path)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the saver exited early ({proc.returncode}): {proc.stderr.read()}")
        temps = [p for p in os.listdir(os.path.dirname(path))
                 if p.startswith(name + fileio.TEMP_MARK)]
        if temps:
            return temps
        time.sleep(0.002)
    pytest.fail("no temporary appeared")


def kill_a_saver(tmp_path, path, what):
    """Start a process saving ``path`` in a loop, SIGKILL it while a
    temporary exists; return its pid."""
    ready = str(tmp_path.parent / f"{tmp_path.name}-ready")
    if os.path.exists(ready):
        os.unlink(ready)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SAVER, path, what, ready],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(ready) and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"the saver exited early: {proc.stderr.read()}")
            time.sleep(0.01)
        wait_for_temporary(path, proc, deadline)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.pid


def check_previous_file(path, what):
    """The file holds one whole earlier save, and it loads."""
    if what == "nd":
        loaded = mx.nd.load(path)
        assert len(loaded) == 1 and loaded[0].shape in ((3,), (16, 1024, 1024))
        if loaded[0].shape == (3,):
            assert loaded[0].asnumpy().tolist() == [2.0] * 3
        else:
            assert float(loaded[0].asnumpy().min()) == 1.0
        return
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((4,)))
    kv.init(1, mx.nd.ones((16, 1024, 1024)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.load_optimizer_states(path)
    assert 0 in kv._updater.states


@pytest.mark.parametrize("what", ["nd", "states"])
def test_a_kill_mid_save_leaves_the_previous_file_and_the_next_save_cleans_up(tmp_path,
                                                                               what):
    path = str(tmp_path / ("w.params" if what == "nd" else "opt.states"))
    name = os.path.basename(path)
    landed = 0
    for _ in range(5):  # a kill may land between two saves; then try again
        pid = kill_a_saver(tmp_path, path, what)
        check_previous_file(path, what)
        left = leftovers(tmp_path, name)
        assert all(f"{fileio.TEMP_MARK}{pid}." in t for t in left), left
        if left:
            landed += 1
            break
    assert landed, "no kill landed while a temporary was being written"
    if what == "nd":  # the next save to the path removes the dead process's temporary
        mx.nd.save(path, [mx.nd.ones((3,))])
    else:
        small_store().save_optimizer_states(path)
    assert leftovers(tmp_path, name) == []


def test_a_live_process_temporary_is_left_alone(tmp_path):
    path = str(tmp_path / "w.params")
    live = f"{path}{fileio.TEMP_MARK}{os.getppid()}.abc.{fileio._host()}"
    other_host = f"{path}{fileio.TEMP_MARK}999999999.abc.some-other-host"
    for p in (live, other_host):
        open(p, "wb").close()
    mx.nd.save(path, mx.nd.ones((2,)))
    assert sorted(leftovers(tmp_path, "w.params")) == sorted(
        os.path.basename(p) for p in (live, other_host))


def test_loading_states_saved_atomically_round_trips(tmp_path):
    kv = small_store()
    fname = str(tmp_path / "opt.states")
    save_states(kv, fname)
    fresh = small_store()
    fresh.load_optimizer_states(fname)
    np.testing.assert_array_equal(fresh._updater.states[0].asnumpy(),
                                  kv._updater.states[0].asnumpy())
