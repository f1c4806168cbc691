#!/usr/bin/env bash
# Regenerate tests/golden/parity.json with the real Apache MXNet 1.9.1
# (`make golden`). Arguments are passed on to tools/mxnet_golden.py, e.g.
#   bash tools/mxnet-golden.sh --only 'push_sum_three_devices[local]'
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$(bash "$ROOT/tools/mxnet-venv.sh")"
cd "$ROOT"
exec "$PY" tools/mxnet_golden.py "$@"
