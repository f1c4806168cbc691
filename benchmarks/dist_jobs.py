"""What the distributed benchmarks share: whole jobs launched and their
results read, the loop over repetitions and sides, and ResNet-50's store.

A benchmark runs its own file (or ``dist_worker.py``) as every worker of a
job, started by ``mxkv launch`` (mxkv's side) or by ``mxnet_launch.py``
(MXNet 1.9.1's ps-lite): :func:`launch_command` builds that command line.
:func:`run_job` runs it with ``--out PATH`` appended, in a scratch
directory of its own, and reads the JSON that rank 0 wrote at ``PATH``
(and any other rank's at ``PATH.rank<R>``).

    with run_job(launch_command("mxkv", 2, 1, sys.executable, __file__), "p3") as job:
        print(job.data["iter_s"])
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))


def launch_command(side: str, workers: int, servers: int, python: str, script: str,
                   args: Sequence[str] = (), flags: Sequence[str] = ()) -> List[str]:
    """The command that runs ``python script *args`` as every process of a job.

    Parameters
    ----------
    side : str
        ``"mxnet"``: MXNet's ps-lite job through ``mxnet_launch.py`` (a
        scheduler, the servers and the workers all run the command);
        anything else: ``mxkv launch`` of the venv that holds ``python``.
    workers, servers : int
        The job's size (``-n`` and ``-s``).
    python : str
        The interpreter of the side's venv.
    script, args
        The worker program and its arguments.
    flags : sequence of str
        More options of ``mxkv launch`` (``--p3``); not for MXNet's side.

    Raises
    ------
    ValueError
        ``flags`` for MXNet's side, whose launcher takes none.
    """
    size = ["-n", str(workers), "-s", str(servers)]
    if side == "mxnet":
        if flags:
            raise ValueError(f"mxnet_launch.py takes no launcher flags, got {list(flags)}")
        return [python, os.path.join(HERE, "mxnet_launch.py"), *size, "--", python, script,
                *args]
    mxkv = os.path.join(os.path.dirname(python), "mxkv")
    return [mxkv, "launch", *size, *flags, "--", python, script, *args]


@dataclass
class JobResult:
    """A finished job: ``data`` (rank 0's JSON), ``ranks`` (the other ranks'
    that wrote one, by rank), ``wall_s`` (the launcher's run, start-up
    included) and ``dir`` (its scratch directory, there while the ``with``
    of :func:`run_job` lasts)."""

    data: Dict[str, Any]
    ranks: List[Dict[str, Any]]
    wall_s: float
    dir: str


@contextlib.contextmanager
def run_job(cmd: Sequence[str], what: str, *, check: bool = True, quiet: bool = True,
            env: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
            cwd: Optional[str] = None) -> Iterator[JobResult]:
    """Run launcher command ``cmd`` with ``--out PATH`` appended and yield
    its :class:`JobResult`; the scratch directory that holds ``PATH`` (the
    workers may write more files beside it) is removed afterwards.

    Parameters
    ----------
    cmd : sequence of str
        The launcher's command (:func:`launch_command`); its worker takes
        ``--out``.
    what : str
        The job's name in the scratch directory's name and in errors.
    check : bool
        Whether a non-zero exit fails the run even when rank 0 wrote its
        result (False: the result alone counts).
    quiet : bool
        Capture the job's output (shown only when it fails); False lets it
        through to this process's.
    env, timeout, cwd
        As :func:`subprocess.run`'s.

    Raises
    ------
    RuntimeError
        When rank 0 wrote no readable result (or, with ``check``, the job
        exited non-zero): names ``what``, the exit code and the output's end.
    subprocess.TimeoutExpired
        When the job outlived ``timeout``.
    """
    d = tempfile.mkdtemp(prefix=f"mxkv-bench-{what}-")
    out = os.path.join(d, "result.json")
    try:
        t = time.perf_counter()
        proc = subprocess.run([*cmd, "--out", out], capture_output=quiet, text=True, env=env,
                              timeout=timeout, cwd=cwd)
        wall = time.perf_counter() - t
        try:
            data = _load(out)
            ranks = [_load(p) for p in sorted(glob.glob(out + ".rank*"))]
        except (OSError, ValueError):
            data = None
        if data is None or (check and proc.returncode != 0):
            raise RuntimeError(f"{what} run failed (code {proc.returncode}):\n"
                               f"{(proc.stdout or '')[-3000:]}\n{(proc.stderr or '')[-3000:]}")
        yield JobResult(data, ranks, wall, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _load(path: str) -> Dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def run_sides(a: argparse.Namespace, run_side: Callable[[str, argparse.Namespace], Dict],
              line: Callable[[str, Dict], str]) -> int:
    """Run ``run_side(side, a)`` for every side of ``a.sides`` (comma
    separated), ``a.reps`` times; print ``line(side, row)`` after each and,
    when ``a.out`` names a file, write every row there as JSON. Returns 0
    (an exit code: a failed job raises)."""
    rows = []
    for _ in range(a.reps):
        for side in a.sides.split(","):
            r = run_side(side, a)
            rows.append(r)
            print(line(side, r), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def resnet50_store(mx: Any, kind: str = "dist_sync"):
    """A store of type ``kind`` holding ResNet-50's parameter set (161 keys,
    zeros), once every worker has it: returns ``(kv, keys, grads, outs)``,
    ``grads`` ones and ``outs`` zeros of the keys' shapes. ``mx`` is the
    module of the side (``mxkv`` or ``mxnet``)."""
    from resnet50 import resnet50_param_shapes

    shapes = [s for _, s in resnet50_param_shapes()]
    keys = list(range(len(shapes)))
    kv = mx.kv.create(kind)
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    grads = [mx.nd.ones(s) for s in shapes]
    outs = [mx.nd.zeros(s) for s in shapes]
    kv._barrier()
    return kv, keys, grads, outs
