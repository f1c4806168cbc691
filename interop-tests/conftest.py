"""Fixtures of the interop tests (see support.py): one JVM per transport for
the session; every test skips, saying what to install, where a JDK, a Clojure
jar, py4j or JPype1 is missing."""
from __future__ import annotations

import pytest
from support import MISSING, TRANSPORTS, JPypeDriver, Py4JDriver


def pytest_collection_modifyitems(config, items):
    # the tier marks of tests/conftest.py, for a run of interop-tests alone
    for item in items:
        if item.fspath.basename == "test_example_digits.py":
            item.add_marker(pytest.mark.launch)
    if MISSING:
        skip = pytest.mark.skip(reason=MISSING)
        for item in items:
            if "interop-tests" in str(item.fspath):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def _py4j_driver():
    d = Py4JDriver()
    yield d
    d.close()


@pytest.fixture(scope="session")
def _jpype_driver():
    return JPypeDriver()


# Every test names its transport in its id: the fixtures below are
# parametrized, over one transport or both.

@pytest.fixture(params=["py4j"])
def py4j_driver(_py4j_driver):
    """The Py4J driver (test id ``[py4j]``)."""
    return _py4j_driver


@pytest.fixture(params=["jpype"])
def jpype_driver(_jpype_driver):
    """The JPype driver, in this process (test id ``[jpype]``)."""
    return _jpype_driver


@pytest.fixture(params=["jpype"])
def jpype():
    """For JPype tests that start their own Python process (test id ``[jpype]``)."""
    return "jpype"


@pytest.fixture(params=TRANSPORTS)
def driver(request):
    """The driver of each transport in turn (test ids ``[py4j]``, ``[jpype]``)."""
    return request.getfixturevalue(f"_{request.param}_driver")


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    """Each transport's name in turn, for tests that run their own processes."""
    return request.param
