"""The two ``nose.tools`` helpers MXNet's unit tests use, over pytest."""
from __future__ import annotations

import functools
from typing import Any, Callable

import pytest

__all__ = ["assert_raises", "make_decorator", "raises"]


def assert_raises(exc: Any, func: Callable = None, *args: Any, **kwargs: Any) -> Any:
    """``assert_raises(E, f, *a)`` or ``with assert_raises(E):``."""
    if func is None:
        return pytest.raises(exc)
    with pytest.raises(exc):
        func(*args, **kwargs)
    return None


def raises(*exceptions: Any) -> Callable:
    """Decorate a test that passes only if it raises one of ``exceptions``."""
    def deco(test: Callable) -> Callable:
        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> None:
            with pytest.raises(exceptions):
                test(*args, **kwargs)
        return run
    return deco


def make_decorator(func: Callable) -> Callable:
    """``functools.wraps`` under nose's name."""
    return functools.wraps(func)
