"""A package, not a checkout: the wheel built from this tree, installed in a
throwaway venv, serves the Clojure side from an empty directory (tutorial
over both transports, REPL, a script, `mxkv jar`, `mxkv classpath`), and a
Clojure project of the user's own runs against it as docs/bridge.md says.

To stay fast the wheel is built once without build isolation and installed
with ``--no-deps``; the venv reaches this environment's numpy, py4j, JPype1
and pip through a path file (not its mxkv: the venv's own site-packages
comes first, path files inside a path listed by another are not read, and
the test checks which mxkv runs).
"""
from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support import ROOT


def _run(cmd, cwd, env, stdin=None, timeout=300):
    return subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """(venv bin dir, environment without the checkout, an empty directory)."""
    tmp = tmp_path_factory.mktemp("package")
    wheels = tmp / "wheels"
    r = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
              str(ROOT), "-w", str(wheels)], cwd=tmp, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = wheels.glob("mxkv-*.whl")
    venv = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp,
             env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    (purelib,) = venv.glob("lib/python*/site-packages")
    (purelib / "deps-from-test-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MXKV_HOME", "MXKV_PYTHON", "MXKV_TRANSPORT", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # This environment's pip, run by the venv's interpreter: it installs there
    # (and writes the venv's interpreter into the `mxkv` script).
    r = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
              "--no-index", "--ignore-installed", str(wheel)], cwd=tmp, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    empty = tmp / "empty"
    empty.mkdir()
    return venv / "bin", env, empty, wheel


def test_the_wheel_carries_the_clojure_side(installed, transport):
    *_, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "mxkv/_clojure/mxkv.jar" in names
    assert "mxkv/_clojure/tutorial/kvstore.clj" in names
    assert "mxkv/_clojure/tutorial/ndarray.clj" in names
    jar_names = zipfile.ZipFile(zipfile.ZipFile(wheel).open("mxkv/_clojure/mxkv.jar")).namelist()
    assert "org/apache/clojure_mxnet/kvstore.clj" in jar_names
    assert "org/apache/clojure_mxnet/bridge/Engine.class" in jar_names
    own = {"py4j": ["Py4JTransport.class"],
           "jpype": ["JPypeTransport.class", "DirectEngine.class"]}[transport]
    for cls in own:
        assert f"org/apache/clojure_mxnet/bridge/{cls}" in jar_names
    # every namespace compiled ahead of time, beside its source
    for ns in ("kvstore", "ndarray", "bridge", "bridge/connection", "optimizer", "util"):
        assert f"org/apache/clojure_mxnet/{ns}__init.class" in jar_names, ns
    # the handle types, JVM classes that survive namespace reloads
    for cls in ("kvstore/KVStore", "ndarray/NDArray", "context/Context"):
        assert f"org/apache/clojure_mxnet/{cls}.class" in jar_names, cls


def test_the_installed_mxkv_is_the_wheels(installed, transport):
    bin_, env, empty, _ = installed
    r = _run([str(bin_ / "python"), "-c", "import mxkv, mxkv.classpath as c; "
              "print(mxkv.__file__); print(c.layout().kind)"], cwd=empty, env=env)
    assert r.returncode == 0, r.stderr
    where, kind = r.stdout.split()
    assert where.startswith(str(bin_.parent)), where
    assert kind == "package"
    if transport == "jpype":  # the one-liner, from the package
        r = _run([str(bin_ / "python"), "-c",
                  "import mxkv.jvm as j; j.start(); print(j.eval('(+ 1 2)'))"], cwd=empty, env=env)
        assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr
    else:
        r = _run([str(bin_ / "mxkv"), "clj", "-e", "(println (+ 1 2))"], cwd=empty, env=env)
        assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr


def test_tutorial_from_an_empty_directory(installed, transport):
    bin_, env, empty, _ = installed
    r = _run([str(bin_ / "mxkv"), "tutorial", "--transport", transport], cwd=empty, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == (
        ";; 24 forms evaluated, 5 values checked against ;=>, 0 failures")
    assert not any(empty.iterdir()), "nothing is written where it runs"


def test_repl_and_script_from_an_empty_directory(installed, transport, tmp_path):
    bin_, env, empty, _ = installed
    script = ('(def kv (kvstore/create "local"))\n(kvstore/init kv "3" (ndarray/ones [2 3]))\n'
              '(let [o (ndarray/zeros [2 3])] (kvstore/pull kv "3" o) (ndarray/->vec o))\n')
    r = _run([str(bin_ / "mxkv"), "repl", "--transport", transport], cwd=empty, env=env,
             stdin=script)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[1.0 1.0 1.0 1.0 1.0 1.0]" in r.stdout
    f = tmp_path / "script.clj"
    f.write_text("(require '[org.apache.clojure-mxnet.ndarray :as nd])\n"
                 "(println (nd/->vec (nd/+ (nd/ones [3]) 2)))\n")
    r = _run([str(bin_ / "mxkv"), "clj", "--transport", transport, str(f)], cwd=empty, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == "[3.0 3.0 3.0]\n"


_CORE = (
    "(ns myproject.core\n"
    "  (:require [org.apache.clojure-mxnet.kvstore :as kvstore]\n"
    "            [org.apache.clojure-mxnet.ndarray :as ndarray]))\n"
    "(defn -main [& _]\n"
    "  (let [kv (kvstore/create \"local\") out (ndarray/zeros [2])]\n"
    "    (kvstore/init kv 1 (ndarray/ones [2]))\n"
    "    (kvstore/push kv 1 (ndarray/* (ndarray/ones [2]) 4))\n"
    "    (kvstore/pull kv 1 out)\n"
    "    (println (ndarray/->vec out))\n"
    "    (shutdown-agents)))\n")


def test_your_own_clojure_project(installed, transport, tmp_path):
    """docs/bridge.md, "Use it from your own Clojure project": java -cp with
    what `mxkv classpath` prints and the project's own sources (py4j), or
    the same sources from Python with mxkv.jvm (jpype); and the deps.edn map
    `mxkv jar --deps-edn` prints names files that exist."""
    bin_, env, _, _ = installed
    project = tmp_path / "myproject"
    (project / "src" / "myproject").mkdir(parents=True)
    (project / "src" / "myproject" / "core.clj").write_text(_CORE)
    if transport == "py4j":
        r = _run([str(bin_ / "mxkv"), "classpath"], cwd=project, env=env)
        assert r.returncode == 0, r.stderr
        cp = r.stdout.strip()
        plain = {k: v for k, v in env.items() if k != "MXKV_PYTHON"}
        plain["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                        if p != str(bin_))  # the jar finds its own Python
        r = _run(["java", "-cp", f"{cp}{os.pathsep}src", "clojure.main", "-m", "myproject.core"],
                 cwd=project, env=plain)
    else:
        r = _run([str(bin_ / "python"), "-c",
                  "import mxkv.jvm as j; j.start(extra_classpath=['src']); "
                  "j.var('myproject.core/-main')()"], cwd=project, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == "[4.0 4.0]\n"
    r = _run([str(bin_ / "mxkv"), "jar", "--deps-edn"], cwd=project, env=env)
    assert r.returncode == 0, r.stderr
    roots = [line.split('"')[1] for line in r.stdout.splitlines() if ":local/root" in line]
    assert len(roots) == 2 and all(Path(p).is_file() for p in roots), r.stdout
    r = _run([str(bin_ / "mxkv"), "jar"], cwd=project, env=env)
    assert Path(r.stdout.strip()) == Path(roots[0])


def test_the_test_suite_needs_a_checkout(installed, transport):
    bin_, env, empty, _ = installed
    r = _run([str(bin_ / "mxkv"), "test", "--transport", transport], cwd=empty, env=env)
    assert r.returncode == 1
    assert "not part of the package" in r.stderr
