"""Ray's directories, kept private.

Ray makes every directory it creates (its temp, session, ``sockets/`` and
``logs/`` directories) mode 0777, so that other users of the host can share
them (ray-project/ray#3591), in each process that starts. mxkv's processes
make them 0700 instead, and the launcher's cluster keeps them inside a
directory of mode 0700 (:mod:`.local_cluster`).
"""
from __future__ import annotations

import os

__all__ = ["private", "private_ray_directories"]


def private(path: str) -> None:
    """Make directory ``path`` 0700 when it is ours."""
    try:
        if os.stat(path).st_uid == os.getuid():
            os.chmod(path, 0o700)
    except OSError:
        pass   # (as Ray's own: a directory of another user's is left alone)


def private_ray_directories() -> None:
    """Make this process's Ray create its directories 0700, not 0777 (Ray
    opens them to every user of the host for sharing, ray-project/ray#3591)."""
    try:
        from ray._common import utils
    except ImportError:   # another Ray: its directories stay as it makes them
        return
    utils.try_make_directory_shared = private
