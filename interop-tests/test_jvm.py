"""mxkv.jvm: Python hosts the JVM (JPype). In this process (the session's
JVM) and, for start/stop/exit, in fresh Python processes."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from support import ROOT

import mxkv as mx
from mxkv.base import MXNetError


def _python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MXKV_TRANSPORT"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_the_issue_one_liner_prints_3(jpype):
    r = _python("import mxkv.jvm as j; j.start(); print(j.eval('(+ 1 2)'))")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "3\n"


def test_exit_does_not_wait_for_clojure_agent_threads(jpype):
    # A future leaves a non-daemon agent thread alive for a minute unless
    # shutdown-agents runs; stop() (also at exit) runs it.
    # Only the exit is timed (from the child's last line; CLOCK_MONOTONIC is
    # one clock for all processes): starting a JVM may be slow on a loaded
    # machine, exiting is not, unless an agent thread holds it for its minute.
    r = _python("import time, mxkv.jvm as j; j.start(); print(j.eval('@(future (* 6 7))')); "
                "print(time.monotonic())")
    exited = time.monotonic()
    assert r.returncode == 0, r.stderr
    answer, printed_at = r.stdout.splitlines()
    assert answer == "42"
    assert exited - float(printed_at) < 30, f"exit took {exited - float(printed_at):.0f} s"


def test_start_twice_is_a_no_op_and_after_stop_a_clear_error(jpype):
    r = _python("""
import mxkv.jvm as j
from mxkv.base import MXNetError
j.start(); j.start()
print(j.eval('(* 2 21)'))
j.stop(); j.stop()
print(j.started())
try:
    j.start()
except MXNetError as e:
    print('refused:', e)
""")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "42"
    assert lines[1] == "False"
    assert lines[2].startswith("refused:") and "new Python process" in lines[2]


def test_eval_returns_plain_data_as_python_values(jpype_driver):
    jvm = jpype_driver.jvm
    assert jvm.eval("(+ 1 2)") == 3
    assert jvm.eval('{:a [1 2.5 "x" nil true] :b #{3} :c (list :k)}') == {
        "a": [1, 2.5, "x", None, True], "b": [3], "c": ["k"]}
    assert jvm.eval("nil") is None
    obj = jvm.eval("(java.util.ArrayList. [1 (Object.)])")
    assert "ArrayList" in str(obj.getClass().getName()), "other objects stay Java objects"


def test_eval_keeps_the_namespace_like_a_repl(jpype_driver, tmp_path):
    jvm = jpype_driver.jvm
    jvm.eval("(ns interop.scratch) (def x 40)")
    assert jvm.eval("(+ x 2)") == 42
    jvm.eval("(in-ns 'user)")
    f = tmp_path / "f.clj"
    f.write_text("(def loaded-value 7)\n(* loaded-value 6)\n")
    assert jvm.load_file(f) == 42
    jvm.require("clojure.set")
    assert sorted(jvm.eval("(clojure.set/union #{1} #{2})")) == [1, 2]


def test_a_python_array_is_the_same_object_in_clojure(jpype_driver):
    jvm = jpype_driver.jvm
    a = mx.nd.ones((2, 3))
    c = jvm.to_clojure(a)
    assert jvm.to_python(c) is a
    jvm.intern("shared-a", a)
    jvm.eval("(require '[org.apache.clojure-mxnet.ndarray :as ndarray])")
    jvm.eval("(ndarray/+= shared-a 4)")
    assert a.asnumpy().tolist() == [[5.0] * 3] * 2, "Clojure's in-place add is Python's array"
    a += 1
    assert jvm.eval("(ndarray/->vec shared-a)") == [6.0] * 6


def test_a_clojure_store_is_usable_from_python(jpype_driver):
    jvm = jpype_driver.jvm
    jvm.eval("""(require '[org.apache.clojure-mxnet.kvstore :as kvstore]
                         '[org.apache.clojure-mxnet.ndarray :as ndarray])
                (def clj-kv (kvstore/create "local"))
                (kvstore/init clj-kv "w" (ndarray/ones [2 2]))""")
    kv = jvm.to_python(jvm.eval("clj-kv"))
    kv.push("w", mx.nd.ones((2, 2)) * 9)
    assert jvm.eval('(let [o (ndarray/zeros [2 2])] (kvstore/pull clj-kv "w" o) (ndarray/->vec o))'
                    ) == [9.0] * 4


def test_engine_errors_reach_python_as_clojure_ex_info(jpype_driver):
    import jpype

    jvm = jpype_driver.jvm
    with pytest.raises(jpype.JException) as info:
        jvm.eval('(kvstore/pull (kvstore/create "local") "missing" (ndarray/zeros [1]))')
    e = info.value
    assert "has not been initialized" in str(e.getMessage())
    data = jvm.var("clojure.core/ex-data")(e)
    assert data["python-class"] == "mxkv.base.MXNetError"


def test_only_arrays_and_stores_cross(jpype_driver):
    with pytest.raises(TypeError, match="only NDArrays and KVStores"):
        jpype_driver.jvm.to_clojure(object())
    with pytest.raises(MXNetError, match="non-empty string"):
        jpype_driver.jvm.publish("", mx.nd.ones((1,)))


def test_the_second_start_maps_the_class_data_archive_the_first_wrote(jpype, tmp_path):
    # A classpath of jars (as an installed package has): the first start
    # compiles Clojure's core specs into a jar and writes the archive at
    # exit, the second maps its classes (those specs' too) from it.
    from mxkv import classpath as cp

    path = os.pathsep.join([str(cp.jar()), *cp.clojure_jars()])
    log = tmp_path / "classes-%p.log"  # one option string (so one archive) for both runs
    code = ("import os, mxkv.classpath as cp, mxkv.jvm as j; "
            f"cp.classpath = lambda **kw: {path!r}; "
            f"j.start(jvm_args=['-Xlog:class+load=info:file={log}']); "
            "print(j.eval('(let [x 7] (require (quote org.apache.clojure-mxnet.kvstore)) x)'))")
    env = {k: v for k, v in os.environ.items() if k not in ("MXKV_TRANSPORT", "MXKV_CDS")}
    env["MXKV_CACHE"] = str(tmp_path / "cache")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, env=env, cwd=ROOT) for _ in range(2)]
    for r in runs:
        assert (r.returncode, r.stdout) == (0, "7\n"), r.stderr
    (archive,) = (tmp_path / "cache" / "cds").iterdir()
    assert archive.suffix == ".jsa"
    first, second = sorted(tmp_path.glob("classes-*.log"), key=lambda p: p.stat().st_mtime)
    (specs,) = (tmp_path / "cache" / "aot").iterdir()
    for cls, jar in (("org.apache.clojure_mxnet.kvstore__init", cp.jar()),
                     ("clojure.core.specs.alpha__init", specs)):
        assert f"{cls} source: file:{jar}" in first.read_text()
        assert f"{cls} source: shared objects file (top)" in second.read_text()
