"""mxkv's stand-in for the ``common`` helpers MXNet's unit tests import.

Written for mxkv from the documented behaviour of those helpers (seeding,
``assertRaises``, a temporary directory); it contains no MXNet code.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import tempfile
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["assertRaises", "random_seed", "setup_module", "teardown", "with_seed",
           "with_environment", "TemporaryDirectory"]

TemporaryDirectory = tempfile.TemporaryDirectory
_LOG = logging.getLogger("mxkv.mxnet_unittests")


def assertRaises(expected_exception: Any, func: Callable, *args: Any, **kwargs: Any) -> None:
    """Fail unless ``func(*args, **kwargs)`` raises ``expected_exception``."""
    try:
        func(*args, **kwargs)
    except expected_exception:
        return
    raise AssertionError(f"{getattr(func, '__name__', func)} did not raise "
                         f"{getattr(expected_exception, '__name__', expected_exception)}")


def _seed_all(seed: int) -> None:
    np.random.seed(seed)
    random.seed(seed)


@contextlib.contextmanager
def random_seed(seed: Optional[int] = None):
    """Run a block with numpy's and Python's generators seeded with ``seed``."""
    after = np.random.randint(0, np.iinfo(np.int32).max)
    if seed is None:
        seed = np.random.randint(0, np.iinfo(np.int32).max)
    _seed_all(seed)
    try:
        yield
    finally:
        _seed_all(after)


def with_seed(seed: Optional[int] = None) -> Callable:
    """Seed numpy and Python before the test (``MXNET_TEST_SEED`` overrides a
    random seed); the seed is logged when the test fails."""
    def deco(test: Callable) -> Callable:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> Any:
            env_seed = os.environ.get("MXNET_TEST_SEED")
            this = seed if seed is not None else (
                int(env_seed) if env_seed else np.random.randint(0, np.iinfo(np.int32).max))
            state = np.random.get_state()
            _seed_all(this)
            try:
                return test(*args, **kwargs)
            except BaseException:
                _LOG.warning("%s failed with MXNET_TEST_SEED=%s", test.__name__, this)
                raise
            finally:
                np.random.set_state(state)
        return run
    return deco


def with_environment(*env_args: Any) -> Callable:
    """Run the test with environment variables set (a dict, or name and value)."""
    from mxnet.test_utils import environment

    def deco(test: Callable) -> Callable:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> Any:
            with environment(*env_args):
                return test(*args, **kwargs)
        return run
    return deco


def setup_module() -> None:
    """Seed the module's generators (``MXNET_MODULE_SEED`` or a random seed)."""
    env_seed = os.environ.get("MXNET_MODULE_SEED")
    _seed_all(int(env_seed) if env_seed else np.random.randint(0, np.iinfo(np.int32).max))


def teardown() -> None:
    """Nothing is left pending between modules: mxkv runs eagerly."""
