"""Shared test fixtures and markers.

``requires_gpu`` is the one marker for tests that need ``gpu(i)`` contexts
backed by CUDA through CuPy (real GPUs, or virtual ones with
``MXKV_VIRTUAL_GPUS``); elsewhere they skip with that reason.
``@pytest.mark.requires_gpu(n=2)`` asks for ``n`` real CUDA devices (peer
copies, NCCL), so it also skips on virtual GPUs. The GPU tests live in
``tests/gpu/``; the algorithms they check are also covered there on
simulated devices (the ``simulate_gpus`` fixture), so CI exercises them
without a GPU.
"""
import pytest

from mxkv import context

GPU_SKIP_REASON = ("needs a CUDA GPU and CuPy (pip install 'mxkv[gpu]'); the same algorithms "
                   "run on simulated GPUs in tests/gpu/")

requires_gpu = pytest.mark.requires_gpu


def cuda_gpus_available() -> bool:
    """True when ``gpu(0)`` is a CuPy device (a real GPU, or a virtual one on it)."""
    return context.num_gpus() > 0 and context.gpu(0).uses_cupy


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_gpu(n=1): needs n CUDA GPUs through CuPy (n > 1: real ones); "
        "skipped with a reason elsewhere")


def pytest_collection_modifyitems(config, items):
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
