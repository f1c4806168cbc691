"""The distributed store's knobs: read once from the environment, then handed down.

Every ``MXKV_*`` / ``MXNET_KVSTORE_*`` setting of :mod:`mxkv.kvstore.dist`
is read here, by :meth:`DistConfig.from_env`, into one frozen object, which
the process that reads it hands to what it makes: a worker's store
(:class:`~.worker.DistKVStore`) to its channel, relay and P3 sender, ``mxkv
launch`` (:func:`~.cluster.create_job`) to the coordinator and the shards
(a shard reads its own after its process's ``--env-server`` variables are
set, :class:`~.shard.ServerShard`). Nothing below reads the environment.

==============================  =========  =========================================
variable                        default    meaning
==============================  =========  =========================================
MXKV_STALL_TIMEOUT              60         :class:`Timeouts` (seconds)
MXKV_FAIL_TIMEOUT               600
MXKV_HEARTBEAT_INTERVAL         1
MXKV_DEAD_TIMEOUT               30
MXKV_KEEP_BYTES                 512 MiB    pushes (and rank 0's inits) a worker keeps
                                           until a checkpoint covers them
MXKV_SHM                        1          the same-host shared-memory path (:mod:`.shm`)
MXKV_SHM_PUBLISH_BYTES          4 GiB      a shard's pull segments at most
MXKV_HOST_AGGREGATION           1          one relay per host (:mod:`.relay`)
MXKV_P3_WINDOW_BYTES            8 MiB      P3's bytes in flight (:mod:`.p3`)
MXKV_STREAM_CHUNK_BYTES         8 MiB      a round's pushes and pulls to a shard on
                                           another node go in chunks of whole parts
                                           of about this size (0: one message)
MXKV_STREAM_WINDOW              2          such chunks in flight per worker (and relay)
MXKV_BULK_TRANSPORT             tcp        how a streamed dense round's bytes travel:
                                           ``tcp`` (:mod:`.bulk`) or ``ray`` (the
                                           object store)
MXNET_KVSTORE_BIGARRAY_BOUND    65536      elements from which a key is split over
                                           every shard (MXNet's knob; its default
                                           is 1000000: see DEFAULT_DIST_BOUND)
MXNET_KVSTORE_SLICE_THRESHOLD   40000      P3's slice size, in elements (MXNet's)
MXKV_CHECKPOINT_DIR             (a temp)   where shards keep their checkpoint logs
MXKV_CHECKPOINT_ROUNDS          4          rounds of a part between checkpoints
MXKV_CHECKPOINT_SLACK_MB        32         log growth allowed before compaction
MXKV_SHARD_MAX_RESTARTS         -1         Ray restarts of a shard (-1: unbounded)
MXKV_RESUME                     0          take up the state a checkpoint directory
                                           holds from an earlier job (:mod:`.checkpoint_dir`)
MXKV_CHECKPOINT_REPLICA         auto       copy each shard's log to another node
                                           (:mod:`.replica`): ``auto`` when the
                                           directory is not shared, ``1``, ``0``
==============================  =========  =========================================
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...base import env

__all__ = ["DistConfig", "Timeouts", "DEFAULT_P3_WINDOW", "DEFAULT_DIST_BOUND",
           "DEFAULT_BULK_CONGESTION"]

#: P3's default window (bytes in flight)
DEFAULT_P3_WINDOW = 8 << 20
#: the TCP congestion control of the bulk connections (docs/distributed.md,
#: "the bulk bytes over TCP": BBR's ProbeRTT stalled each long flow every 10 s)
DEFAULT_BULK_CONGESTION = "cubic"
#: the default chunk of a round streamed to a shard on another node
DEFAULT_STREAM_CHUNK = 8 << 20
#: elements from which a key is split over every shard, when
#: ``MXNET_KVSTORE_BIGARRAY_BOUND`` is not set. MXNet's 1000000 leaves the
#: keys below it whole on their hashed shard, and the shards' bytes uneven:
#: ResNet-50's gradients over 2 shards put 8.7% more on one (over 3, 1.7x
#: the mean), and every round waits for the rank whose pushes go to the
#: fuller one. From 65536 (256 KiB of float32) they are within 2% (0.1%
#: over 2 shards) at the cost of more parts (203 against 171).
DEFAULT_DIST_BOUND = 1 << 16


@dataclass(frozen=True)
class Timeouts:
    """Fault knobs, in seconds.

    stall : ``MXKV_STALL_TIMEOUT`` (default 60): a call waiting this long for
        other workers logs which ranks have not pushed which keys.
    fail : ``MXKV_FAIL_TIMEOUT`` (default 600): past this the call fails with
        an error naming them.
    heartbeat : ``MXKV_HEARTBEAT_INTERVAL`` (default 1): how often workers
        and shards report to the coordinator.
    dead : ``MXKV_DEAD_TIMEOUT`` (default 30): a worker silent this long is
        declared dead; calls that need it fail naming its rank.
    """

    stall: float = 60.0
    fail: float = 600.0
    heartbeat: float = 1.0
    dead: float = 30.0

    @classmethod
    def from_env(cls) -> "Timeouts":
        """The timeouts set by ``MXKV_STALL_TIMEOUT``, ``MXKV_FAIL_TIMEOUT``,
        ``MXKV_HEARTBEAT_INTERVAL`` and ``MXKV_DEAD_TIMEOUT`` (seconds)."""
        return cls(stall=env("MXKV_STALL_TIMEOUT", 60.0, float, minimum=0.001),
                   fail=env("MXKV_FAIL_TIMEOUT", 600.0, float, minimum=0.001),
                   heartbeat=env("MXKV_HEARTBEAT_INTERVAL", 1.0, float, minimum=0.01),
                   dead=env("MXKV_DEAD_TIMEOUT", 30.0, float, minimum=0.01))


@dataclass(frozen=True)
class DistConfig:
    """Every knob of the distributed store (the table above); the defaults
    are the environment's when nothing is set."""

    timeouts: Timeouts = field(default_factory=Timeouts)
    keep_bytes: int = 512 << 20
    shm: bool = True
    shm_publish_bytes: int = 4 << 30
    host_aggregation: bool = True
    p3_window_bytes: int = DEFAULT_P3_WINDOW
    stream_chunk_bytes: int = DEFAULT_STREAM_CHUNK
    stream_window: int = 2
    bulk_transport: str = "tcp"
    bulk_congestion: str = DEFAULT_BULK_CONGESTION
    bigarray_bound: int = DEFAULT_DIST_BOUND
    slice_threshold: int = 40 * 1000
    checkpoint_dir: str = ""
    checkpoint_rounds: int = 4
    checkpoint_slack_bytes: int = 32 << 20
    shard_max_restarts: int = -1
    resume: bool = False
    checkpoint_replica: str = "auto"

    @classmethod
    def from_env(cls) -> "DistConfig":
        """The knobs as this process's environment sets them (each checked:
        an MXNetError names a bad one)."""
        return cls(
            timeouts=Timeouts.from_env(),
            keep_bytes=env("MXKV_KEEP_BYTES", 512 << 20, int, minimum=1),
            shm=env("MXKV_SHM", "1").strip().lower() not in ("0", "false", "no", "off"),
            shm_publish_bytes=env("MXKV_SHM_PUBLISH_BYTES", 4 << 30, int, minimum=1),
            host_aggregation=bool(env("MXKV_HOST_AGGREGATION", 1, int, minimum=0)),
            p3_window_bytes=env("MXKV_P3_WINDOW_BYTES", DEFAULT_P3_WINDOW, int, minimum=0),
            stream_chunk_bytes=env("MXKV_STREAM_CHUNK_BYTES", DEFAULT_STREAM_CHUNK, int,
                                   minimum=0),
            stream_window=env("MXKV_STREAM_WINDOW", 2, int, minimum=1),
            bulk_transport=_bulk_mode(env("MXKV_BULK_TRANSPORT", "tcp")),
            bulk_congestion=_congestion(env("MXKV_BULK_CONGESTION", DEFAULT_BULK_CONGESTION)),
            bigarray_bound=env("MXNET_KVSTORE_BIGARRAY_BOUND", DEFAULT_DIST_BOUND, int,
                               minimum=1),
            slice_threshold=env("MXNET_KVSTORE_SLICE_THRESHOLD", 40 * 1000, int, minimum=1),
            checkpoint_dir=env("MXKV_CHECKPOINT_DIR", ""),
            checkpoint_rounds=env("MXKV_CHECKPOINT_ROUNDS", 4, int, minimum=1),
            checkpoint_slack_bytes=env("MXKV_CHECKPOINT_SLACK_MB", 32, int, minimum=0) << 20,
            shard_max_restarts=env("MXKV_SHARD_MAX_RESTARTS", -1, int, minimum=-1),
            resume=env("MXKV_RESUME", False, bool),
            checkpoint_replica=_replica_mode(env("MXKV_CHECKPOINT_REPLICA", "auto")))


def _replica_mode(value: str) -> str:
    """``MXKV_CHECKPOINT_REPLICA`` as ``'auto'``, ``'1'`` or ``'0'``."""
    from ...base import MXNetError

    v = value.strip().lower()
    out = {"auto": "auto", "1": "1", "on": "1", "true": "1", "yes": "1",
           "0": "0", "off": "0", "false": "0", "no": "0"}.get(v)
    if out is None:
        raise MXNetError(f"MXKV_CHECKPOINT_REPLICA={value!r}: give auto, 1 or 0")
    return out


def _bulk_mode(value: str) -> str:
    """``MXKV_BULK_TRANSPORT`` as ``'tcp'`` or ``'ray'``."""
    from ...base import MXNetError

    v = value.strip().lower()
    if v not in ("tcp", "ray"):
        raise MXNetError(f"MXKV_BULK_TRANSPORT={value!r}: give tcp or ray")
    return v


def _congestion(value: str) -> str:
    """``MXKV_BULK_CONGESTION`` as a congestion control's name, or "" for the
    kernel's default (``system``)."""
    from ...base import MXNetError

    v = value.strip().lower()
    if v == "system":
        return ""
    if not re.fullmatch(r"[a-z0-9_]{1,15}", v):
        raise MXNetError(f"MXKV_BULK_CONGESTION={value!r}: give a TCP congestion control's "
                         "name (cubic, reno, bbr, ...) or system")
    return v
