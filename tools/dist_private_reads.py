"""Private reads of the local store from ``kvstore/dist/``.

The distributed store embeds local stores (a shard keeps its parts in one;
the worker *is* one) and must use them through the narrow API
docs/architecture.md describes ("Contract: embedding a local store"), never
through their private fields: otherwise a change inside ``local.py`` breaks
the shards silently. This lists every such read:

* ``X._name`` where ``_name`` is a private attribute or method of a local
  :class:`~mxkv.kvstore.local.KVStore` (instance or class) or of an
  :class:`~mxkv.optimizer.Updater`, and ``X`` is anything but ``self`` /
  ``cls`` / ``super()`` (a store subclass, the worker, uses its own);
* ``X._data`` where ``X`` names a store (``kv``, ``store``, ``*.kv``,
  ``*store``): a store's values (``_data`` is also a row-sparse array's
  documented field, read freely);
* an object built with ``X.__new__`` (skipping its ``__init__``).

MXNet's own names for store methods (``_set_updater``, ``_barrier``,
``_send_command_to_servers``) are its API and not counted.

Usage: ``python tools/dist_private_reads.py`` prints the reads and exits 1
when there is one (tests/test_repo_hygiene.py runs it).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import List, Set

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "python" / "mxkv" / "kvstore" / "dist"

#: MXNet's public API spelled with an underscore
MXNET_API = {"_set_updater", "_barrier", "_send_command_to_servers"}
#: documented fields of the array types (docs/architecture.md, NDArray)
ARRAY_FIELDS = {"_data", "_indices", "_array", "_ctx", "_shape"}


def private_names() -> Set[str]:
    """The private attributes of a local store and of an Updater."""
    sys.path.insert(0, str(ROOT / "python"))
    from mxkv.kvstore.local import KVStore
    from mxkv.optimizer import SGD, Updater

    kv = KVStore("local")
    try:
        names = set(vars(kv))
    finally:
        kv.close()
    for cls in KVStore.__mro__ + (Updater,):
        names.update(vars(cls))
    names.update(vars(Updater(SGD())))
    return {n for n in names if n.startswith("_") and not n.startswith("__")} \
        - MXNET_API - ARRAY_FIELDS


def _is_store(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("kv", "store") or node.id.endswith("store")
    return isinstance(node, ast.Attribute) and (node.attr == "kv" or node.attr.endswith("store"))


def _own(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "super"


def reads(paths: List[Path]) -> List[str]:
    """``path:line: text`` of every private read in ``paths``."""
    names = private_names()
    out = []
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or _own(node.value):
                continue
            hit = node.attr == "__new__" or node.attr in names or \
                (node.attr == "_data" and _is_store(node.value))
            if hit:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                out.append((node.lineno, node.col_offset,
                            f"{where}:{node.lineno}: {ast.unparse(node)}"))
    return [line for _, _, line in sorted(out)]


def main() -> int:
    found = reads(sorted(DIST.glob("*.py")))
    for line in found:
        print(line)
    print(f"{len(found)} private read(s) of the local store in {DIST.relative_to(ROOT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
