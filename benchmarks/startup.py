"""Start-up of a Clojure program that uses mxkv, against plain Clojure.

The program requires ``kvstore`` and ``ndarray``, creates a store, pushes
one array and exits; it runs from the jar the wheel ships (``mxkv jar``:
namespaces compiled ahead of time), over Py4J (``java ... clojure.main``,
the JVM spawns the engine) and over JPype (Python hosts the JVM, as ``mxkv
clj --transport jpype``), and from the checkout's sources (compiled at every
start) for comparison. The baseline is ``clojure.main -e "(println 1)"`` on
the same machine. Each is run once untimed (the jar's cases write their
class-data archive then, as a user's first start does:
``mxkv.classpath.ClassDataArchive``), then ``--runs`` times, interleaved;
the medians and their ratio to the baseline are printed, with the CPU time
(user + system) of each case's processes, steadier than the wall time on a
busy machine; Py4J's engine process is not in it when the JVM exits without
reaping it (``--json FILE`` writes them). The ``*_nocds`` cases (not run
by default) are the jar's cases as ``MXKV_CDS=0`` starts them: without the
archive, and with Clojure's core specs compiled from source at every start
(as before ``mxkv.classpath.startup_classpath``).

Target (issue 19): each transport's program at most 2x the baseline.
``make bench`` judges it as the rows ``clj_startup_py4j`` and
``clj_startup_jpype`` (``bridge_rows.startup_rows``: 5 runs of every case;
``make bench-quick``: 1 run, without the from-sources case).

Run: ``.venv/bin/python benchmarks/startup.py [--runs 5] [--cases a,b] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from mxkv import classpath as cp  # noqa: E402

PROGRAM = """(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
         '[org.apache.clojure-mxnet.ndarray :as ndarray])
(let [kv (kvstore/create "local")]
  (kvstore/init kv "w" (ndarray/ones [2]))
  (println (str kv)))
"""

JPYPE_DRIVER = """import os, sys
from mxkv import classpath as cp
cp.classpath = lambda **kw: os.environ["STARTUP_CP"]
from mxkv import jvm
jvm.start()
try:
    jvm.run_main([sys.argv[1]])
finally:
    jvm.stop()
"""


#: every case, the baseline first
CASES = ("plain_clojure", "py4j_jar", "jpype_jar", "py4j_sources", "py4j_jar_nocds",
         "jpype_jar_nocds")
#: the cases run by default
DEFAULT_CASES = CASES[:4]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _time(cmd: List[str], env: Dict[str, str]) -> Tuple[float, float]:
    """The wall time of ``cmd`` and the CPU time (user + system) of its processes."""
    c0, t0 = _cpu(), time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=600)
    dt, dc = time.perf_counter() - t0, _cpu() - c0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return dt, dc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES),
                    help="comma-separated cases to run (plain_clojure always runs: the "
                         "baseline); default: %(default)s")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    wanted = {c for c in args.cases.split(",") if c} | {"plain_clojure"}
    unknown = wanted - set(CASES)
    if unknown:
        ap.error("unknown case(s) %s; known: %s" % (", ".join(sorted(unknown)), ", ".join(CASES)))

    jar = str(cp.jar())  # the checkout's build/mxkv.jar, as the wheel's (rebuilt when stale)
    clj = cp.clojure_jars()
    p4j = cp.py4j_jar()
    java = "java"
    python = sys.executable
    with tempfile.TemporaryDirectory() as d:
        prog = Path(d) / "startup.clj"
        prog.write_text(PROGRAM + "(shutdown-agents)\n")
        driver = Path(d) / "jpype_driver.py"
        driver.write_text(JPYPE_DRIVER)
        env = dict(os.environ, MXKV_PYTHON=python)
        # as `mxkv clj` and jvm.start() give it: with Clojure's core specs compiled
        plain_jar_cp = os.pathsep.join([jar, *clj, p4j])
        jar_cp = cp.startup_classpath(plain_jar_cp)
        src_cp = os.pathsep.join([str(ROOT / "clojure" / "src"),
                                  str(cp.classes_dir(quiet=True)), *clj, p4j])
        opts = cp.jvm_opts()
        # plain Clojure gets the same heap, not mxkv's start-up options (C1 only)
        plain_opts = [o for o in opts if o not in cp.STARTUP_JVM_OPTS]
        py4j_opts = [*opts, "-Dmxkv.transport=py4j"]  # as `mxkv clj` starts it
        # the class-data archive `mxkv clj` maps (jvm.start() makes JPype's itself)
        archive = cp.ClassDataArchive(jar_cp, cp.libjvm(shutil.which(java)), py4j_opts)

        def commands() -> Dict[str, List[str]]:
            return {
                "plain_clojure": [java, *plain_opts, "-cp", os.pathsep.join(clj),
                                  "clojure.main", "-e", "(println 1)"],
                "py4j_jar": [java, *py4j_opts, *archive.options(), "-cp", jar_cp,
                             "clojure.main", str(prog)],
                "jpype_jar": [python, str(driver), str(prog)],
                "py4j_sources": [java, *opts, "-cp", src_cp, "clojure.main", str(prog)],
                "py4j_jar_nocds": [java, *plain_opts, "-Dmxkv.transport=py4j", "-cp",
                                   plain_jar_cp, "clojure.main", str(prog)],
                "jpype_jar_nocds": [python, str(driver), str(prog)],
            }

        envs = {k: env for k in CASES}
        envs["jpype_jar"] = dict(env, STARTUP_CP=os.pathsep.join([jar, *clj]))
        envs["jpype_jar_nocds"] = dict(envs["jpype_jar"], MXKV_CDS="0",
                                       MXKV_JVM_OPTS=" ".join(plain_opts) or "-Xshare:auto")
        for k, cmd in commands().items():  # untimed: writes the archives
            if k in wanted:
                _time(cmd, envs[k])
                if k == "py4j_jar":
                    archive.finish()
        cases = {k: v for k, v in commands().items() if k in wanted}
        times: Dict[str, List[float]] = {k: [] for k in cases}
        cpus: Dict[str, List[float]] = {k: [] for k in cases}
        for _ in range(args.runs):
            for k, cmd in cases.items():
                wall, cpu = _time(cmd, envs[k])
                times[k].append(wall)
                cpus[k].append(cpu)
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpus.items()}
    base, cpu_base = med["plain_clojure"], cpu_med["plain_clojure"]
    out = {"runs": args.runs, "load": os.getloadavg()[0],
           "median_s": med, "ratio_to_plain": {k: v / base for k, v in med.items()},
           "all_s": times, "cpu_median_s": cpu_med,
           "cpu_ratio_to_plain": {k: v / cpu_base for k, v in cpu_med.items()}}
    for k in cases:
        print(f"{k:16s} median {med[k]:6.2f} s  ({med[k] / base:4.2f}x plain)  "
              f"CPU {cpu_med[k]:5.2f} s ({cpu_med[k] / cpu_base:4.2f}x)  "
              f"runs {' '.join(f'{t:.2f}' for t in times[k])}")
    print(f"(load average {out['load']:.1f}; target: py4j_jar and jpype_jar <= 2x plain)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
