#!/usr/bin/env bash
# The benchmark suite: mxkv against Apache MXNet 1.9.1, same workloads, one run.
#
#     bash benchmarks/run.sh quick   # `make bench-quick`: full sizes, few reps (1-2 min)
#     bash benchmarks/run.sh full    # `make bench`: many reps, then the sweeps
#     bash benchmarks/run.sh full --record   # `make bench-record`: also refresh
#                                            # benchmarks/results/ and docs/benchmarks.md
#     bash benchmarks/run.sh quick --only big_key_k4,resnet50_sgd   # (a full run with
#                                            # --only runs those rows, no sweeps)
#     bash benchmarks/run.sh sweeps [--quick] [--record] [--only keys,size,devices]
#                                    # `make bench-sweeps`: how cost grows (benchmarks/sweeps.py)
#     bash benchmarks/run.sh profile resnet50_sgd      # where mxkv spends a workload's time
#     bash benchmarks/run.sh dist      # `make bench-dist`: dist_sync jobs, MXNet vs mxkv on Ray
#     bash benchmarks/run.sh ops       # `make bench-ops`: operator calls (benchmarks/ops_bench.py)
#
# Results go to benchmarks/.results/ (untracked) unless --record is given.
# Exits non-zero when a row or sweep point errors or misses its target.
#
# Sets up what it needs: a venv with mxnet==1.9.1, numpy<1.24 and matplotlib
# (through tools/mxnet-venv.sh) for MXNet and the driver; mxkv runs in .venv.
#
# Environment:
#   BENCH_MXNET_VENV   the MXNet venv (default: benchmarks/.venv-mxnet)
#   BENCH_MXKV_PYTHON  the interpreter with mxkv installed (default: .venv/bin/python)
#   BENCH_MXKV_MODULE  the module on the mxkv side (default: mxkv; "mxnet" runs
#                      MXNet against itself in the MXNet venv, to check the harness)
#   BENCH_BRIDGE_CMD   the Clojure bridge benchmark to run (default: found in
#                      benchmarks/bridge/; see benchmarks/bridge_rows.py)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-quick}"
[ $# -gt 0 ] && shift

MODULE="${BENCH_MXKV_MODULE:-mxkv}"
KVPY="${BENCH_MXKV_PYTHON:-$ROOT/.venv/bin/python}"
if [ "$MODULE" != mxnet ] && [ ! -x "$KVPY" ]; then
    echo "bench: no $KVPY; run 'make setup' first (or set BENCH_MXKV_PYTHON)" >&2
    exit 1
fi

case "$MODE" in
    quick|full|dist|sweeps|ops) ;;
    profile)
        exec "$KVPY" "$ROOT/benchmarks/profile_mxkv.py" "$@" ;;
    *)
        echo "usage: bash benchmarks/run.sh quick|full|dist|sweeps|ops [options] | profile WORKLOAD" >&2
        exit 2 ;;
esac

export MXNET_VENV="${BENCH_MXNET_VENV:-$ROOT/benchmarks/.venv-mxnet}"
export MXNET_VENV_EXTRA="matplotlib"
MXPY="$(bash "$ROOT/tools/mxnet-venv.sh")"
# The harness check runs MXNet on both sides, so both use MXNet's venv.
if [ "$MODULE" = mxnet ] && [ -z "${BENCH_MXKV_PYTHON:-}" ]; then
    KVPY="$MXPY"
fi

if [ "$MODE" = ops ]; then    # operator calls, mxkv vs MXNet vs numpy: benchmarks/ops_bench.py
    exec "$KVPY" "$ROOT/benchmarks/ops_bench.py" --mxnet-python "$MXPY" "$@"
fi

if [ "$MODE" = dist ]; then   # whole distributed jobs, both sides: benchmarks/dist_bench.py
    exec "$MXPY" "$ROOT/benchmarks/dist_bench.py" --mxnet-python "$MXPY" --mxkv-python "$KVPY" "$@"
fi

sweeps() {   # benchmarks/sweeps.py: how cost grows with keys, size and devices
    "$MXPY" "$ROOT/benchmarks/sweeps.py" --mxnet-python "$MXPY" --mxkv-python "$KVPY" \
        --mxkv-module "$MODULE" "$@"
}

if [ "$MODE" = sweeps ]; then
    mode=full args=()
    for a in "$@"; do
        if [ "$a" = --quick ]; then mode=quick; else args+=("$a"); fi
    done
    sweeps --mode "$mode" "${args[@]}"
    exit
fi

rows=0
"$MXPY" "$ROOT/benchmarks/driver.py" --mode "$MODE" \
    --mxnet-python "$MXPY" --mxkv-python "$KVPY" \
    --mxkv-module "$MODULE" "$@" || rows=$?

# A full run goes on with the sweeps, unless it was asked for some rows only;
# they take the run's --record and --out.
if [ "$MODE" = full ] && [[ " $* " != *" --only "* && " $* " != *" --only="* ]]; then
    sweep_args=(--mode full)
    prev=""
    for a in "$@"; do
        case "$a" in
            --record) sweep_args+=("$a") ;;
            --out=*) sweep_args+=("$a") ;;
        esac
        [ "$prev" = --out ] && sweep_args+=(--out "$a")
        prev="$a"
    done
    sweeps_rc=0
    sweeps "${sweep_args[@]}" || sweeps_rc=$?
    [ "$rows" -ne 0 ] || rows=$sweeps_rc
fi
exit "$rows"
