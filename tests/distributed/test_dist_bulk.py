"""The bulk transport's framing and authentication (bulk.py), without Ray:
a chunk's arrays arrive equal whatever the reads' sizes, a wrong secret is
refused both ways, a connection broken mid-chunk delivers nothing, and a
client that lost its connection reconnects and sends its chunk again, and
both ends use the congestion control asked for (one the kernel refuses
leaves its default, said once).
(With Ray, streamed rounds over it: test_dist_stream.py; a shard killed
mid-stream: test_dist_faults.py.)"""
from __future__ import annotations

import asyncio
import socket
import threading
import time

import numpy as np
import pytest

from mxkv.kvstore.dist.bulk import (
    PULL,
    PUSH,
    BufferPool,
    BulkClient,
    BulkLost,
    BulkRef,
    BulkServer,
    connect,
    encode_header,
    recv_frame,
    send_frame,
)

SECRET = b"s" * 32
ARRAYS = [np.arange(12, dtype=np.float32).reshape(3, 4), np.array(7, np.int64),
          np.zeros((0, 5), np.float16), np.linspace(0, 1, 1000).astype(np.float64)]


def wait_until(cond, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.fixture
def server():
    s = BulkServer("127.0.0.1", SECRET, keep_s=60)
    yield s
    s.close()


def take(server, ref, timeout=20.0):
    return asyncio.run(server.take(ref, timeout))


def test_a_frame_read_in_pieces_of_any_size_gives_the_same_arrays():
    a, b = socket.socketpair()
    try:
        data = encode_header(PULL, 99, ARRAYS) + b"".join(x.tobytes() for x in ARRAYS)

        def trickle():   # (short reads: a byte, then uneven pieces)
            i, step = 0, 1
            while i < len(data):
                a.sendall(data[i:i + step])
                i, step = i + step, step % 13 + 1
        writer = threading.Thread(target=trickle)
        writer.start()
        kind, token, got = recv_frame(b)
        writer.join()
        assert (kind, token) == (PULL, 99)
        same(got, ARRAYS)
    finally:
        a.close()
        b.close()


def test_a_frame_cut_short_or_not_a_frame_is_an_error():
    a, b = socket.socketpair()
    try:
        data = encode_header(PUSH, 1, ARRAYS[:1]) + ARRAYS[0].tobytes()
        a.sendall(data[:-5])
        a.close()
        with pytest.raises(ConnectionError, match="closed after"):
            recv_frame(b)
    finally:
        b.close()
    a, b = socket.socketpair()
    try:
        a.sendall(b"HTTP" + bytes(13))
        with pytest.raises(ConnectionError, match="not an mxkv bulk frame"):
            recv_frame(b)
    finally:
        a.close()
        b.close()


def test_a_wrong_secret_is_refused_both_ways(server):
    with pytest.raises(ConnectionError):
        connect(server.address, b"x" * 32, b"c" * 16)
    wait_until(lambda: server.refused == 1, "the server to refuse the client")
    # a listener that does not know the secret is not trusted by the client
    other = BulkServer("127.0.0.1", b"y" * 32)
    try:
        with pytest.raises(ConnectionError):
            connect(other.address, SECRET, b"c" * 16)
    finally:
        other.close()
    # nothing reached either server's chunks
    assert server.received == 0 and other.received == 0


def test_pushes_and_pull_answers_cross_one_connection(server):
    client = BulkClient(lambda: server.address, SECRET)
    try:
        refs = [BulkRef(client.id, client.token(), [a * (i + 1) for a in ARRAYS])
                for i in range(5)]
        for r in refs:
            client.send(r)
        for i, r in enumerate(refs):
            same(take(server, BulkRef(r.client, r.token)), [a * (i + 1) for a in ARRAYS])
        token = client.expect()
        assert server.send(client.id, token, ARRAYS[:2])
        same(client.wait(token, 20), ARRAYS[:2])
        assert not server.send(b"n" * 16, 5, ARRAYS)   # no such client: through Ray
    finally:
        client.close()


def test_a_pooled_buffer_comes_again_only_once_nothing_else_holds_it():
    pool = BufferPool(limit=1 << 20)
    f32 = np.dtype(np.float32)
    a = pool.get(f32, (4, 8))
    assert a.shape == (4, 8) and a.dtype == f32 and a.flags.c_contiguous
    b = pool.get(f32, (4, 8))
    assert b is not a                     # a is held (here)
    a[:] = 1
    view = a.reshape(-1)[3:]              # a view holds a too
    mem = memoryview(b)                   # and a memoryview holds b
    del a, b
    c = pool.get(f32, (4, 8))
    assert not np.shares_memory(c, view) and c.base is None
    del view
    d = pool.get(f32, (4, 8))
    assert (d == 1).all()                 # a's buffer, written before: used again
    mem.release()
    del mem
    e = pool.get(f32, (4, 8))             # b's, free once the memoryview is gone
    assert not np.shares_memory(e, d) and not np.shares_memory(e, c)
    assert pool.get(np.dtype(np.float64), (4, 8)).dtype == np.float64   # another kind
    assert (pool.made, pool.reused) == (4, 2)


def test_a_pool_keeps_no_more_than_its_limit():
    pool = BufferPool(limit=3 * 1024)
    u8 = np.dtype(np.uint8)
    kept = [pool.get(u8, (1024,)) for _ in range(4)]   # the 4th is over the limit
    assert pool.bytes == 3 * 1024
    last = kept.pop()
    del kept, last
    again = [pool.get(u8, (1024,)) for _ in range(4)]
    assert (pool.made, pool.reused) == (5, 3)      # the 4th was not kept: fresh
    assert pool.bytes == 3 * 1024
    assert pool.get(u8, (0,)).size == 0 and pool.bytes == 3 * 1024
    del again


def test_pushed_chunks_are_received_into_buffers_the_server_uses_again(server):
    client = BulkClient(lambda: server.address, SECRET)
    try:
        seen = []
        for i in range(4):
            ref = BulkRef(client.id, client.token(), [a * (i + 1) for a in ARRAYS])
            client.send(ref)
            got = take(server, BulkRef(ref.client, ref.token))
            same(got, [a * (i + 1) for a in ARRAYS])
            seen.append([g.__array_interface__["data"][0] for g in got if g.nbytes])
            del got    # (taken and done with, as a shard's summed round)
        # every chunk after the first came into the first one's buffers
        assert all(s == seen[0] for s in seen[1:])
        assert server.pool.reused == 3 * len(seen[0])
    finally:
        client.close()


def test_a_pull_answer_is_received_where_the_client_says(server):
    client = BulkClient(lambda: server.address, SECRET)
    # (the server knows the connection a moment after the client does; a
    # shard asked to answer before that answers through Ray)
    wait_until(lambda: server.connected(client.id), "the server to know the client")
    try:
        place = np.zeros(16384, np.uint8)   # (a relay's pull segment, say)
        asked = []

        def into(metas):
            asked.append(metas)
            out, off = [], 0
            for dtype, shape in metas:
                n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                out.append(place[off:off + n].view(dtype).reshape(shape))
                off += -(-n // 64) * 64
            return out
        token = client.expect(into)
        assert server.send(client.id, token, ARRAYS)
        got = client.wait(token, 20)
        same(got, ARRAYS)
        assert [(d, s) for d, s in asked[0]] == [(a.dtype, a.shape) for a in ARRAYS]
        assert all(np.shares_memory(g, place) for g in got if g.nbytes)
        np.testing.assert_array_equal(place[:48].view(np.float32).reshape(3, 4), ARRAYS[0])
        # without ``into``: fresh buffers
        token = client.expect()
        assert server.send(client.id, token, ARRAYS[:1])
        assert not np.shares_memory(client.wait(token, 20)[0], place)
        # an ``into`` that fails, or gives buffers that do not fit: fresh ones
        for bad in (lambda metas: 1 / 0, lambda metas: [np.zeros(3, np.float32)]):
            token = client.expect(bad)
            assert server.send(client.id, token, ARRAYS[:1])
            same(client.wait(token, 20), ARRAYS[:1])
    finally:
        client.close()


def test_a_connection_broken_mid_chunk_delivers_nothing_and_the_chunk_comes_again(server):
    sock = connect(server.address, SECRET, b"k" * 16)
    data = encode_header(PUSH, 7, ARRAYS) + b"".join(x.tobytes() for x in ARRAYS)
    sock.sendall(data[:len(data) // 2])
    sock.close()
    with pytest.raises(BulkLost):
        take(server, BulkRef(b"k" * 16, 7), timeout=0.5)
    # the same client id, connected again, sends the chunk whole
    sock = connect(server.address, SECRET, b"k" * 16)
    try:
        send_frame(sock, PUSH, 7, ARRAYS)
        same(take(server, BulkRef(b"k" * 16, 7)), ARRAYS)
    finally:
        sock.close()


def test_a_client_whose_connection_broke_reconnects_and_resends(server):
    client = BulkClient(lambda: server.address, SECRET)
    try:
        token = client.expect()   # (a pull waiting when the connection breaks)
        client.sock.shutdown(socket.SHUT_RDWR)
        with pytest.raises(ConnectionError):
            client.wait(token, 20)
        ref = BulkRef(client.id, client.token(), ARRAYS)
        client.send(ref)
        same(take(server, BulkRef(ref.client, ref.token)), ARRAYS)
        assert not client.dead
    finally:
        client.close()


def test_a_client_that_cannot_reconnect_gives_up_once(server):
    address = [server.address]
    client = BulkClient(lambda: address[0], SECRET, retry_s=0.5)
    try:
        server.close()   # (which ends the client's connection too)
        address[0] = ("127.0.0.1", 1)   # (nothing listens there)
        # (once the client has seen it end: a chunk written before that goes
        # into the dead socket's buffer, and is sent again with its message)
        wait_until(lambda: client.sock is None, "the client to see its connection end")
        client.send(BulkRef(client.id, client.token(), ARRAYS))
        wait_until(lambda: client.dead, "the client to give up")
    finally:
        client.close()


def _congestion_of(sock):
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()


def _kernel_default():
    with socket.socket() as s:
        return _congestion_of(s)


def _another_than_the_kernels():
    """A congestion control this process may choose that is not the
    kernel's default (reno, every kernel's, unless that is the default)."""
    default = _kernel_default()
    for name in ("reno", "cubic", "bbr"):
        if name == default:
            continue
        with socket.socket() as s:
            try:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
            except OSError:
                continue
        return name
    pytest.skip(f"no congestion control other than the kernel's {default} may be chosen here")


def _served(server, client_id):
    wait_until(lambda: client_id in server._conns, "the server to take the connection")
    return server._conns[client_id].sock


@pytest.mark.skipif(not hasattr(socket, "TCP_CONGESTION"), reason="no TCP_CONGESTION here")
def test_both_ends_of_a_connection_use_the_congestion_control_asked_for():
    name = _another_than_the_kernels()
    s = BulkServer("127.0.0.1", SECRET, congestion=name)
    try:
        client = BulkClient(lambda: s.address, SECRET, congestion=name)
        try:
            assert _congestion_of(client.sock) == name        # it sends the pushes
            assert _congestion_of(_served(s, client.id)) == name   # and the answers
            ref = BulkRef(client.id, client.token(), ARRAYS)
            client.send(ref)
            same(take(s, BulkRef(ref.client, ref.token)), ARRAYS)
        finally:
            client.close()
    finally:
        s.close()


@pytest.mark.skipif(not hasattr(socket, "TCP_CONGESTION"), reason="no TCP_CONGESTION here")
def test_no_congestion_control_asked_for_keeps_the_kernels():
    plain = BulkServer("127.0.0.1", SECRET, congestion="")
    try:
        sock = connect(plain.address, SECRET, b"k" * 16, congestion="")
        try:
            assert _congestion_of(sock) == _kernel_default()
            assert _congestion_of(_served(plain, b"k" * 16)) == _kernel_default()
        finally:
            sock.close()
    finally:
        plain.close()


@pytest.mark.skipif(not hasattr(socket, "TCP_CONGESTION"), reason="no TCP_CONGESTION here")
def test_a_congestion_control_the_kernel_refuses_leaves_its_default_and_says_so_once(caplog):
    name = "nosuchcc%d" % (time.monotonic_ns() % 10 ** 6)   # (said once per process)
    s = BulkServer("127.0.0.1", SECRET, congestion=name)
    try:
        with caplog.at_level("WARNING", logger="mxkv.kvstore.dist"):
            clients = [BulkClient(lambda: s.address, SECRET, congestion=name)
                       for _ in range(2)]
            try:
                for c in clients:   # the connections work, on the kernel's default
                    assert _congestion_of(c.sock) == _kernel_default()
                    assert _congestion_of(_served(s, c.id)) == _kernel_default()
                    ref = BulkRef(c.id, c.token(), ARRAYS)
                    c.send(ref)
                    same(take(s, BulkRef(ref.client, ref.token)), ARRAYS)
            finally:
                for c in clients:
                    c.close()
        said = [r.getMessage() for r in caplog.records if name in r.getMessage()]
        assert len(said) == 1, said
        assert f"MXKV_BULK_CONGESTION={name} was refused" in said[0]
        assert repr(_kernel_default()) in said[0]
    finally:
        s.close()
