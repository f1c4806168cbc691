"""Every host of a job cleaned, and a copy of each shard's log on another host.

On a cluster of several nodes, :func:`~.cluster.create_job` places one
:class:`NodeAgent` actor on every alive node (a hard node affinity each,
owned by the process that created the job). Each agent:

* **starts a keeper** (``python -m mxkv.kvstore.dist.node_keeper``; one
  per machine, none on the job creator's, :meth:`NodeAgent.keep`), a
  plain process outside Ray (double-forked, a session of its own, so that
  neither the agent's death nor its raylet's takes it along) that holds a
  pipe from the agent. When the pipe closes (the job closed and killed the
  agent; the launcher died, SIGKILL included, and Ray killed the actors it
  owned; the node's raylet died and its workers with it) or the agent says
  the job is gone (below), the keeper SIGKILLs this node's processes of the
  job (those whose environment carries ``MXKV_JOB=<job>``: the workers and
  servers ``--launcher ray`` started, and their children; and those holding
  a file in the job's directories here: shards, relays, the actors that run
  the workers) and removes those
  directories (the pull segments, the job's own checkpoint directory, the
  replicas), then exits. A joined node's Ray processes are not the job's
  and stay. The agent makes those directories and marks them (``.mxkv-node``:
  the Ray cluster and the job); an agent starting on a node removes what an
  earlier job of the same cluster left there when everything on that host
  was killed, keeper included (:func:`remove_stale`: only when that job's
  coordinator is gone and no process here holds its files or carries its
  name).
* **watches the job**: it sends the coordinator a heartbeat every
  ``MXKV_HEARTBEAT_INTERVAL`` s; after ``MXKV_DEAD_TIMEOUT`` s without an
  answer (the host is cut off, or the launcher's host is gone) it has the
  keeper clean up and exits. The coordinator, on its side, declares every
  worker of a node whose agent went silent that long dead, naming the host
  (:meth:`~.coordinator.Coordinator.agent_beat`).
* **keeps replicas** of other nodes' shard logs (:mod:`.replica`): the
  checkpoint records a shard writes are sent to an agent on another node,
  which writes the same bytes to ``mxkv-<job>-replica/shard-<i>.ckpt``
  (directory 0700, files 0600) under ``/dev/shm``, fsync'd before the shard
  calls them durable. A shard restarted on a node without its log (its host
  was lost) fetches it from there; records carry their checksums
  (:mod:`.checkpoint`), so a damaged copy is refused, never loaded.
* **says whether it sees a directory** (:meth:`NodeAgent.sees`): the job
  asks every agent whether the checkpoint directory's ``mxkv-job.json``
  names this run on its node; if all do, the directory is shared and no
  replica is kept.

Run as ``python -m mxkv.kvstore.dist.node_keeper JOB AGENT_PID`` (the agent does).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, List, Optional

from ...bridge.private import private_directory
from .checkpoint import open_private
from .watchdog import holding, marked, sweep

__all__ = ["NodeAgent", "replica_dir", "machine_id", "JOB_VAR"]

#: The environment variable every process of a job carries (``mxkv launch`` sets it).
JOB_VAR = "MXKV_JOB"
#: The job's actor classes a keeper kills on its node when the job is gone
ACTOR_CLASSES = ("ServerShard", "HostRelay", "RemoteProcess", "Coordinator")
#: The file in each job directory an agent made: the Ray cluster and the job.
MARK = ".mxkv-node"


def replica_dir(job: str) -> str:
    """This host's directory of replicas of job ``job``'s shard logs."""
    from .shm import data_dir

    return data_dir(job)[:-len("-data")] + "-replica"


class NodeAgent:
    """A job's agent on one node (a Ray actor; see the module's text).

    Parameters
    ----------
    job : str
    paths : list of str
        The job's directories to remove from this node at its end (the
        pull segments' and replicas' are added here).
    heartbeat, dead_timeout : float
        Seconds between heartbeats to the coordinator, and without an
        answer before the job is taken for gone.
    """

    def __init__(self, job: str, paths: List[str], heartbeat: float, dead_timeout: float) -> None:
        import socket

        import ray

        from .job import NAMESPACE, coordinator_name
        from .shm import data_dir

        self.ray = ray
        self.job = job
        self.host = socket.gethostname()
        self.node = ray.get_runtime_context().get_node_id()
        self.cluster = str(ray.get_runtime_context().gcs_address)
        self.paths = [*paths, data_dir(job), replica_dir(job)]
        #: what earlier jobs of this cluster left on this node (their host was
        #: lost with every process on it, keeper included), removed now
        self.removed_stale = remove_stale(self.cluster, job)
        for path in self.paths:   # made now, marked as this job's on this cluster
            private_directory(path, "job directory")
            with open_private(os.path.join(path, MARK), "wb") as f:
                f.write(json.dumps({"cluster": self.cluster, "job": job}).encode())
        self.keeper: Any = None   # (started by keep(): one per machine)
        self.ray_job = ray.get_runtime_context().get_job_id()
        self._told: set = set()
        self._lock = threading.Lock()
        self.coordinator = ray.get_actor(coordinator_name(job), namespace=NAMESPACE)
        self._heartbeat, self._dead = float(heartbeat), float(dead_timeout)
        threading.Thread(target=self._watch, name="mxkv-agent", daemon=True).start()
        # (its own thread: reading Ray's table blocks while the head is out of reach)
        threading.Thread(target=self._table, name="mxkv-agent-table", daemon=True).start()

    def _table(self) -> None:
        while True:
            self._actors_here()
            time.sleep(2.0)

    def keep(self) -> None:
        """Start this node's keeper. The job starts one per machine, none on
        the machine of the process that created it (whose own cleanup covers
        it): nodes of one machine (a cluster on loopback) share its
        processes and files, and one node's end must not take the others'."""
        if self.keeper is None:
            self.keeper = self._start_keeper()

    def _start_keeper(self) -> Any:
        r, w = os.pipe()
        proc = subprocess.Popen([sys.executable, "-m", __name__, self.job, str(os.getpid())],
                                stdin=r, stdout=subprocess.DEVNULL, start_new_session=True,
                                close_fds=True)
        os.close(r)
        proc.wait()   # the keeper forked and went on as an orphan: not our child
        pipe = os.fdopen(w, "wb", buffering=0)
        for path in self.paths:
            pipe.write(f"path {path}\n".encode())
        return pipe

    def _tell(self, line: str) -> None:
        try:
            self.keeper.write(line.encode() + b"\n")
        except (OSError, AttributeError):   # (no keeper here)
            pass

    def _actors_here(self) -> None:
        """Tell the keeper the pids of the job's actors on this node (shards,
        relays, the workers' actors): after a partition they are still
        running here, and Ray's table cannot be read then."""
        from ray._private import state

        try:
            table = state.actors()
        except Exception:  # noqa: BLE001 - the table is out of reach: keep the last
            return
        for info in table.values():
            pid = info.get("Pid")
            if (info.get("JobID") == self.ray_job and info.get("State") == "ALIVE"
                    and (info.get("Address") or {}).get("NodeID") == self.node
                    and info.get("ActorClassName") in ACTOR_CLASSES
                    and pid and pid not in self._told):
                self._told.add(pid)
                self._tell(f"pid {pid}")

    def _watch(self) -> None:
        """Heartbeats; the job taken for gone after ``dead_timeout`` s of silence."""
        last_ok = time.monotonic()
        while True:
            ref: Any = self.coordinator.agent_beat.remote(self.node, self.host)
            ready, _ = self.ray.wait([ref], timeout=self._heartbeat)
            now = time.monotonic()
            if ready:
                try:
                    self.ray.get(ready[0])
                    last_ok = now
                except Exception:  # noqa: BLE001 - the coordinator is gone: so is the job
                    last_ok = -1e9
                time.sleep(max(0.0, self._heartbeat - (time.monotonic() - now)))
            if now - last_ok > self._dead:
                print(f"mxkv: node agent of job {self.job!r} on {self.host}: no answer from "
                      f"its coordinator for {self._dead:.0f} s; removing the job from this "
                      "host", file=sys.stderr, flush=True)
                self._tell("gone")
                time.sleep(30)   # the keeper kills this process meanwhile
                os._exit(1)

    # ------------------------------------------------------------ the job's end
    def clean(self) -> List[int]:
        """Remove the job from this node now (the job is closing): SIGKILL
        its processes here but this one, remove its directories; returns the
        pids killed. Only where a keeper runs (see :meth:`keep`)."""
        if self.keeper is None:
            return []
        return sweep(self.job, self.paths, os.getpid(), var=JOB_VAR)

    def where(self) -> tuple:
        """(host name, node id, pid, machine) of this agent (:func:`machine_id`)."""
        return self.host, self.node, os.getpid(), machine_id()

    def sees(self, directory: str, run: str) -> bool:
        """Whether ``directory``'s ``mxkv-job.json`` names run ``run`` here
        (the directory is shared with the node that wrote it)."""
        from .checkpoint_dir import read_identity

        try:
            ident = read_identity(directory)
        except Exception:  # noqa: BLE001 - unreadable here: not shared
            return False
        return ident is not None and ident.get("run") == run

    # ------------------------------------------------------------ replicas
    def _replica(self, index: int) -> str:
        directory = private_directory(replica_dir(self.job), "replica directory")
        return os.path.join(directory, f"shard-{int(index)}.ckpt")

    def replica_reset(self, index: int, data: bytes) -> int:
        """Make the replica of shard ``index``'s log ``data`` (the whole log); its size."""
        path = self._replica(index)
        tmp = path + ".tmp"
        with self._lock:
            with open_private(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        return len(data)

    def replica_append(self, index: int, offset: int, data: bytes) -> bool:
        """Write ``data`` at ``offset`` of shard ``index``'s replica (what
        the shard appended to its log); False when the replica does not end
        at ``offset`` (the shard then sends the whole log)."""
        path = self._replica(index)
        with self._lock:
            try:
                size = os.path.getsize(path)
            except FileNotFoundError:
                return False
            if size != offset:
                return False
            with open_private(path, "ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        return True

    def replica_fetch(self, index: int) -> Optional[bytes]:
        """Shard ``index``'s replicated log, or None when this node has none."""
        try:
            with open(self._replica(index), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None


def machine_id() -> str:
    """What tells this machine (its boot) and its process and mount
    namespaces apart: nodes with the same id share processes and files."""
    parts = []
    for path in ("/proc/sys/kernel/random/boot_id",):
        try:
            with open(path) as f:
                parts.append(f.read().strip())
        except OSError:
            parts.append("?")
    for ns in ("pid", "mnt"):
        try:
            parts.append(os.readlink(f"/proc/self/ns/{ns}"))
        except OSError:
            parts.append("?")
    return "/".join(parts)


# ---------------------------------------------------------------- stale jobs
def remove_stale(cluster: str, job: str) -> List[str]:
    """Remove this host's directories of other jobs of Ray cluster
    ``cluster`` that are over: marked by their agent (:data:`MARK`), whose
    coordinator is gone from the cluster, and that no process of this host
    holds or carries the job's mark. Returns what was removed."""
    import glob

    import ray

    from .job import NAMESPACE, coordinator_name
    from .shm import data_dir

    base = os.path.dirname(data_dir(job))
    removed: List[str] = []
    for mark in glob.glob(os.path.join(glob.escape(base), "mxkv-*", MARK)):
        path = os.path.dirname(mark)
        try:
            if os.stat(path).st_uid != os.getuid():
                continue
            with open(mark, "rb") as f:
                info = json.loads(f.read())
            other = str(info["job"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if info.get("cluster") != cluster or other == job:
            continue
        try:
            ray.get_actor(coordinator_name(other), namespace=NAMESPACE)
            continue   # that job is alive
        except ValueError:
            pass
        if marked(other, JOB_VAR) or holding([path]):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# ---------------------------------------------------------------- the keeper
def keeper(job: str, agent: int, stream: Any) -> None:
    """Read the job's paths from ``stream`` until it closes or says
    ``gone``; then sweep this node (sparing nothing but this process)."""
    paths: List[str] = []
    actors: List[int] = []
    for raw in stream:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith("path "):
            paths.append(line[5:])
        elif line.startswith("pid "):
            actors.append(int(line[4:]))
        elif line == "gone":
            break
    # the job's actors (still Ray workers, not a pid reused since) and the
    # agent, when they are still there (the job is gone, not closed)
    for pid in actors:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::"):
                    os.kill(pid, 9)
        except (OSError, ProcessLookupError, PermissionError):
            pass
    sweep(job, paths, os.getpid(), var=JOB_VAR)
    try:
        os.kill(agent, 9)
    except (ProcessLookupError, PermissionError):
        pass


def main() -> None:
    job, agent = sys.argv[1], int(sys.argv[2])
    if os.fork() > 0:   # the agent waits for this one; the keeper is the orphan
        os._exit(0)
    keeper(job, agent, os.fdopen(0, "rb", buffering=0))


if __name__ == "__main__":
    main()
