"""The key-value store server (MXNet's ``mx.kv.KVStoreServer``).

``KVStoreServer(mx.kv.create('dist')).run()`` in a process started with
``DMLC_ROLE=server`` serves the job in its environment until every worker
has finished. In mxkv the shards themselves are Ray actors of the job, so
``run`` joins the job as a server process and blocks until it ends.

Three modules take part, named as MXNet's: ``mxkv/kvstore_server.py`` is the
entry a server process imports (or runs with ``python -m``);
this one, ``mxkv.kvstore.kvstore_server`` (MXNet's module of the same name),
holds the class; ``kvstore/dist/server_process.py`` is what a server process
does in an mxkv job (``ServerHandle``, the store ``mx.kv.create('dist')``
returns there).
"""
from __future__ import annotations

import logging
import pickle
import sys
from typing import Any

from ..base import MXNetError, env
from .base import create

__all__ = ["KVStoreServer"]


class KVStoreServer:
    """The server of a distributed store.

    Parameters
    ----------
    kvstore : KVStoreBase
        The store ``mx.kv.create('dist')`` made in a server process.
    """

    def __init__(self, kvstore: Any) -> None:
        self.kvstore = kvstore
        self.init_logging = False

    def _controller(self):
        """The command handler MXNet's servers run (0: set the pickled optimizer)."""
        def server_controller(cmd_id: int, cmd_body: Any, _: Any = None) -> None:
            if not self.init_logging:
                head = "%(asctime)-15s Server[" + str(self.kvstore.rank) + "] %(message)s"
                logging.basicConfig(level=logging.DEBUG, format=head)
                self.init_logging = True
            if cmd_id == 0:
                body = cmd_body.encode("latin-1") if isinstance(cmd_body, str) else cmd_body
                self.kvstore.set_optimizer(pickle.loads(body))
            else:
                print(f"server {self.kvstore.rank}, unknown command ({cmd_id}, {cmd_body})")
        return server_controller

    def run(self) -> None:
        """Serve until the job ends (blocks)."""
        run_server = getattr(self.kvstore, "run_server", None)
        if run_server is None:
            raise MXNetError(f"kvstore type {self.kvstore.type!r} has no servers to run: "
                             "create it with mx.kv.create('dist') in a DMLC_ROLE=server process")
        # The default controller (MXNet's: head 0 sets the optimizer) is the
        # shards' own job in mxkv; only a subclass's own controller is handed
        # on, and refused there with the reason.
        custom = type(self)._controller is not KVStoreServer._controller
        run_server(self._controller() if custom else None)


def _init_kvstore_server_module() -> None:
    """Run the server and exit when this process is a server (``DMLC_ROLE``)."""
    role = env("DMLC_ROLE", "worker").strip().lower()
    if role in ("server", "scheduler"):

        KVStoreServer(create("dist")).run()
        sys.exit()
