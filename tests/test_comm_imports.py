"""The comm modules import each other in one direction only (issue 22): the
copy primitives live in comm/copies.py, which base.py and peer.py both use,
so neither needs the other."""
import ast
from pathlib import Path

import mxkv.kvstore.comm as comm_pkg

COMM = Path(comm_pkg.__file__).parent


def _imports():
    graph = {}
    for f in COMM.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):  # function-level imports too
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                deps.add(node.module.split(".")[0])
        graph[f.stem] = deps
    return graph


def test_the_comm_modules_have_no_import_cycle():
    graph = _imports()
    cycles = []

    def walk(node, path):
        for dep in graph.get(node, ()):
            if dep in path:
                cycles.append(path[path.index(dep):] + [dep])
            else:
                walk(dep, path + [dep])

    for start in graph:
        walk(start, [start])
    assert cycles == []


def test_copies_live_in_one_module():
    graph = _imports()
    assert "copies" in graph["base"] and "copies" in graph["peer"]
    assert "peer" not in graph["base"] and "base" not in graph["peer"]
    for name in ("copy_array", "copy_peer", "copy_staged"):
        defined = [f.stem for f in COMM.glob("*.py")
                   if f"def {name}(" in f.read_text()]
        assert defined == ["copies"], (name, defined)
