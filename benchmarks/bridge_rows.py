"""The Clojure rows: integrate ``benchmarks/bridge/``'s benchmark, or fall back.

The bridge teammate's benchmark (owned by them, in ``benchmarks/bridge/``)
runs Clojure against the engine over Py4J. ``bench_bridge.py`` writes its
JSON to ``--json FILE``; other scripts may print one JSON object on their last
JSON line. We read these numbers from it:

    noop_..._p50       the Py4J no-op round trip (the floor)
    push_..._p50       a push of a small key from Clojure
    pull_..._p50       a pull of a small key
    push_plus_pull_p50 the two as a pair (shown, not judged)
    to_vec_gbps        ``->vec`` of 64 MB, payload bytes per second

The push/pull row is judged on the slower of push and pull. Over Py4J
against 2x the no-op round trip: each call must pay one round trip, and the
target allows as much again for the work. (Read literally, "push+pull <= 2x
no-op" would leave no time at all for the work of two calls.) Over JPype
against a fixed budget of 10 us each (no socket: the no-op is a few us).
The ->vec row is judged against numpy's memcpy, the bridge benchmark's own
when it measured one (interleaved with the JVMs), else the suite's floor:
at least 0.5 of it over Py4J, 0.7 over JPype.

Names are matched loosely (case-insensitive, nested objects flattened with
``_``; ``noop``/``no_op``, ``push``, ``vec`` with ``p50``/``median`` or
``gbps``/``gb_s``; units from the suffix ``_ns``/``_us``/``_ms``/``_s``) so
the two sides need not agree on every underscore. Transports (``py4j`` today,
``jpype`` later) are rows of their own: a bridge JSON that nests per-transport
objects (``{"py4j": {...}, "jpype": {...}}``) yields rows for each.

Without a bridge benchmark we still measure the floor (the Py4J no-op round
trip from Python, ``py4j_roundtrip.py``) and leave the Clojure rows pending.

Start-up (``startup_rows``) is judged from ``startup.py``: a Clojure program
using mxkv from the AOT jar, over Py4J and over JPype, against plain
``clojure.main -e "(println 1)"``, each at most 2x (medians of interleaved
whole-process runs).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
BRIDGE_DIR = os.path.join(HERE, "bridge")
# Looked for in this order; BENCH_BRIDGE_CMD overrides (a shell command line,
# given the mode as its argument, printing the JSON as its last JSON line).
# bench_bridge.py is the bridge teammate's: it takes --n and writes --json FILE.
CANDIDATES = ("bench_bridge.py", "run.sh", "bench.sh", "bench.py", "run.py")
CALLS = {"quick": 1000, "full": 3000}   # timed calls per small-call measurement
TRANSPORTS = ("py4j", "jpype")

PUSH_PULL_TARGET = 2.0   # Clojure push, pull p50 <= 2 x the no-op round trip (Py4J)
PUSH_PULL_BUDGET_US = {"jpype": 10.0}  # or <= this many us each (JPype)
TO_VEC_TARGET = 0.5      # ->vec of 64 MB >= 50% of numpy memcpy (payload GB/s)
TO_VEC_TARGETS = {"jpype": 0.7}


def bridge_command(mode: str, python: str, json_path: str) -> Optional[List[str]]:
    """The command line to run, or None; it writes ``json_path`` or prints JSON."""
    if os.environ.get("BENCH_BRIDGE_CMD"):
        return ["bash", "-c", os.environ["BENCH_BRIDGE_CMD"] + " " + mode]
    for name in CANDIDATES:
        path = os.path.join(BRIDGE_DIR, name)
        if not os.path.isfile(path):
            continue
        if name == "bench_bridge.py":
            return [python, path, "--json", json_path, "--n", str(CALLS.get(mode, 3000))]
        if name.endswith(".py"):
            return [python, path, mode]
        return ["bash", path, mode]
    return None


def _flatten(obj: Any, prefix: str = "") -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, (prefix + "_" if prefix else "") + str(k).lower()))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[prefix] = float(obj)
    return out


_UNIT = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def _gbps(flat: Dict[str, Any], word: str) -> Optional[float]:
    for key, v in flat.items():
        if re.search(word, key) and re.search(r"gbps|gb_s|gb/s", key):
            return v
    return None


def parse_bridge(stdout: str) -> Dict[str, Any]:
    """The last line of ``stdout`` that is a JSON object."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError("no JSON object in the bridge benchmark's output")


def _first(flat: Dict[str, float], pattern: str, unit_default: str = "us") -> Optional[float]:
    for key, v in flat.items():
        if re.search(pattern, key) and re.search(r"p50|median", key):
            m = re.search(r"_(ns|us|ms|s)(_p50|_median)?$", key)
            return v * _UNIT[m.group(1) if m else unit_default]
    return None


def extract(raw: Dict[str, Any]) -> Dict[str, Dict[str, Optional[float]]]:
    """Per transport: noop, push, pull, push_pull (p50, us) and to_vec_gbps."""
    nested = {t: raw[t] for t in TRANSPORTS if isinstance(raw.get(t), dict)}
    groups = nested or {"py4j": raw}
    out = {}
    for transport, obj in groups.items():
        flat = _flatten(obj)
        out[transport] = {"noop_p50_us": _first(flat, r"no_?op"),
                          "push_pull_p50_us": _first(flat, r"push.*pull"),
                          "push_p50_us": _first(flat, r"^push(?!.*pull)"),
                          "pull_p50_us": _first(flat, r"^pull"),
                          "to_vec_gbps": _gbps(flat, r"^to_vec(?!.*(best|mean))"),
                          "memcpy_gbps": _gbps(flat, r"^numpy_memcpy(?!.*mean)")}
    return out


def _shown(cmd: List[str], json_path: str) -> str:
    """``cmd`` as the report shows it: paths in the checkout relative, the JSON file as FILE."""
    root = os.path.dirname(HERE)
    return " ".join("FILE" if c == json_path else
                    os.path.relpath(c, root) if c.startswith(root + os.sep) else c
                    for c in cmd)


def run_bridge(mode: str, python: str, timeout: float) -> Tuple[Optional[Dict], Optional[str], str]:
    """(raw JSON, error, command) from the bridge benchmark, if there is one."""
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "bridge.json")
        cmd = bridge_command(mode, python, json_path)
        if cmd is None:
            return None, None, ""
        shown = _shown(cmd, json_path)
        try:
            p = subprocess.run(cmd, cwd=os.path.dirname(HERE), capture_output=True, text=True,
                               timeout=timeout, env=dict(os.environ, MXKV_PYTHON=python))
        except subprocess.TimeoutExpired:
            return None, "timed out after %.0f s" % timeout, shown
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
            return None, "exit %d: %s" % (p.returncode, " | ".join(tail)), shown
        try:
            if os.path.exists(json_path):
                with open(json_path) as f:
                    return json.load(f), None, shown
            return parse_bridge(p.stdout), None, shown
        except ValueError as e:
            return None, str(e), shown


def run_fallback_noop(python: str, calls: int,
                      timeout: float) -> Tuple[Optional[Dict], Optional[str]]:
    try:
        p = subprocess.run([python, os.path.join(HERE, "py4j_roundtrip.py"), "--calls",
                            str(calls)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %.0f s" % timeout
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return None, "%s exited %d: %s" % (os.path.basename(python), p.returncode, last)
    return parse_bridge(p.stdout), None


def rows(mode: str, python: str, memcpy_payload_gbps: Optional[float],
         calls: int, timeout: float) -> Dict[str, Any]:
    """Measure; return {"source", "floor", "rows", ...} for the report."""
    raw, err, cmd = run_bridge(mode, python, timeout)
    result: Dict[str, Any] = {"bridge_cmd": cmd or None, "bridge_error": err, "bridge_raw": raw}
    per = extract(raw) if raw else {}
    py4j = per.get("py4j", {})
    noop = py4j.get("noop_p50_us")
    if noop is None:   # the floor, measured here
        fb, fb_err = run_fallback_noop(python, calls, timeout)
        result["fallback"] = fb or {"error": fb_err}
        noop = fb.get("noop_p50_us") if fb else None
        result["noop_source"] = "benchmarks/py4j_roundtrip.py" if fb else None
    else:
        result["noop_source"] = cmd
    result["noop_p50_us"] = noop

    pending = ("pending: no benchmark in benchmarks/bridge/ yet" if not cmd
               else "bridge benchmark failed: %s" % err if err else None)
    out_rows = []
    for transport in (per or {"py4j": {}}):
        vals = per.get(transport, {})
        t_noop = vals.get("noop_p50_us") or (noop if transport == "py4j" else None)
        label = _label(transport)
        push, pull, pair = (vals.get("push_p50_us"), vals.get("pull_p50_us"),
                            vals.get("push_pull_p50_us"))
        vec = vals.get("to_vec_gbps")
        budget = PUSH_PULL_BUDGET_US.get(transport)
        if push is not None and pull is not None:
            # Each call against the round trip it cannot avoid (or the budget): the slower.
            value = max(push, pull)
            metric = ("slower of push, pull p50 / %.0f us budget" % budget if budget
                      else "slower of push, pull p50 / no-op p50")
            extra = "push %.1f us, pull %.1f us" % (push, pull)
            if pair is not None and t_noop:
                extra += "; the pair p50 %.0f us = %.1fx no-op" % (pair, pair / t_noop)
        else:
            value, metric, extra = pair, "push+pull p50 / no-op p50", None
        why = pending or (None if value is not None else "not in bridge output")
        out_rows.append(_row("clj_push_pull_%s" % transport,
                             "Clojure push, pull of a small key over %s" % label,
                             metric, value, budget or t_noop, "<=",
                             1.0 if budget else PUSH_PULL_TARGET, "us", why, extra))
        memcpy = vals.get("memcpy_gbps") or memcpy_payload_gbps
        out_rows.append(_row("clj_to_vec_%s" % transport,
                             "Clojure ->vec of 64 MB over %s" % label,
                             "GB/s / numpy memcpy GB/s", vec, memcpy,
                             ">=", TO_VEC_TARGETS.get(transport, TO_VEC_TARGET), "GB/s",
                             pending or (None if vec is not None else "not in bridge output")))
    result["rows"] = out_rows
    return result


STARTUP_TARGET = 2.0   # a program's start-up <= 2 x plain `clojure.main -e "(println 1)"`
#: startup.py's runs and cases per mode: quick skips the from-sources case (the slowest,
#: shown for comparison only) and runs each case once
STARTUP_RUNS = {"quick": 1, "full": 5}
STARTUP_CASES = {"quick": "plain_clojure,py4j_jar,jpype_jar",
                 "full": "plain_clojure,py4j_jar,jpype_jar,py4j_sources"}


def startup_rows(mode: str, python: str, timeout: float) -> Dict[str, Any]:
    """Run ``startup.py`` with ``python`` (mxkv's interpreter); return
    {"cmd", "error", "raw", "rows"}: ``clj_startup_py4j`` and
    ``clj_startup_jpype``, each case's median over plain Clojure's."""
    runs = STARTUP_RUNS.get(mode, STARTUP_RUNS["full"])
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "startup.json")
        cmd = [python, os.path.join(HERE, "startup.py"), "--runs", str(runs),
               "--cases", STARTUP_CASES.get(mode, STARTUP_CASES["full"]), "--json", json_path]
        shown = _shown(cmd, json_path)
        raw, err = None, None
        try:
            p = subprocess.run(cmd, cwd=os.path.dirname(HERE), capture_output=True, text=True,
                               timeout=timeout)
            if p.returncode != 0:
                tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
                err = "exit %d: %s" % (p.returncode, " | ".join(tail))
            else:
                with open(json_path) as f:
                    raw = json.load(f)
        except subprocess.TimeoutExpired:
            err = "timed out after %.0f s" % timeout
        except (OSError, ValueError) as e:
            err = str(e)
    med = (raw or {}).get("median_s", {})
    plain = med.get("plain_clojure")
    out_rows = []
    for transport, case in (("py4j", "py4j_jar"), ("jpype", "jpype_jar")):
        note = None
        if raw:
            note = "median of %d run(s); plain Clojure %.2f s; load %.1f" % (
                raw["runs"], plain, raw["load"])
            src = med.get("py4j_sources")
            if transport == "py4j" and src is not None:
                note += "; from sources %.2f s (%.1fx)" % (src, src / plain)
        out_rows.append(_row("clj_startup_%s" % transport,
                             "Clojure program start-up over %s, the AOT jar" % _label(transport),
                             "median s / plain clojure.main median s", med.get(case), plain,
                             "<=", STARTUP_TARGET, "s",
                             ("startup.py failed: %s" % err) if err else
                             (None if med.get(case) is not None else "not in startup output"),
                             note))
    return {"cmd": shown, "error": err, "raw": raw, "rows": out_rows}


def _label(transport: str) -> str:
    return {"py4j": "Py4J", "jpype": "JPype"}.get(transport, transport)


def _row(name: str, title: str, metric: str, value: Optional[float], floor: Optional[float],
         op: str, target: float, unit: str, why_not: Optional[str],
         extra: Optional[str] = None) -> Dict[str, Any]:
    row: Dict[str, Any] = {"name": name, "title": title, "metric": metric, "unit": unit,
                           "value": value, "floor": floor, "op": op, "target": target}
    if value is None or floor is None or floor == 0:
        row.update(ratio=None, status="n/a", note=why_not or "floor not measured")
        return row
    ratio = value / floor
    ok = ratio <= target if op == "<=" else ratio >= target
    row.update(ratio=ratio, status="pass" if ok else "FAIL", note=extra)
    return row
