"""Measure the Py4J no-op round trip from Python, and print it as JSON.

The floor for the Clojure rows when ``benchmarks/bridge/`` has no benchmark
of its own: a JVM ``GatewayServer`` started with py4j's ``launch_gateway``,
and a trivial method call (``ArrayList.size()`` on an object already on the
JVM side) timed one call at a time. One call is one request and one answer
on Py4J's socket: the cost every bridge call pays at least.

    python py4j_roundtrip.py [--calls N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def measure(calls: int) -> dict:
    import py4j
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    t0 = time.perf_counter()
    port = launch_gateway(die_on_exit=True, redirect_stdout=sys.stderr,
                          redirect_stderr=sys.stderr)
    gw = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=False))
    start_s = time.perf_counter() - t0
    try:
        obj = gw.jvm.java.util.ArrayList()
        for _ in range(min(2000, calls)):  # let the JIT and the socket settle
            obj.size()
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            obj.size()
            times.append(time.perf_counter() - t)
    finally:
        gw.shutdown()
    times.sort()
    return {"source": "benchmarks/py4j_roundtrip.py (Python -> JVM, ArrayList.size())",
            "py4j": py4j.__version__ if hasattr(py4j, "__version__") else "?",
            "calls": calls, "jvm_start_s": start_s,
            "noop_p50_us": statistics.median(times) * 1e6,
            "noop_min_us": times[0] * 1e6,
            "noop_p90_us": times[int(0.9 * (len(times) - 1))] * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    print(json.dumps(measure(ap.parse_args().calls)))


if __name__ == "__main__":
    main()
