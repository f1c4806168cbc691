"""Run the code blocks of README.md and docs/*.md as a reader would.

The rule (enforced by tests/test_docs.py, part of ``make test``):

* Every block fenced as ```python or ```clojure runs as written. Blocks meant
  only to be read use another info string (```text, ```sh, ```edn...).
* A page's python blocks run in order in one interpreter, in a scratch
  directory. A block with ``>>> `` prompts is a doctest: the prompts and
  ``... `` continuations are the code, the other lines are the expected
  output (ELLIPSIS and NORMALIZE_WHITESPACE apply).
* A page's clojure blocks run in order in one JVM, starting in ``user``.
  A REPL transcript (``ns=> form`` lines followed by output) contributes
  only its forms; any other block is read form by form.

Usage::

    python tools/docs_check.py README.md docs/*.md      # run every page
    python tools/docs_check.py --list docs/bridge.md    # show what would run

Exit status 0 when every block ran; otherwise each failure is printed with
its page and line.
"""
from __future__ import annotations

import argparse
import doctest
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGS = ("python", "clojure")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
_PROMPT = re.compile(r"^([A-Za-z_*+!?<>=$&%.\-][\w*+!?<>=$&%.\-]*)=> ?(.*)$")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the first code line
    lang: str
    code: str


def blocks(path: Path, langs=RUN_LANGS) -> List[Block]:
    """The fenced blocks of ``path`` whose info string is one of ``langs``."""
    out: List[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        body: List[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if lang in langs:
            out.append(Block(str(path), i + 2, lang, "\n".join(body) + "\n"))
        i = j + 1
    return out


# -- python ------------------------------------------------------------------

def _is_doctest(code: str) -> bool:
    return any(line.lstrip().startswith(">>>") for line in code.splitlines())


def run_python_page(page_blocks: List[Block]) -> List[str]:
    """Run a page's python blocks in order in this interpreter; failures as text."""
    failures: List[str] = []
    globs: Dict[str, object] = {"__name__": "__docs__"}
    parser = doctest.DocTestParser()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for b in page_blocks:
        where = f"{b.page}:{b.line}"
        if _is_doctest(b.code):
            test = parser.get_doctest(textwrap.dedent(b.code), globs, where, b.page, b.line - 1)
            report: List[str] = []
            runner = doctest.DocTestRunner(optionflags=flags, verbose=False)
            runner.run(test, out=report.append, clear_globs=False)
            globs.update(test.globs)  # a DocTest runs in a copy: carry its names on
            if runner.failures:
                failures.append(f"{where}: doctest failed\n" + "".join(report))
            continue
        try:
            exec(compile(textwrap.dedent(b.code), where, "exec"), globs)  # noqa: S102
        except BaseException:  # noqa: BLE001 - report whatever the block raised
            failures.append(f"{where}: block raised\n{traceback.format_exc()}")
    return failures


# -- clojure -----------------------------------------------------------------

def _form_end(text: str) -> Optional[int]:
    """Index just past the first complete top-level form in ``text``, or None."""
    depth, i, n, started = 0, 0, len(text), False
    while i < n:
        c = text[i]
        if c == ";":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "\\" and started:
            i += 2
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            started = True
            if depth == 0:
                return i
            continue
        if c in "([{":
            depth += 1
            started = True
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif not c.isspace() and c not in "'`~@^#":
            if depth == 0:
                while i < n and not text[i].isspace() and text[i] not in "()[]{}\";":
                    i += 1
                return i
            started = True
        i += 1
    return None


def clojure_forms(code: str) -> str:
    """The code a clojure block contributes: its forms (transcripts: prompted forms).

    Lines that contribute nothing (a transcript's output and comments) become
    empty lines, so line numbers in errors are the page's.
    """
    lines = code.splitlines()
    if not any(_PROMPT.match(line) for line in lines):
        return code
    out = [""] * len(lines)
    i = 0
    while i < len(lines):
        m = _PROMPT.match(lines[i])
        if not m:
            i += 1
            continue
        text = m.group(2)
        j = i + 1
        while _form_end(text) is None and j < len(lines):
            text += "\n" + lines[j]
            j += 1
        end = _form_end(text)
        for k, part in enumerate((text[:end] if end is not None else text).split("\n")):
            out[i + k] = part
        i = j
    return "\n".join(out) + "\n"


_CLJ_DRIVER = r"""
(ns mxkv.docs-check
  (:require [clojure.java.io :as io]))

(defn- run-page [page blocks]
  (binding [*ns* (create-ns 'user)]
    (in-ns 'user)
    (clojure.core/refer-clojure)
    (loop [[[line code] & more] blocks]
      (if (nil? code)
        {:page page :ok true}
        (let [r (clojure.lang.LineNumberingPushbackReader. (java.io.StringReader. code))
              res (try
                    (loop []
                      (let [form (read {:eof ::eof} r)]
                        (when-not (= form ::eof)
                          (eval form)
                          (recur))))
                    nil
                    (catch Throwable t
                      {:page page :ok false :line (+ line (dec (.getLineNumber r)))
                       :error (str (.getName (class t)) ": " (.getMessage t)
                                   (when-let [d (not-empty (ex-data t))] (str " " (pr-str d))))}))]
          (or res (recur more)))))))

(let [pages (read-string (slurp (first *command-line-args*)))]
  (doseq [[page blocks] pages]
    (let [res (try (run-page page blocks)
                   (catch Throwable t {:page page :ok false :line 0 :error (str t)}))]
      (println (str "DOCS-CHECK " (pr-str res)))
      (flush)))
  (shutdown-agents)
  (System/exit 0))
"""


def _clj_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_clojure_pages(pages: Dict[str, List[Block]], mxkv_cmd: List[str],
                      timeout: float = 600) -> Dict[str, List[str]]:
    """Run every page's clojure blocks in one JVM; failures per page."""
    with tempfile.TemporaryDirectory(prefix="mxkv-docs-") as tmp:
        spec = "[" + " ".join(
            "[" + _clj_str(page) + " [" +
            " ".join(f"[{b.line} {_clj_str(clojure_forms(b.code))}]" for b in bl) + "]]"
            for page, bl in pages.items()) + "]"
        Path(tmp, "pages.edn").write_text(spec)
        Path(tmp, "driver.clj").write_text(_CLJ_DRIVER)
        proc = subprocess.run([*mxkv_cmd, "clj", "driver.clj", "pages.edn"], cwd=tmp,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        results: Dict[str, List[str]] = {page: [f"{page}: no result from the JVM "
                                                f"(exit {proc.returncode})\n{proc.stderr[-3000:]}"]
                                         for page in pages}
        for line in proc.stdout.splitlines():
            if not line.startswith("DOCS-CHECK "):
                continue
            page, ok, lineno, err = _parse_result(line[len("DOCS-CHECK "):])
            results[page] = [] if ok else [f"{page}:{lineno}: {err}"]
        return results


def _parse_result(edn: str):
    # The driver prints a flat map of strings, booleans and numbers.
    page = re.search(r':page "((?:[^"\\]|\\.)*)"', edn).group(1)
    ok = ":ok true" in edn
    m = re.search(r":line (\d+)", edn)
    e = re.search(r':error "((?:[^"\\]|\\.)*)"', edn)
    err = json.loads('"' + e.group(1) + '"') if e else ""
    return page.replace('\\"', '"').replace("\\\\", "\\"), ok, int(m.group(1)) if m else 0, err


def default_pages() -> List[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="*", type=Path)
    ap.add_argument("--list", action="store_true", help="print the blocks that would run")
    ap.add_argument("--python-page", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.python_page:  # one page's python blocks, in this interpreter
        failures = run_python_page(blocks(args.python_page, ("python",)))
        print("\n".join(failures))
        return 1 if failures else 0
    pages = args.pages or default_pages()
    if args.list:
        for p in pages:
            for b in blocks(p):
                print(f"{b.page}:{b.line} {b.lang}")
        return 0
    failures: List[str] = []
    clj: Dict[str, List[Block]] = {}
    for p in pages:
        bl = blocks(p)
        if any(b.lang == "python" for b in bl):
            failures += run_python_subprocess(p)
        cb = [b for b in bl if b.lang == "clojure"]
        if cb:
            clj[str(p)] = cb
    if clj:
        for errs in run_clojure_pages(clj, mxkv_command()).values():
            failures += errs
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


def run_python_subprocess(page: Path, timeout: float = 300) -> List[str]:
    """Run one page's python blocks in a fresh interpreter in a scratch
    directory, which is its temporary directory too (what a page makes with
    ``tempfile`` goes with the scratch directory)."""
    with tempfile.TemporaryDirectory(prefix="mxkv-docs-") as tmp:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                               "--python-page", str(Path(page).resolve())],
                              cwd=tmp, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1", TMPDIR=tmp),
                              stdin=subprocess.DEVNULL)
    if proc.returncode == 0:
        return []
    return [proc.stdout.strip() or f"{page}: exit {proc.returncode}\n{proc.stderr[-3000:]}"]


def mxkv_command() -> List[str]:
    """The ``mxkv`` launcher of this interpreter's environment."""
    exe = Path(sys.executable).with_name("mxkv")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "mxkv.cli"]


if __name__ == "__main__":
    sys.exit(main())
