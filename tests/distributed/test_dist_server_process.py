"""A server process (``DMLC_ROLE=server``) of a job: ``run_server`` returns at
the job's end and only then; a controller it cannot honour is refused."""
from __future__ import annotations

import threading
import time

import pytest

import mxkv as mx
from mxkv.base import MXNetError, MXNetValueError
from mxkv.kvstore.dist.server_process import ServerHandle


def _serve(handle, **kw):
    """Run ``handle.run_server(**kw)`` in a thread; returns (thread, outcome list)."""
    outcome = []

    def run():
        try:
            handle.run_server(**kw)
            outcome.append("returned")
        except Exception as exc:  # noqa: BLE001 - what the test checks
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, outcome


def _joined(handle, timeout=120.0):
    """Wait (polling the handle) until the server has joined its job."""
    deadline = time.monotonic() + timeout
    while handle.rank < 0:
        assert time.monotonic() < deadline, "the server never joined"
        time.sleep(0.02)


def test_a_controller_is_refused_before_the_server_joins(jobs):
    job = jobs.job(1, 1)
    handle = ServerHandle("dist_sync", job.job_env("server"))
    with pytest.raises(MXNetValueError, match="apply the workers' commands themselves"):
        handle.run_server(controller=lambda head, body: None)
    assert handle.rank == -1, "it did not join"


def test_the_server_returns_when_the_workers_are_done(jobs):
    job = jobs.job(1, 1)
    t, outcome = _serve(ServerHandle("dist_sync", job.job_env("server")), poll=0.2)
    jobs.run(job, lambda kv, mx: kv.init(0, mx.nd.zeros((2,))))   # a worker comes and goes
    t.join(120)
    assert outcome == ["returned"]


def test_the_server_returns_when_the_job_is_removed(jobs):
    job = jobs.job(1, 1)
    handle = ServerHandle("dist_sync", job.job_env("server"))
    t, outcome = _serve(handle, poll=0.2)
    _joined(handle)
    job.close()
    t.join(120)
    assert outcome == ["returned"]


def test_a_failure_that_is_not_the_jobs_end_is_raised(jobs):
    job = jobs.job(1, 1)
    t, outcome = _serve(ServerHandle("dist_sync", job.job_env("server")), poll="soon")
    t.join(120)
    (exc,) = outcome
    assert isinstance(exc, MXNetError) and "lost the job" in str(exc)


def test_kvstore_server_runs_without_a_controller_and_a_subclass_s_is_refused(jobs):
    job = jobs.job(1, 1)

    class Custom(mx.kv.KVStoreServer):
        def _controller(self):
            return lambda head, body, _=None: None

    with pytest.raises(MXNetValueError, match="controller"):
        Custom(ServerHandle("dist_sync", job.job_env("server"))).run()
    handle = ServerHandle("dist_sync", job.job_env("server"))
    t = threading.Thread(target=mx.kv.KVStoreServer(handle).run, daemon=True)
    t.start()
    _joined(handle)
    job.close()
    t.join(120)
    assert not t.is_alive()


def test_a_launched_commands_actor_takes_a_signal_while_a_read_waits(jobs, monkeypatch):
    # mxkv launch --launcher ray: the launcher's one read waits in the actor
    # for output; SIGTERM forwarded meanwhile must not queue behind it
    import signal
    import sys

    from mxkv.kvstore.dist import processes

    monkeypatch.setattr(processes, "READ_WAIT_S", 600.0)
    rp = processes.RayProcess([sys.executable, "-c", "import time; time.sleep(600)"], {},
                              "test: ")
    try:
        assert rp.poll() is None          # its read now waits (600 s) in the actor
        time.sleep(0.5)
        rp.signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        while rp.poll() is None:
            assert time.monotonic() < deadline, "the signal waited behind the read"
            time.sleep(0.05)
        assert rp.code == -signal.SIGTERM
    finally:
        rp.kill()
