#!/usr/bin/env bash
# What a split costs on GPUs (issue 35): scripts/gpu-split.lua under mpirun,
# at 4 GPUs, 2 GPUs and 4 ranks sharing GPU 0, each with splits that share
# their parent's NCCL resources (GCSH_SPLIT_SHARE=1) and splits that do not
# (0, the default).  Per rank and variant: seconds a round after 10
# warm-up rounds, RSS and device memory growth, PASS/FAIL against <= 0.2 s a
# round and <= 1 MiB of RSS per 100 rounds; the done-when row (allreduce at
# 4 GPUs) first.  Variants: free (split + free), barrier (+ a barrier, no
# twin), allreduce (+ an all-reduce on a device tensor: the twin is made).
# Then tests/gpu/split_lazy.lua with and without sharing, and a row with
# NCCL_RUNTIME_CONNECT=1 (informative, not counted), time permitting.
# Prints "DONE-WHEN ... PASS|FAIL" per sharing setting; exits 1 on a FAIL.
#
#   bash scripts/gpu-split.sh build/gcsh      (as root: --allow-run-as-root)
#
# Each run stops a variant after its cap (seconds, warm-up included; the
# done-when row has the most) and says how many rounds ran; the whole
# script stays under 4 minutes.
# GPU_SPLIT_LOGS: where the logs go (default /tmp/gpu-split-logs);
# GPU_SPLIT_BACKEND=host runs the same jobs on the CPUs (the script's test).
set -u
GCSH=${1:?usage: scripts/gpu-split.sh PATH/TO/gcsh}
GCSH=$(cd "$(dirname "$GCSH")" && pwd)/$(basename "$GCSH")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LUA=$ROOT/scripts/gpu-split.lua
LOGS=${GPU_SPLIT_LOGS:-/tmp/gpu-split-logs}
BACKEND=${GPU_SPLIT_BACKEND:-cuda}
mkdir -p "$LOGS"
[ -x "$GCSH" ] || { echo "gpu-split: $GCSH is not an executable"; exit 2; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${ngpu:-0}" -ge 1 ] || { echo "gpu-split: no GPU visible (nvidia-smi -L lists none)"; exit 2; }

export NCCL_NVLS_ENABLE=0 # never multicast (src/DESIGN.md, safety rules)
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} # NCCL's warnings land in the logs
mpi=(mpirun -x NCCL_NVLS_ENABLE -x NCCL_DEBUG)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
T0=$SECONDS
failures=0

# The MPS folder of a shared run goes after its job (a plain mpirun does
# not wait for it, as gcsh -n does): the next job must not meet it.
wait_no_mps() {
    for _ in $(seq 150); do
        ls -d /tmp/gcsh-mps-"$(id -u)"-* >/dev/null 2>&1 || return 0
        sleep 0.1
    done
}

# run LABEL NP SHARE CAP VARIANTS [ENV=VALUE...]: one job; its PASS/FAIL
# lines, or why it ended without them.
run() {
    local label=$1 np=$2 share=$3 cap=$4 variants=$5
    shift 5
    local extra=() kv
    for kv in "$@"; do extra+=(-x "$kv"); done
    [ "$(nproc)" -lt "$np" ] && extra+=(--oversubscribe) # a small test machine
    local log="$LOGS/split-$label-share$share.log"
    local nvar v caps=0
    nvar=$(tr ',' '\n' <<<"$variants" | grep -c .)
    for v in ${variants//,/ }; do # NAME:CAP has a cap of its own
        if [ "$v" != "${v#*:}" ]; then caps=$((caps + ${v#*:})); else caps=$((caps + cap)); fi
    done
    local limit=$((caps + 30))
    local t=$SECONDS
    GCSH_SPLIT_SHARE=$share GPU_SPLIT_CAP=$cap GPU_SPLIT_VARIANTS=$variants \
        GPU_SPLIT_LABEL="$label/share=$share" \
        timeout -k 10 "$limit" "${mpi[@]}" -np "$np" -x GCSH_SPLIT_SHARE -x GPU_SPLIT_CAP \
        -x GPU_SPLIT_VARIANTS -x GPU_SPLIT_LABEL "${extra[@]}" "$GCSH" --backend "$BACKEND" "$LUA" \
        >"$log" 2>&1
    local rc=$?
    grep -E '^(\[[0-9]+\] )?config ' "$log" | sed 's/^\[[0-9]*\] //'
    grep -E '^(\[[0-9]+\] )?(PASS|FAIL) ' "$log" | sed 's/^\[[0-9]*\] //' | sort -s -k2,2
    local fails
    fails=$(grep -cE '^(\[[0-9]+\] )?FAIL ' "$log")
    local want=$((np * nvar)) got
    got=$(grep -cE '^(\[[0-9]+\] )?(PASS|FAIL) ' "$log")
    if [ "$rc" != 0 ] || [ "$got" != "$want" ]; then
        echo "FAIL $label share=$share: the job ended with status $rc after $((SECONDS - t)) s" \
             "($got of $want result lines$([ "$rc" = 124 ] && echo ", timed out after ${limit} s")); last lines of $log:"
        grep -E 'NCCL WARN|error|Error|FAIL' "$log" | grep -vE '^(\[[0-9]+\] )?FAIL ' | head -12 | sed 's/^/    /'
        tail -6 "$log" | sed 's/^/    /'
        [ -z "${INFORMATIVE:-}" ] && failures=$((failures + 1))
    fi
    [ "$fails" -gt 0 ] && [ -z "${INFORMATIVE:-}" ] && failures=$((failures + 1))
    echo "  ($label share=$share: $((SECONDS - t)) s; $((SECONDS - T0)) s so far)"
    wait_no_mps
}

echo "gpu-split: $ngpu GPU(s), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); logs in $LOGS"
if [ "$ngpu" -ge 4 ]; then
    echo "== 4 GPUs (the done-when: allreduce, <= 0.2 s a round, <= 1 MiB RSS per 100 rounds)"
    run 4gpu 4 1 12 allreduce:30,free,barrier
    run 4gpu 4 0 12 allreduce,free,barrier
    for share in 1 0; do
        log="$LOGS/split-4gpu-share$share.log"
        ok=$(grep -cE '^(\[[0-9]+\] )?PASS allreduce ' "$log")
        echo "DONE-WHEN 4 GPUs, allreduce, GCSH_SPLIT_SHARE=$share:" \
             "$([ "$ok" = 4 ] && echo PASS || echo "FAIL ($ok of 4 ranks passed)")"
    done
fi
if [ "$ngpu" -ge 2 ]; then
    echo "== 2 GPUs"
    run 2gpu 2 1 10 allreduce,free
    run 2gpu 2 0 8 allreduce,free
fi
echo "== 4 ranks sharing GPU 0 (GCSH_SHARE_GPU=1)"
run 4shared 4 0 10 allreduce GCSH_SHARE_GPU=1 CUDA_VISIBLE_DEVICES=0
run 4shared 4 1 10 allreduce GCSH_SHARE_GPU=1 CUDA_VISIBLE_DEVICES=0
# The lazy twin and the sharing family on GPUs (tests/gpu/split_lazy.lua:
# send/recv and barrier before the twin, a captured first collective, a
# parent freed before its split, a new world), while time is left.
np=$((ngpu >= 4 ? 4 : ngpu))
for share in 0 1; do
    if [ $((SECONDS - T0)) -gt 200 ]; then
        echo "SKIP tests/gpu/split_lazy.lua share=$share: no time left"; continue
    fi
    log="$LOGS/split_lazy-share$share.log"
    extra=()
    [ "$(nproc)" -lt "$np" ] && extra+=(--oversubscribe)
    if GCSH_SPLIT_SHARE=$share LUA_PATH="$ROOT/tests/lua/?.lua;;" timeout -k 10 40 \
        "${mpi[@]}" -np "$np" -x GCSH_SPLIT_SHARE -x LUA_PATH "${extra[@]}" \
        "$GCSH" --backend "$BACKEND" "$ROOT/tests/gpu/split_lazy.lua" >"$log" 2>&1; then
        echo "PASS tests/gpu/split_lazy.lua np=$np share=$share"
    else
        echo "FAIL tests/gpu/split_lazy.lua np=$np share=$share (status $?); last lines of $log:"
        grep -E 'NCCL WARN|check failed|error' "$log" | head -8 | sed 's/^/    /'
        tail -6 "$log" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
done
# Where a split's time goes without sharing: NCCL connecting every
# algorithm's peers when a communicator is made (gcsh sets
# NCCL_RUNTIME_CONNECT=0, cuda_backend.c says why); the same rounds with
# NCCL connecting at the first call instead.  Informative, time permitting.
if [ "$ngpu" -ge 4 ] && [ $((SECONDS - T0)) -le 190 ]; then
    echo "== 4 GPUs, NCCL_RUNTIME_CONNECT=1 (informative: the cost of connecting at set-up)"
    INFORMATIVE=1 run 4gpu-lazyconnect 4 0 10 allreduce NCCL_RUNTIME_CONNECT=1
fi
echo "gpu-split: done in $((SECONDS - T0)) s; $failures job(s) with a FAIL"
[ "$failures" = 0 ]
