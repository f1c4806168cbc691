#!/usr/bin/env bash
# Create (once) a virtual environment holding the real Apache MXNet 1.9.1, and
# print its interpreter's path on stdout (everything else goes to stderr).
#
# Used by `make golden` (tools/mxnet-golden.sh) and by the benchmark suite to
# compare mxkv against MXNet itself:
#
#     PY=$(bash tools/mxnet-venv.sh) && "$PY" my_script.py
#
# MXNet 1.9.1 ships wheels for CPython <= 3.11 (we pin 3.11) and needs
# numpy < 1.24 (it uses np.bool and friends, removed in 1.24).
#
# Environment:
#   MXNET_VENV        where the venv lives (default: <repo>/.venv-mxnet)
#   MXNET_VENV_PYTHON the Python 3.11 to build it with (default: python3.11,
#                     else python3 when that is 3.11)
#   MXNET_VENV_EXTRA  extra pip requirements to install, space separated
#                     (e.g. "pytest" for a benchmark that needs it)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MXNET_VENV:-$ROOT/.venv-mxnet}"
MXNET_REQ="mxnet==1.9.1"
NUMPY_REQ="numpy<1.24"
EXTRA="${MXNET_VENV_EXTRA:-}"
PY="$VENV/bin/python"
STAMP="$VENV/.mxnet-venv-ok"
WANT="$(echo $MXNET_REQ $NUMPY_REQ $EXTRA)"

say() { echo "mxnet-venv: $*" >&2; }

is_py311() {
    "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' >/dev/null 2>&1
}

find_python() {
    local cand
    for cand in "${MXNET_VENV_PYTHON:-}" python3.11 python3; do
        [ -n "$cand" ] || continue
        command -v "$cand" >/dev/null 2>&1 || continue
        if is_py311 "$cand"; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

works() {
    [ -x "$PY" ] && is_py311 "$PY" && "$PY" -c '
import sys
import mxnet, numpy
ok = mxnet.__version__ == "1.9.1" and tuple(int(p) for p in numpy.__version__.split(".")[:2]) < (1, 24)
sys.exit(0 if ok else 1)' >/dev/null 2>&1
}

# Fast path: already built for the same requirements, and it still imports.
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && works; then
    echo "$PY"
    exit 0
fi

if [ ! -x "$PY" ] || ! is_py311 "$PY"; then
    BASE="$(find_python)" || {
        say "MXNet 1.9.1 needs Python 3.11 and none was found."
        have="absent"
        if command -v python3 >/dev/null 2>&1; then
            have="$(python3 --version 2>&1 | head -n 1 || true)"
        fi
        say "  tried: ${MXNET_VENV_PYTHON:+$MXNET_VENV_PYTHON, }python3.11, python3 ($have)"
        say "  install one (apt-get install python3.11 python3.11-venv, or pyenv install 3.11)"
        say "  or point MXNET_VENV_PYTHON at a Python 3.11 interpreter."
        exit 1
    }
    say "creating $VENV with $BASE ($("$BASE" --version 2>&1))"
    rm -rf "$VENV"
    "$BASE" -m venv "$VENV" || {
        say "could not create $VENV: install the venv module (apt-get install python3.11-venv)"
        exit 1
    }
fi

say "installing $WANT into $VENV"
# shellcheck disable=SC2086  # EXTRA is a space-separated list on purpose
"$PY" -m pip install -q --disable-pip-version-check "$MXNET_REQ" "$NUMPY_REQ" $EXTRA >&2 || {
    say "pip install failed (is the package index reachable?)"
    exit 1
}
works || {
    say "$PY cannot import mxnet 1.9.1 with numpy < 1.24 after installing"
    exit 1
}
echo "$WANT" >"$STAMP"
echo "$PY"
