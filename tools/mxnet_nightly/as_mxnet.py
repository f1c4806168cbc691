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

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mxnet_unittests", "shim")


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
    names = runpy.run_path(script, run_name="__main__" if not calls else "nightly")
    for name in calls:
        names[name]()


if __name__ == "__main__":
    main()
