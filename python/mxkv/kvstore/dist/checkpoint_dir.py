"""A job's checkpoint directory: private, and claimed by one job at a time.

The shards of a job keep their logs (:mod:`.checkpoint`) in one directory,
``MXKV_CHECKPOINT_DIR``. A log is a pickle, so whoever can write there can
make a shard run code: the directory must be the user's and writable by
nobody else (mode 0700 when mxkv creates it; one that group or others may
write to is refused, as the shared-memory directories are), and its files
are created 0600.

The directory also says whose state it holds: ``mxkv-job.json`` (0600)
names the job and its *run* (a fresh id per start). A new job refuses a
directory that holds another run's logs, naming the directory and that job,
unless it is asked to resume (``mxkv launch --resume``, ``MXKV_RESUME=1``,
``create_job(..., resume=True)``): then its shards restore those logs (see
docs/distributed.md, "Resuming").
"""
from __future__ import annotations

import glob
import json
import os
import socket
import time
import uuid
from typing import Optional

from ...base import MXNetError, MXNetIOError
from ...bridge.private import private_directory
from .sharding import describe_layout

__all__ = ["IDENTITY", "CheckpointDirInUse", "adopt", "claim", "read_identity", "holds_logs"]

#: the file naming the job and run whose state the directory holds
IDENTITY = "mxkv-job.json"


class CheckpointDirInUse(MXNetError):
    """The checkpoint directory holds another job's (or run's) state."""


def read_identity(directory: str) -> Optional[dict]:
    """The directory's ``mxkv-job.json`` (``job``, ``run``, ``host``,
    ``created``...), or None when there is none."""
    path = os.path.join(directory, IDENTITY)
    try:
        with open(path, encoding="utf-8") as f:
            ident = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise MXNetIOError(f"checkpoint directory {directory!r}: cannot read {IDENTITY}: "
                           f"{exc}") from exc
    if not isinstance(ident, dict) or not {"job", "run"} <= set(ident):
        raise MXNetIOError(f"checkpoint directory {directory!r}: {IDENTITY} does not name a "
                           f"job and a run: {ident!r}")
    return ident


def holds_logs(directory: str) -> bool:
    """Whether ``directory`` holds a non-empty shard log."""
    return any(os.path.getsize(p) > 0
               for p in glob.glob(os.path.join(glob.escape(directory), "shard-*.ckpt")))


def _write_identity(directory: str, ident: dict) -> None:
    path = os.path.join(directory, IDENTITY)
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(ident, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def claim(directory: str, job: str, resume: bool = False,
          layout: Optional[dict] = None) -> dict:
    """Make ``directory`` job ``job``'s for a new run; returns the identity
    written (``job``, ``run``, ``resumed_from``: the run resumed, or None;
    ``layout``: how the job splits its keys, :func:`~.sharding.layout_of`,
    when given).

    Raises :class:`~mxkv.base.MXNetIOError` when the directory is not the
    user's or others may write to it, and :class:`CheckpointDirInUse` when it
    holds another run's logs and ``resume`` is false, or when the run it
    resumes split its keys otherwise (as its identity says; one written
    before identities kept the layout is not checked).
    """
    private_directory(directory, "checkpoint directory")
    old = read_identity(directory)
    logs = holds_logs(directory)
    held = old or {}
    was = held.get("layout")
    if logs and resume and layout is not None and was is not None and was != layout:
        raise CheckpointDirInUse(
            f"checkpoint directory {directory!r} holds the state of job {held['job']!r} "
            f"(run {held['run']}), which split its keys with {describe_layout(was)}; job {job!r} "
            f"would split them with {describe_layout(layout)}, and its parts would not be the "
            "ones the logs hold. Resume with the same settings")
    if logs and not resume:
        whose = (f"job {old['job']!r} (run {old['run']}, started {old.get('created', '?')} on "
                 f"{old.get('host', '?')})") if old else "a job of an older mxkv (no " \
            f"{IDENTITY})"
        raise CheckpointDirInUse(
            f"checkpoint directory {directory!r} holds the state of {whose}; job {job!r} "
            "will not overwrite it. To continue that state, resume (mxkv launch --resume, or "
            "MXKV_RESUME=1); to start afresh, give each job its own directory "
            "(MXKV_CHECKPOINT_DIR) or remove the old one")
    ident = {"job": job, "run": uuid.uuid4().hex, "host": socket.gethostname(),
             "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "resumed_from": held.get("run") if logs else None,
             "resumed_job": held.get("job") if logs else None}
    if layout is not None:
        ident["layout"] = layout
    _write_identity(directory, ident)
    return ident


def adopt(directory: str, identity: dict) -> Optional[dict]:
    """Write the run's ``identity`` (:func:`claim`'s) into ``directory`` of
    this host, which has none: the job's directory where it is not shared
    (a shard on another host). A directory holding logs without an identity
    is not adopted (None: the caller refuses it)."""
    if holds_logs(directory):
        return None
    _write_identity(directory, identity)
    return identity
