"""Where the Clojure side of mxkv lives, and the JVM classpath that reaches it.

Two layouts, found in this order:

* a **checkout** (``MXKV_HOME``, or the directory holding ``deps.edn`` and
  ``clojure/src`` above this file): the namespaces in ``clojure/src``, the
  bridge's Java sources compiled into ``clojure/classes`` when they change;
* the **package** (``pip install mxkv``): ``mxkv/_clojure/mxkv.jar`` holds the
  namespaces and the compiled bridge classes, ``mxkv/_clojure/tutorial`` the
  tutorial. A package built without a JDK ships the Java sources instead
  (``mxkv/_clojure/java``) and they are compiled on first use into
  ``~/.cache/mxkv`` (``MXKV_CACHE`` overrides).

Clojure itself comes from the official Clojure CLI (``clojure -Spath`` with
the checkout's deps.edn) where it is installed and works, else from
``MXKV_CLOJURE_JAR``, Debian's ``clojure`` package in /usr/share/java or
``~/.m2``. Py4J's jar is the one shipped inside the ``py4j`` Python package.

One module per job: :mod:`.layout` (checkout or package), :mod:`.jars`
(Py4J, Clojure, javac), :mod:`.build` (the bridge classes, ahead-of-time
namespaces, the jar), :mod:`.path` (the classpath), :mod:`.jvm_options`,
:mod:`.startup` (Clojure's core specs compiled once), :mod:`.cds` (class
data sharing) and :mod:`.common` (what they share). This package imports
nothing but the standard library (the wheel's build hook loads it on its
own).
"""
from __future__ import annotations

from .build import aot, build, build_jar, classes_dir, jar, namespaces
from .cds import CDS_KEEP, ClassDataArchive, libjvm
from .common import MissingDependency
from .jars import clojure_jars, official_cli, py4j_jar
from .jvm_options import REPORT_TO_STDERR, STARTUP_JVM_OPTS, default_jvm_opts, jvm_opts
from .layout import JAR_NAME, PACKAGED, Layout, layout
from .path import classpath
from .startup import startup_classpath

__all__ = ["Layout", "layout", "classpath", "clojure_jars", "py4j_jar", "jar", "build",
           "build_jar", "aot", "namespaces", "default_jvm_opts", "jvm_opts", "REPORT_TO_STDERR",
           "ClassDataArchive", "startup_classpath", "STARTUP_JVM_OPTS", "MissingDependency",
           "CDS_KEEP", "JAR_NAME", "PACKAGED", "classes_dir", "libjvm", "official_cli"]
