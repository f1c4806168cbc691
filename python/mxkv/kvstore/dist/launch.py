"""``mxkv launch``: run a distributed job, as MXNet's ``tools/launch.py`` does.

::

    mxkv launch -n WORKERS [-s SERVERS] [--launcher local] [--ray-address ADDR]
                [--env K=V ...] [--env-worker K=V ...] [--env-server K=V ...]
                [--server-cmd CMD] [--p3] [--shard-placement spread|pack]
                [--workers-per-host N] -- CMD ...

Joins the Ray cluster at ``--ray-address`` (or ``MXKV_RAY_ADDRESS``/
``RAY_ADDRESS``), or starts a local one on loopback; creates the job's
coordinator and ``SERVERS`` shards (default: ``WORKERS``, as MXNet); runs
``CMD`` once per worker with the job's environment (``MXKV_JOB``,
``MXKV_RAY_ADDRESS``, ``MXKV_RANK``, MXNet's ``DMLC_ROLE=worker``,
``DMLC_NUM_WORKER``, ``DMLC_NUM_SERVER``, ...); prefixes each line the
workers print with their rank; and when they are done, removes the job (and
the cluster, if it started one). It exits with the first non-zero exit code
of a worker, or 0.

``--launcher ray`` runs each worker (and server) command on a node of the
Ray cluster instead, spread over the nodes by a placement group: the way to
use several hosts (the command must exist on every host).
``--workers-per-host N`` (with ``--launcher ray``) puts ranks 0..N-1 on the
launcher's node, the next N on another node, and so on, by a hard node
affinity each (Ray's SPREAD put 4 workers 3 and 1 on two nodes).
``--shard-placement spread|pack`` places the shards as evenly over the
nodes as Ray can (default), or on as few as it can.

Joining a cluster on another host's address that has no token auth is
refused unless ``--trusted-network`` says the network is trusted (anyone
who reaches the cluster runs code as the job's user); ``mxkv cluster``
starts nodes with a token. Without an address the cluster is this job's alone: loopback only, with a
token of its own (:mod:`.local_cluster`). The launcher never outlives a dead
worker, forwards SIGTERM/SIGINT, and leaves no process or directory behind
(:mod:`.supervisor`).

``--server-cmd`` also runs that command ``SERVERS`` times with
``DMLC_ROLE=server`` (a process that runs ``mx.kv.KVStoreServer`` or
Clojure's ``kvstore-server/start`` and blocks until the job ends), for
scripts written for MXNet's server processes.

A worker that exits with an error is reported to the coordinator at once,
so that the others' calls fail naming it instead of waiting for its
heartbeats to time out.

Clojure programs work as commands (``mxkv clj train.clj``): the engine each
JVM spawns inherits the environment and joins as that worker (or server).
The launcher sets ``MXKV_CALL_TIMEOUT_MS`` so that a JVM waits for an engine
call as long as the store's own ``MXKV_FAIL_TIMEOUT`` allows (workers) or
without limit (servers, whose ``kvstore-server/start`` lasts the whole job).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from ...supervise import exit_words
from .local_cluster import LocalCluster
from .node_keeper import replica_dir
from .processes import LocalProcess, RayProcess, become_subreaper, kill_descendants
from .shm import data_dir
from .supervisor import Interrupted, Supervisor
from .watchdog import Watchdog

__all__ = ["main", "parse_args"]


def _env_pairs(items: Sequence[str], flag: str) -> Dict[str, str]:
    out = {}
    for item in items:
        sep = "=" if "=" in item else (":" if ":" in item else None)
        if sep is None:  # MXNet's --env NAME passes the launcher's value along
            if item in os.environ:
                out[item] = os.environ[item]
            continue
        k, v = item.split(sep, 1)
        if not k:
            raise SystemExit(f"mxkv launch: {flag} {item!r} has no variable name")
        out[k] = v
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Read ``mxkv launch``'s command line (MXNet's ``tools/launch.py`` flags).

    Parameters
    ----------
    argv : sequence of str
        The arguments after ``mxkv launch``; the workers' command follows ``--``.

    Returns
    -------
    argparse.Namespace
        ``num_workers``, ``num_servers`` (None: as many as workers),
        ``launcher``, ``ray_address``, ``env``/``env_worker``/``env_server``,
        ``server_cmd``, ``p3`` and ``command``.

    Examples
    --------
    >>> from mxkv.kvstore.dist.launch import parse_args
    >>> args = parse_args(['-n', '2', '-s', '1', '--', 'python', 'train.py'])
    >>> args.num_workers, args.num_servers, args.command
    (2, 1, ['python', 'train.py'])
    """
    p = argparse.ArgumentParser(
        prog="mxkv launch", description="Launch a distributed mxkv job on Ray "
        "(the role of MXNet's tools/launch.py).")
    p.add_argument("-n", "--num-workers", type=int, required=True,
                   help="number of worker processes")
    p.add_argument("-s", "--num-servers", type=int, default=None,
                   help="number of server shards (default: the number of workers)")
    p.add_argument("--launcher", default="local", choices=["local", "ray"],
                   help="'local' (default) runs the workers here; 'ray' runs each in a Ray "
                   "actor spread over the cluster's nodes (for several hosts)")
    p.add_argument("--ray-address", default=None,
                   help="join this Ray cluster (default: MXKV_RAY_ADDRESS, RAY_ADDRESS, or "
                   "a new local one)")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="set K=V for workers and servers (K alone passes this value on)")
    p.add_argument("--env-worker", action="append", default=[], metavar="K=V")
    p.add_argument("--env-server", action="append", default=[], metavar="K=V")
    p.add_argument("--server-cmd", default=None,
                   help="also run this command once per server with DMLC_ROLE=server")
    p.add_argument("--p3", action="store_true", help="P3 slicing and priorities "
                   "(DMLC_PS_VAN_TYPE=p3)")
    p.add_argument("--shard-placement", default="spread", choices=["spread", "pack"],
                   help="'spread' (default): shards round robin over the cluster's nodes; "
                   "'pack': all on the launcher's node")
    p.add_argument("--resume", action="store_true", default=None,
                   help="take up the state MXKV_CHECKPOINT_DIR holds from an earlier job "
                   "(without it such a directory is refused; MXKV_RESUME=1 does the same)")
    p.add_argument("--workers-per-host", type=int, default=None, metavar="N",
                   help="with --launcher ray: N workers on each node, ranks 0..N-1 on the "
                   "launcher's node, the next N on another, ... (default: spread)")
    p.add_argument("--trusted-network", action="store_true",
                   help="join a Ray cluster that has no token auth (anyone who reaches it "
                   "runs code as you): only on a network you trust")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of a local Ray cluster (default: Ray's count)")
    p.add_argument("-H", "--hostfile", default=None, help=argparse.SUPPRESS)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the worker command")
    args = p.parse_args(list(argv))
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("give the worker command after --, e.g. mxkv launch -n 2 -- python train.py")
    if args.hostfile:
        p.error("a host file is for MXNet's ssh/mpi launchers; with mxkv, start Ray on the "
                "hosts (ray start --head / ray start --address ...) and pass --ray-address")
    if args.num_workers < 1:
        p.error("-n must be at least 1")
    if args.workers_per_host is not None:
        if args.launcher != "ray":
            p.error("--workers-per-host places workers on several hosts: it needs "
                    "--launcher ray")
        if args.workers_per_host < 1:
            p.error("--workers-per-host must be at least 1")
    if args.num_servers is None:
        args.num_servers = args.num_workers
    if args.num_servers < 1:
        p.error("-s must be at least 1")
    return args


def _command(parts: List[str]) -> List[str]:
    # A single argument with spaces is a shell command line, as MXNet's launcher takes it.
    if len(parts) == 1 and " " in parts[0]:
        return ["bash", "-c", parts[0]]
    return parts



def _start_local_ray(num_cpus: Optional[int]) -> LocalCluster:
    """A Ray cluster for this job alone: loopback, token, its own directory."""
    return LocalCluster(num_cpus)


def run(args: argparse.Namespace) -> int:
    """Run the job ``args`` describe (see :func:`parse_args`); returns the
    exit code. The process running it owns what it starts: at the end (and on
    SIGTERM/SIGINT) every process below it is killed."""
    from ...base import env
    from .cluster import create_job, new_job_name
    from .job import connect

    # read before the job starts, so that a bad value starts nothing
    call_timeout_ms = env("MXKV_CALL_TIMEOUT_MS", None, kind=int, minimum=0)
    address = args.ray_address or os.environ.get("MXKV_RAY_ADDRESS") or \
        os.environ.get("RAY_ADDRESS")
    sup = Supervisor()
    cluster: Optional[LocalCluster] = None
    job = None
    become_subreaper()
    sup.install()
    dog = Watchdog()   # cleans up should this process die without doing it (SIGKILL)
    sup.spare.add(dog.proc.pid)  # type: ignore[union-attr]

    def remove_at_end(path: str) -> None:
        sup.paths.append(path)
        dog.remove_later(path)

    try:
        if address:
            connect(address)
            _check_auth(address, args.trusted_network)
        else:
            cluster = _start_local_ray(args.num_cpus)
            address = cluster.address
            remove_at_end(cluster.temp_dir)
        sup.install()   # ray.init sets a SIGTERM handler of its own
        # --env and --env-server reach the shards too (as MXNet's launcher
        # gives them to its servers): MXKV_CHECKPOINT_DIR, MXKV_KEEP_BYTES, ...
        # what the job will make on this host is the watchdog's before it
        # exists: a launcher killed while the job starts leaves nothing either
        name = new_job_name()
        remove_at_end(data_dir(name))   # the same-host data path's segments
        remove_at_end(replica_dir(name))   # copies of other hosts' shard logs
        dog.mark_job(name)
        job = create_job(args.num_workers, args.num_servers, name=name, address=address,
                         p3=args.p3, placement=args.shard_placement, resume=args.resume,
                         shard_env={**_env_pairs(args.env, "--env"),
                                    **_env_pairs(args.env_server, "--env-server")},
                         made=remove_at_end)   # the checkpoint directory, if it makes one
        _start_processes(args, job, sup, call_timeout_ms)
        _say_where(job, sup)
        if cluster is not None:
            cluster.tighten()   # (the processes started made Ray's directories 0777)
        code = sup.watch(job)
        if code == 0:
            _wait_servers(job, sup)
        return code
    except Interrupted as stop:
        return 128 + stop.signum
    finally:
        sup.starting = False   # a signal now only counts; a second one kills at once
        for _, _, p in sup.procs:
            p.kill()
        for _, _, p in sup.procs:
            p.drain(2.0)
        if job is not None:
            job.close()
        if cluster is not None:
            cluster.stop()
        kill_descendants(spare=sup.spare)   # what Ray or a worker left, re-parented to us
        for path in sup.paths:
            shutil.rmtree(path, ignore_errors=True)
        dog.close()
        sup.uninstall()


def _check_auth(address: str, trusted: bool) -> None:
    """Refuse a cluster on another host's address that let this process in
    without a token, unless ``trusted`` (--trusted-network)."""
    import ipaddress
    import socket

    from ray._raylet import (  # type: ignore[attr-defined]
        AuthenticationMode,
        get_authentication_mode,
    )

    if trusted or get_authentication_mode() == AuthenticationMode.TOKEN:
        return
    host = address.rpartition(":")[0] or address
    try:
        if ipaddress.ip_address(socket.gethostbyname(host)).is_loopback:
            return   # this host's own cluster, reachable from here only
    except OSError:
        pass
    raise RuntimeError(f"the Ray cluster at {address} accepts connections without a token: "
                       "anyone who can reach it can run code as you. Start it with token "
                       "auth (mxkv cluster head / join; or RAY_AUTH_MODE=token and "
                       "RAY_AUTH_TOKEN[_PATH] on every host and here), or pass "
                       "--trusted-network if the network is yours alone")


def _start_processes(args: argparse.Namespace, job: Any, sup: Supervisor,
                     call_timeout_ms: Optional[int]) -> None:
    common = _env_pairs(args.env, "--env")
    if args.launcher == "ray":   # spread over the nodes by a placement group of their own
        from .cluster import per_node_options, placement_options

        count = args.num_workers + (args.num_servers if args.server_cmd else 0)
        if args.workers_per_host:
            # servers (--server-cmd) first, as they are started: one more node's worth
            opts = per_node_options(count, args.workers_per_host)
            opts = opts[args.num_workers:] + opts[:args.num_workers] if args.server_cmd \
                else opts
        else:
            group, opts = placement_options(count, "spread")
            job.groups.append(group)   # removed with the job
        places = iter(opts)

        def spawn(cmd: List[str], env: Dict[str, str], prefix: str) -> Any:
            return RayProcess(cmd, env, prefix, next(places))
    else:
        spawn = LocalProcess
    # A JVM's engine call waits as long as the store's own timeouts allow
    # (workers), or for the whole job (servers): MXKV_CALL_TIMEOUT_MS.
    if call_timeout_ms is None:
        call_timeout_ms = int((job.timeouts.fail + 60) * 1000)
    base = {"MXKV_CALL_TIMEOUT_MS": str(call_timeout_ms)}
    for i in range(args.num_servers if args.server_cmd else 0):
        env = {**base, **job.environ(role="server"), "MXKV_CALL_TIMEOUT_MS": "0", **common,
               **_env_pairs(args.env_server, "--env-server"), "DMLC_SERVER_ID": str(i)}
        sup.procs.append(("server", i, spawn(["bash", "-c", args.server_cmd], env,
                                             f"[server {i}] ")))
    # A worker without a SIGTERM handler of its own is ended by the
    # launcher's SIGTERM (forwarded, or after a dead peer): Ray's C++ failure
    # signal handler would print a stack dump for it, every time. Workers run
    # without it (override with --env-worker RAY_DISABLE_FAILURE_SIGNAL_HANDLER=0),
    # and with Python's faulthandler, so a real crash still prints where.
    base = {**base, "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1", "PYTHONFAULTHANDLER": "1"}
    for rank in range(args.num_workers):
        env = {**base, **job.environ(role="worker", rank=rank), **common,
               **_env_pairs(args.env_worker, "--env-worker"), "DMLC_TASK_ID": str(rank)}
        sup.procs.append(("worker", rank, spawn(_command(args.command), env,
                                                f"[worker {rank}] ")))


def _say_where(job: Any, sup: Supervisor) -> None:
    """One line: the node each shard (and each worker run by Ray) is on."""
    import ray

    names = {n["NodeID"]: n.get("NodeManagerAddress", "?") for n in ray.nodes() if n.get("Alive")}

    def where(node: Optional[str]) -> str:
        return f"{node[:12]} ({names.get(node, '?')})" if node else "an unknown node"

    parts = [f"shard {i} on node {where(n)}" for i, n in enumerate(job.shard_nodes())]
    parts += [f"{role} {i} on node {where(p.node_id)}" for role, i, p in sup.procs
              if isinstance(p, RayProcess)]
    print(f"mxkv launch: {job.placement} placement over {len(names)} node(s): "
          + ", ".join(parts), file=sys.stderr, flush=True)


def _wait_servers(job: Any, sup: Supervisor) -> None:
    """Tell server processes the job is over; give them 30 s to return."""
    job.coordinator.stop.remote()
    deadline = time.monotonic() + 30
    for role, i, p in sup.procs:
        if role != "server":
            continue
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        rc = p.poll()
        if rc != 0:
            print(f"mxkv launch: server {i} "
                  f"{'is still running' if rc is None else exit_words(rc)}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``mxkv launch``."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except Exception as exc:  # noqa: BLE001 - a launcher reports, it does not trace
        print(f"mxkv launch: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
