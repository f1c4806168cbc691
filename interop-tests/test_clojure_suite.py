"""The whole Clojure test suite (clojure/test) over each transport, in that
transport's one JVM: one test per transport, ``test_the_clojure_suite[py4j]``
and ``[jpype]``, so that its time (about two minutes each on 2 cores) is
reported under its own name. It prints the time and the counts, and a failure
names every namespace that failed, with clojure.test's report."""
from __future__ import annotations

import time

import pytest
from support import CLOJURE_TESTS, TRANSPORTS


def _namespaces():
    out = []
    for f in sorted(CLOJURE_TESTS.rglob("*_test.clj")):
        rel = f.relative_to(CLOJURE_TESTS).with_suffix("")
        out.append(".".join(rel.parts).replace("_", "-"))
    return sorted(out)


NAMESPACES = _namespaces()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_clojure_suite(request, transport):
    assert len(NAMESPACES) >= 9, f"the suite was not found: {NAMESPACES}"
    driver = request.getfixturevalue(f"_{transport}_driver")
    t0 = time.monotonic()
    results = driver.call("suite", str(CLOJURE_TESTS))
    took = time.monotonic() - t0
    tests = sum(r["test"] for r in results.values())
    print(f"\nclojure suite over {transport}: {len(results)} namespaces, {tests} tests, "
          f"{took:.1f} s")
    missing = sorted(set(NAMESPACES) - set(results))
    assert not missing, f"did not run over {transport}: {missing}"
    empty = sorted(ns for ns in NAMESPACES if results[ns]["test"] == 0)
    assert not empty, f"namespaces without tests: {empty}"
    failed = {ns: r for ns, r in sorted(results.items()) if r["fail"] or r["error"]}
    assert not failed, "\n\n".join(
        f"{ns} over {transport}: {r['fail']} failures, {r['error']} errors\n{r.get('report', '')}"
        for ns, r in failed.items())
