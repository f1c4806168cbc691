"""Creating and removing a job's actors on a Ray cluster.

:func:`create_job` starts the coordinator and the server shards of a job
and returns a :class:`Job` whose :meth:`Job.environ` is what workers need
in their environment; :meth:`Job.close` removes the actors and the
checkpoint directory. ``mxkv launch`` is a thin layer over these.

Shards are async actors that Ray restarts when they die
(``MXKV_SHARD_MAX_RESTARTS``, default unlimited); a restarted shard reads
its checkpoint. Actors reserve no CPU (``num_cpus=0``): a shard is a
memory-bound process that should not keep workers from being scheduled.

Placement (:func:`placement_options`): the shards are placed by a Ray
placement group of one bundle per shard, ``SPREAD`` (the default: as evenly
over the cluster's nodes as Ray can) or ``PACK`` (on as few nodes as
possible, one when it fits). A bundle reserves one byte of Ray's ``memory``
resource, nothing a worker needs. Ray's ``SPREAD`` scheduling strategy does
not spread actors that reserve nothing (shards landed 2/0, 1/1 or 0/2 on two
nodes), nor did a soft node affinity (tried: it spilled); a placement group
does, and Ray moves a bundle to another node when its node dies, so a
restarted shard comes back there. The coordinator, which is not restarted,
stays on the node of the process that creates the job (the launcher's).

On a cluster of several nodes the job also places a
:class:`~.node_keeper.NodeAgent` on every alive node: it removes the job
from its node at the end, however the job ends, and keeps the copies of
other nodes' shard logs (:mod:`.replica`) unless the checkpoint directory
is shared (every agent sees the run's ``mxkv-job.json``) or
``MXKV_CHECKPOINT_REPLICA=0``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .checkpoint_dir import claim
from .config import DistConfig
from .coordinator import Coordinator
from .job import NAMESPACE, JobEnv, Timeouts, coordinator_name, import_ray, shard_name
from .node_keeper import replica_dir
from .shard import ServerShard
from .sharding import layout_of
from .shm import data_dir

__all__ = ["Job", "create_job", "new_job_name", "placement_options", "per_node_options",
           "actor_node", "PLACEMENTS"]

#: How shards are placed over a cluster's nodes.
PLACEMENTS = ("spread", "pack")

#: Seconds create_job waits at least for the job's actors to start.
START_TIMEOUT = 120.0


@dataclass
class Job:
    """A running job's actors and settings."""

    name: str
    address: Optional[str]
    num_workers: int
    num_servers: int
    checkpoint_dir: str
    coordinator: Any
    shards: List[Any]
    p3: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    owns_checkpoints: bool = True
    placement: str = "spread"
    groups: List[Any] = field(default_factory=list)   # placement groups to remove
    agents: Dict[str, Any] = field(default_factory=dict)   # node -> its NodeAgent
    replicated: bool = False   # shards copy their logs to another node

    def shard_nodes(self) -> List[Optional[str]]:
        """The Ray node id each shard runs on (None where Ray does not say)."""
        return [actor_node(s) for s in self.shards]

    def job_env(self, role: str = "worker", rank: Optional[int] = None) -> JobEnv:
        """How a process of ``role`` joins this job (this process's knobs,
        the job's timeouts)."""
        return JobEnv(job=self.name, address=self.address, role=role,
                      num_workers=self.num_workers, num_servers=self.num_servers,
                      rank=rank, p3=self.p3,
                      config=dataclasses.replace(DistConfig.from_env(), timeouts=self.timeouts))

    def environ(self, role: str = "worker", rank: Optional[int] = None) -> Dict[str, str]:
        """Environment variables for a worker (or server) process of this job."""
        out = self.job_env(role, rank).environ()
        out["MXKV_CHECKPOINT_DIR"] = self.checkpoint_dir
        t = self.timeouts
        out.update({"MXKV_STALL_TIMEOUT": repr(t.stall), "MXKV_FAIL_TIMEOUT": repr(t.fail),
                    "MXKV_HEARTBEAT_INTERVAL": repr(t.heartbeat),
                    "MXKV_DEAD_TIMEOUT": repr(t.dead)})
        # MXNet's own names, for scripts that read them
        out.setdefault("DMLC_PS_ROOT_URI", "127.0.0.1")
        out.setdefault("DMLC_PS_ROOT_PORT", "0")
        return out

    def close(self) -> None:
        """Stop the coordinator and the shards; remove the checkpoints (or,
        in a directory the job was given, write the shards' last state there
        first, for a job that resumes it)."""
        ray = import_ray()
        if ray.is_initialized() and not self.owns_checkpoints:
            try:
                ray.get([s.checkpoint.remote() for s in self.shards], timeout=60)
            except Exception:  # noqa: BLE001 - a stopped shard: its last checkpoint stays
                pass
        self._stop()

    def _stop(self, host_dirs: bool = True) -> None:
        """Stop what the job started, on every node, and remove its files
        (a directory it was given keeps what is there; ``host_dirs``: also
        this host's directories named after the job, :func:`~.shm.data_dir`
        and :func:`~.node_keeper.replica_dir`)."""
        ray = import_ray()
        if ray.is_initialized():
            lost: Dict[str, str] = {}
            try:
                if self.agents:
                    lost = ray.get(self.coordinator.info.remote(), timeout=5)["lost_nodes"]
                ray.get(self.coordinator.stop.remote(), timeout=5)
            except Exception:  # noqa: BLE001 - already gone
                pass
            for actor in [*self.shards, self.coordinator]:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001
                    pass
            # every node's agent removes the job from its node (and the
            # keeper it started, once the agent is killed, finds nothing);
            # a lost node's agent does not answer: its keeper cleans there
            refs = [a.clean.remote() for node, a in self.agents.items()
                    if node not in lost]
            if refs:
                ray.wait(refs, num_returns=len(refs), timeout=15)
            for actor in self.agents.values():
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001
                    pass
            self.agents = {}
            from ray.util.placement_group import remove_placement_group

            for group in self.groups:
                try:
                    remove_placement_group(group)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            self.groups = []
        if self.owns_checkpoints:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        if host_dirs:
            # the same-host data path's segments (shm.py), and the copies of
            # other nodes' shard logs (replica.py), this host's
            shutil.rmtree(data_dir(self.name), ignore_errors=True)
            shutil.rmtree(replica_dir(self.name), ignore_errors=True)


def placement_options(count: int, placement: str = "spread",
                      timeout: float = START_TIMEOUT) -> Tuple[Any, List[dict]]:
    """A placement group for ``count`` actors on the connected cluster, and
    the Ray actor options that put actor ``i`` in its bundle ``i``.

    Parameters
    ----------
    count : int
    placement : {'spread', 'pack'}
        Ray's ``SPREAD`` (as evenly over the nodes as it can) or ``PACK`` (as
        few nodes as it can) placement-group strategy.
    timeout : float
        Seconds to wait for the group to be placed.

    Returns
    -------
    (group, options)
        Remove the group (``ray.util.remove_placement_group``) when done.

    Examples
    --------
    >>> group, opts = placement_options(2)   # doctest: +SKIP
    >>> shard = Shard.options(**opts[0]).remote(...)   # doctest: +SKIP
    """
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    if placement not in PLACEMENTS:
        raise ValueError(f"placement {placement!r} is not one of {', '.join(PLACEMENTS)}")
    ray = import_ray()
    group = placement_group([{"memory": 1}] * count, strategy=placement.upper())
    ray.get(group.ready(), timeout=timeout)
    return group, [{"scheduling_strategy": PlacementGroupSchedulingStrategy(
        group, placement_group_bundle_index=i)} for i in range(count)]


def per_node_options(count: int, per_node: int) -> List[dict]:
    """Ray actor options that put actors ``0..per_node-1`` on this process's
    node, the next ``per_node`` on another alive node, and so on (a hard
    node affinity each: the placement holds, or the actor waits).

    Raises
    ------
    ValueError
        When the cluster has fewer alive nodes than ``count / per_node`` needs.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray = import_ray()
    here = ray.get_runtime_context().get_node_id()
    nodes = sorted((n["NodeID"] for n in ray.nodes() if n.get("Alive")),
                   key=lambda n: (n != here, n))
    need = -(-count // per_node)
    if need > len(nodes):
        raise ValueError(f"{count} processes at {per_node} per host need {need} nodes; the "
                         f"Ray cluster has {len(nodes)} alive")
    return [{"scheduling_strategy": NodeAffinitySchedulingStrategy(nodes[i // per_node],
                                                                   soft=False)}
            for i in range(count)]


def actor_node(actor: Any) -> Optional[str]:
    """The id of the node ``actor`` runs (or ran) on, from Ray's actor table;
    None where Ray does not say."""
    from ray._private import state

    try:
        info = state.actors(actor._actor_id.hex())
        return (info.get("Address") or {}).get("NodeID") or None
    except Exception:  # noqa: BLE001 - a private table: report, do not fail
        return None


@contextlib.contextmanager
def _environ(values: Dict[str, str]):
    """``os.environ`` with ``values`` set, for the ``with`` block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def new_job_name() -> str:
    """A fresh job name (``job-`` and 10 hex digits)."""
    return f"job-{uuid.uuid4().hex[:10]}"


def create_job(num_workers: int, num_servers: int, name: Optional[str] = None,
               address: Optional[str] = None, p3: bool = False,
               timeouts: Optional[Timeouts] = None,
               checkpoint_dir: Optional[str] = None,
               shard_options: Optional[dict] = None,
               placement: str = "spread",
               shard_env: Optional[Dict[str, str]] = None,
               resume: Optional[bool] = None,
               made: Optional[Callable[[str], None]] = None) -> Job:
    """Create a job's coordinator and ``num_servers`` shards on the connected
    Ray cluster (call ``ray.init`` first); waits until they answer, up to
    ``START_TIMEOUT`` seconds or the job's fail timeout if longer (starting
    an actor starts a process: a short fail timeout, meant for stalled
    rounds, must not fail a job that a busy machine starts slowly).

    Parameters
    ----------
    num_workers, num_servers : int
    name : str, optional
        The job's name (a fresh one when not given).
    address : str, optional
        The Ray address workers should join (recorded in the environment).
    p3 : bool
        P3 slicing and priorities (``DMLC_PS_VAN_TYPE=p3``).
    timeouts : Timeouts, optional
        Default: from the environment.
    checkpoint_dir : str, optional
        Default: ``MXKV_CHECKPOINT_DIR``, else a new directory under
        ``/dev/shm`` (or the temporary directory), removed by
        :meth:`Job.close`. For shards that may restart on another host,
        give a directory every host shares.
    shard_options : dict, optional
        Extra Ray actor options for the shards; with a scheduling strategy or
        custom resources among them the caller places the shards, and
        ``placement`` is not used (a placement group's bundles hold no
        custom resources).
    placement : {'spread', 'pack'}
        Shards as evenly over the cluster's nodes as Ray can, or on as few
        as it can (see :func:`placement_options`).
    shard_env : dict, optional
        Environment variables for the shards' processes (``mxkv launch``'s
        ``--env`` and ``--env-server``), set before a shard reads any; its
        ``MXKV_CHECKPOINT_DIR``, ``MXKV_CHECKPOINT_ROUNDS`` and
        ``MXKV_SHARD_MAX_RESTARTS`` win over this process's.
    resume : bool, optional
        Take up the state a directory holds from an earlier job (default:
        ``MXKV_RESUME``, off): without it a directory holding another job's
        logs is refused (:mod:`.checkpoint_dir`).
    made : callable, optional
        Called with the checkpoint directory this call makes (when it makes
        one: none given) as soon as it exists, before anything can fail or
        take long: ``mxkv launch`` hands it to its watchdog, so that a
        launcher killed while the job starts leaves it behind no more than
        one killed later.
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"placement {placement!r} is not one of {', '.join(PLACEMENTS)}")
    import_ray()   # (a clear error before anything is made, where Ray is missing)
    name = name or new_job_name()
    shard_env = {str(k): str(v) for k, v in (shard_env or {}).items()}
    with _environ(shard_env):   # (the shards' values, checked here: a bad one starts nothing)
        config = DistConfig.from_env()
    timeouts = timeouts or Timeouts.from_env()   # (this process's: the job's)
    config = dataclasses.replace(config, timeouts=timeouts)
    owns = False
    if checkpoint_dir is None:
        checkpoint_dir = config.checkpoint_dir
    if not checkpoint_dir:
        # RAM-backed where there is /dev/shm: a checkpoint is a memory copy, not disk I/O
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        checkpoint_dir = tempfile.mkdtemp(prefix=f"mxkv-{name}-", dir=base)
        owns = True
        if made is not None:
            made(checkpoint_dir)
    # what is started so far, stopped (and its files removed) if the start fails
    job = Job(name=name, address=address, num_workers=num_workers, num_servers=num_servers,
              checkpoint_dir=checkpoint_dir, coordinator=None, shards=[], p3=p3,
              timeouts=timeouts, owns_checkpoints=owns, placement=placement)
    try:
        _start(job, config, resume, shard_options, shard_env)
    except BaseException:
        # (a name already in use fails before the coordinator starts: the
        # directories named after it are that other job's)
        job._stop(host_dirs=job.coordinator is not None)
        raise
    return job


def _start(job: Job, config: DistConfig, resume: Optional[bool],
           shard_options: Optional[dict], shard_env: Dict[str, str]) -> None:
    """Claim ``job``'s checkpoint directory and start its actors, recording
    each in ``job`` as it starts (see :func:`create_job`)."""
    ray = import_ray()
    name, num_workers, num_servers = job.name, job.num_workers, job.num_servers
    checkpoint_dir, timeouts = job.checkpoint_dir, job.timeouts
    ident = claim(checkpoint_dir, name, resume=config.resume if resume is None else resume,
                  layout=layout_of(num_servers, config.bigarray_bound,
                                   config.slice_threshold if job.p3 else 0))
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # the coordinator (not restarted: the job ends with it) stays on this node
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    coord_cls = ray.remote(Coordinator)
    coordinator = job.coordinator = coord_cls.options(
        name=coordinator_name(name), namespace=NAMESPACE, num_cpus=0, max_concurrency=1000,
        scheduling_strategy=here).remote(
        name, num_workers, num_servers, timeouts.heartbeat, timeouts.dead)
    start = max(timeouts.fail, START_TIMEOUT)
    ray.get(coordinator.info.remote(), timeout=start)
    job.agents, job.replicated = _start_agents(name, coordinator, checkpoint_dir,
                                               job.owns_checkpoints, ident["run"], config,
                                               start)
    shard_cls = ray.remote(ServerShard)
    opts = dict(num_cpus=0, max_restarts=config.shard_max_restarts, max_task_retries=0,
                max_concurrency=1000)
    if {"scheduling_strategy", "resources"} & set(shard_options or {}):
        places: List[dict] = [{}] * num_servers   # the caller places them
    else:
        group, places = placement_options(num_servers, job.placement, start)
        job.groups.append(group)
    job.shards = [shard_cls.options(name=shard_name(name, i), namespace=NAMESPACE,
                                    **{**opts, **places[i], **(shard_options or {})}).remote(
        name, i, num_workers, checkpoint_dir, config, shard_env, identity=ident,
        replicate=job.replicated, num_shards=num_servers)
        for i in range(num_servers)]
    ray.get([s.hello.remote() for s in job.shards], timeout=start)
    ray.get(coordinator.set_shards.remote(job.shards), timeout=start)


def _start_agents(name: str, coordinator: Any, directory: str, owns: bool, run: str,
                  config: DistConfig, timeout: float) -> Tuple[Dict[str, Any], bool]:
    """A :class:`~.node_keeper.NodeAgent` on every alive node when there are
    several (on one, the launcher's own cleanup covers the host); and
    whether shards copy their logs to another node: ``MXKV_CHECKPOINT_REPLICA``,
    or with ``auto`` when some node does not see the checkpoint directory's
    ``mxkv-job.json`` of this run (it is not shared)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from .node_keeper import NodeAgent, machine_id

    ray = import_ray()
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    if len(nodes) < 2:
        return {}, config.checkpoint_replica == "1"
    cls = ray.remote(NodeAgent)
    t = config.timeouts
    agents = {node: cls.options(
        name=f"mxkv:{name}:agent:{node[:12]}", namespace=NAMESPACE, num_cpus=0,
        max_restarts=0, max_concurrency=16,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
        name, [directory] if owns else [], t.heartbeat, t.dead) for node in nodes}
    where = dict(zip(agents, ray.get([a.where.remote() for a in agents.values()],
                                     timeout=timeout)))
    # a keeper per machine, none on this one (the launcher's cleanup covers it)
    machines = {machine_id()}
    for node in nodes:
        if where[node][3] not in machines:
            machines.add(where[node][3])
            agents[node].keep.remote()
    ray.get(coordinator.set_agents.remote({n: (a, where[n][0]) for n, a in agents.items()}),
            timeout=timeout)
    if config.checkpoint_replica != "auto":
        return agents, config.checkpoint_replica == "1"
    seen = ray.get([a.sees.remote(directory, run) for a in agents.values()], timeout=timeout)
    return agents, not all(seen)
