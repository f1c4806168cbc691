"""Run one of MXNet's scripts with ``import mxnet`` giving mxkv.

    python tools/mxnet_nightly/as_mxnet.py [--call F,G] SCRIPT [ARGS ...]

Installs the aliases of ``tools/mxnet_unittests/shim`` (``mxnet`` and its
submodules are mxkv's, ``mxnet.test_utils`` is mxkv's stand-in), puts the
script's directory first on ``sys.path`` (MXNet's nightly scripts import
their neighbours) and runs it as ``__main__``; with ``--call``, runs it as a
module instead and calls the named functions in order (to leave out a
script's cases that mxkv does not claim, such as gluon's).
"""
from __future__ import annotations

import os
import runpy
import sys
import tempfile

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mxnet_unittests", "shim")

#: Python 2 left-overs in MXNet 1.9.1's nightly scripts that fail on Python 3
#: with MXNet itself, fixed as Python 3 needs before the script runs. MXNet
#: 1.9.1's ``reshape((1.0, 2))`` raises TypeError ("'float' object cannot be
#: interpreted as an integer"), and so does mxkv's; ``num_rows/2`` was an
#: int on Python 2.
PY3_FIXES = {
    "dist_sync_kvstore.py": [("reshape((num_rows/2, 2))", "reshape((num_rows//2, 2))")],
}


def py3_script(script: str) -> str:
    """``script``, or a copy with its :data:`PY3_FIXES` applied (each must match)."""
    fixes = PY3_FIXES.get(os.path.basename(script))
    if not fixes:
        return script
    with open(script) as f:
        source = f.read()
    for old, new in fixes:
        if old not in source:
            raise SystemExit(f"{script}: expected {old!r} (is this MXNet 1.9.1's script?)")
        source = source.replace(old, new)
    fd, path = tempfile.mkstemp(prefix="py3-", suffix="-" + os.path.basename(script))
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return path


def main() -> None:
    argv = sys.argv[1:]
    calls = []
    if argv[:1] == ["--call"] and len(argv) > 1:
        calls, argv = argv[1].split(","), argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    script = os.path.abspath(argv[0])
    sys.path.insert(0, os.path.abspath(SHIM))
    import conftest  # noqa: F401  - installs the mxnet aliases on import

    sys.path.insert(0, os.path.dirname(script))
    sys.argv = [script, *argv[1:]]
    runnable = py3_script(script)
    try:
        names = runpy.run_path(runnable, run_name="__main__" if not calls else "nightly")
    finally:
        if runnable != script:
            os.unlink(runnable)
    for name in calls:
        names[name]()


if __name__ == "__main__":
    main()
