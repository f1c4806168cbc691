"""Waits for the distributed tests: poll a real condition until a deadline,
then fail naming what never happened (never a bare sleep hoping it did).

The worker functions that tests ship to Ray's processes use them too:
conftest.py ships this module by value, as it ships the test modules.
"""
from __future__ import annotations

import os
import shutil
import time
from typing import Any, Callable


def wait_until(pred: Callable[[], Any], what: str, timeout: float = 120.0,
               interval: float = 0.05) -> Any:
    """Poll ``pred()`` every ``interval`` s until it returns a true value.

    Parameters
    ----------
    pred : callable
        The condition, called without arguments; its exceptions propagate.
    what : str
        What is awaited, for the error message.
    timeout : float
        Seconds before giving up.
    interval : float
        Seconds between polls.

    Returns
    -------
    The first true value ``pred()`` returned.

    Raises
    ------
    AssertionError
        When ``pred()`` is still false after ``timeout`` s; names ``what``.
    """
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}, in vain")
        time.sleep(interval)


def wait_for_file(path: str, what: str, timeout: float = 120.0) -> None:
    """Wait until file ``path`` exists (a flag another process creates);
    AssertionError naming ``what`` after ``timeout`` s."""
    wait_until(lambda: os.path.exists(path), what, timeout)


def remove_tree(path: str, timeout: float = 30.0) -> None:
    """Remove directory ``path``, again while processes that are ending
    (Ray's) still write files in it, until it is gone.

    Raises
    ------
    OSError
        The last removal's error, when ``path`` is still there after
        ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while os.path.lexists(path):
        try:
            shutil.rmtree(path)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
