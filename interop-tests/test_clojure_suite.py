"""The whole Clojure test suite (clojure/test) over each transport: one test
per namespace and transport, e.g. ``[jpype-org.apache.clojure-mxnet.kvstore-test]``.
Each transport runs the suite once per session, in its one JVM."""
from __future__ import annotations

import pytest
from support import CLOJURE_TESTS, TRANSPORTS


def _namespaces():
    out = []
    for f in sorted(CLOJURE_TESTS.rglob("*_test.clj")):
        rel = f.relative_to(CLOJURE_TESTS).with_suffix("")
        out.append(".".join(rel.parts).replace("_", "-"))
    return sorted(out)


NAMESPACES = _namespaces()
_results: dict = {}


def _suite(request, transport):
    if transport not in _results:
        d = request.getfixturevalue(f"_{transport}_driver")
        _results[transport] = d.call("suite", str(CLOJURE_TESTS))
    return _results[transport]


@pytest.mark.parametrize("transport,ns", [(t, n) for t in TRANSPORTS for n in NAMESPACES],
                         ids=[f"{t}-{n}" for t in TRANSPORTS for n in NAMESPACES])
def test_clojure_namespace_passes(request, transport, ns):
    assert len(NAMESPACES) >= 9, f"the suite was not found: {NAMESPACES}"
    results = _suite(request, transport)
    assert ns in results, f"{ns} did not run over {transport}: ran {sorted(results)}"
    r = results[ns]
    assert r["test"] > 0, f"{ns} has no tests"
    assert r["fail"] == 0 and r["error"] == 0, (
        f"{ns} over {transport}: {r['fail']} failures, {r['error']} errors\n{r.get('report', '')}")
