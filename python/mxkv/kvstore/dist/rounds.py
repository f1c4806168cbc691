"""Rounds of a server shard: which pushes a part has, which it waits for.

Every push a worker sends for a part carries a sequence number: the
worker's count of pushes to that key (1, 2, ...). In ``dist_sync`` that
number *is* the round: round ``r`` of a part completes when every worker's
push ``r`` has arrived, and a pull after a worker's push ``r`` waits for
round ``r``. In ``dist_async`` each push is applied on arrival, in each
worker's order, and a pull waits only for the puller's own pushes.

Sequence numbers make delivery exactly-once: a push whose number is not
new (re-sent after a lost answer or a shard restart) is recognised and
dropped, and one from a worker's future waits until its predecessor is in.

A push may also stand for a *group* of workers (a tuple of ranks): the sum
of their pushes of one round, made on their host by a relay
(:mod:`.relay`), so that one message crosses the network per host instead
of one per worker. It counts as a push of every rank in the group.

:class:`RoundBook` is the bookkeeping only (no arrays, no Ray): the shard
actor asks it what to do with a push and waits on it for rounds.
"""
from __future__ import annotations

import asyncio
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ...base import DeadNodeError

__all__ = ["RoundBook", "ranks_of"]

#: in a round's pending pushes, a rank whose push is part of a group's sum
#: (kept under the group's lowest rank)
_IN_GROUP = object()


def ranks_of(rank: Any) -> Tuple[int, ...]:
    """The ranks a push stands for: one rank, or a group's tuple of ranks."""
    return tuple(sorted(int(r) for r in rank)) if isinstance(rank, (tuple, list)) \
        else (int(rank),)


class RoundBook:
    """Per-part round counters, pending pushes and waiters of one shard.

    Parameters
    ----------
    num_workers : int
    sync : bool
        ``True`` for dist_sync (rounds), ``False`` for dist_async.
    """

    def __init__(self, num_workers: int, sync: bool) -> None:
        self.num_workers = int(num_workers)
        self.sync = bool(sync)
        #: completed rounds (sync) or applied pushes in all (async), per part
        self.rounds: Dict[Any, int] = {}
        #: per part, per rank: the last sequence number accepted
        self.seen: Dict[Any, Dict[int, int]] = {}
        #: per part: rank -> payload of the round in progress (sync only)
        self.pending: Dict[Any, Dict[int, Any]] = {}
        self.dead: Dict[int, str] = {}
        self._cond: Optional[asyncio.Condition] = None

    # -- state ------------------------------------------------------------
    def add_part(self, name: Any, rounds: int = 0, seen: Optional[Dict[int, int]] = None) -> None:
        """Start keeping part ``name``: ``rounds`` completed, ``seen`` the
        last sequence number accepted from each rank."""
        self.rounds[name] = int(rounds)
        self.seen[name] = dict(seen or {})
        self.pending[name] = {}

    def has(self, name: Any) -> bool:
        """Whether part ``name`` is kept here."""
        return name in self.rounds

    def state(self) -> dict:
        """What a checkpoint keeps: rounds and accepted sequence numbers."""
        return {"rounds": dict(self.rounds),
                "seen": {k: dict(v) for k, v in self.seen.items()}}

    def restore(self, state: dict) -> None:
        """Take up a checkpoint's :meth:`state`; in sync mode, pushes of rounds
        that had not completed count as not received (their senders resend)."""
        for name, r in state["rounds"].items():
            seen = state["seen"].get(name, {})
            if self.sync:
                # pending pushes were not checkpointed: only completed rounds count
                seen = {w: min(s, r) for w, s in seen.items()}
            self.add_part(name, r, seen)

    # -- waiting ----------------------------------------------------------
    @property
    def cond(self) -> asyncio.Condition:
        """The condition waiters of this book wait on (made in the actor's loop)."""
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def changed(self) -> None:
        """Wake every waiter to re-check its condition."""
        async with self.cond:
            self.cond.notify_all()

    async def wait(self, ready) -> None:
        """Wait until ``ready()`` is true; it may raise (e.g. DeadNodeError)."""
        async with self.cond:
            await self.cond.wait_for(ready)

    # -- pushes -----------------------------------------------------------
    def ready_to_accept(self, rank: Any, items: Sequence[Tuple[Any, int]]) -> bool:
        """Whether every (part, seq) of a push may be looked at now: its
        predecessor from this rank is in (sync: its previous round is done)."""
        for name, seq in items:
            if name not in self.rounds:
                return False
            if self.sync:
                if seq > self.rounds[name] + 1:
                    self._check_dead_for(name, seq - 1)
                    return False
            elif seq > self.seen[name].get(rank, 0) + 1:
                return False
        return True

    def accept(self, rank: Any, name: Any, seq: int, payload: Any) -> Optional[str]:
        """Record push ``seq`` of ``rank`` (or of a group of ranks, a tuple:
        ``payload`` is their sum, sync only) for part ``name``.

        Returns ``None`` for a duplicate (dropped), ``'apply'`` (async: apply
        it now), ``'pending'`` (sync: the round waits for others) or
        ``'complete'`` (sync: the round has every push; call :meth:`complete`).
        """
        ranks = ranks_of(rank)
        seen = self.seen[name]
        # a group's ranks are seen together: any of them seen means all
        if any(seq <= seen.get(r, 0) for r in ranks):
            return None
        if not self.sync:
            if len(ranks) > 1:
                raise ValueError("dist_async applies each worker's push alone: a group's "
                                 "sum cannot be accepted")
            seen[ranks[0]] = seq
            self.rounds[name] += 1
            return "apply"
        if seq <= self.rounds[name]:
            return None
        pend = self.pending[name]
        for r in ranks:
            seen[r] = seq
            pend[r] = _IN_GROUP
        pend[ranks[0]] = payload
        if len(pend) >= self.num_workers:
            return "complete"
        return "pending"

    def contributions(self, name: Any) -> List[Any]:
        """The pending pushes of a complete round, in rank order (a group's
        sum at its first rank): a fixed summation order, so a replayed round
        gives the same bits."""
        pend = self.pending[name]
        return [pend[w] for w in sorted(pend) if pend[w] is not _IN_GROUP]

    def complete(self, name: Any) -> None:
        """Close part ``name``'s current round: its pending pushes are applied."""
        self.pending[name] = {}
        self.rounds[name] += 1

    # -- pulls --------------------------------------------------------------
    def pull_ready(self, rank: int, items: Iterable[Tuple[Any, int]]) -> bool:
        """Whether every (part, seq) is served: sync, round ``seq`` is done;
        async, this rank's push ``seq`` was applied. Raises DeadNodeError
        when a dead worker's push is needed."""
        for name, seq in items:
            if name not in self.rounds:
                self._check_dead_for(name, 0)
                return False
            if self.sync:
                if self.rounds[name] < seq:
                    self._check_dead_for(name, seq)
                    return False
            elif self.seen[name].get(rank, 0) < seq:
                return False
        return True

    # -- faults -------------------------------------------------------------
    def mark_dead(self, ranks: Dict[int, str]) -> None:
        """Record dead workers (rank -> why): rounds that need them fail."""
        self.dead.update({int(r): why for r, why in ranks.items()})

    def _check_dead_for(self, name: Any, round_: int) -> None:
        if not self.dead:
            return
        if name not in self.rounds:
            if 0 in self.dead:
                raise DeadNodeError(
                    f"worker rank 0 died ({self.dead[0]}) before it initialized key "
                    f"{_label(name)}: no other rank can")
            return
        if not self.sync:
            return
        if self.rounds[name] >= round_:
            return
        have = self.pending[name]
        missing = sorted(r for r in self.dead if r not in have)
        if missing:
            who = ", ".join(f"rank {r} ({self.dead[r]})" for r in missing)
            raise DeadNodeError(
                f"dist_sync round {self.rounds[name] + 1} of key {_label(name)} can never "
                f"complete: worker {who} died without pushing it")

    def stalled(self) -> List[Tuple[Any, int, List[int]]]:
        """Rounds in progress: ``(part, round, ranks that have not pushed)``."""
        out = []
        for name, pend in self.pending.items():
            if pend:
                missing = [w for w in range(self.num_workers) if w not in pend]
                out.append((name, self.rounds[name] + 1, missing))
        return out


def _label(name: Any) -> str:
    return repr(name)
