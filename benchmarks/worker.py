"""Run workloads in one interpreter, driven over stdin/stdout (JSON lines).

    python worker.py --module mxnet     # or mxkv

The driver starts one worker per implementation and keeps it for the whole
run, so interpreter start-up and imports are paid once and repetitions of
the two implementations can alternate. Commands (one JSON object a line):

    {"cmd": "setup", "workload": NAME, "params": {...}, "warmup": N}
    {"cmd": "rep", "inner": 1}          -> {"ok": true, "t": seconds per step}
    {"cmd": "floor_setup", "sizes": [...], "k": K, "warmup": N}
    {"cmd": "rep", "inner": 1, "slot": "floor"}   (the row's numpy floor)
    {"cmd": "teardown"}
    {"cmd": "floors", "big_bytes": B, "reps": N}  -> numpy copy/add bandwidth
    {"cmd": "quit"}

Every reply is one JSON object with "ok"; failures carry "error" and
"traceback". Anything the module under test prints goes to stderr: fd 1 is
redirected there so stray output cannot corrupt the protocol.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class Worker:
    def __init__(self, module: str) -> None:
        self.module_name = module
        self.mx: Any = None
        self.import_error: Optional[str] = None
        self.slots: Dict[str, Any] = {}   # "main": the workload, "floor": its numpy floor

    # ------------------------------------------------------------ commands
    def hello(self) -> Dict[str, Any]:
        import numpy as np
        t0 = time.perf_counter()
        try:
            self.mx = importlib.import_module(self.module_name)
        except BaseException as e:
            self.import_error = "%s: %s" % (type(e).__name__, e)
            raise
        info = {"module": self.module_name,
                "version": getattr(self.mx, "__version__", "?"),
                "import_s": time.perf_counter() - t0,
                "python": platform.python_version(),
                "executable": sys.executable,
                "numpy": np.__version__,
                "file": getattr(self.mx, "__file__", None)}
        return info

    def setup(self, workload: str, params: Dict[str, Any], warmup: int) -> Dict[str, Any]:
        import workloads
        if self.mx is None:
            raise RuntimeError("%s did not import (%s)" % (self.module_name, self.import_error))
        wl = workloads.find(workload)
        why = wl.unavailable(self.mx)
        if why:
            return {"skipped": why}
        self.teardown()
        t0 = time.perf_counter()
        bench = wl.setup(self.mx, **params)
        self._wait()
        setup_s = time.perf_counter() - t0
        self.slots["main"] = bench
        first = self._timed(bench, 1)   # the first push allocates merge buffers
        bench.check()                   # exactly one step on a fresh store
        warm = [self._timed(bench, 1) for _ in range(warmup)]
        return {"setup_s": setup_s, "first_s": first, "warmup_s": warm}

    def floor_setup(self, sizes: List[int], k: int, warmup: int) -> Dict[str, Any]:
        """The numpy floor of a row (floors.reduce_step), timed beside the row."""
        import floors
        import numpy as np
        self.slots.pop("floor", None)
        gc.collect()
        from workloads import Bench
        bench = Bench(floors.reduce_step(np, sizes, k))
        self.slots["floor"] = bench
        warm = [self._timed(bench, 1) for _ in range(warmup + 1)]
        return {"warmup_s": warm}

    def rep(self, inner: int, slot: str = "main") -> Dict[str, Any]:
        bench = self.slots.get(slot)
        if bench is None:
            raise RuntimeError("rep of %r before its setup" % slot)
        return {"t": self._timed(bench, inner)}

    def teardown(self) -> Dict[str, Any]:
        main = self.slots.pop("main", None)
        self.slots.clear()
        if main is not None:
            self._wait()
            main.teardown()
        gc.collect()
        return {}

    def floors(self, big_bytes: int, reps: int) -> Dict[str, Any]:
        import floors
        import numpy as np
        return floors.measure(np, big_bytes, reps)

    # ------------------------------------------------------------ timing
    def _wait(self) -> None:
        if self.mx is not None:
            self.mx.nd.waitall()

    def _timed(self, bench: Any, inner: int) -> float:
        step = bench.step
        self._wait()
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(inner):
                step()
            self._wait()   # MXNet is asynchronous: the clock stops at completion
            return (time.perf_counter() - t0) / inner
        finally:
            gc.enable()


def _serve(worker: Worker, proto: Any) -> None:
    def reply(obj: Dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    def attempt(fn: Any, **kw: Any) -> Optional[Dict[str, Any]]:
        try:
            out = fn(**kw)
            out["ok"] = True
            return out
        except BaseException as e:  # noqa: BLE001 - reported to the driver
            if isinstance(e, KeyboardInterrupt):
                raise
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                    "traceback": traceback.format_exc()}

    reply(attempt(worker.hello) or {})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        cmd = msg.pop("cmd")
        if cmd == "quit":
            reply({"ok": True})
            return
        fn = {"setup": worker.setup, "rep": worker.rep, "teardown": worker.teardown,
              "floor_setup": worker.floor_setup, "floors": worker.floors}.get(cmd)
        if fn is None:
            reply({"ok": False, "error": "unknown command %r" % cmd})
            continue
        reply(attempt(fn, **msg) or {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", required=True, help="mxnet or mxkv")
    args = ap.parse_args()
    # Keep the protocol on a private copy of stdout; send fd 1 to stderr.
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _serve(Worker(args.module), proto)


if __name__ == "__main__":
    main()
