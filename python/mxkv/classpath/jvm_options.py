"""The options every JVM mxkv starts gets."""
from __future__ import annotations

import os
from typing import List

from .common import env

#: the default JVM options that are there for start-up (see :func:`default_jvm_opts`)
STARTUP_JVM_OPTS = ("-XX:TieredStopAtLevel=1",)


def default_jvm_opts() -> List[str]:
    """JVM options used when MXKV_JVM_OPTS is unset.

    ``-XX:TieredStopAtLevel=1`` compiles with C1 only: Clojure's runtime
    initialises faster (a JPype program's start-up 1.97x -> 1.32x plain
    Clojure's, docs/benchmarks.md), and the bridge's steady state did not
    lose (the JVM side of a call is thin: a small push over JPype 9.2-9.5
    -> 8.8-9.1 us p50, over Py4J 1.37-1.44x -> 1.29-1.35x its no-op;
    ``->vec`` and ``ndarray/array`` within the runs' spread).

    ``-Xms1g`` keeps a warm heap: without it G1 shrinks the heap after each
    collection and re-commits fresh pages for the next large array, and on
    virtual machines page faults cost more than the copy itself (a 64 MB
    ``->vec`` goes from ~35 ms to ~10 ms here). Only on machines with 8 GiB
    of memory or more.
    """
    opts = list(STARTUP_JVM_OPTS)
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return opts
    return opts + (["-Xms1g"] if ram >= 8 << 30 else [])


#: clojure.main writes the report of an uncaught error to stderr, not to a
#: /tmp/clojure-*.edn file that nothing removes: every JVM mxkv starts gets it.
REPORT_TO_STDERR = "-Dclojure.main.report=stderr"
#: no /tmp/hsperfdata_<user>/<pid> file (what jps and jstat read), which a
#: JVM killed with SIGKILL leaves behind: every JVM mxkv starts gets it.
NO_PERF_DATA = "-XX:-UsePerfData"
#: both, for the JVMs mxkv runs to build its classes
QUIET_JVM_OPTS = (REPORT_TO_STDERR, NO_PERF_DATA)


def jvm_opts() -> List[str]:
    """``MXKV_JVM_OPTS`` split on blanks when set, else :func:`default_jvm_opts`;
    plus :data:`REPORT_TO_STDERR` unless they set ``clojure.main.report``, and
    :data:`NO_PERF_DATA` unless they name ``UsePerfData``."""
    raw = env("MXKV_JVM_OPTS")
    opts = raw.split() if raw.strip() else default_jvm_opts()
    if not any(o.startswith("-Dclojure.main.report=") for o in opts):
        opts.append(REPORT_TO_STDERR)
    if not any("UsePerfData" in o for o in opts):
        opts.append(NO_PERF_DATA)
    return opts
