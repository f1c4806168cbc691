"""What every test of the repository shares (tests/ and interop-tests/)."""
import signal
import threading

import pytest


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(autouse=True)
def _sigterm_unwinds():
    """A run ended by SIGTERM (timeout(1), a cancelled CI job) unwinds as
    Ctrl-C does: pytest then still runs the fixtures' finalizers, which stop
    the test clusters, engines and JVMs and remove their files. Set before
    every test, after the broader fixtures: ``ray.init`` replaces the
    handler with one that exits the driver at once, which leaves the
    cluster's processes and files behind."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)
    yield
