"""Fixtures of the interop tests (see support.py): one JVM per transport for
the session; every test skips, saying what to install, where a JDK, a Clojure
jar, py4j or JPype1 is missing."""
from __future__ import annotations

import pytest
from support import MISSING, TRANSPORTS, JPypeDriver, Py4JDriver


def pytest_collection_modifyitems(config, items):
    if MISSING:
        skip = pytest.mark.skip(reason=MISSING)
        for item in items:
            if "interop-tests" in str(item.fspath):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def py4j_driver():
    d = Py4JDriver()
    yield d
    d.close()


@pytest.fixture(scope="session")
def jpype_driver():
    return JPypeDriver()


@pytest.fixture(params=TRANSPORTS)
def driver(request):
    """The driver of each transport in turn (test ids ``[py4j]``, ``[jpype]``)."""
    return request.getfixturevalue(f"{request.param}_driver")
