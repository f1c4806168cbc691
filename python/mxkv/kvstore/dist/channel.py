"""A worker's line to the server shards: calls, waits, retries and resends.

Everything a worker sends to a shard goes through :class:`Channel`:

* **Waiting never hangs silently.** :meth:`Channel.wait` waits for a set of
  shard calls; after ``MXKV_STALL_TIMEOUT`` seconds it logs which ranks have
  not pushed which keys (asking the shards), and past ``MXKV_FAIL_TIMEOUT``
  it cancels the calls and raises :class:`~mxkv.base.MXNetTimeoutError`
  naming them. A call that fails because a worker died raises
  :class:`~mxkv.base.DeadNodeError` naming its rank.
* **Pushes are kept until durable.** Each init and push message is kept
  (its object-store reference, not a copy) until the shard reports a
  checkpoint covering it.
* **A restarted shard is resynced.** When a call finds its shard dead or
  restarted, the channel waits for Ray to bring it back, re-sends every
  kept message (the shard drops what its checkpoint already has: sequence
  numbers make this exactly-once) and retries the call.
* **Pushes may go through the host's relay** (:mod:`.relay`): a message
  marked ``relayed`` is handed to the relay, which sums the host's pushes
  and sends the shard one; it is kept until the *shard* reports it durable,
  and re-sent to the relay when the relay restarts.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ...base import DeadNodeError, MXNetError, MXNetTimeoutError, ShardFailedError
from .bulk import BulkLost
from .doorbell import bell_socket, ring
from .job import NAMESPACE, Timeouts, shard_name
from .messages import Init, Push, Rank, ShardRestarted

__all__ = ["Channel", "Message"]

log = logging.getLogger("mxkv.kvstore.dist")


@dataclass
class Message:
    """An init or push message kept for resending: its ``parts`` (what it
    names, :mod:`.messages`) and ``ref``, its payloads (an object-store
    reference or a :class:`~.shm.ShmBatch`)."""

    shard: int
    parts: Union[Init, Push]
    ref: Any
    #: called once when the message is no longer kept (hands a shared
    #: segment back to its pool, :mod:`.shm`)
    release: Optional[Callable[[], None]] = None
    #: a push sent through this host's relay (:mod:`.relay`), not to the shard
    relayed: bool = False


class Call:
    """One pending shard call and how to redo it after a resync."""

    __slots__ = ("shard", "ref", "make", "what")

    def __init__(self, shard: int, make: Callable[[str], Any], what: str) -> None:
        self.shard = shard
        self.make = make
        self.what = what
        self.ref = None


def _cause(exc: BaseException) -> BaseException:
    """The exception a shard raised, out of Ray's wrapper."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


class Channel:
    """The shard actors of a job, seen from one worker.

    Parameters
    ----------
    ray : module
    job : str
    num_shards : int
    rank : int or tuple of int
        The worker's rank; a relay's channel sends for a group of ranks
        (:data:`.messages.Rank`).
    timeouts : Timeouts
    describe : callable
        ``describe(part_name) -> str``: how a part is named in messages.
    """

    def __init__(self, ray: Any, job: str, num_shards: int, rank: Rank, timeouts: Timeouts,
                 describe: Callable[[Any], str] = repr) -> None:
        self.ray = ray
        self.job = job
        self.rank = rank
        self.who = f"worker rank {rank}" if isinstance(rank, int) else \
            f"the relay of worker ranks {', '.join(map(str, rank))}"
        #: this host's relay and its incarnation (:mod:`.relay`), when pushes use one
        self.relay: Any = None
        self.relay_incarnation = ""
        self.relay_ranks: Tuple[int, ...] = ()
        #: the relay's doorbell (:mod:`.doorbell`): its socket's path, or ""
        self.relay_bell = ""
        self._bell: Optional[socket.socket] = None
        #: relayed pushes rung without their call yet (:meth:`send`)
        self._rung: List[Message] = []
        self._relay_lock = threading.Lock()
        self.timeouts = timeouts
        self.describe = describe
        self.shards = [self._lookup(i) for i in range(num_shards)]
        self.incarnation: List[str] = [""] * num_shards
        #: the Ray node of each shard (for the same-host path, :mod:`.shm`)
        self.nodes: List[Optional[str]] = [None] * num_shards
        #: ``relocate(msg)``: makes a kept message's payload reachable from
        #: another node (set by the worker; called when a shard moved)
        self.relocate: Optional[Callable[[Message], None]] = None
        #: ``before_submit(msg)``: called each time a push is submitted (the
        #: worker's transport sends its bulk bytes then, :mod:`.bulk`)
        self.before_submit: Optional[Callable[[Message], None]] = None
        #: each shard's bulk listener (host, port), or None (:mod:`.bulk`)
        self.bulk_addr: List[Optional[Tuple[str, int]]] = [None] * num_shards
        self.kept: List[List[Message]] = [[] for _ in range(num_shards)]
        #: (shard, part) -> its durable round: a big key's parts on different
        #: shards share its name, and each shard checkpoints on its own
        self.durable: Dict[Tuple[int, Any], int] = {}
        self.inflight: List[Tuple[Any, Message]] = []
        self.lock = threading.RLock()
        self._sync_locks = [threading.Lock() for _ in range(num_shards)]
        hellos = self.ray.get([s.hello.remote() for s in self.shards],
                              timeout=self.timeouts.fail)
        for i, h in enumerate(hellos):
            self.incarnation[i] = h["incarnation"]
            self.nodes[i] = h.get("node")
            self.bulk_addr[i] = h.get("bulk")

    def _lookup(self, index: int) -> Any:
        deadline = time.monotonic() + self.timeouts.fail
        while True:
            try:
                return self.ray.get_actor(shard_name(self.job, index), namespace=NAMESPACE)
            except ValueError:
                if time.monotonic() > deadline:
                    raise MXNetError(f"server shard {index} of job {self.job!r} does not exist: "
                                     "was the job started with `mxkv launch`?") from None
                time.sleep(0.2)

    # ------------------------------------------------------------ sending
    def send(self, msg: Message, call_later: bool = False) -> Any:
        """Send an init/push message and keep it until it is durable; returns
        the call's ref (done when the shard has answered).

        ``call_later``, for a push through the relay: ring its doorbell now
        and make the call at the next :meth:`call_rung` (returns None then).
        The relay has the push from the doorbell; the call (kept, re-sent and
        answered as every call) changes nothing when it comes. So a worker
        copies and rings a round's every chunk first, and its Ray calls,
        which took up to 40 ms each on a loaded host, no longer hold up the
        copies the relay waits for. Where the doorbell cannot ring, the call
        is made at once."""
        with self.lock:
            self.kept[msg.shard].append(msg)
            if call_later and msg.relayed and self._ring(msg):
                self._rung.append(msg)
                return None
            ref = self._submit_message(msg, rung=False)
            self.inflight.append((ref, msg))
        return ref

    def call_rung(self) -> None:
        """Make the calls of the pushes :meth:`send` rang without one."""
        with self.lock:
            rung, self._rung = self._rung, []
            for msg in rung:
                self.inflight.append((self._submit_message(msg, rung=True), msg))

    def _ring(self, msg: Message) -> bool:
        """Ring the relay's doorbell with relayed push ``msg`` (holding
        :attr:`lock`); False when there is no doorbell or it cannot ring."""
        if not self.relay_bell:
            return False
        if self._bell is None:
            self._bell = bell_socket()
        return ring(self._bell, self.relay_bell, (self.relay_incarnation, self.rank, msg.shard,
                                                  self.incarnation[msg.shard], msg.parts,
                                                  msg.ref))

    def _submit_message(self, msg: Message, rung: bool = False) -> Any:
        shard = self.shards[msg.shard]
        inc = self.incarnation[msg.shard]
        if isinstance(msg.parts, Init):
            return shard.init.remote(inc, msg.parts, msg.ref)
        if self.before_submit is not None and not msg.relayed:
            self.before_submit(msg)
        if msg.relayed:
            # the doorbell first: the relay takes it at once, the call after
            # it (kept, resent, answered as before) then finds it done
            if not rung:
                self._ring(msg)
            return self.relay.push.remote(self.relay_incarnation, self.rank, msg.shard, inc,
                                          msg.parts, msg.ref)
        return shard.push.remote(inc, self.rank, msg.parts, msg.ref)

    def reap(self, block: bool = False) -> None:
        """Collect finished pushes: forget durable messages, resync restarted
        shards and raise what a shard refused. ``block`` waits for all."""
        with self.lock:
            if not self.inflight:
                return
            refs = [r for r, _ in self.inflight]
        if block:
            self._wait_refs(refs, "finishing pushes")
            done = refs
        else:
            done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        if not done:
            return
        done_set = set(done)
        with self.lock:
            finished = [(r, m) for r, m in self.inflight if r in done_set]
            self.inflight = [(r, m) for r, m in self.inflight if r not in done_set]
        error = None
        for ref, msg in finished:
            try:
                durable = self.ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - sorted out below
                cause = _cause(exc)
                if isinstance(cause, BulkLost):   # its bytes are sent again with it
                    with self.lock:
                        self._resend([msg])
                    continue
                if self.is_restart(exc):
                    if msg.relayed:
                        self.resync_relay()
                    else:
                        self.resync(msg.shard)
                    continue
                error = error or cause
                continue
            self.note_durable(msg.shard, msg.parts.names, durable)
        if error is not None:
            raise error

    def note_durable(self, shard: int, names: Sequence[Any], durable: Sequence[int]) -> None:
        """Shard ``shard`` has ``names`` on disk up to rounds ``durable``:
        forget the kept messages that covers."""
        with self.lock:
            moved = False
            for name, d in zip(names, durable):
                if d > self.durable.get((shard, name), -1):
                    self.durable[(shard, name)] = d
                    moved = True
            if not moved:
                # (most answers: a checkpoint covers several rounds, and every
                # chunk's answer in between repeats it; a message is sent
                # before its round can be durable, so none waits for this)
                return
            durable_of = self.durable.get
            keep = []
            for m in self.kept[shard]:
                if m.parts.durable_at(lambda n: durable_of((shard, n), -1)):
                    if m.release is not None:
                        m.release()
                    continue
                keep.append(m)
            self.kept[shard] = keep

    def forget_all(self) -> None:
        """Drop every kept message (the job is over for this worker)."""
        with self.lock:
            for kept in self.kept:
                for m in kept:
                    if m.release is not None:
                        m.release()
            self.kept = [[] for _ in self.kept]

    # ------------------------------------------------------------ calls
    def call(self, calls: List[Call], what: str) -> List[Any]:
        """Run shard calls concurrently; returns their results in order.

        ``Call.make(incarnation)`` submits the call; it is made again after
        the shard is resynced.
        """
        for c in calls:
            c.ref = c.make(self.incarnation[c.shard])
        results: List[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        while todo:
            self._wait_refs([calls[i].ref for i in todo], what)
            retry = []
            for i in todo:
                c = calls[i]
                try:
                    results[i] = self.ray.get(c.ref)
                except Exception as exc:  # noqa: BLE001
                    if self.is_restart(exc):
                        self.resync(c.shard)
                        c.ref = c.make(self.incarnation[c.shard])
                        retry.append(i)
                        continue
                    raise self._translate(exc, c.what) from None
            todo = retry
        return results

    def stream(self, calls: List[Call], what: str) -> Iterator[Tuple[int, Any]]:
        """:meth:`call`, yielding (index, result) as each call finishes
        (a restarted shard's calls are made again and come later)."""
        for c in calls:
            c.ref = c.make(self.incarnation[c.shard])
        todo = {c.ref: i for i, c in enumerate(calls)}
        while todo:
            for ref in self._wait_refs(list(todo), what, any_of=True):
                i = todo.pop(ref)
                c = calls[i]
                try:
                    result = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001
                    if self.is_restart(exc):
                        self.resync(c.shard)
                        c.ref = c.make(self.incarnation[c.shard])
                        todo[c.ref] = i
                        continue
                    raise self._translate(exc, c.what) from None
                yield i, result

    def is_restart(self, exc: BaseException) -> bool:
        """Whether a call failed because its actor restarted (or is
        restarting): the call is made again once it is back."""
        cause = _cause(exc)
        if isinstance(cause, ShardRestarted):
            return True
        errs = self.ray.exceptions
        return isinstance(exc, (errs.RayActorError, errs.ActorUnavailableError)) \
            and not isinstance(exc, errs.RayTaskError)

    def _translate(self, exc: BaseException, what: str) -> BaseException:
        cause = _cause(exc)
        if isinstance(cause, MXNetError):
            return cause
        return MXNetError(f"{what} failed on a server shard: {cause}")

    # ------------------------------------------------------------ waiting
    def _wait_refs(self, refs: List[Any], what: str, any_of: bool = False) -> List[Any]:
        """Wait for every ref (``any_of``: for one at least; returns those
        done), logging stalls and failing past the fail timeout."""
        if not refs:
            return []
        t = self.timeouts
        start = time.monotonic()
        next_stall = start + t.stall
        deadline = start + t.fail
        pending = list(refs)
        while pending:
            now = time.monotonic()
            timeout = max(0.0, min(next_stall, deadline) - now)
            watch = self.relay is not None or self.before_submit is not None
            if watch:
                # what this call waits for may need a push the relay lost
                # in a restart, or whose bulk bytes were lost (:mod:`.bulk`):
                # look at the pushes' answers meanwhile
                timeout = min(timeout, 0.25)
            ready, pending = self.ray.wait(pending, num_returns=1 if any_of else len(pending),
                                           timeout=timeout)
            if any_of and ready:
                return ready
            if not pending:
                break
            if watch:
                self.reap()
            now = time.monotonic()
            if now >= deadline:
                report = self.stall_report()
                for r in pending:
                    try:
                        self.ray.cancel(r)
                    except Exception:  # noqa: BLE001 - best effort
                        pass
                raise MXNetTimeoutError(
                    f"{what}: {self.who} waited {now - start:.1f} s "
                    f"(MXKV_FAIL_TIMEOUT={t.fail:g}) and gives up; {report}")
            if now >= next_stall:
                log.warning("mxkv %s: %s has waited %.1f s; %s", what, self.who,
                            now - start, self.stall_report())
                next_stall += t.stall
        return refs

    def stall_report(self) -> str:
        """Which ranks have not pushed which keys, from the shards."""
        try:
            reports = self.ray.get([s.stalled.remote() for s in self.shards],
                                   timeout=max(1.0, min(10.0, self.timeouts.stall)))
        except Exception as exc:  # noqa: BLE001
            return f"the server shards did not say what they wait for ({exc})"
        gathering: Dict[Tuple[int, Any, int], List[int]] = {}
        if self.relay is not None:   # which of this host's ranks its relay still waits for
            try:
                for shard, name, rnd, missing in self.ray.get(self.relay.stalled.remote(),
                                                              timeout=10):
                    gathering[(shard, name, rnd)] = missing
            except Exception:  # noqa: BLE001 - the shards' view alone
                pass
        by_rank: Dict[int, List[Tuple[Any, int]]] = {}
        for shard, rep in enumerate(reports):
            for name, rnd, missing in rep:
                here = gathering.pop((shard, name, rnd), None)
                if here is not None:   # the host's pushes that reached its relay are in
                    missing = [r for r in missing if r not in self.relay_ranks or r in here]
                for r in missing:
                    by_rank.setdefault(r, []).append((name, rnd))
        for (_, name, rnd), missing in gathering.items():   # rounds no shard has begun
            for r in missing:
                by_rank.setdefault(r, []).append((name, rnd))
        if not by_rank:
            return "no round is waiting for a push (waiting for a shard or for rank 0's init)"
        parts = []
        for r in sorted(by_rank):
            items = sorted(by_rank[r], key=lambda x: str(x[0]))
            shown = ", ".join(f"{self.describe(n)} (round {k})" for n, k in items[:8])
            more = f" and {len(items) - 8} more" if len(items) > 8 else ""
            parts.append(f"rank {r} has not pushed keys {shown}{more}")
        return "; ".join(parts)

    # ------------------------------------------------------------ faults
    def _back(self, actor: Any, what: str) -> dict:
        """``actor.hello()`` once it answers (Ray is restarting it meanwhile);
        DeadNodeError naming ``what`` past the fail timeout."""
        deadline = time.monotonic() + self.timeouts.fail
        while True:
            try:
                return self.ray.get(actor.hello.remote(),
                                    timeout=max(1.0, self.timeouts.heartbeat * 5))
            except Exception as exc:  # noqa: BLE001 - it is restarting
                if isinstance(_cause(exc), ShardFailedError):
                    raise _cause(exc) from None   # stopped for good: no coming back
                if time.monotonic() > deadline:
                    raise DeadNodeError(f"{what} died and did not come back within "
                                        f"{self.timeouts.fail:g} s: {_cause(exc)}") from None
                time.sleep(0.1)

    def resync(self, index: int) -> None:
        """Wait for shard ``index`` to be back, then re-send what it may lack."""
        with self._sync_locks[index]:
            old = self.incarnation[index]
            info = self._back(self.shards[index], f"server shard {index} of job {self.job!r}")
            if info["incarnation"] == old:
                return
            log.warning("mxkv: server shard %d restarted (from its checkpoint: %s); %s "
                        "re-sends its %d kept messages", index, info["restored"],
                        self.who, len(self.kept[index]))
            with self.lock:
                self.incarnation[index] = info["incarnation"]
                moved = info.get("node") != self.nodes[index]
                self.nodes[index] = info.get("node")
                self.bulk_addr[index] = info.get("bulk")
                if moved and self.relocate is not None:
                    for m in self.kept[index]:
                        self.relocate(m)
                self._resend(sorted(self.kept[index],
                                    key=lambda m: not isinstance(m.parts, Init)))

    def resync_relay(self) -> None:
        """Wait for this host's relay to be back (Ray restarts it), then
        re-send every kept message that went through it (it drops the rounds
        it or the shards already have)."""
        with self._relay_lock:
            old = self.relay_incarnation
            info = self._back(self.relay, f"the relay of job {self.job!r} on this host")
            if info["incarnation"] == old:
                return
            with self.lock:
                self.relay_incarnation = info["incarnation"]
                self.relay_bell = info.get("bell", "")
                msgs = [m for kept in self.kept for m in kept if m.relayed]
                log.warning("mxkv: this host's relay restarted; %s re-sends its %d kept "
                            "messages", self.who, len(msgs))
                self._resend(msgs)

    def _resend(self, msgs: Sequence[Message]) -> None:
        """Submit kept messages again (holding :attr:`lock`)."""
        for m in msgs:
            self.inflight.append((self._submit_message(m), m))
