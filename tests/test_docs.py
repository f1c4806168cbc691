"""Every ```python and ```clojure block in README.md and docs/*.md runs as written.

The rules are in tools/docs_check.py. Python pages each run in a fresh
interpreter; every page's Clojure blocks run in one JVM over the bridge.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("docs_check", ROOT / "tools" / "docs_check.py")
docs_check = importlib.util.module_from_spec(_spec)
sys.modules["docs_check"] = docs_check
_spec.loader.exec_module(docs_check)

PAGES = docs_check.default_pages()
PY_PAGES = [p for p in PAGES if docs_check.blocks(p, ("python",))]
CLJ_PAGES = [p for p in PAGES if docs_check.blocks(p, ("clojure",))]


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("page", PY_PAGES, ids=_id)
def test_python_blocks_run(page, docs_runner):
    failures = docs_runner.run_python_subprocess(page)
    assert not failures, "\n".join(failures)


# A page that must fail, run in the same JVM, shows the checker can fail.
_BAD_PAGE = "```clojure\n(def x 1)\n```\n\n```clojure\nuser=> (inc x)\n2\nuser=> (/ x 0)\n```\n"


@pytest.fixture(scope="module")
def clojure_results(tmp_path_factory, needs_jvm, docs_runner):
    bad = tmp_path_factory.mktemp("docs") / "bad.md"
    bad.write_text(_BAD_PAGE)
    pages = {str(p): docs_check.blocks(p, ("clojure",)) for p in [*CLJ_PAGES, bad]}
    results = docs_check.run_clojure_pages(pages, docs_check.mxkv_command())
    results["bad"] = results.pop(str(bad))
    return results


@pytest.mark.parametrize("page", CLJ_PAGES, ids=_id)
def test_clojure_blocks_run(page, clojure_results):
    failures = clojure_results[str(page)]
    assert not failures, "\n".join(failures)


# -- the checker itself ------------------------------------------------------

def test_failing_clojure_block_is_reported_with_its_line(clojure_results):
    (failure,) = clojure_results["bad"]
    assert "bad.md:8" in failure and "Divide by zero" in failure


def test_transcript_contributes_only_its_forms():
    code = ('user=> (def a\n  [1 2])\n#\'user/a\n\n;; a comment\n'
            'docs.x=> (count a) ;=> 2\n2\n')
    assert docs_check.clojure_forms(code) == "(def a\n  [1 2])\n\n\n\n(count a)\n\n"


def test_plain_clojure_block_is_kept_whole():
    code = "(def x 1)\n(inc x)\n"
    assert docs_check.clojure_forms(code) == code


@pytest.mark.parametrize("text,end", [
    ('(str "a)" \\))', 13), ("[1 2] 3", 5), ("  kw/x rest", 6), ("(a ; ) \n b)", 11),
    ("(incomplete", None),
])
def test_form_end(text, end):
    assert docs_check._form_end(text) == end


def test_failing_python_block_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```python\n>>> x + 1\n3\n```\n\n"
                    "```text\nnot run\n```\n")
    failures = docs_check.run_python_subprocess(page)
    assert len(failures) == 1 and "page.md:6" in failures[0] and "Expected" in failures[0]


def test_blocks_of_other_languages_do_not_run(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```sh\nexit 1\n```\n```python\nassert True\n```\n")
    assert [b.lang for b in docs_check.blocks(page)] == ["python"]
    assert docs_check.run_python_subprocess(page) == []


def _aliases(code):
    """The namespace aliases ``code`` uses (``ndarray/`` in ``(ndarray/ones ...)``)
    and those it requires itself (``:as ndarray``)."""
    import re

    used = set(re.findall(r"[(\s'#\[]([a-z][\w-]*)/[\w<>*+!?=-]", code))
    return {u for u in used if u != "clojure"}, set(re.findall(r":as\s+([\w-]+)", code))


@pytest.mark.parametrize("page", CLJ_PAGES, ids=lambda p: p.name)
def test_each_clojure_block_requires_what_it_uses(page):
    # a reader copies one block into a REPL: it must not lean on an earlier
    # block's requires (the runner runs a page's blocks in one namespace, so
    # it would not notice)
    for block in docs_check.blocks(page, ("clojure",)):
        used, required = _aliases(block.code)
        assert used <= required, (f"{page.name}:{block.line}: the block uses "
                                  f"{sorted(used - required)} without requiring them")


def test_the_readme_install_line_brings_what_mxkv_launch_needs():
    # `mxkv launch` refuses to run without Ray and names the extra; a user who
    # follows the README's install line must have it
    import re

    readme = (ROOT / "README.md").read_text()
    extras = re.search(r"Without a checkout: `pip install 'mxkv\[([\w,]+)\]'`", readme)
    assert extras, "README.md lost its install line"
    job = (ROOT / "python" / "mxkv" / "kvstore" / "dist" / "job.py").read_text()
    assert "pip install 'mxkv[dist]'" in job   # the extra the launcher's error names
    assert "mxkv launch" in readme
    assert "dist" in extras.group(1).split(","), extras.group(0)
