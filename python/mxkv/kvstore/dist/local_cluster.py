"""The Ray cluster ``mxkv launch`` starts for a single-host job.

It is private to the job and to this host:

* every Ray listener (GCS, raylet, object manager, the runtime-env agent,
  the drivers' and actors' own gRPC servers) binds to ``127.0.0.1``, and no
  dashboard is started. Ray binds to the host's address and to all
  interfaces unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is in the
  environment when Ray is imported (it is read at import), so it is set here
  and handed on to every process of the job (their Ray drivers listen too);
* it uses Ray's token authentication with a fresh 256-bit token of its own
  (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``), kept in the environment of
  the job's processes only: nothing is written to ``~/.ray/auth_token``, and
  a connection without the token is refused;
* its files live in a new ``/tmp/mxkv-ray-*`` directory (or under
  ``$TMPDIR``), mode 0700, removed by :meth:`LocalCluster.stop`. Ray makes
  every directory it creates (its temp, session, ``sockets/``, ``logs/``)
  mode 0777 so that other users can share them, and does so again in each
  process that starts (its actors' too): they sit in a directory of mode
  0700, which other users cannot enter, and :meth:`LocalCluster.tighten`
  (called once Ray and again once the job's processes have started) and
  mxkv's own processes (:func:`.ray_dirs.private_ray_directories`) make
  them 0700.
"""
from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from typing import Dict, Optional

from .ray_dirs import private, private_ray_directories

__all__ = ["LocalCluster", "loopback_environ"]


def loopback_environ(token: str) -> Dict[str, str]:
    """The variables that keep a process's Ray on loopback, with ``token``."""
    return {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": token}


class LocalCluster:
    """A one-node Ray cluster on loopback, with token authentication.

    Parameters
    ----------
    num_cpus : int, optional
        CPUs the node offers (default: Ray's count of this machine's).

    Attributes
    ----------
    address : str
        The GCS address (``127.0.0.1:PORT``) workers join.
    temp_dir : str
        Ray's session files; removed by :meth:`stop`.
    environ : dict
        What the job's processes need in their environment to join it.
    """

    def __init__(self, num_cpus: Optional[int] = None) -> None:
        self.environ = loopback_environ(secrets.token_hex(32))
        # Ray reads these at import and at init: set them before either
        os.environ.update(self.environ)
        if "ray" in sys.modules:   # imported already: its constant was read then
            from ray._private import ray_constants

            ray_constants.ENABLE_RAY_CLUSTER = False
        from .job import NAMESPACE, import_ray

        ray = import_ray()
        private_ray_directories()
        self.temp_dir = tempfile.mkdtemp(prefix="mxkv-ray-")   # 0700: Ray's go inside
        try:
            ctx = ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                           dashboard_host="127.0.0.1", namespace=NAMESPACE,
                           _temp_dir=os.path.join(self.temp_dir, "ray"),
                           _node_ip_address="127.0.0.1",
                           log_to_driver=True, configure_logging=False)
        except BaseException:
            self.stop()
            raise
        self.address: str = ctx.address_info["gcs_address"]
        self.tighten()

    def tighten(self) -> None:
        """Make every directory under :attr:`temp_dir` 0700 again (Ray's
        processes make theirs 0777 as they start)."""
        for root, dirs, _ in os.walk(self.temp_dir):
            for name in dirs:
                private(os.path.join(root, name))

    def stop(self) -> None:
        """Shut Ray down and remove its files (idempotent)."""
        import ray

        ray.shutdown()
        for _ in range(3):   # Ray's last processes may still be writing logs
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            if not os.path.exists(self.temp_dir):
                break
            time.sleep(0.1)
