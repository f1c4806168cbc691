"""Shared test fixtures and markers.

``requires_gpu`` is the one marker for tests that need a real CUDA device
through CuPy; they skip with that reason elsewhere. The algorithms they check
are also covered on simulated devices, so CI exercises them without a GPU.
"""
import pytest

from mxkv import context

requires_gpu = pytest.mark.skipif(context.num_gpus() == 0,
                                  reason="needs a CUDA GPU and CuPy (cupy-cuda12x)")
