"""Shared test fixtures and markers.

Tiers. ``make test-fast`` runs every test not marked ``jvm``, ``ray``, ``lint``,
``docs`` or ``multihost``; ``make test`` runs them all. The marks are
applied here, never by hand, so a new test lands in the right tier by where
it lives or what it uses:

* by directory: ``tests/distributed/`` is ``ray``, ``tests/multihost/`` is
  ``multihost`` (emulated hosts, tools/hosts.py: skipped, saying why, where
  namespaces cannot be made), ``interop-tests/`` is ``jvm``;
* by fixture: a test that uses ``needs_jvm``, ``needs_ray``, ``docs_runner``
  or ``bed_tool``, directly or through another fixture (``def my_jvm(needs_jvm):
  ...``), gets ``jvm``, ``ray``, ``docs`` or ``multihost``. The ``needs_*``
  fixtures also skip, saying what to install, where the JDK and Clojure jar
  or Ray are missing.

Property tests draw as many examples as the hypothesis profile
``MXKV_HYPOTHESIS_PROFILE`` names: ``full`` by default, ``fast`` in
``make test-fast``.

The docstrings' examples run as tests too (tests/test_doctests.py; those of
``mxkv.jvm`` through ``needs_jvm``).

``requires_gpu`` is the one marker for tests that need ``gpu(i)`` contexts
backed by CUDA through CuPy (real GPUs, or virtual ones with
``MXKV_VIRTUAL_GPUS``); elsewhere they skip with that reason.
``@pytest.mark.requires_gpu(n=2)`` asks for ``n`` real CUDA devices (peer
copies, NCCL), so it also skips on virtual GPUs. The GPU tests live in
``tests/gpu/``; the algorithms they check are also covered there on
simulated devices (the ``simulate_gpus`` fixture), so CI exercises them
without a GPU.
"""
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from mxkv import context
from mxkv.base import MissingDependencyError

GPU_SKIP_REASON = ("needs a CUDA GPU and CuPy (pip install 'mxkv[gpu]'); the same algorithms "
                   "run on simulated GPUs in tests/gpu/")

requires_gpu = pytest.mark.requires_gpu


def cuda_gpus_available() -> bool:
    """True when ``gpu(0)`` is a CuPy device (a real GPU, or a virtual one on it)."""
    return context.num_gpus() > 0 and context.gpu(0).uses_cupy


ROOT = Path(__file__).resolve().parent.parent

# How many examples a property test tries: ``full`` (1000, what `make test`
# and CI run) unless MXKV_HYPOTHESIS_PROFILE says otherwise; `make test-fast`
# runs ``fast`` (150: the same families of cases, each drawn fewer times).
settings.register_profile("full", max_examples=1000)
settings.register_profile("fast", max_examples=150)
settings.load_profile(os.environ.get("MXKV_HYPOTHESIS_PROFILE", "full"))

# Tier of each directory or file (relative to the repository root), fixture
# and test. ``launch``: whole `mxkv launch` jobs (a Ray cluster, every
# process), the slowest of ``ray`` (`-m "ray and not launch"` for a quicker
# loop over the distributed store). ``lint``: what `make lint` checks, whole
# tree (deselected by test-fast, which runs beside `make lint`).
TIER_DIRS = {"tests/distributed": "ray", "tests/multihost": "multihost",
             "interop-tests": "jvm",
             "tests/distributed/test_dist_launch.py": "launch",
             "tests/distributed/test_dist_launch_processes.py": "launch",
             "interop-tests/test_example_digits.py": "launch"}
TIER_FIXTURES = {"needs_jvm": "jvm", "needs_ray": "ray", "docs_runner": "docs",
                 "bed_tool": "multihost"}
TIER_TESTS = {"tests/test_tools_lint.py::test_the_tree_has_no_cycle_outside_the_allowlist": "lint",
              "tests/test_tools_lint.py::test_the_package_holds_the_docstring_floors": "lint"}


def tiers(item) -> set:
    """The tier marks (``jvm``, ``ray``, ``docs``, ``multihost``, ``launch``,
    ``lint``) ``item`` gets from its path, fixtures and name."""
    used = getattr(item, "fixturenames", ())
    out = {mark for name, mark in TIER_FIXTURES.items() if name in used}
    try:
        rel = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return out
    out.update(mark for prefix, mark in TIER_DIRS.items()
               if rel == prefix or rel.startswith(prefix + "/"))
    mark = TIER_TESTS.get(f"{rel}::{getattr(item, 'originalname', item.name)}")
    if mark:
        out.add(mark)
    return out


def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in sorted(tiers(item)):
            item.add_marker(getattr(pytest.mark, mark))
    available = cuda_gpus_available()
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        marker = item.get_closest_marker("requires_gpu")
        if marker is None:
            continue
        if not available:
            item.add_marker(skip)
            continue
        n = int(marker.kwargs.get("n", marker.args[0] if marker.args else 1))
        if n > 1 and context.cuda_device_count() < n:
            item.add_marker(pytest.mark.skip(
                reason=f"needs {n} real GPUs, {context.cuda_device_count()} visible"))


@pytest.fixture(scope="session")
def needs_jvm():
    """Use in a test or fixture that starts a JVM: marks it ``jvm`` and skips it,
    saying what to install, where no JDK or Clojure jar is found."""
    if not (shutil.which("java") and shutil.which("javac")):
        pytest.skip("no JDK installed (apt-get install -y default-jdk-headless; "
                    "`make clojure` sets it up)")
    from mxkv import classpath

    try:
        classpath.clojure_jars()
        classpath.py4j_jar()
    except MissingDependencyError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def needs_ray():
    """Use in a test or fixture that starts a Ray cluster: marks it ``ray`` and
    skips it where Ray is not installed."""
    pytest.importorskip("ray", reason="needs Ray: pip install 'mxkv[dist]'")


@pytest.fixture(scope="session")
def docs_runner():
    """tools/docs_check.py, the runner of the docs' examples; a test using it is ``docs``."""
    import importlib.util
    import sys

    if "docs_check" not in sys.modules:
        spec = importlib.util.spec_from_file_location("docs_check",
                                                      ROOT / "tools" / "docs_check.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["docs_check"] = module
        spec.loader.exec_module(module)
    return sys.modules["docs_check"]


@pytest.fixture
def simulate_gpus(monkeypatch):
    """``simulate_gpus(n, topology=None)`` turns on ``n`` simulated GPUs for the test.

    Sets ``MXKV_SIMULATE_GPUS`` (and ``MXKV_SIMULATE_TOPOLOGY`` when given),
    re-reads the device model, and restores the real one afterwards.
    """
    def make(n, topology=None):
        monkeypatch.delenv("MXKV_VIRTUAL_GPUS", raising=False)
        monkeypatch.setenv("MXKV_SIMULATE_GPUS", str(n))
        if topology is None:
            monkeypatch.delenv("MXKV_SIMULATE_TOPOLOGY", raising=False)
        else:
            monkeypatch.setenv("MXKV_SIMULATE_TOPOLOGY", topology)
        context._reset_devices()
        return [context.gpu(i) for i in range(n)]

    yield make
    monkeypatch.undo()
    context._reset_devices()


@pytest.fixture
def virtual_gpus(monkeypatch):
    """``virtual_gpus(n)``: ``n`` virtual GPUs on the one real GPU for the test
    (``MXKV_VIRTUAL_GPUS``); use with ``requires_gpu``."""
    def make(n):
        monkeypatch.delenv("MXKV_SIMULATE_GPUS", raising=False)
        monkeypatch.setenv("MXKV_VIRTUAL_GPUS", str(n))
        context._reset_devices()
        return [context.gpu(i) for i in range(n)]

    yield make
    monkeypatch.undo()
    context._reset_devices()


@pytest.fixture(scope="session")
def bed_tool():
    """tools/hosts.py (emulated hosts) as a module; a test using it is
    ``multihost``, and skips, saying why, where namespaces cannot be made
    (not root, no ``unshare``/``ip``/``tc``)."""
    import importlib.util
    import sys

    if "hosts" not in sys.modules:
        spec = importlib.util.spec_from_file_location("hosts", ROOT / "tools" / "hosts.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["hosts"] = module
        spec.loader.exec_module(module)
    hosts = sys.modules["hosts"]
    why = hosts.unavailable()
    if why:
        pytest.skip(why)
    return hosts
