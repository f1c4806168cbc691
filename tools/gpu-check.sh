#!/usr/bin/env bash
# The real-GPU check, in one command (about 3-6 minutes on a fresh machine):
#
#   bash tools/gpu-check.sh            # or: make gpu-check
#
# 1. makes .venv-gpu with mxkv[gpu,test] (cupy-cuda12x with NVRTC, NCCL);
# 2. runs every Python test on the real GPU(s): the requires_gpu tests run
#    here, and the simulated-GPU tests run as they do in CI;
# 3. runs the requires_gpu tests again on 4 virtual GPUs (MXKV_VIRTUAL_GPUS=4);
# 4. runs benchmarks/gpu_bench.py: device reduce of 4 x 256 MB against the
#    measured device-to-device copy bandwidth, and the 2-bit kernels' speed.
#
# Output goes to the terminal and to gpu-check.log. Exits non-zero if a
# test fails. Needs an NVIDIA driver for CUDA 12; nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${GPU_VENV:-.venv-gpu}
LOG=${GPU_LOG:-gpu-check.log}
exec > >(tee "$LOG") 2>&1

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e '.[gpu,test]'
"$VENV/bin/python" -c "import mxkv, cupy; from cupy.cuda import nccl; print('cupy', cupy.__version__, 'gpus', mxkv.context.num_gpus(), 'nccl', nccl.available)"

echo "== tests on the real GPU(s)"
"$VENV/bin/python" -m pytest -q -rs tests --ignore=tests/test_bridge_py4j.py
echo "== requires_gpu tests on 4 virtual GPUs"
MXKV_VIRTUAL_GPUS=4 "$VENV/bin/python" -m pytest -q -rs -m requires_gpu tests
echo "== bandwidth benchmark"
"$VENV/bin/python" benchmarks/gpu_bench.py
