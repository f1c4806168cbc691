"""The bulk bytes of dense rounds between a worker and a shard on another
node, over one authenticated TCP connection per (worker, shard) (no Ray).

Ray's object transfer moves a chunk through a ``ray.put`` copy, both
raylets and a copy out: on the emulated-hosts bed that path is CPU-bound
(docs/distributed.md, "Across hosts: measured"). Here a chunk is a small
typed header (:data:`HEADER`: kind, token, parts) and each part's raw
bytes, sent with ``socket.sendall`` on a memoryview of where they lie and
received with ``recv_into`` straight into the buffer the receiver keeps.

Ray still carries every call: a push or pull call names its payload by a
:class:`BulkRef` (the token) and the bytes come beside it, so the
channel's kept messages, resends and incarnations (:mod:`.channel`) stay
the source of truth for exactly-once; a chunk lost with its connection is
sent again with its message.

* :class:`BulkServer` (a shard): listens on its node's address, checks
  each connection's secret (the job's, made by the coordinator) with a
  challenge and ``hmac.compare_digest``, receives pushed chunks (kept by
  (client, token) until the push call takes them, :meth:`BulkServer.take`)
  and sends pull answers to the client that asked.
* :class:`BulkClient` (a worker, one per remote shard): connects,
  authenticates both ways, sends chunks on its sender thread (a queue, in
  order) and receives pull answers on its receiver thread.

The handshake: the server sends ``MAGIC`` and a 32-byte nonce; the client
answers its 16-byte id, its own nonce and HMAC-SHA256(secret, "c" +
server nonce + id); the server answers HMAC(secret, "s" + client nonce).
Either side closes on a wrong MAC.
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import os
import queue
import socket
import struct
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ...base import MXNetError
from .config import DEFAULT_BULK_CONGESTION

__all__ = ["BulkRef", "BulkLost", "BulkServer", "BulkClient", "BufferPool", "HEADER", "PUSH",
           "PULL", "ACK", "encode_header", "recv_frame", "send_frame"]

log = logging.getLogger("mxkv.kvstore.dist")

#: congestion controls a kernel refused, said once
_said: Set[str] = set()


def congestion_of(sock: socket.socket) -> str:
    """The TCP congestion control ``sock`` uses ("" where none is told)."""
    if not hasattr(socket, "TCP_CONGESTION"):
        return ""
    try:
        name = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
    except OSError:   # (closed meanwhile)
        return ""
    return name.split(b"\0", 1)[0].decode("ascii", "replace")


def tune(sock: socket.socket, congestion: str = DEFAULT_BULK_CONGESTION) -> None:
    """Set a bulk connection's options: no Nagle delay, and ``congestion``
    as its TCP congestion control ("": the kernel's default). A kernel that
    lacks it, or does not let this user choose it, leaves the default: said
    once per process, and the connection works as before."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not congestion or not hasattr(socket, "TCP_CONGESTION"):
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
    except OSError as exc:
        if congestion not in _said:
            _said.add(congestion)
            log.warning("mxkv: bulk connections keep the kernel's congestion control %r: "
                        "MXKV_BULK_CONGESTION=%s was refused (%s; see "
                        "net.ipv4.tcp_available_congestion_control and "
                        "tcp_allowed_congestion_control)", congestion_of(sock), congestion, exc)


MAGIC = b"MXKB"
#: a frame: magic, kind, token, parts; each part then (dtype, ndim) and ndim u64s
HEADER = struct.Struct("!4sBQI")
PART = struct.Struct("!8sB")
#: worker -> shard: a chunk of pushes; shard -> worker: a pull's answer;
#: shard -> worker: a pushed chunk was received whole
PUSH, PULL, ACK = 1, 2, 3
#: at most this many parts in one frame (a guard against a corrupt header)
MAX_PARTS = 1 << 20


class BulkLost(MXNetError):
    """A push call's chunk did not reach the shard in time (its connection
    broke, or none could be made): the worker sends the message again."""

    def __reduce__(self):
        return (BulkLost, (str(self),))


class BulkRef:
    """What a push or pull call carries instead of its payloads: the chunk's
    ``token`` on the ``client``'s connection. ``arrays`` (a push's views of
    the worker's segment) stays on the worker: it is not pickled."""

    __slots__ = ("client", "token", "arrays")

    def __init__(self, client: bytes, token: int, arrays: Optional[List[np.ndarray]] = None):
        self.client = client
        self.token = token
        self.arrays = arrays

    def __reduce__(self):
        return (BulkRef, (self.client, self.token))

    @property
    def key(self) -> Tuple[bytes, int]:
        return (self.client, self.token)


# ---------------------------------------------------------------- framing
def encode_header(kind: int, token: int, arrays: Sequence[np.ndarray]) -> bytes:
    """A frame's header for ``arrays`` (C-contiguous)."""
    out = [HEADER.pack(MAGIC, kind, token, len(arrays))]
    for a in arrays:
        out.append(PART.pack(a.dtype.str.encode("ascii"), a.ndim))
        out.append(struct.pack(f"!{a.ndim}Q", *a.shape))
    return b"".join(out)


def send_frame(sock: socket.socket, kind: int, token: int, arrays: Sequence[np.ndarray]) -> None:
    """Send a frame: its header, then each array's bytes as they lie."""
    sock.sendall(encode_header(kind, token, arrays))
    for a in arrays:
        if a.nbytes:
            sock.sendall(np.ascontiguousarray(a).data.cast("B"))


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    _recv_into(sock, memoryview(buf))
    return buf


def _recv_into(sock: socket.socket, view: memoryview) -> None:
    got = 0
    n = len(view)
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        got += k


#: ``alloc(kind, token, [(dtype, shape), ...])``: where a frame's arrays are
#: received (C-contiguous, of those dtypes and shapes), or None: fresh buffers
Alloc = Callable[[int, int, List[Tuple[np.dtype, Tuple[int, ...]]]], Optional[List[np.ndarray]]]


def recv_frame(sock: socket.socket, alloc: Optional[Alloc] = None
               ) -> Tuple[int, int, List[np.ndarray]]:
    """Receive one frame: (kind, token, arrays), each array filled by
    ``recv_into``: a fresh buffer, or where ``alloc`` says. ConnectionError
    on a short read or a bad header."""
    magic, kind, token, nparts = HEADER.unpack(_recv_exact(sock, HEADER.size))
    if magic != MAGIC or kind not in (PUSH, PULL, ACK) or nparts > MAX_PARTS:
        raise ConnectionError("not an mxkv bulk frame")
    metas = []
    for _ in range(nparts):
        dt, ndim = PART.unpack(_recv_exact(sock, PART.size))
        shape = struct.unpack(f"!{ndim}Q", _recv_exact(sock, 8 * ndim)) if ndim else ()
        try:
            dtype = np.dtype(dt.rstrip(b"\0").decode("ascii"))
        except (TypeError, ValueError, UnicodeDecodeError):
            raise ConnectionError(f"a bulk frame names no dtype: {dt!r}") from None
        if dtype.hasobject:
            raise ConnectionError("a bulk frame names an object dtype")
        metas.append((dtype, tuple(shape)))
    given = alloc(kind, token, metas) if alloc is not None and nparts else None
    arrays = []
    for i, (dtype, shape) in enumerate(metas):
        a = given[i] if given is not None else np.empty(shape, dtype)
        if a.nbytes:
            _recv_into(sock, a.reshape(-1).view(np.uint8).data)
        arrays.append(a)
    return kind, token, arrays


def _mac(secret: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, b"".join(parts), hashlib.sha256).digest()


# ---------------------------------------------------------------- server
#: Bytes of receive buffers a shard keeps for use again (:class:`BufferPool`)
POOL_BYTES = 256 << 20


class BufferPool:
    """Buffers to receive pushed chunks into, used again once nothing else
    refers to them.

    A shard receives chunks of the same shapes round after round. Received
    into fresh buffers (``np.empty``), each big one came as fresh pages
    from the kernel every round (the allocator hands big blocks back when
    they are freed), faulted and cleared on the round's path: on the
    emulated hosts with 2 workers per host, a third of a shard's 1200-1700
    page faults a second. A buffer here goes back
    to use when the pool holds the only reference to it (CPython's count:
    a view of it, a memoryview, a pending round or a sum being made hold
    one each), so nothing that is still read is written over. Up to
    ``limit`` bytes are kept; past that a buffer is fresh and not kept.
    """

    def __init__(self, limit: int = POOL_BYTES) -> None:
        self.limit = int(limit)
        self.bytes = 0
        self._free: Dict[Tuple[str, Tuple[int, ...]], List[np.ndarray]] = {}
        self._lock = threading.Lock()
        #: buffers handed out again, and made (for stats and tests)
        self.reused = 0
        self.made = 0

    def get(self, dtype: np.dtype, shape: Tuple[int, ...]) -> np.ndarray:
        """A C-contiguous buffer of ``dtype`` and ``shape`` no one else holds."""
        key = (dtype.str, tuple(shape))
        with self._lock:
            kept = self._free.get(key)
            for a in kept or ():
                # 3: the list, this loop's name and getrefcount's argument
                if sys.getrefcount(a) <= 3:
                    self.reused += 1
                    return a
            a = np.empty(shape, dtype)
            self.made += 1
            if a.nbytes and self.bytes + a.nbytes <= self.limit:
                self._free.setdefault(key, []).append(a)
                self.bytes += a.nbytes
            return a

    def alloc(self, kind: int, token: int, metas: List[Tuple[np.dtype, Tuple[int, ...]]]
              ) -> List[np.ndarray]:
        """:data:`Alloc` for :func:`recv_frame`."""
        return [self.get(d, s) for d, s in metas]


class _Conn:
    """One authenticated client connection on the server."""

    def __init__(self, sock: socket.socket, client: bytes) -> None:
        self.sock = sock
        self.client = client
        self.lock = threading.Lock()   # (frames are sent whole)
        self.alive = True
        #: chunks received whole, not yet acknowledged (:meth:`BulkServer._ack`)
        self.acks: List[int] = []


class BulkServer:
    """A shard's listener.

    Parameters
    ----------
    host : str
        The address to listen on: the node's (Ray's), never 0.0.0.0.
    secret : bytes
        The job's secret.
    keep_s : float
        A received chunk no push call took within this long is dropped
        (a duplicate sent again after a lost connection).
    congestion : str
        The TCP congestion control its connections ask for (:func:`tune`):
        it sends the pull answers.
    """

    def __init__(self, host: str, secret: bytes, keep_s: float = 600.0,
                 congestion: str = DEFAULT_BULK_CONGESTION) -> None:
        self.secret = secret
        self.keep_s = keep_s
        self.congestion = congestion
        self.sock = socket.create_server((host, 0), backlog=64)
        self.address: Tuple[str, int] = (host, self.sock.getsockname()[1])
        self._lock = threading.Lock()
        self._arrived: Dict[Tuple[bytes, int], Tuple[float, List[np.ndarray]]] = {}
        self._waiting: Dict[Tuple[bytes, int], Tuple[Any, Any]] = {}
        self._conns: Dict[bytes, _Conn] = {}
        self._closed = False
        #: frames received, refused handshakes (for tests and stats)
        self.received = 0
        self.refused = 0
        #: connections taken, by their congestion control (for stats)
        self.congestions: Dict[str, int] = {}
        #: where pushed chunks are received
        self.pool = BufferPool()
        threading.Thread(target=self._accept, name="mxkv-bulk-accept", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), name="mxkv-bulk-recv",
                             daemon=True).start()

    def _handshake(self, sock: socket.socket) -> Optional[bytes]:
        nonce = os.urandom(32)
        sock.sendall(MAGIC + nonce)
        hello = _recv_exact(sock, 16 + 32 + 32)
        client, cnonce, mac = bytes(hello[:16]), bytes(hello[16:48]), bytes(hello[48:])
        if not hmac.compare_digest(mac, _mac(self.secret, b"c", nonce, client)):
            return None
        sock.sendall(_mac(self.secret, b"s", cnonce))
        return client

    def _serve(self, sock: socket.socket) -> None:
        conn = None
        try:
            sock.settimeout(30.0)   # (the handshake only)
            client = self._handshake(sock)
            if client is None:
                with self._lock:
                    self.refused += 1
                return
            sock.settimeout(None)
            tune(sock, self.congestion)
            cc = congestion_of(sock)
            conn = _Conn(sock, client)
            with self._lock:
                self.congestions[cc] = self.congestions.get(cc, 0) + 1
                if self._closed:   # (closed during the handshake: close() did not see it)
                    return
                old = self._conns.get(client)
                self._conns[client] = conn
            if old is not None:
                old.alive = False
            while True:
                kind, token, arrays = recv_frame(sock, self.pool.alloc)
                if kind != PUSH:
                    raise ConnectionError("a client sent a frame that is not a push")
                self._deliver((client, token), arrays)
                del arrays   # (not held while the next frame waits: its buffers go again)
                self._ack(conn, token)
        except (OSError, ConnectionError, struct.error):
            pass
        finally:
            if conn is not None:
                conn.alive = False
                with self._lock:
                    if self._conns.get(conn.client) is conn:
                        del self._conns[conn.client]
            sock.close()

    def _ack(self, conn: _Conn, token: int) -> None:
        """Acknowledge a chunk, unless a pull's answer is being sent on the
        connection: its sender acknowledges it after (this thread goes
        back to reading pushes instead of waiting for the answer)."""
        with self._lock:
            conn.acks.append(token)
        if conn.lock.acquire(blocking=False):
            try:
                self._flush_acks(conn)
            finally:
                conn.lock.release()

    def _flush_acks(self, conn: _Conn) -> None:
        """Send the pending acknowledgements (holding ``conn.lock``)."""
        with self._lock:
            acks, conn.acks = conn.acks, []
        for token in acks:
            conn.sock.sendall(encode_header(ACK, token, ()))

    def _deliver(self, key: Tuple[bytes, int], arrays: List[np.ndarray]) -> None:
        with self._lock:
            self.received += 1
            waiter = self._waiting.pop(key, None)
            if waiter is None:
                now = time.monotonic()
                for k in [k for k, (t, _) in self._arrived.items() if now - t > self.keep_s]:
                    del self._arrived[k]
                self._arrived[key] = (now, arrays)
                return
        loop, fut = waiter
        loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(arrays))

    async def take(self, ref: BulkRef, timeout: float) -> List[np.ndarray]:
        """The chunk ``ref`` names, once it is here; :class:`BulkLost`
        after ``timeout`` seconds."""
        import asyncio

        key = ref.key
        with self._lock:
            got = self._arrived.pop(key, None)
            if got is not None:
                return got[1]
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            self._waiting[key] = (loop, fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise BulkLost(f"a pushed chunk did not arrive within {timeout:g} s") from None
        finally:
            with self._lock:
                if self._waiting.get(key, (None, fut))[1] is fut:
                    self._waiting.pop(key, None)

    def drop_unclaimed(self, clients: Sequence[bytes] = ()) -> None:
        """Forget received chunks no call took (of ``clients``; all without)."""
        with self._lock:
            for k in [k for k in self._arrived if not clients or k[0] in clients]:
                del self._arrived[k]

    def connected(self, client: bytes) -> bool:
        with self._lock:
            c = self._conns.get(client)
        return c is not None and c.alive

    def send(self, client: bytes, token: int, arrays: Sequence[np.ndarray]) -> bool:
        """Send a pull's answer to ``client`` (blocking); False when it has
        no connection (the caller answers through Ray)."""
        with self._lock:
            conn = self._conns.get(client)
        if conn is None or not conn.alive:
            return False
        try:
            with conn.lock:
                send_frame(conn.sock, PULL, token, arrays)
                self._flush_acks(conn)
            return True
        except OSError:
            conn.alive = False
            return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self._lock:
            conns, self._conns = list(self._conns.values()), {}
            self._arrived.clear()
        for c in conns:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---------------------------------------------------------------- client
class _Slot:
    """A pull answer awaited by token."""

    __slots__ = ("event", "arrays", "error", "into")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.arrays: Optional[List[np.ndarray]] = None
        self.error: Optional[BaseException] = None
        #: ``into(metas)``: where the answer is received (None: fresh buffers)
        self.into: Optional[Callable[[list], Optional[List[np.ndarray]]]] = None


def connect(address: Tuple[str, int], secret: bytes, client: bytes,
            timeout: float = 10.0, congestion: str = DEFAULT_BULK_CONGESTION) -> socket.socket:
    """An authenticated connection to a :class:`BulkServer` (ConnectionError
    if the server does not know the secret, OSError if none answers)."""
    sock = socket.create_connection((str(address[0]), int(address[1])), timeout=timeout)
    try:
        head = _recv_exact(sock, len(MAGIC) + 32)
        if bytes(head[:4]) != MAGIC:
            raise ConnectionError(f"{address} is not an mxkv bulk listener")
        cnonce = os.urandom(32)
        sock.sendall(client + cnonce + _mac(secret, b"c", bytes(head[4:]), client))
        mac = bytes(_recv_exact(sock, 32))
        if not hmac.compare_digest(mac, _mac(secret, b"s", cnonce)):
            raise ConnectionError(f"{address} does not know the job's secret")
        sock.settimeout(None)
        tune(sock, congestion)
        return sock
    except BaseException:
        sock.close()
        raise


class BulkClient:
    """A worker's connection to one shard's :class:`BulkServer`.

    Parameters
    ----------
    address : callable
        ``address() -> (host, port)``: the shard's listener now (asked again
        to reconnect after the connection broke).
    secret : bytes
    retry_s : float
        How long a chunk's send tries to reconnect before the client gives
        up for good (:attr:`dead`: the worker uses the object store).
    congestion : str
        The TCP congestion control its connection asks for (:func:`tune`):
        it sends the pushes.
    """

    def __init__(self, address: Callable[[], Optional[Tuple[str, int]]], secret: bytes,
                 retry_s: float = 30.0, congestion: str = DEFAULT_BULK_CONGESTION) -> None:
        self.address = address
        self.retry_s = retry_s
        self.congestion = congestion
        self.secret = secret
        self.id = os.urandom(16)
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()
        self._slots: Dict[int, _Slot] = {}
        self._unacked: Dict[int, List[np.ndarray]] = {}
        self._queue: "queue.Queue[Optional[Tuple[int, List[np.ndarray]]]]" = queue.Queue()
        self.sock: Optional[socket.socket] = None
        self.dead = False
        self._gen = 0
        self._connect()
        self._sender = threading.Thread(target=self._send_loop, name="mxkv-bulk-send",
                                        daemon=True)
        self._sender.start()

    def token(self) -> int:
        return next(self._tokens)

    # ------------------------------------------------------------ connection
    def _connect(self) -> None:
        addr = self.address()
        if addr is None:
            raise ConnectionError("the shard has no bulk listener")
        sock = connect(addr, self.secret, self.id, congestion=self.congestion)
        with self._lock:
            self.sock = sock
            self._gen += 1
            gen = self._gen
        threading.Thread(target=self._recv_loop, args=(sock, gen), name="mxkv-bulk-recv",
                         daemon=True).start()

    def _broken(self, gen: int, exc: BaseException) -> None:
        """The connection of generation ``gen`` broke: pull answers awaited on
        it fail (their pulls are made again)."""
        with self._lock:
            if gen != self._gen:
                return
            sock, self.sock = self.sock, None
            slots = [s for s in self._slots.values() if not s.event.is_set()]
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        for s in slots:
            s.error = ConnectionError(f"the bulk connection broke: {exc}")
            s.event.set()

    def _into(self, kind: int, token: int, metas: list) -> Optional[List[np.ndarray]]:
        """Where a pull answer is received: its slot's ``into``, if any."""
        if kind != PULL:
            return None
        with self._lock:
            slot = self._slots.get(token)
        if slot is None or slot.into is None:
            return None
        try:
            got = slot.into(metas)
        except Exception as exc:  # noqa: BLE001 - received into fresh buffers instead
            log.warning("mxkv: a pull answer's buffers could not be made (%s); fresh ones", exc)
            return None
        if got is not None and [(a.dtype, a.shape) for a in got] != \
                [(d, tuple(s)) for d, s in metas]:
            log.warning("mxkv: a pull answer's buffers do not fit it; fresh ones")
            return None
        return got

    def _recv_loop(self, sock: socket.socket, gen: int) -> None:
        try:
            while True:
                kind, token, arrays = recv_frame(sock, self._into)
                if kind == ACK:
                    with self._lock:
                        self._unacked.pop(token, None)
                    continue
                if kind != PULL:
                    raise ConnectionError("the shard sent a frame that is not an answer")
                with self._lock:
                    slot = self._slots.setdefault(token, _Slot())
                slot.arrays = arrays
                slot.event.set()
        except (OSError, ConnectionError, struct.error) as exc:
            self._broken(gen, exc)

    def _send_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            token, arrays = item
            if self.dead:
                continue   # (its push call fails BulkLost and goes through Ray)
            with self._lock:
                self._unacked[token] = arrays
            deadline = time.monotonic() + self.retry_s
            while True:
                with self._lock:
                    sock, gen = self.sock, self._gen
                try:
                    if sock is None:
                        self._reconnect()   # (sends this chunk too: it is unacked)
                    else:
                        send_frame(sock, PUSH, token, arrays)
                    break
                except (OSError, ConnectionError) as exc:
                    self._broken(gen, exc)
                    if time.monotonic() > deadline:
                        self._give_up()
                        break
                    # the shard restarting: its new address comes with the
                    # channel's resync (polled, within retry_s)
                    time.sleep(0.2)

    def _reconnect(self) -> None:
        """Connect again and send every chunk the shard has not received whole."""
        self._connect()
        with self._lock:
            sock, gen = self.sock, self._gen
            again = sorted(self._unacked.items())
        assert sock is not None
        try:
            for token, arrays in again:
                send_frame(sock, PUSH, token, arrays)
        except (OSError, ConnectionError) as exc:
            self._broken(gen, exc)
            raise

    def _give_up(self) -> None:
        if not self.dead:
            log.warning("mxkv: the bulk connection to a server shard cannot be made again; "
                        "its chunks go through Ray's object store")
        self.dead = True
        with self._lock:
            self._unacked.clear()

    # ------------------------------------------------------------ use
    def send(self, ref: BulkRef) -> None:
        """Queue a pushed chunk (its arrays: ``ref.arrays``), sent in order."""
        self._queue.put((ref.token, ref.arrays or []))

    def expect(self, into: Optional[Callable[[list], Optional[List[np.ndarray]]]] = None
               ) -> int:
        """A token for a pull's answer (awaited with :meth:`wait`);
        ``into([(dtype, shape), ...])`` gives the arrays it is received
        into (called on the receiving thread; None: fresh buffers)."""
        token = self.token()
        with self._lock:
            self._slots.setdefault(token, _Slot()).into = into
        return token

    def wait(self, token: int, timeout: float) -> List[np.ndarray]:
        """The answer ``token`` names; ConnectionError when the connection
        broke first, TimeoutError past ``timeout``."""
        with self._lock:
            slot = self._slots.setdefault(token, _Slot())
        if not slot.event.wait(timeout):
            with self._lock:
                self._slots.pop(token, None)
            raise TimeoutError(f"a pull's answer did not come within {timeout:g} s")
        with self._lock:
            self._slots.pop(token, None)
        if slot.arrays is None:
            raise slot.error or ConnectionError("the bulk connection broke")
        return slot.arrays

    def forget(self, token: int) -> None:
        with self._lock:
            self._slots.pop(token, None)

    def close(self) -> None:
        self._queue.put(None)
        with self._lock:
            sock, self.sock = self.sock, None
            self._gen += 1
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
