#!/usr/bin/env bash
# The GPU check in at most five minutes, from a clean clone:
#
#   make gpu-check-quick        # or: bash tools/gpu-check-quick.sh
#
# 1. a venv (.venv-gpu) with mxkv, pytest and, on a GPU machine, only what
#    the GPU run needs (mxkv[gpu]: cupy-cuda12x, NVRTC, the CUDA runtime, NCCL);
# 2. the simulated part, everywhere: tests/gpu on simulated GPUs;
# 3. with a GPU: the requires_gpu tests on the real GPU(s), the same on 4
#    virtual GPUs (MXKV_VIRTUAL_GPUS=4), the stress test (tests/gpu/
#    test_gpu_stress.py) on both, and benchmarks/gpu_bench.py with two
#    repetitions (reduce, host copies, store push+pull rows);
# 4. one summary (gpu-check-summary.txt), printed at the end.
#
# Without a GPU it says so in one line and exits 0 after the simulated part.
# Exits non-zero when a step fails. Each step has its own time limit and the
# run has a budget of 295 s (GPU_CHECK_BUDGET): a step the budget cannot
# hold is reported as skipped and fails the run, so it ends within 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${GPU_VENV:-.venv-gpu}
LOG=${GPU_LOG:-gpu-check-quick.log}
SUMMARY=${GPU_SUMMARY:-gpu-check-summary.txt}
PY="$VENV/bin/python"
exec > >(tee "$LOG") 2>&1
start=$(date +%s)
status=0
: > "$SUMMARY.tmp"

note() { echo "$*" | tee -a "$SUMMARY.tmp"; }

BUDGET=${GPU_CHECK_BUDGET:-295}  # seconds for the whole run

# step NAME LIMIT_S CMD...: run within its limit and what is left of the
# budget; keep pytest's last line (or ok / the last line of a failure)
step() {
  local name=$1 limit=$2; shift 2
  local t0 out rc left
  t0=$(date +%s)
  left=$(( BUDGET - (t0 - start) ))
  [ "$left" -lt "$limit" ] && limit=$left
  echo "== $name"
  if [ "$limit" -lt 5 ]; then
    note "$(printf '%-32s skipped: the %ss budget is spent' "$name" "$BUDGET")"
    status=1
    return
  fi
  out=$(timeout "$limit" "$@" 2>&1); rc=$?
  echo "$out"
  local last
  last=$(echo "$out" | grep -E '[0-9]+ (passed|failed|error|skipped)|no tests ran' | tail -1)
  if [ -z "$last" ]; then
    if [ $rc -eq 0 ]; then last=ok; else last=$(echo "$out" | tail -1); fi
  fi
  [ $rc -eq 124 ] && last="timed out after ${limit}s"
  note "$(printf '%-32s rc=%-3s %4ss  %s' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$last")"
  [ $rc -eq 0 ] || status=1
}

gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  gpu=1
fi

note "gpu-check-quick $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git rev-parse --short HEAD 2>/dev/null)"
[ $gpu -eq 1 ] && note "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -4)"

if [ ! -x "$PY" ]; then
  "$PYTHON" -m venv "$VENV" || { echo "could not create $VENV (apt-get install python3-venv)"; exit 1; }
fi
extras=""
[ $gpu -eq 1 ] && extras="[gpu]"
step "install mxkv$extras pytest" 150 "$VENV/bin/pip" install -q -e ".$extras" "pytest>=7"

# The simulated part runs everywhere; the requires_gpu tests skip without a GPU.
step "simulated GPUs (tests/gpu)" 60 "$PY" -m pytest -q -p no:cacheprovider tests/gpu \
  -m "not requires_gpu"

if [ $gpu -eq 0 ]; then
  note "no GPU here (nvidia-smi finds none): ran the simulated part only; nothing ran on CUDA"
  mv "$SUMMARY.tmp" "$SUMMARY"
  exit $status
fi

# requires_gpu tests outside tests/gpu (GPU NDArray, context, compression kernels)
mapfile -t outside < <(grep -l 'requires_gpu' tests/test_*.py)
step "requires_gpu, real GPU(s)" 60 "$PY" -m pytest -q -rs -p no:cacheprovider \
  -m requires_gpu tests/gpu "${outside[@]}" --ignore=tests/gpu/test_gpu_stress.py
step "requires_gpu, 4 virtual GPUs" 60 env MXKV_VIRTUAL_GPUS=4 "$PY" -m pytest -q -rs \
  -p no:cacheprovider -m requires_gpu tests/gpu "${outside[@]}" \
  --ignore=tests/gpu/test_gpu_stress.py
step "stress, real GPU(s)" 40 "$PY" -m pytest -q -rs -s -p no:cacheprovider \
  tests/gpu/test_gpu_stress.py
step "stress, 4 virtual GPUs" 40 env MXKV_VIRTUAL_GPUS=4 "$PY" -m pytest -q -rs -s \
  -p no:cacheprovider tests/gpu/test_gpu_stress.py
bench=$(mktemp)
step "gpu_bench (2 repetitions)" 60 env GPU_BENCH_REPS=2 bash -c \
  "'$PY' benchmarks/gpu_bench.py | tee '$bench'"
grep '^{' "$bench" >> "$SUMMARY.tmp"
rm -f "$bench"

note "total $(( $(date +%s) - start ))s, $([ $status -eq 0 ] && echo 'all steps passed' || echo 'SOME STEPS FAILED')"
mv "$SUMMARY.tmp" "$SUMMARY"
echo "== summary ($SUMMARY)"
cat "$SUMMARY"
exit $status
