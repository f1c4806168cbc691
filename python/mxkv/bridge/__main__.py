"""``python -m mxkv.bridge``: the engine process the JVM spawns.

The JVM passes its gateway's port and secret in the environment
(``MXKV_BRIDGE_PORT``, ``MXKV_BRIDGE_SECRET``). This process removes arena
files of dead engines, connects to the gateway, starts a Py4J callback
server on an ephemeral loopback port, registers its :class:`EngineFacade`
with the JVM, then reads stdin until EOF: when the JVM goes away, however it
goes, the pipe closes and the engine removes its arena and exits.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import traceback


def _one_malloc_arena() -> None:
    """Let every thread allocate from glibc's main arena. Py4J runs each
    JVM connection on its own thread, and by default each thread allocates
    from an arena of its own: an array freed in one arena is not reused by
    the next array made on another thread, so dropping and making large
    arrays held up to twice the memory (calls are serialized here anyway)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, 1)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass  # not glibc


def main() -> int:
    """Run the engine: connect to the JVM's gateway (port and secret from the
    environment), register the facade, then serve until stdin closes or
    SIGTERM arrives; returns the exit code."""
    from ..base import MXNetError, env
    from ..supervise import quiet_ray_off_main_thread

    _one_malloc_arena()

    try:
        port = env("MXKV_BRIDGE_PORT", 0, minimum=1)
        if not port:
            raise KeyError("MXKV_BRIDGE_PORT")
        secret = os.environ.pop("MXKV_BRIDGE_SECRET")
    except (KeyError, MXNetError):
        print("mxkv.bridge is started by the JVM (org.apache.clojure-mxnet.bridge), which sets "
              "MXKV_BRIDGE_PORT and MXKV_BRIDGE_SECRET; use `mxkv repl` to get one.",
              file=sys.stderr)
        return 2
    # Our stdout is the JVM's: keep stray prints out of a REPL transcript.
    sys.stdout = sys.stderr
    # Leave the terminal's process group: Ctrl-C in the REPL is for the JVM.
    # The engine still ends with the JVM, through stdin.
    try:
        os.setsid()
    except OSError:
        pass
    if not env("MXKV_BRIDGE_DEBUG", False):
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
    quiet_ray_off_main_thread()

    from py4j.java_gateway import CallbackServerParameters, GatewayParameters

    from .serve import listening_gateway

    # The JVM calls back as soon as we register: listen first.
    gateway = listening_gateway(
        gateway_parameters=GatewayParameters(address="127.0.0.1", port=port, auth_token=secret,
                                             auto_field=False, auto_close=True),
        callback_server_parameters=CallbackServerParameters(
            address="127.0.0.1", port=0, auth_token=secret,
            daemonize=True, daemonize_connections=True),
    )
    facade = None
    try:
        from .arena import remove_stale
        from .facade import EngineFacade

        remove_stale()
        facade = EngineFacade()
        gateway.entry_point.register(facade, gateway.get_callback_server().get_listening_port())
    except BaseException as exc:  # report why to the waiting JVM, then exit
        traceback.print_exc()
        try:
            gateway.entry_point.fail(f"{type(exc).__name__}: {exc}")
        except Exception:
            pass
        if facade is not None:
            facade.close()
        os._exit(1)

    def terminate(signum, frame):
        facade.close()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    code = 0
    try:
        stdin = sys.stdin.buffer
        while stdin.read(4096):
            pass
    except BaseException:
        code = 0
    finally:
        try:
            facade.close()
        finally:
            # Daemon threads may still be inside Py4J: leave without joining them.
            os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
