"""The checkers ``make lint`` runs (tools/import_cycles.py) catch what they are for."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


import_cycles = _load("import_cycles")


def _package(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_cycles.Graph(import_cycles.module_files(tmp_path, "pkg"))


def test_an_import_inside_a_function_closes_a_cycle(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "from .a import f\n",
        "a.py": "from .b import g\ndef f():\n    return g()\n",
        "b.py": "def g():\n    from .a import f\n    return f\n",
    })
    assert graph.cycles() == [["pkg.a", "pkg.b"]]


def test_a_package_reexporting_its_modules_is_not_a_cycle(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "from .a import f\nfrom .b import g\n",
        "a.py": "def f():\n    return 1\n",
        "b.py": "from . import a\ndef g():\n    return a.f()\n",
    })
    assert graph.cycles() == []


def test_a_name_taken_through_the_package_leads_to_its_module(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "",
        "sub/__init__.py": "from .a import A\nfrom .b import B\n",
        "sub/a.py": "class A:\n    def b(self):\n        from ..sub import B\n        return B\n",
        "sub/b.py": "from .a import A\nclass B(A):\n    pass\n",
    })
    assert graph.cycles() == [["pkg.sub.a", "pkg.sub.b"]]


def test_type_checking_imports_do_not_count(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "b.py": "from .a import *\nclass B:\n    pass\n",
    })
    assert graph.cycles() == []


def test_a_cycle_may_shrink_but_not_grow(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "from . import a\n",
        "c.py": "from . import d\n",
        "d.py": "from . import c\n",
    })
    new, stale = import_cycles.check(graph, [{"pkg.a", "pkg.b", "pkg.x"}, {"pkg.gone"}])
    assert new == [["pkg.c", "pkg.d"]]
    assert stale == [{"pkg.gone"}]


def test_the_tree_has_no_cycle_outside_the_allowlist():
    graph = import_cycles.Graph(import_cycles.module_files())
    new, _ = import_cycles.check(graph, import_cycles.read_allowlist())
    assert new == [], "\n".join(import_cycles.describe(graph, c) for c in new)


docstrings = _load("docstrings")


def test_docstring_share_counts_public_names_and_inherited_docs(tmp_path):
    src = tmp_path / "pkg"
    src.mkdir()
    (src / "__init__.py").write_text('"""The package."""\n')
    (src / "m.py").write_text(
        "class Base:\n    '''A base.'''\n    def run(self):\n        '''Runs.'''\n"
        "class Child(Base):\n    '''A child.'''\n    def run(self):\n        pass\n"
        "    def extra(self):\n        pass\n    def _private(self):\n        pass\n"
        "def _hidden():\n    pass\n")
    monkey = docstrings.SRC
    docstrings.SRC = src
    try:
        loose = docstrings.survey(src)
        strict = docstrings.survey(src, strict=True)
    finally:
        docstrings.SRC = monkey
    names = {r[2]: r[3] for r in loose}
    assert names["pkg.m"] is False            # a module without a docstring
    assert names["pkg.m.Child.run"] is True   # inherits Base.run's
    assert names["pkg.m.Child.extra"] is False
    assert not any("_private" in n or "_hidden" in n for n in names)
    assert {r[2]: r[3] for r in strict}["pkg.m.Child.run"] is False
    assert docstrings.share(loose) == 100.0 * 5 / 7


def test_the_package_holds_the_docstring_floors():
    assert docstrings.share(docstrings.survey()) >= docstrings.FLOOR
    assert docstrings.share(docstrings.survey(strict=True)) >= docstrings.OWN_FLOOR


mypy_baseline = _load("mypy_baseline")


def test_the_mypy_baseline_fails_on_a_new_error_and_only_shrinks(tmp_path, capsys):
    src = tmp_path / "mod.py"
    src.write_text("a: int = 'one'\nb: str = 2\n")
    base = tmp_path / "baseline.txt"
    run = ["--root", str(tmp_path), "--target", "mod.py", "--baseline", str(base)]
    assert mypy_baseline.main(run + ["--update"]) == 0        # the first baseline: today's
    assert base.read_text().count("mod.py: error:") == 2
    src.write_text("a: int = 'one'\nb: str = 2\nc: bytes = 3.0\n")
    assert mypy_baseline.main(run) == 1
    out = capsys.readouterr().out
    assert "1 error(s) not in baseline.txt" in out and "mod.py:3:" in out
    assert mypy_baseline.main(run + ["--update"]) == 1         # never grows
    src.write_text("a: int = 1\nb: str = 2\n")
    assert mypy_baseline.main(run) == 0
    assert "1 baseline error(s) fixed; shrink the baseline" in capsys.readouterr().out
