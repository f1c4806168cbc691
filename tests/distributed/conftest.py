"""Fixtures for the distributed store: one real Ray cluster for the modules
that use it.

The cluster runs on loopback with a small object store and its own temporary
directory (removed afterwards). Workers are real processes: a pool of Ray
actors, each running a test's worker function with a fresh
``mx.kv.create(...)`` in the job's environment, exactly as a worker started
by ``mxkv launch`` would. Starting a cluster takes seconds, so the modules
using ``cluster`` (or ``jobs``) run one after another and share one, with
not its pool (each module gets fresh worker processes, and its jobs are
removed after it); it is stopped before the first module that
does not use it (those start Ray clusters of their own) and at the end.
"""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

import dist_waits
import pytest

# Keep every Ray process of the tests on loopback (Ray reads this at import).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

ray = pytest.importorskip("ray", reason="the dist tests need Ray: pip install 'mxkv[dist]'")

from mxkv.kvstore.dist.cluster import Job, create_job  # noqa: E402
from mxkv.kvstore.dist.job import NAMESPACE, Timeouts  # noqa: E402

POOL = 4
FAST = Timeouts(stall=30.0, fail=60.0, heartbeat=0.5, dead=10.0)


class TestWorker:
    """A worker process: runs ``fn(kv, mx, *args)`` on a fresh store of a job."""

    def pid(self) -> int:
        return os.getpid()

    def run(self, env: Dict[str, str], kind: str, fn: Callable, args: tuple,
            close: bool = True) -> Any:
        import mxkv as mx

        saved = dict(os.environ)
        os.environ.update(env)
        kv = None
        try:
            kv = mx.kv.create(kind)
            return fn(kv, mx, *args)
        finally:
            if kv is not None and close:
                kv.close()
            os.environ.clear()
            os.environ.update(saved)


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
# the worker functions wait with its helpers: not importable in Ray's processes either
ray.cloudpickle.register_pickle_by_value(dist_waits)


class Cluster:
    """The module's Ray cluster and worker pool."""

    def __init__(self) -> None:
        self.workers: List[Any] = []
        self.jobs: List[Job] = []

    def new_pool(self) -> None:
        """Kill the pool's workers: the next module's start fresh (no state of
        another module's tests, no call of theirs still running)."""
        for w in self.workers:
            ray.kill(w)
        self.workers = []

    def pool(self, n: int) -> List[Any]:
        actor = ray.remote(TestWorker).options(num_cpus=0)
        while len(self.workers) < n:
            self.workers.append(actor.remote())
        ray.get([w.pid.remote() for w in self.workers[:n]])
        return self.workers[:n]

    def fresh_worker(self) -> Any:
        """A worker process not in the pool (for tests that kill it)."""
        w = ray.remote(TestWorker).options(num_cpus=0).remote()
        ray.get(w.pid.remote())
        return w

    def job(self, workers: int, servers: int, timeouts: Timeouts = FAST, **kw) -> Job:
        job = create_job(workers, servers, timeouts=timeouts, **kw)
        self.jobs.append(job)
        return job

    def submit(self, job: Job, fn: Callable, *args: Any, kind: str = "dist_sync",
               env: Optional[Dict[str, str]] = None, workers: Optional[List[Any]] = None,
               ranks: Optional[List[int]] = None) -> List[Any]:
        """Start ``fn`` on every worker of ``job``; returns their result refs."""
        # test modules are not importable in Ray's worker processes: ship by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[fn.__module__])
        ws = workers or self.pool(job.num_workers)
        ranks = ranks if ranks is not None else list(range(job.num_workers))
        refs = []
        for w, rank in zip(ws, ranks):
            e = {**job.environ(rank=rank), **(env or {})}
            refs.append(w.run.remote(e, kind, fn, args))
        return refs

    def run(self, job: Job, fn: Callable, *args: Any, timeout: float = 120, **kw) -> List[Any]:
        """Run ``fn`` on every worker of ``job`` and return the results by rank."""
        return ray.get(self.submit(job, fn, *args, **kw), timeout=timeout)

    def close(self) -> None:
        for job in self.jobs:
            job.close()
        self.jobs = []


_shared: Dict[str, Any] = {}   # "cluster" and its "temp" directory while one runs


def _stop_shared() -> None:
    c = _shared.pop("cluster", None)
    if c is not None:
        c.close()
        ray.shutdown()
        # (Ray's last processes may still be writing logs)
        dist_waits.remove_tree(_shared.pop("temp"))


def _uses_cluster(item) -> bool:
    return "cluster" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items):
    # the modules using the shared cluster first, each whole and in its order
    here = os.path.dirname(__file__)
    mine = [i for i, item in enumerate(items) if str(item.fspath).startswith(here + os.sep)]
    users = {str(items[i].fspath) for i in mine if _uses_cluster(items[i])}
    ordered = sorted((items[i] for i in mine), key=lambda item: str(item.fspath) not in users)
    for i, item in zip(mine, ordered):
        items[i] = item
    config._mxkv_cluster_modules = users


def pytest_runtest_setup(item):
    if str(item.fspath) not in getattr(item.config, "_mxkv_cluster_modules", ()):
        _stop_shared()   # this module starts a Ray of its own, or needs none


@pytest.fixture(scope="session")
def _cluster_session():
    yield
    _stop_shared()


@pytest.fixture(scope="module")
def cluster(_cluster_session):
    """The shared local Ray cluster on loopback (started by the first module
    that needs it); the module's jobs are removed after it."""
    if "cluster" not in _shared:
        temp = tempfile.mkdtemp(prefix="mxkv-ray-")
        ray.init(address="local", num_cpus=2, namespace=NAMESPACE, include_dashboard=False,
                 object_store_memory=300 * 1024 * 1024, _temp_dir=temp, log_to_driver=False,
                 configure_logging=False)
        _shared.update(cluster=Cluster(), temp=temp)
    c = _shared["cluster"]
    c.new_pool()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def jobs(cluster):
    """The cluster; jobs made in a test are removed after it."""
    yield cluster
    cluster.close()
