"""The coordinator of a job: ranks, heartbeats, barriers and the command log.

MXNet's ps-lite has a *scheduler* node that hands out ranks, runs barriers
and watches heartbeats. The coordinator is that node as a Ray actor (one per
job, named ``mxkv:<job>``). Array data never passes through it.

* Workers ``join`` (getting a rank), send ``heartbeat``s from a background
  thread and ``leave`` when their store closes. A worker silent for
  ``MXKV_DEAD_TIMEOUT`` seconds is declared dead: every shard is told, so
  that calls waiting for its pushes fail naming it, and barriers fail too.
* Shards send heartbeats as well, so ``num_dead_node`` can count silent
  servers as MXNet's does.
* Commands sent to the servers (optimizer, compression, ...) are logged with
  a sequence number, so that a restarted shard replays the ones its last
  checkpoint did not include.
* A shard that stops for good (its storage failed: :class:`ShardFailedError`)
  says so in :meth:`shard_failed`; every other shard is told, so every
  worker's calls (and barriers) fail with that shard's error at once.
* Server processes (``DMLC_ROLE=server``) wait in :meth:`wait_done` until
  every worker has left.
* It makes each host's relay (:mod:`.relay`, :meth:`relay`): workers say
  which Ray node they run on when they join.
* Each node's agent (:mod:`.node_keeper`) sends heartbeats too: a node
  whose agent is silent for ``MXKV_DEAD_TIMEOUT`` seconds is lost, and
  every worker on it is declared dead, naming the host. It says which
  node keeps the copy of each shard's log (:mod:`.replica`).
"""
from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...base import DeadNodeError, MXNetError

__all__ = ["Coordinator", "SCHEDULER", "SERVER_GROUP", "WORKER_GROUP"]

# MXNet / ps-lite node group ids (num_dead_node's node_id)
SCHEDULER, SERVER_GROUP, WORKER_GROUP = 1, 2, 4


class Coordinator:
    """The job's coordinator (used as an async Ray actor).

    Parameters
    ----------
    job : str
    num_workers, num_servers : int
    heartbeat, dead_timeout : float
        Seconds between heartbeats, and of silence before a worker is dead.
    """

    def __init__(self, job: str, num_workers: int, num_servers: int,
                 heartbeat: float = 1.0, dead_timeout: float = 30.0) -> None:
        self.job = job
        self.num_workers = int(num_workers)
        self.num_servers = int(num_servers)
        self.heartbeat_s = float(heartbeat)
        self.dead_timeout = float(dead_timeout)
        self.workers: Dict[int, dict] = {}
        #: how the workers split keys (the first worker's: :meth:`set_mode`)
        self.layout: Optional[dict] = None
        #: the job's secret for the shards' bulk connections (:mod:`.bulk`);
        #: the coordinator is never restarted, so it is the job's for good
        self._bulk_secret = secrets.token_bytes(32)
        self.left: Dict[int, float] = {}
        self.dead: Dict[int, str] = {}
        #: the first shard that stopped for good, and its error
        self.failure: Optional[BaseException] = None
        self.shard_beats: Dict[int, float] = {}
        self.servers: Dict[int, str] = {}
        self.shards: List[Any] = []
        self.commands: List[Tuple[int, int, Any, Optional[int]]] = []
        self.optimizer_set = False
        self.mode: Optional[str] = None
        self.aggregate: Optional[bool] = None
        self.relays: Dict[str, Any] = {}
        #: node -> (its NodeAgent, host); node -> last heartbeat; lost nodes -> host
        self.agents: Dict[str, Tuple[Any, str]] = {}
        self.agent_beats: Dict[str, float] = {}
        self.lost_nodes: Dict[str, str] = {}
        #: shard -> (node, host) holding the copy of its log
        self.replicas: Dict[int, Tuple[str, str]] = {}
        self._barrier_gen = 0
        self._barrier_in: set = set()
        self._cond: Optional[asyncio.Condition] = None
        self._monitor: Optional[asyncio.Task] = None
        self._stopped = False

    # ------------------------------------------------------------ helpers
    @property
    def cond(self) -> asyncio.Condition:
        """The condition every wait of the coordinator uses; made on first use
        (in the actor's event loop), with the task that watches heartbeats."""
        if self._cond is None:
            self._cond = asyncio.Condition()
            self._monitor = asyncio.get_running_loop().create_task(self._watch())
        return self._cond

    async def _notify(self) -> None:
        async with self.cond:
            self.cond.notify_all()

    async def _watch(self) -> None:
        """Declare silent workers dead and tell the shards."""
        while not self._stopped:
            await asyncio.sleep(min(self.heartbeat_s, self.dead_timeout / 4))
            now = time.monotonic()
            newly = {}
            for rank, info in self.workers.items():
                if rank in self.left or rank in self.dead:
                    continue
                silent = now - info["beat"]
                if silent > self.dead_timeout:
                    newly[rank] = (f"no heartbeat for {silent:.1f} s from "
                                   f"{info['host']}")
            for node, beat in list(self.agent_beats.items()):
                silent = now - beat
                if node in self.lost_nodes or silent <= self.dead_timeout:
                    continue
                host = self.agents[node][1]
                self.lost_nodes[node] = host
                for rank, info in self.workers.items():
                    if info.get("node") == node and rank not in self.left \
                            and rank not in self.dead:
                        newly[rank] = (f"its host {host} is unreachable (no heartbeat from "
                                       f"its node {node[:12]} for {silent:.1f} s)")
            for rank, why in newly.items():
                await self.declare_dead(rank, why)

    # ------------------------------------------------------------ setup
    async def set_shards(self, shards: List[Any]) -> None:
        """Hand the coordinator the shard actors (the launcher does)."""
        self.shards = list(shards)
        _ = self.cond

    async def set_agents(self, agents: Dict[str, Tuple[Any, str]]) -> None:
        """Hand the coordinator each node's agent and host (the job's creator does)."""
        self.agents = dict(agents)
        now = time.monotonic()
        self.agent_beats = {node: now for node in agents}
        _ = self.cond

    async def agent_beat(self, node: str, host: str) -> None:
        """Node ``node``'s agent is alive."""
        if node in self.agent_beats and node not in self.lost_nodes:
            self.agent_beats[node] = time.monotonic()

    async def replica_source(self, index: int) -> Optional[Tuple[Any, str]]:
        """The agent holding the copy of shard ``index``'s log, and its host."""
        where = self.replicas.get(int(index))
        if where is None or where[0] not in self.agents:
            return None
        return self.agents[where[0]][0], where[1]

    async def replica_target(self, index: int, node: Optional[str],
                             gone: Sequence[Optional[str]] = ()) -> Optional[Tuple[Any, str, str]]:
        """An agent on a node other than ``node`` (and ``gone``, and lost
        ones) to keep shard ``index``'s copy: (agent, node, host), or None.
        The node holding it now, when it qualifies; else the nodes in turn."""
        ok = sorted(n for n in self.agents
                    if n != node and n not in gone and n not in self.lost_nodes)
        if not ok:
            return None
        now = self.replicas.get(int(index), (None, None))[0]
        pick = now if now in ok else ok[int(index) % len(ok)]
        return self.agents[pick][0], pick, self.agents[pick][1]

    async def replica_set(self, index: int, node: str, host: str) -> None:
        """Shard ``index``'s copy is now on ``node`` (``host``)."""
        self.replicas[int(index)] = (node, host)

    async def bulk_secret(self) -> bytes:
        """The job's secret for the bulk connections (only the job's
        processes can call this actor: Ray's token auth)."""
        return self._bulk_secret

    async def info(self) -> dict:
        """The job at a glance: its size, which workers joined, left or died,
        which wait at a barrier now, the server processes and how many
        commands were logged."""
        return {"job": self.job, "num_workers": self.num_workers,
                "num_servers": self.num_servers, "workers": sorted(self.workers),
                "left": sorted(self.left), "dead": dict(self.dead),
                "at_barrier": sorted(self._barrier_in),
                "servers": dict(self.servers), "commands": len(self.commands),
                "failure": None if self.failure is None else str(self.failure),
                "lost_nodes": dict(self.lost_nodes),
                "replicas": {i: host for i, (_, host) in self.replicas.items()}}

    # ------------------------------------------------------------ workers
    async def join(self, rank: Optional[int], host: str, node: Optional[str] = None) -> int:
        """Admit a worker (on Ray node ``node``); returns its rank (``rank``
        when given, else the lowest free one)."""
        _ = self.cond
        live = {r for r in self.workers if r not in self.left and r not in self.dead}
        if rank is None:
            free = [r for r in range(self.num_workers) if r not in self.workers]
            if not free:
                raise MXNetError(f"job {self.job!r} has {self.num_workers} workers already "
                                 f"(DMLC_NUM_WORKER); worker {host} cannot join")
            rank = free[0]
        rank = int(rank)
        if not 0 <= rank < self.num_workers:
            raise MXNetError(f"rank {rank} is out of range for a job of {self.num_workers} "
                             "workers (MXKV_RANK, DMLC_NUM_WORKER)")
        if rank in live:
            raise MXNetError(f"rank {rank} of job {self.job!r} is already taken by "
                             f"{self.workers[rank]['host']}")
        self.workers[rank] = {"host": host, "beat": time.monotonic(), "node": node}
        self.left.pop(rank, None)
        await self._notify()
        return rank

    async def relay(self, node: str, config: Any) -> Optional[tuple]:
        """The relay of the job's workers on Ray node ``node`` (:mod:`.relay`)
        and their ranks, once every worker has joined; ``None`` when fewer
        than two run there, or host aggregation is off (the first worker to
        ask decides, its ``config.host_aggregation``, so all agree). The
        relay gets that worker's :class:`~.config.DistConfig`."""
        async with self.cond:
            def everyone() -> bool:
                if self.failure is not None:
                    raise self.failure
                if self.dead:
                    rank, why = next(iter(self.dead.items()))
                    raise DeadNodeError(f"worker rank {rank} died ({why}) before every "
                                        f"worker of job {self.job!r} joined")
                return len(self.workers) >= self.num_workers
            await self.cond.wait_for(everyone)
        if self.aggregate is None:
            self.aggregate = bool(config.host_aggregation)
        ranks = sorted(r for r, info in self.workers.items() if info.get("node") == node)
        if not self.aggregate or len(ranks) < 2:
            return None
        relay = self.relays.get(node)
        if relay is None:
            # owned by this actor: it goes when the job's coordinator does
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            from .job import NAMESPACE, RELAY_PULLS, import_ray
            from .relay import HostRelay, relay_name

            ray = import_ray()
            relay = self.relays[node] = ray.remote(
                concurrency_groups={RELAY_PULLS: 128})(HostRelay).options(
                name=relay_name(self.job, node), namespace=NAMESPACE, num_cpus=0,
                max_restarts=-1, max_task_retries=0, max_concurrency=64,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                self.job, self.num_servers, ranks, config)
        return relay, ranks

    async def relay_handles(self) -> Dict[str, Any]:
        """The relays made so far, by node."""
        return dict(self.relays)

    async def heartbeat(self, rank: int) -> Dict[int, str]:
        """Record that ``rank`` is alive; returns the dead workers."""
        info = self.workers.get(rank)
        if info is not None:
            info["beat"] = time.monotonic()
        return self.dead

    async def declare_dead(self, rank: int, why: str) -> None:
        """Declare worker ``rank`` dead now (the launcher saw its process exit)."""
        rank = int(rank)
        if rank in self.dead or rank in self.left:
            return
        self.dead[rank] = why
        for shard in self.shards:
            shard.mark_dead.remote({rank: why})
        await self._notify()

    async def shard_failed(self, index: int, error: BaseException) -> None:
        """Shard ``index`` stopped for good with ``error``: every shard raises
        it to its callers from now on, and so do barriers."""
        if self.failure is None:
            self.failure = error
            for i, shard in enumerate(self.shards):
                if i != int(index):
                    shard.fail.remote(error)
        await self._notify()

    async def shard_beat(self, index: int) -> None:
        """Record that server shard ``index`` is alive."""
        self.shard_beats[int(index)] = time.monotonic()

    async def leave(self, rank: int) -> None:
        """Worker ``rank`` closed its store: barriers stop waiting for it."""
        self.left[int(rank)] = time.monotonic()
        await self._notify()

    # ------------------------------------------------------------ barrier
    def _barrier_blocker(self) -> Optional[str]:
        for r in range(self.num_workers):
            if r in self._barrier_in:
                continue
            if r in self.dead:
                return f"worker rank {r} died ({self.dead[r]})"
            if r in self.left:
                return f"worker rank {r} has already closed its store"
        return None

    async def barrier(self, rank: int) -> int:
        """Wait until every worker has called barrier; fails naming a dead one."""
        async with self.cond:
            gen = self._barrier_gen
            self._barrier_in.add(int(rank))
            if len(self._barrier_in) >= self.num_workers:
                self._barrier_in = set()
                self._barrier_gen += 1
                self.cond.notify_all()
                return gen

            def passed():
                if self._barrier_gen != gen:
                    return True
                if self.failure is not None:
                    raise self.failure
                why = self._barrier_blocker()
                if why:
                    raise DeadNodeError(f"barrier of job {self.job!r} can never complete: {why}")
                return False

            await self.cond.wait_for(passed)
            return gen

    # ------------------------------------------------------------ dead nodes
    async def dead_nodes(self, node_id: int, timeout: float) -> int:
        """How many nodes of group ``node_id`` (MXNet's ids: 1 scheduler, 2
        servers, 4 workers, or a sum) are dead or silent for ``timeout`` s."""
        now = time.monotonic()
        count = 0
        if node_id & WORKER_GROUP:
            for r in range(self.num_workers):
                if r in self.left:
                    continue
                info = self.workers.get(r)
                if r in self.dead or (info is not None and now - info["beat"] > timeout):
                    count += 1
        if node_id & SERVER_GROUP:
            for i in range(self.num_servers):
                beat = self.shard_beats.get(i)
                if beat is not None and now - beat > timeout:
                    count += 1
        return count

    async def dead_workers(self) -> Dict[int, str]:
        """The dead workers: rank -> why it was declared dead."""
        return dict(self.dead)

    # ------------------------------------------------------------ commands
    async def command(self, head: int, body: Any, target: Optional[int] = None) -> int:
        """Log a command for the servers (or for shard ``target`` only);
        returns its sequence number."""
        seq = len(self.commands) + 1
        self.commands.append((seq, int(head), body, target))
        if int(head) == 0 or int(head) == -1:
            self.optimizer_set = True
        return seq

    async def set_mode(self, mode: str, layout: dict) -> Tuple[str, dict]:
        """The job's mode (``'sync'`` or ``'async'``) and how its workers
        split keys over the shards (:func:`~.sharding.layout_of`): the first
        worker's, as MXNet's rank 0 sends kSyncMode; returns those in force
        (a worker whose own differ cannot join: its rounds, or its parts,
        would not be the others')."""
        if self.mode is None:
            self.mode = mode
            await self.command(3, mode)
        if self.layout is None:
            self.layout = dict(layout)
        return self.mode, self.layout

    async def command_log(self, after: int = 0) -> List[Tuple[int, int, Any, Optional[int]]]:
        """The logged commands after sequence number ``after``, as ``(seq,
        head, body, target shard or None)``: what a (re)starting shard replays."""
        return [c for c in self.commands if c[0] > after]

    async def has_optimizer(self) -> bool:
        """Whether a worker has sent the servers an optimizer or an updater."""
        return self.optimizer_set

    # ------------------------------------------------------------ servers / end
    async def server_join(self, host: str) -> int:
        """Admit a server process (``DMLC_ROLE=server``) on ``host``; returns its index."""
        index = len(self.servers)
        self.servers[index] = host
        return index

    def _done(self) -> bool:
        if self._stopped:
            return True
        gone = set(self.left) | set(self.dead)
        return len(self.workers) >= self.num_workers and gone >= set(self.workers)

    async def wait_done(self, timeout: Optional[float] = None) -> bool:
        """Block until every worker has left (or died) or the job is stopped."""
        try:
            async with self.cond:
                await asyncio.wait_for(self.cond.wait_for(self._done), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        """End the job: ``wait_done`` returns and the heartbeat watch stops."""
        self._stopped = True
        await self._notify()
