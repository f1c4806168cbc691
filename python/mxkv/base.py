"""Errors, type aliases and environment knobs shared by every layer of mxkv."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["MXNetError", "string_types", "numeric_types", "integer_types", "env_int", "env_float"]

string_types = (str,)
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)


class MXNetError(Exception):
    """Error raised by mxkv, under the name MXNet code already catches.

    The message names what is at fault: the key, the shapes or types
    involved, and what was expected.
    """


def env_int(name: str, default: int) -> int:
    """Read an integer environment knob, accepting forms like ``1e6``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(float(raw))
    except ValueError as exc:
        raise MXNetError(f"environment variable {name}={raw!r} is not a number") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise MXNetError(f"environment variable {name}={raw!r} is not a number") from exc
