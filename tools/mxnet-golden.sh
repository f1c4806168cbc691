#!/usr/bin/env bash
# Regenerate every golden file from the real Apache MXNet 1.9.1 (`make golden`):
#   tests/golden/parity.json          tools/mxnet_golden.py   (the parity scenarios)
#   tests/golden/optimizers.json      tools/golden_optimizers.py
#   tests/golden/exact.json           tools/golden_exact.py   (200 steps, bit for bit)
#   tests/golden/compression.json     tools/golden_compression.py
#   tests/golden/mxnet_states/        tools/golden_states.py  (optimizer states files)
#   tests/golden/clj_ops.json         tools/golden_clj_ops.py (a training step's operators)
#   tests/golden/differential.json.gz tools/differential.py golden (60 seeds x 200 calls)
#   tests/golden/nn_ops.json.gz       tools/golden_nn_ops.py  (the layer operators)
#   tests/golden/ops.json.gz          tools/golden_ops.py     (every table operator's cases)
#   tests/golden/op_surface.json      tools/golden_op_surface.py (mx.nd's names, parameters)
# Arguments are passed on to tools/mxnet_golden.py, e.g.
#   bash tools/mxnet-golden.sh --only 'push_sum_three_devices[local]'
# (with --only nothing is written, and the other generators do not run).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$(bash "$ROOT/tools/mxnet-venv.sh")"
cd "$ROOT"
"$PY" tools/mxnet_golden.py "$@"
case " $* " in *" --only "*) exit 0 ;; esac
"$PY" tools/golden_optimizers.py
"$PY" tools/golden_exact.py
"$PY" tools/golden_compression.py
"$PY" tools/golden_states.py
"$PY" tools/golden_clj_ops.py
"$PY" tools/golden_nn_ops.py
"$PY" tools/differential.py golden --seeds 60 --ops 200
"$PY" tools/golden_ops.py
"$PY" tools/golden_op_surface.py
