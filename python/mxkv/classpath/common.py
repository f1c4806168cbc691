"""What the other modules of :mod:`mxkv.classpath` share: the error for a
missing dependency, the environment and the cache directory. Standard
library only (the wheel's build hook loads the package on its own)."""
from __future__ import annotations

import os
from pathlib import Path

try:
    from ..base import MissingDependencyError as MissingDependency
    from ..base import env as _read_env
except ImportError:  # loaded on its own by the wheel's build hook (no numpy there)
    _read_env = None  # type: ignore[assignment]

    class MissingDependency(RuntimeError):  # type: ignore[no-redef]
        """Something the JVM side needs is not installed; the message says what to install."""


def env(name: str) -> str:
    """The environment variable ``name`` as mxkv reads it ("" when unset); in
    the wheel's build, where mxkv.base (and numpy) cannot be imported, the
    same reading without it."""
    if _read_env is None:
        return os.environ.get(name, "")
    return _read_env(name, "")


def cache_dir() -> Path:
    """mxkv's cache: ``MXKV_CACHE``, else ``~/.cache/mxkv``."""
    d = env("MXKV_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "mxkv"


def clj_string(s: str) -> str:
    """``s`` as a Clojure string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
