"""A doorbell: a worker and its host's relay tell each other of a push or a
pull's answer without waiting for Ray's call.

A worker hands each chunk it pushes through the relay (:mod:`.relay`) as a
Ray call. On a loaded host that call takes milliseconds to tens of them to
start in the relay (2 / 7 / 28 / 96 ms at the 10th, 50th and 90th
percentile and the most, on the emulated-hosts bed: docs/distributed.md),
and the relay cannot send a sum before the last of its host's workers'
chunks is in, so the host's link stands idle at the start of each round.
The worker therefore also rings the relay's doorbell first: one datagram on
a Unix socket in the job's directory of segments, carrying what the call
carries (the push's parts and where they lie in the worker's segment). The
relay takes it on its own thread at once; the call that follows finds the
round gathered or sent and changes nothing.

The other way, the relay rings the worker's own doorbell with each pull
answer (where the chunk lies in the relay's pull segment) before its call
returns it; the worker takes whichever comes first, once.

The doorbell only saves time: a datagram that cannot be sent (the relay
restarted, its queue is full, the message is too big) or that the relay
cannot take (a part it has not seen yet, another incarnation) is dropped,
and the Ray call, which the channel keeps, resends and sees answered
(:mod:`.channel`), does the work as before. Exactly once holds because the
relay marks a round sent when it completes, whichever way its last push
came.

The datagram is a pickle, so only the job's own processes may ring: the
socket lies in the job's directory (mode 0700) with mode 0600, and the
receiver drops a datagram whose sender (``SO_PASSCRED``) is another user.
"""
from __future__ import annotations

import logging
import os
import pickle
import socket
import struct
import threading
from typing import Any, Callable

__all__ = ["Doorbell", "ring", "bell_socket"]

log = logging.getLogger("mxkv.kvstore.dist")

#: the most a datagram may hold (a bigger message goes by its Ray call only)
MAX_BYTES = 64 << 10
_UCRED = struct.Struct("3i")   # pid, uid, gid (SCM_CREDENTIALS)


class Doorbell:
    """A doorbell's receiving end: a datagram socket bound at ``path``,
    read on a thread that hands each unpickled datagram from this user to
    ``take`` (whose errors are logged and dropped)."""

    def __init__(self, path: str, take: Callable[[Any], None]) -> None:
        self.path = path
        self.take = take
        self.taken = 0       # datagrams handed to take
        self.refused = 0     # from another user, or not unpickled
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            old = os.umask(0o177)
            try:
                self.sock.bind(path)
            finally:
                os.umask(old)
        except BaseException:
            self.sock.close()
            raise
        self._thread = threading.Thread(target=self._loop, name="mxkv-doorbell", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        uid = os.getuid()
        space = socket.CMSG_SPACE(_UCRED.size)
        while True:
            try:
                data, anc, _flags, _addr = self.sock.recvmsg(MAX_BYTES, space)
            except OSError:
                return   # closed
            sender = None
            for level, kind, body in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS \
                        and len(body) >= _UCRED.size:
                    sender = _UCRED.unpack_from(body)[1]
            if sender != uid:
                self.refused += 1
                continue
            try:
                msg = pickle.loads(data)
            except Exception:  # noqa: BLE001 - not one of ours
                self.refused += 1
                continue
            try:
                self.take(msg)
                self.taken += 1
            except Exception:  # noqa: BLE001 - its Ray call does the work then
                log.debug("mxkv: a doorbell's message was not taken", exc_info=True)

    def close(self) -> None:
        """Stop receiving and remove the socket's file."""
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def bell_socket() -> socket.socket:
    """A socket to ring doorbells with (never blocks)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    return sock


def ring(sock: socket.socket, path: str, msg: Any) -> bool:
    """Send ``msg`` to the doorbell at ``path``; False when it could not go
    (no such doorbell, its queue full, too big): the caller's Ray call does
    the work then."""
    if not path:
        return False
    try:
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - (pickle raises several kinds)
        return False
    if len(data) > MAX_BYTES:
        return False
    try:
        sock.sendto(data, path)
        return True
    except OSError:
        return False
