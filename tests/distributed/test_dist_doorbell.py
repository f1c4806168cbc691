"""The relay's doorbell (doorbell.py) without a cluster: what it takes, what
it refuses, and that a doorbell that cannot ring only says so."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading

import pytest
from dist_waits import wait_until

from mxkv.kvstore.dist.doorbell import MAX_BYTES, Doorbell, bell_socket, ring


@pytest.fixture
def bell(tmp_path):
    got, lock = [], threading.Lock()

    def take(msg):
        if msg == "boom":
            raise RuntimeError("a take that fails")
        with lock:
            got.append(msg)
    b = Doorbell(str(tmp_path / "jobdir" / "relay-x.bell"), take)
    yield b, got
    b.close()


def test_a_rung_message_is_taken_in_order(bell):
    b, got = bell
    sock = bell_socket()
    msgs = [("inc", 1, 0, "shard-inc", ("part", i), None) for i in range(5)]
    for m in msgs:
        assert ring(sock, b.path, m)
    wait_until(lambda: len(got) == 5, "five messages taken", timeout=30)
    assert got == msgs and b.taken == 5 and b.refused == 0
    sock.close()


def test_the_socket_and_its_directory_are_the_users_alone(bell):
    b, _ = bell
    assert stat.S_IMODE(os.stat(b.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(b.path)).st_mode) == 0o700
    b.close()
    assert not os.path.exists(b.path)


def test_a_doorbell_that_cannot_ring_says_so_and_raises_nothing(bell, tmp_path):
    b, got = bell
    sock = bell_socket()
    assert not ring(sock, str(tmp_path / "no-such.bell"), ("x",))
    assert not ring(sock, "", ("x",))
    assert not ring(sock, b.path, b"x" * (MAX_BYTES + 1))   # too big: its call carries it
    assert not ring(sock, b.path, lambda: 0)                # not picklable
    assert ring(sock, b.path, "after")
    wait_until(lambda: got == ["after"], "the message after the refused ones", timeout=30)
    sock.close()


def test_garbage_and_a_failing_take_do_not_stop_the_doorbell(bell):
    b, got = bell
    sock = bell_socket()
    sock.sendto(b"not a pickle", b.path)
    assert ring(sock, b.path, "boom")
    assert ring(sock, b.path, "still here")
    wait_until(lambda: got == ["still here"], "the message after garbage", timeout=30)
    assert b.refused == 1 and b.taken == 1
    sock.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="sending as another user needs root")
def test_a_datagram_from_another_user_is_refused_unread():
    # (a directory the other user can pass through, and the socket opened
    # to it: only the sender's credentials stand in the way)
    top = tempfile.mkdtemp(prefix="mxkv-bell-test-")
    got = []
    b = Doorbell(os.path.join(top, "jobdir", "relay-x.bell"), got.append)
    try:
        _another_user_rings(b, got)
    finally:
        b.close()
        shutil.rmtree(top, ignore_errors=True)


def _another_user_rings(b, got):
    for d in (os.path.dirname(os.path.dirname(b.path)), os.path.dirname(b.path)):
        os.chmod(d, 0o711)
    os.chmod(b.path, 0o666)
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            ok = ring(bell_socket(), b.path, ("planted", 0))
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0   # it was sent...
    wait_until(lambda: b.refused == 1, "the other user's datagram refused", timeout=30)
    sock = bell_socket()
    assert ring(sock, b.path, "mine")
    wait_until(lambda: got == ["mine"], "this user's message", timeout=30)
    assert ("planted", 0) not in got   # ...and never unpickled or taken
    sock.close()
