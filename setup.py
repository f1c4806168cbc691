"""The wheel's build hook: the package carries mxkv's Clojure side.

``build_py`` writes ``mxkv/_clojure/`` into the wheel: ``mxkv.jar`` (the
Clojure namespaces of ``clojure/src`` and the bridge's Java classes compiled
from ``clojure/java``: what a Clojure project needs besides Clojure and
Py4J) and the tutorials (``tutorial/kvstore.clj``, ``tutorial/ndarray.clj``).
Compiling needs a JDK and a Clojure jar
(Debian's ``clojure`` package, or ``MXKV_CLOJURE_JAR``); without them the
wheel ships the sources instead and ``mxkv`` compiles them on first use.
Editable installs skip this: they use the checkout itself. Everything else
is in pyproject.toml.
"""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _classpath_module():
    """python/mxkv/classpath/ on its own (the package's dependencies are
    not installed where wheels are built): loaded as a top-level package of
    its own, so that its modules' relative imports of each other work."""
    where = ROOT / "python" / "mxkv" / "classpath"
    spec = importlib.util.spec_from_file_location(
        "_mxkv_classpath", where / "__init__.py", submodule_search_locations=[str(where)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class BuildPyWithClojure(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        out = Path(self.build_lib) / "mxkv" / "_clojure"
        if out.exists():
            shutil.rmtree(out)
        (out / "tutorial").mkdir(parents=True)
        for tutorial in sorted((ROOT / "clojure" / "tutorial").glob("*.clj")):
            shutil.copy2(tutorial, out / "tutorial")
        cp = _classpath_module()
        try:
            cp.build_jar(ROOT, out / cp.JAR_NAME, quiet=False)
        except (cp.MissingDependency, OSError, subprocess.CalledProcessError) as exc:
            print(f"mxkv: WARNING: the bridge classes were not compiled ({exc}); the wheel "
                  "ships the sources and `mxkv` compiles them on first use (it needs a JDK)")
            shutil.copytree(ROOT / "clojure" / "src", out / "src")
            shutil.copytree(ROOT / "clojure" / "java", out / "java")


setup(cmdclass={"build_py": BuildPyWithClojure})
