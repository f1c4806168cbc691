"""Write a run's results: JSON, a markdown table, a PNG chart of the ratios.

``write_all`` writes ``latest.*`` and ``<mode>.*`` (so a quick run does not
overwrite the last full run's numbers) and, when asked, replaces the block
between the markers in ``docs/benchmarks.md`` with the table and chart.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(HERE), "docs", "benchmarks.md")
BEGIN, END = "<!-- BEGIN BENCH RESULTS -->", "<!-- END BENCH RESULTS -->"


def _t(s: Optional[float]) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return "%.3g us" % (s * 1e6)
    if s < 1:
        return "%.3g ms" % (s * 1e3)
    return "%.3g s" % s


def _side(d: Dict[str, Any]) -> str:
    if "median_s" in d:
        return "%s / %s" % (_t(d["min_s"]), _t(d["median_s"]))
    if "skipped" in d:
        return "skipped"
    if "error" in d:
        return "error"
    return "-"


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else "%.0f%%" % (100 * x)


def _val(x: Optional[float], unit: str) -> str:
    return "-" if x is None else "%.3g %s" % (x, unit)


def _result(status: str) -> str:
    return {"pass": "pass", "FAIL": "**FAIL**"}.get(status, status)


def run_header(r: Dict[str, Any], what: str = "run") -> List[str]:
    """The heading and the machine/versions line of a run's report."""
    m = r["machine"]
    sides = r["sides"]
    mx_v = sides.get("mxnet", {}).get("version", "?")
    kv = sides.get("mxkv", {})
    kv_label = "mxkv %s" % kv.get("version", "?")
    if kv.get("module") not in (None, "mxkv"):
        kv_label = "%s as a stand-in for mxkv" % kv.get("module")
    return ["### %s %s, %s" % (r["mode"], what, r["started"]), "",
            "%s, %s CPUs, %s GiB; MXNet %s (numpy %s) vs %s (numpy %s); git %s; "
            "%.0f s wall." % (m.get("cpu", m.get("machine")), m.get("cpus_usable", "?"),
                              m.get("mem_gib", "?"), mx_v, sides.get("mxnet", {}).get("numpy"),
                              kv_label, kv.get("numpy"), m.get("git", "?"), r["wall_s"]),
            ""]


def clojure_rows(r: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The run's rows judged against a floor rather than MXNet: the bridge's
    (``bridge_rows.rows``) and start-up's (``bridge_rows.startup_rows``)."""
    return [*(r.get("bridge") or {}).get("rows", []), *(r.get("startup") or {}).get("rows", [])]


def memory_bandwidth(floors: Dict[str, Any]) -> Optional[float]:
    """The machine's measured memory bandwidth in bytes/s (traffic, STREAM's
    convention): the better of the run's numpy copy and add, or None."""
    rates = [floors[k]["gbps"] for k in ("copy", "add") if k in floors]
    return max(rates) * 1e9 if rates else None


def _floor_cell(row: Dict[str, Any], bandwidth: Optional[float]) -> str:
    """A row's memory floor (traffic / bandwidth) and its numpy floor's median."""
    traffic = row.get("traffic_bytes")
    if not traffic or bandwidth is None:
        return "-"
    cell = _t(traffic / bandwidth)
    numpy_floor = (row.get("floor") or {}).get("median_s")
    return cell + (" (%s)" % _t(numpy_floor) if numpy_floor else "")


def _judged_table(heading: str, rows: List[Dict[str, Any]]) -> List[str]:
    """A markdown table of ``bridge_rows._row`` rows under ``heading``."""
    out = [heading, "", "| row | measure | value | floor | ratio | target | result |",
           "|---|---|--:|--:|--:|--:|:-:|"]
    for b in rows:
        unit = b["unit"]
        ratio = "-" if b.get("ratio") is None else "**%.2f**" % b["ratio"]
        status = _result(b["status"]) + (" <sub>%s</sub>" % b["note"] if b.get("note") else "")
        tgt = (("<= %.0fx" % b["target"]) if b["op"] == "<="
               else (">= %.0f%%" % (100 * b["target"])))
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            b["title"], b["metric"], _val(b["value"], unit), _val(b["floor"], unit), ratio,
            tgt, status))
    out.append("")
    return out


def markdown(r: Dict[str, Any], image: Optional[str]) -> str:
    reps = r["mode_settings"]
    out: List[str] = run_header(r)
    out.append("Time of one step, completion included: min / median of up to %d interleaved "
               "repetitions per side after %d warm-up step(s). Ratio = mxkv median / MXNet median "
               "(lower is better); the ratio of minimums in brackets." % (reps["reps"],
                                                                        reps["warmup"]))
    out.append("")
    fl = r.get("floors", {})
    bandwidth = memory_bandwidth(fl)
    out.append("Memory floor: the row's memory traffic (per key, k-1 adds into a buffer and "
               "k copies out: 4 bytes x elements x (3(k-1) + 2k)) over the machine's "
               "measured bandwidth (%s, the better of numpy's 64 MiB copy and add, one "
               "thread); the numpy floor's own time, same shapes, one thread, beside it."
               % ("-" if bandwidth is None else "%.1f GB/s" % (bandwidth / 1e9)))
    out.append("")
    out.append("| workload | size | MXNet | mxkv | mxkv / MXNet | memory floor (numpy) "
               "| target | result |")
    out.append("|---|---|--:|--:|--:|--:|--:|:-:|")
    for row in r["rows"]:
        ratio = ("**%.2f** (%.2f)" % (row["ratio"], row["ratio_min"])
                 if row.get("ratio") is not None else "-")
        status = _result(row["status"])
        if row.get("note"):
            status += " <sub>%s</sub>" % row["note"].replace("|", "/")
        out.append("| %s | %s | %s | %s | %s | %s | <= %.1f | %s |" % (
            row["title"], row["size"], _side(row.get("mxnet", {})), _side(row.get("mxkv", {})),
            ratio, _floor_cell(row, bandwidth), row["target"], status))
    out.append("")
    out.append("**Floors** (same machine, same run, measured in the mxkv interpreter):")
    out.append("")
    out.append("| floor | value |")
    out.append("|---|---|")
    if "copy" in fl:
        c, a = fl["copy"], fl["add"]
        mib = c["bytes"] >> 20
        out.append("| numpy `copyto`, %d MiB float32 (numpy %s) | %.1f GB/s traffic, %.1f GB/s "
                   "memcpy payload |" % (mib, fl.get("numpy"), c["gbps"], c["payload_gbps"]))
        out.append("| numpy `add(a, b, out=c)`, %d MiB float32 | %.1f GB/s traffic |"
                   % (mib, a["gbps"]))
    elif fl.get("error"):
        out.append("| numpy | error: %s |" % fl["error"])
    noop = fl.get("py4j_noop_p50_us")
    if noop is not None:
        out.append("| Py4J no-op round trip, p50 | %.1f us (%s) |"
                   % (noop, fl.get("py4j_noop_source")))
    elif (r.get("bridge") or {}).get("rows"):
        fb = (r["bridge"].get("fallback") or {}).get("error") or r["bridge"].get("bridge_error")
        out.append("| Py4J no-op round trip, p50 | not measured: %s |" % fb)
    out.append("")
    bw = r.get("bandwidth") or []
    if bw:
        out.append("**Aggregation bandwidth**: memory traffic of the best push+pull "
                   "(per key k-1 adds into a buffer, k copies out) over the median time; the "
                   "floor is that sequence in numpy, one thread, same shapes. The 80% aim is "
                   "for the big-key rows; the ResNet-50 rows are shown for reference.")
        out.append("")
        out.append("| workload | numpy floor | MXNet | mxkv | mxkv / floor | target | result |")
        out.append("|---|--:|--:|--:|--:|--:|:-:|")
        for b in bw:
            def g(x: Optional[float]) -> str:
                return "-" if x is None else "%.1f GB/s" % x
            tgt = "-" if b.get("target") is None else ">= %.0f%%" % (100 * b["target"])
            out.append("| %s | %s | %s (%s) | %s | **%s** | %s | %s |" % (
                b["title"], g(b["floor_gbps"]), g(b["mxnet_gbps"]), _pct(b["mxnet_of_floor"]),
                g(b["mxkv_gbps"]), _pct(b["mxkv_of_floor"]), tgt, _result(b["status"])))
        out.append("")
    br = r.get("bridge") or {}
    if br.get("rows"):
        out += _judged_table("**Clojure over the bridge** (%s):" % (br.get("bridge_cmd") or
                                                                  "no bridge benchmark yet"),
                             br["rows"])
    st = r.get("startup") or {}
    if st.get("rows"):
        out += _judged_table("**Clojure start-up**, whole processes against plain "
                             "`clojure.main -e \"(println 1)\"` (%s):" % st.get("cmd"),
                             st["rows"])
    if image:
        out.append("![mxkv / MXNet time ratios and floor fractions](%s)" % image)
        out.append("")
    return "\n".join(out)


def pyplot(who: str) -> Any:
    """``matplotlib.pyplot`` drawing to files (Agg), or None, said on stderr,
    when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("%s: matplotlib not installed; no chart\n" % who)
        return None
    return plt


def chart(r: Dict[str, Any], path: str) -> bool:
    plt = pyplot("report")
    if plt is None:
        return False
    rows = r["rows"]
    floor_rows = [(b["title"] + " (mxkv / numpy floor)", b["mxkv_of_floor"], ">=",
                   b["target"], b["status"]) for b in r.get("bandwidth") or []
                  if b.get("target") is not None]
    floor_rows += [(b["title"], b.get("ratio"), b["op"], b["target"], b["status"])
                   for b in clojure_rows(r)]
    fig, axes = plt.subplots(2, 1, figsize=(10, 0.45 * (len(rows) + len(floor_rows)) + 2.6),
                             gridspec_kw={"height_ratios": [max(len(rows), 1),
                                                            max(len(floor_rows), 1)]})
    panels = [(axes[0], [(x["title"], x.get("ratio"), "<=", x["target"], x["status"])
                         for x in rows],
               "mxkv time / MXNet time (lower is better; | = target)"),
              (axes[1], floor_rows, "against the floors (| = target; direction in the label)")]
    for ax, items, xlabel in panels:
        labels, vals = [], []
        for i, (title, val, op, target, status) in enumerate(items):
            labels.append("%s  [%s %g]" % (title.replace("`", ""), op, target))
            color = {"pass": "#2e7d32", "FAIL": "#c62828"}.get(status, "#9e9e9e")
            if val is not None:
                ax.barh(i, val, color=color, height=0.6)
                ax.text(val, i, " %.2f" % val, va="center", fontsize=8)
                vals.append(val)
            else:
                ax.text(0.01, i, status, va="center", fontsize=8, color="#616161",
                        transform=ax.get_yaxis_transform())
            ax.plot([target, target], [i - 0.4, i + 0.4], color="black", lw=2)
            vals.append(target)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_xlim(0, max(vals + [1.0]) * 1.18)
        ax.axvline(1.0, color="#bdbdbd", lw=0.8, ls="--")
    from matplotlib.patches import Patch
    axes[0].legend(handles=[Patch(color="#2e7d32", label="meets target"),
                            Patch(color="#c62828", label="misses target")],
                   loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8,
                   frameon=False)
    kv = r["sides"].get("mxkv", {})
    fig.suptitle("mxkv benchmarks, %s run %s (%s)" % (r["mode"], r["started"][:16],
                                                       kv.get("module", "mxkv")), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def update_docs(md: str, begin: str = BEGIN, end: str = END) -> bool:
    """Replace the block between ``begin`` and ``end`` in docs/benchmarks.md with ``md``."""
    if not os.path.isfile(DOCS):
        return False
    text = open(DOCS).read()
    if begin not in text or end not in text:
        sys.stderr.write("report: %s has no %s ... %s block; not updated\n" % (DOCS, begin, end))
        return False
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(DOCS, "w") as f:
        f.write(head + begin + "\n" + md + "\n" + end + tail)
    return True


def write_all(r: Dict[str, Any], out_dir: str, docs: bool = False) -> List[str]:
    """Write ``<mode>.{json,md,png}`` (no ``latest.*`` copies: the mode names
    the run); with ``docs``, refresh docs/benchmarks.md."""
    mode = r["mode"]
    base = os.path.join(out_dir, mode)
    with open(base + ".json", "w") as f:
        json.dump(r, f, indent=1, sort_keys=False)
    has_png = chart(r, base + ".png")
    with open(base + ".md", "w") as f:
        f.write(markdown(r, image=(mode + ".png") if has_png else None))
    paths = [base + ".json", base + ".md"] + ([base + ".png"] if has_png else [])
    if docs:
        rel = "../benchmarks/results/%s.png" % mode
        if update_docs(markdown(r, image=rel if has_png else None)):
            paths.append(DOCS)
    return paths
