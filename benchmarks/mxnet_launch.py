"""A minimal local launcher for MXNet 1.9.1's own ``dist_sync`` (ps-lite).

MXNet's ``tools/launch.py --launcher local`` relies on dmlc-core's tracker,
whose local mode returns before its daemon threads have started the
processes. This does what it means to: one scheduler, S servers and W
workers running the same command, with ps-lite's ``DMLC_*`` environment on
loopback, and waits for the workers.

    python mxnet_launch.py -n 2 -s 1 -- python dist_worker.py --module mxnet ...
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def role_environ(root: str, port: int, servers: int, workers: int, host: str,
                 interface: str) -> dict:
    """ps-lite's ``DMLC_*`` environment of a process on ``host`` (its address
    on ``interface``), the scheduler listening at ``root:port``; add
    ``DMLC_ROLE``."""
    return dict(os.environ, DMLC_PS_ROOT_URI=root, DMLC_PS_ROOT_PORT=str(port),
                DMLC_NUM_SERVER=str(servers), DMLC_NUM_WORKER=str(workers),
                DMLC_NODE_HOST=host, DMLC_INTERFACE=interface)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("-n", "--num-workers", type=int, required=True)
    p.add_argument("-s", "--num-servers", type=int, default=None)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    servers = a.num_servers or a.num_workers
    base = role_environ("127.0.0.1", _free_port(), servers, a.num_workers, "127.0.0.1", "lo")
    procs = []
    roles = ["scheduler"] + ["server"] * servers + ["worker"] * a.num_workers
    for role in roles:
        procs.append((role, subprocess.Popen(cmd, env=dict(base, DMLC_ROLE=role))))
    code = 0
    try:
        for role, proc in procs:
            rc = proc.wait(timeout=600)
            if role == "worker" and rc != 0:
                code = code or rc
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
