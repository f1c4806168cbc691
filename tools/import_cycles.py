"""Find import cycles among python/mxkv's modules; fail on any not allowed.

Every import counts, at module level or inside a function (an import moved
into a function to dodge a cycle still ties the two modules together). Two
kinds of import are left out:

- what a package's ``__init__`` imports from its own submodules (re-exporting
  is how a package shows its API; it is not a dependency of the package's
  modules on each other);
- imports under ``if TYPE_CHECKING:`` (never run).

A name taken from a package (``from ..ndarray import NDArray``) is followed
through the package's ``__init__`` to the module that defines it, so going
through a package's front door does not hide a cycle.

A cycle is a strongly connected component of the import graph with more than
one module. ``tools/import_cycles_allow.txt`` lists today's known cycles, one
per line (its modules, separated by spaces); a cycle passes when all its
modules sit on one allowed line, so a cycle may shrink but not grow, and a new
one fails. Lines no cycle needs any more are reported for removal.

Usage::

    python tools/import_cycles.py            # check (exit 1 on a new cycle)
    python tools/import_cycles.py --list     # every cycle, with its edges
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "python"
PACKAGE = "mxkv"
ALLOW = Path(__file__).resolve().parent / "import_cycles_allow.txt"


def module_files(src: Path = SRC, package: str = PACKAGE) -> Dict[str, Path]:
    """Map each module name of ``package`` under ``src`` to its file."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterable[ast.stmt]:
    """Every import statement in ``tree``, at any depth, outside ``if TYPE_CHECKING``."""
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                stack.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


class Graph:
    """The import graph of one package."""

    def __init__(self, files: Dict[str, Path]) -> None:
        self.files = files
        self.modules: Set[str] = set(files)
        self.packages = {m for m, p in files.items() if p.name == "__init__.py"}
        self.trees = {m: ast.parse(p.read_text(), str(p)) for m, p in files.items()}
        self._exports: Dict[str, Dict[str, str]] = {}
        self.edges: Dict[str, Set[str]] = {m: set() for m in self.modules}
        for m in self.modules:
            for target in self._targets(m):
                if target != m and not self._is_reexport(m, target):
                    self.edges[m].add(target)

    def _is_reexport(self, source: str, target: str) -> bool:
        return source in self.packages and target.startswith(source + ".")

    def _base(self, module: str, level: int) -> str:
        parts = module.split(".")
        if module not in self.packages:
            parts.pop()
        for _ in range(level - 1):
            parts.pop()
        return ".".join(parts)

    def _from(self, module: str, node: ast.ImportFrom) -> Tuple[str, List[str]]:
        base = self._base(module, node.level) if node.level else ""
        name = ".".join(x for x in (base, node.module or "") if x)
        return name, [a.name for a in node.names]

    def exports(self, package: str) -> Dict[str, str]:
        """Names bound in a package's ``__init__``: name -> module that defines it."""
        if package in self._exports:
            return self._exports[package]
        self._exports[package] = out = {}
        for node in _imports(self.trees[package]):
            if isinstance(node, ast.ImportFrom):
                source, names = self._from(package, node)
                for alias in node.names:
                    bound = alias.asname or alias.name
                    target = self.resolve(source, alias.name)
                    if target is not None:
                        out[bound] = target
        return out

    def resolve(self, source: str, name: str) -> Optional[str]:
        """The module ``from source import name`` depends on (None outside the package)."""
        if f"{source}.{name}" in self.modules:
            return f"{source}.{name}"
        if source in self.packages and name in self.exports(source):
            return self.exports(source)[name]
        return source if source in self.modules else None

    def _targets(self, module: str) -> Iterable[str]:
        for node in _imports(self.trees[module]):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in self.modules:
                        yield alias.name
            else:
                source, names = self._from(module, node)
                for name in names:
                    target = self.resolve(source, name)
                    if target is not None:
                        yield target

    def cycles(self) -> List[List[str]]:
        """Strongly connected components with more than one module, each sorted."""
        index: Dict[str, int] = {}
        low: Dict[str, int] = {}
        on_stack: Set[str] = set()
        stack: List[str] = []
        out: List[List[str]] = []
        counter = [0]

        def visit(v: str) -> None:
            # Iterative Tarjan: (node, iterator over its successors).
            work = [(v, iter(sorted(self.edges[v])))]
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on_stack.add(v)
            while work:
                node, succ = work[-1]
                for w in succ:
                    if w not in index:
                        index[w] = low[w] = counter[0]
                        counter[0] += 1
                        stack.append(w)
                        on_stack.add(w)
                        work.append((w, iter(sorted(self.edges[w]))))
                        break
                    if w in on_stack:
                        low[node] = min(low[node], index[w])
                else:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        comp = []
                        while True:
                            w = stack.pop()
                            on_stack.discard(w)
                            comp.append(w)
                            if w == node:
                                break
                        if len(comp) > 1:
                            out.append(sorted(comp))

        for v in sorted(self.modules):
            if v not in index:
                visit(v)
        return sorted(out)


def read_allowlist(path: Path = ALLOW) -> List[Set[str]]:
    """The allowed cycles: one set of modules per non-comment line."""
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(set(line.split()))
    return out


def check(graph: Graph, allowed: List[Set[str]]) -> Tuple[List[List[str]], List[Set[str]]]:
    """(cycles no allowed line covers, allowed lines no cycle needs)."""
    cycles = graph.cycles()
    new = [c for c in cycles if not any(set(c) <= a for a in allowed)]
    stale = [a for a in allowed if not any(set(c) <= a for c in cycles)]
    return new, stale


def describe(graph: Graph, cycle: List[str]) -> str:
    """A cycle and the imports that close it, one per line."""
    members = set(cycle)
    lines = [" ".join(cycle)]
    for m in cycle:
        for t in sorted(graph.edges[m] & members):
            lines.append(f"    {m} -> {t}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print every cycle with its edges")
    args = parser.parse_args(argv)
    graph = Graph(module_files())
    cycles = graph.cycles()
    new, stale = check(graph, read_allowlist())
    if args.list:
        for c in cycles:
            print(describe(graph, c))
    print(f"import cycles: {len(cycles)} among {len(graph.modules)} modules "
          f"({sum(len(c) for c in cycles)} modules in a cycle)")
    for a in stale:
        print(f"note: allowed cycle no longer found, remove its line from {ALLOW.name}: "
              f"{' '.join(sorted(a))}")
    if new:
        print(f"FAIL: {len(new)} import cycle(s) not in {ALLOW.relative_to(ROOT)}; break them "
              f"(move the shared part into a module both can import):", file=sys.stderr)
        for c in new:
            print(describe(graph, c), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
