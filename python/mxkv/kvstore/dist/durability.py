"""A shard's durability bookkeeping: what changed, when a checkpoint is due,
what it still needs, and what is durable (pure logic: no Ray, no I/O).

A server shard (:mod:`.shard`) tells a :class:`Durability` every change it
makes (:meth:`~Durability.mark`, :meth:`~Durability.changed`); the book says
when a checkpoint is due and, once one is started
(:meth:`~Durability.take`), hands over everything it must write: the
changed parts and fields, the values it may take as they are (``fresh``:
nothing will ever write into them), whether the optimizer changed, and the
pull segments pinned until it is on disk. The writer's answer comes back
through :meth:`~Durability.on_durable`.

Two savings live here:

* **A due checkpoint waits one message for a pull.** When the pull of a
  round publishes the changed parts' values (in a pull segment, or in the
  object store), the checkpoint takes them from there (:meth:`adopt`)
  instead of copying them; it is written at the next change, or as soon as
  every changed value has been adopted.
* **Pushes are not kept forever.** Workers keep every push until a
  checkpoint covers it; once a worker (or a host's relay) has pushed this
  shard its share of ``keep_bytes`` since the last one (``MXKV_KEEP_BYTES``
  over the shards: it keeps as much for each of them), :meth:`pushed` says
  to checkpoint now.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Set, Tuple

__all__ = ["Durability", "Taken"]


@dataclass
class Taken:
    """What a checkpoint being started must write (:meth:`Durability.take`)."""

    #: part -> the fields that changed ('value', 'state')
    dirty: Dict[Any, Set[str]] = field(default_factory=dict)
    #: part -> its value, where nothing will write into it (taken as it is)
    fresh: Dict[Any, Any] = field(default_factory=dict)
    #: the optimizer (or updater, compression, mode) changed
    meta_dirty: bool = False
    #: a new updater starts without states (older states are dropped)
    reset_states: bool = False
    #: pull segments the record reads: let go once it is written
    pinned: List[str] = field(default_factory=list)

    def empty(self) -> bool:
        """Nothing to write."""
        return not self.dirty and not self.meta_dirty


class Durability:
    """One shard's durability book.

    Parameters
    ----------
    every : int
        Rounds between checkpoints (``MXKV_CHECKPOINT_ROUNDS``): a part's
        round is a sync round it completes or an async push it applies, and
        a checkpoint is due once some part has had ``every`` of them (a
        round streamed in chunks, or pushed a key at a time, comes in many
        messages: they count once per part).
    keep_bytes : int
        Bytes of pushes a worker may keep (``MXKV_KEEP_BYTES``): a
        checkpoint is written at once when one pusher's bytes here, times
        ``shards``, reach it.
    shards : int
        The job's shards (a worker's pushes spread evenly over them).
    """

    def __init__(self, every: int, keep_bytes: int, shards: int = 1) -> None:
        self.every = max(1, int(every))
        self.keep_bytes = int(keep_bytes)
        self.shards = max(1, int(shards))
        #: part -> its last round on disk
        self.durable: Dict[Any, int] = {}
        #: a checkpoint is due (waiting one message for a pull that publishes)
        self.due = False
        self._since = 0
        self._rounds: Dict[Any, int] = {}   # part -> its rounds since the last checkpoint
        self._pushed: Dict[Any, int] = {}   # pusher -> its bytes since the last checkpoint
        self._taken = Taken()
        self._versions: Dict[Any, int] = {}

    # ------------------------------------------------------------ changes
    def mark(self, name: Any, *fields: str, fresh: Any = None) -> None:
        """``fields`` ('value', 'state') of part ``name`` changed; ``fresh``:
        the new value, when nothing will ever write into it."""
        t = self._taken
        t.dirty.setdefault(name, set()).update(fields)
        self._versions[name] = self._versions.get(name, 0) + 1
        if fresh is not None:
            t.fresh[name] = fresh
        else:
            t.fresh.pop(name, None)

    def mark_states(self, names: Iterable[Any]) -> None:
        """Every state of ``names`` changed (states were loaded), their values
        not (a fresh value stays fresh)."""
        for name in names:
            self.mark(name, "state", fresh=self._taken.fresh.get(name))

    def mark_meta(self, reset_states: bool = False) -> None:
        """The optimizer, updater, compression or mode changed; with
        ``reset_states`` a new updater starts without states."""
        self._taken.meta_dirty = True
        self._taken.reset_states = self._taken.reset_states or reset_states

    def changed(self, force: bool = False, names: Iterable[Any] = ()) -> bool:
        """Count a state change: a round of each part in ``names`` (none
        given: a change of its own); True: write a checkpoint now. Once a
        part has had ``every`` rounds one is due: it is written at the next
        change (or once a pull published every changed value, :meth:`adopt`)."""
        names = list(names)
        for name in names:
            self._rounds[name] = self._rounds.get(name, 0) + 1
            self._since = max(self._since, self._rounds[name])
        if not names:
            self._since += 1
        if force or self.due:
            return True
        if self._since >= self.every:
            self.due = True
        return False

    def pushed(self, nbytes: int, rank: Any = None) -> bool:
        """Count ``nbytes`` of pushes from ``rank`` (a worker's rank, or a
        relay's ranks); True once that pusher's bytes since the last
        checkpoint, times the shards, reach ``keep_bytes`` (write one now:
        the workers keep them till then)."""
        if isinstance(rank, list):
            rank = tuple(rank)
        n = self._pushed[rank] = self._pushed.get(rank, 0) + nbytes
        return n * self.shards >= self.keep_bytes

    # ------------------------------------------------------------ adoption
    def wanted(self, names: Iterable[Any]) -> bool:
        """Whether a due checkpoint still needs the values of some of
        ``names`` (changed, and not yet taken from a publication)."""
        t = self._taken
        return self.due and any(n in t.dirty and n not in t.fresh for n in names)

    def version(self, name: Any) -> Any:
        """A token that changes whenever part ``name`` changes."""
        return self._versions.get(name)

    def adopt(self, published: Iterable[Tuple[Any, Any]]) -> bool:
        """A due checkpoint takes changed parts' values as a pull published
        them (nothing writes to those) instead of copying them. True: every
        changed value is there, write the checkpoint now."""
        t = self._taken
        for name, value in published:
            fields = t.dirty.get(name)
            if fields and "value" in fields and name not in t.fresh:
                t.fresh[name] = value
        return self.due and all(n in t.fresh for n, f in t.dirty.items() if "value" in f)

    def pin(self, path: str) -> None:
        """The next checkpoint reads values in pull segment ``path``."""
        self._taken.pinned.append(path)

    # ------------------------------------------------------------ checkpoints
    def take(self) -> Taken:
        """Start a checkpoint: what it must write; the counts start again
        (the pushes so far are covered once it is written)."""
        taken, self._taken = self._taken, Taken()
        self._since = 0
        self._rounds = {}
        self.due = False
        self._pushed = {}
        return taken

    def on_durable(self, rounds: Dict[Any, int]) -> None:
        """The writer put these parts' rounds on disk."""
        self.durable.update(rounds)

    def durable_of(self, names: Iterable[Any]) -> List[int]:
        """Each part's durable round (-1: none yet)."""
        return [self.durable.get(n, -1) for n in names]
