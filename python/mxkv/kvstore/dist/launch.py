"""``mxkv launch``: run a distributed job, as MXNet's ``tools/launch.py`` does.

::

    mxkv launch -n WORKERS [-s SERVERS] [--launcher local] [--ray-address ADDR]
                [--env K=V ...] [--env-worker K=V ...] [--env-server K=V ...]
                [--server-cmd CMD] [--p3] -- CMD ...

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
Ray cluster instead, spread over the nodes by Ray: the way to use several
hosts (the command must exist on every host).

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
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

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
    if args.num_servers is None:
        args.num_servers = args.num_workers
    if args.num_servers < 1:
        p.error("-s must be at least 1")
    return args


_PRINT = threading.Lock()


def _emit(prefix: bytes, line: bytes) -> None:
    out = sys.stdout.buffer
    with _PRINT:
        out.write(prefix + (line if line.endswith(b"\n") else line + b"\n"))
        out.flush()


class _LocalProcess:
    """A command run here; its output is copied to ours, line by line, prefixed."""

    def __init__(self, cmd: List[str], env: Dict[str, str], prefix: str) -> None:
        self.proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.prefix = prefix.encode()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):  # type: ignore[union-attr]
            _emit(self.prefix, line)

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def kill(self) -> None:
        _kill(self.proc)


class RemoteProcess:
    """A command run by a Ray actor on some node (``--launcher ray``).

    The command gets that node's environment plus the job's variables; its
    output lines are fetched by the launcher and printed prefixed.
    """

    def start(self, cmd: List[str], env: Dict[str, str]) -> str:
        import collections
        import socket

        self.lines: "collections.deque[bytes]" = collections.deque()
        self.proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        threading.Thread(target=self._pump, daemon=True).start()
        return socket.gethostname()

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):  # type: ignore[union-attr]
            self.lines.append(line)
        self.lines.append(b"")   # end of output

    def read(self) -> Tuple[List[bytes], Optional[int]]:
        out = []
        while self.lines:
            out.append(self.lines.popleft())
        done = bool(out) and out[-1] == b""
        return [x for x in out if x], (self.proc.wait() if done else None)

    def kill(self) -> None:
        _kill(self.proc)


class _RayProcess:
    """The launcher's side of a :class:`RemoteProcess`."""

    def __init__(self, cmd: List[str], env: Dict[str, str], prefix: str) -> None:
        import ray

        actor = ray.remote(RemoteProcess).options(num_cpus=0, scheduling_strategy="SPREAD")
        self.actor = actor.remote()
        self.ray = ray
        self.prefix = prefix.encode()
        self.code: Optional[int] = None
        ray.get(self.actor.start.remote(cmd, env))

    def poll(self) -> Optional[int]:
        if self.code is None:
            lines, self.code = self.ray.get(self.actor.read.remote())
            for line in lines:
                _emit(self.prefix, line)
        return self.code

    def kill(self) -> None:
        try:
            self.ray.get(self.actor.kill.remote(), timeout=10)
            self.ray.kill(self.actor)
        except Exception:  # noqa: BLE001 - already gone
            pass


def _start_local_ray(num_cpus: Optional[int]) -> Tuple[str, str]:
    """A local Ray cluster on loopback, its temporary directory under /tmp."""
    from .job import import_ray

    ray = import_ray()
    # Ray picks the host's address unless told to stay on this machine.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    temp = tempfile.mkdtemp(prefix="mxkv-ray-")
    ctx = ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                   namespace="mxkv", _temp_dir=temp, log_to_driver=True,
                   configure_logging=False)
    return ctx.address_info["gcs_address"], temp


def _command(parts: List[str]) -> List[str]:
    # A single argument with spaces is a shell command line, as MXNet's launcher takes it.
    if len(parts) == 1 and " " in parts[0]:
        return ["bash", "-c", parts[0]]
    return parts


def run(args: argparse.Namespace) -> int:
    """Run the job ``args`` describes (see :func:`parse_args`): join or start
    the Ray cluster, create the job, run the workers (and server commands)
    until they end, then remove the job; returns the first non-zero exit
    code of a worker, or 0."""
    from ...base import env
    from .cluster import create_job
    from .job import connect

    # read before the job starts, so that a bad value starts nothing
    call_timeout_ms = env("MXKV_CALL_TIMEOUT_MS", None, kind=int, minimum=0)
    address = args.ray_address or os.environ.get("MXKV_RAY_ADDRESS") or \
        os.environ.get("RAY_ADDRESS")
    temp = None
    if address:
        connect(address)
    else:
        address, temp = _start_local_ray(args.num_cpus)
    job = create_job(args.num_workers, args.num_servers, address=address, p3=args.p3)
    procs: List[Tuple[str, int, Any]] = []
    common = _env_pairs(args.env, "--env")
    spawn = _RayProcess if args.launcher == "ray" else _LocalProcess
    code = 0
    try:
        # A JVM's engine call waits as long as the store's own timeouts allow
        # (workers), or for the whole job (servers): MXKV_CALL_TIMEOUT_MS.
        if call_timeout_ms is None:
            call_timeout_ms = int((job.timeouts.fail + 60) * 1000)
        base = {"MXKV_CALL_TIMEOUT_MS": str(call_timeout_ms)}
        for i in range(args.num_servers if args.server_cmd else 0):
            env = {**base, **job.environ(role="server"), "MXKV_CALL_TIMEOUT_MS": "0", **common,
                   **_env_pairs(args.env_server, "--env-server"), "DMLC_SERVER_ID": str(i)}
            procs.append(("server", i, spawn(["bash", "-c", args.server_cmd], env,
                                             f"[server {i}] ")))
        for rank in range(args.num_workers):
            env = {**base, **job.environ(role="worker", rank=rank), **common,
                   **_env_pairs(args.env_worker, "--env-worker"), "DMLC_TASK_ID": str(rank)}
            procs.append(("worker", rank, spawn(_command(args.command), env,
                                                f"[worker {rank}] ")))
        reported = set()
        while True:
            running = 0
            for role, rank, p in procs:
                rc = p.poll()
                if role != "worker":
                    continue
                if rc is None:
                    running += 1
                elif rc != 0 and rank not in reported:
                    reported.add(rank)
                    code = code or rc
                    print(f"mxkv launch: worker {rank} exited with code {rc}", file=sys.stderr)
                    try:
                        job.coordinator.declare_dead.remote(
                            rank, f"its process exited with code {rc}")
                    except Exception:  # noqa: BLE001
                        pass
            if not running:
                break
            time.sleep(0.1)
        job.coordinator.stop.remote()
        deadline = time.monotonic() + 30
        for role, i, p in procs:
            if role != "server":
                continue
            while p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            rc = p.poll()
            if rc != 0:
                print(f"mxkv launch: server {i} exited with code "
                      f"{'(still running)' if rc is None else rc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return 130
    finally:
        for _, _, p in procs:
            p.kill()
        job.close()
        import ray as _ray

        if temp is not None:
            _ray.shutdown()
            for _ in range(3):   # Ray's last processes may still be writing logs
                shutil.rmtree(temp, ignore_errors=True)
                time.sleep(0.1)


def _kill(p: subprocess.Popen) -> None:
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired, PermissionError):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


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
