#!/usr/bin/env bash
# The routed collectives at 4 ranks sharing one GPU (issue 40, "a shared GPU
# at kernel speed"): c:allreduce, c:reducescatter, c:allgather, c:broadcast
# on device tensors take gcsh's kernels through a staging window when ranks
# share a GPU (bind/comm_route.c).
#
#   bash scripts/gpu-shared.sh GCSH [RANKS=4]
#
# GCSH is the built gcsh (a cuda build).  Runs tests/gpu/shared_route.lua
# under mpirun as scripts/gpu-check.sh's shared configurations do
# (GCSH_SHARE_GPU=1: a private MPS daemon for the job; CUDA_VISIBLE_DEVICES=0):
#   1. values: the kernel route against algo="nccl" for f32 f16 bf16 i32,
#      ops sum max min prod, 8 B to 64 MiB a rank and odd counts, the four
#      calls; an exact i32 formula; a captured call's replays; the staging
#      window freed with split communicators;
#   2. times: c:allreduce at 8 B, 4 KiB, 64 KiB on both routes, back to back
#      under one timer after warm-up, checks off (bench.time), the worst
#      rank's mean: PASS when the kernel route takes <= 12 us a call;
#   3. with a GPU a rank (when there are RANKS GPUs): the same figures,
#      printed for the default's decision, and fewer values;
#   4. fewer values once more under compute-sanitizer memcheck at 2 ranks,
#      when compute-sanitizer is there.
# Prints PASS/FAIL lines and "N passed, N failed"; exits 1 when any failed.
# Well under 4 minutes on an H100.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

GCSH=${1:?usage: gpu-shared.sh GCSH [RANKS]}
NP=${2:-4}
cd "$(dirname "$0")/.."
ROOT=$PWD
GCSH=$(cd "$(dirname "$GCSH")" && pwd)/$(basename "$GCSH")
[ -x "$GCSH" ] || { echo "gpu-shared: $GCSH is not an executable"; echo "0 passed, 1 failed"; exit 1; }
LOGS=${GCSH_LOG_DIR:-$(mktemp -d /tmp/gpu-shared.XXXXXX)}
mkdir -p "$LOGS"
export LUA_PATH="$ROOT/tests/lua/?.lua;$ROOT/tests/gpu/lib/?.lua;${LUA_PATH:-;}"

base=(mpirun -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST
      -x LUA_PATH)
[ "$(id -u)" = 0 ] && base+=(--allow-run-as-root)
# GCSH_SHARED_QUICK=1: fewer sizes everywhere (a dry run of this script on a
# machine without a GPU, where gcsh runs its host backend)
[ -n "${GCSH_SHARED_QUICK:-}" ] && base+=(-x GCSH_SHARED_QUICK)
mpi=("${base[@]}" -x GCSH_SHARE_GPU=1 -x CUDA_VISIBLE_DEVICES=0)
passed=0 failed=0

# run NAME SECONDS COMMAND...: PASS when it exits 0; each "time" line it
# prints is a check of its own (its PASS or FAIL against the target)
run() {
    local name=$1 limit=$2 log="$LOGS/${1// /_}.log" t0=$SECONDS rc line
    shift 2
    timeout "$limit" "$@" >"$log" 2>&1
    rc=$?
    grep -E '^(\[[0-9,-]+\] )?shared_route:' "$log" | sed 's/^/      /'
    while IFS= read -r line; do
        case "$line" in
        *PASS*) passed=$((passed + 1)); echo "PASS  ${line#*time }" ;;
        *FAIL*) failed=$((failed + 1)); echo "FAIL  ${line#*time }" ;;
        *) echo "info  ${line#*time }" ;;
        esac
    done < <(grep -E '^(\[[0-9,-]+\] )?time ' "$log")
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
        printf 'PASS  %-44s %3ds\n' "$name" $((SECONDS - t0))
    else
        failed=$((failed + 1))
        printf 'FAIL  %-44s rc=%d%s\n' "$name" "$rc" "$([ $rc = 124 ] && echo " (timed out after ${limit}s)")"
        grep -E 'check failed|error|Error' "$log" | head -12 | sed 's/^/      /'
        echo "      --- last lines of $log"
        tail -8 "$log" | sed 's/^/      /'
    fi
}

# a plain mpirun does not wait for the job's MPS daemon to go, as gcsh -n
# does: the next job must not meet it on the GPU (scripts/gpu-check.sh)
wait_no_folders() {
    for _ in $(seq 150); do
        ls -d /tmp/gcsh-mps-"$(id -u)"-* >/dev/null 2>&1 || return 0
        sleep 0.1
    done
}

nvidia-smi -L 2>/dev/null | head -1
echo "gpu-shared: $NP ranks sharing GPU 0; logs in $LOGS"

run "values and times, $NP shared ranks" 120 \
    "${mpi[@]}" -x GCSH_SHARED_TIMES=1 -np "$NP" "$GCSH" tests/gpu/shared_route.lua
wait_no_folders

# Dedicated GPUs, for the default's decision (auto routes only shared GPUs):
# the same figures with a GPU a rank, {algo="kernel"} against NCCL.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${ngpu:-0}" -ge "$NP" ]; then
    list=$(seq -s, 0 $((NP - 1)))
    run "dedicated GPUs, $NP ranks (figures, small values)" 60 \
        "${base[@]}" -x GCSH_SHARE_GPU=0 -x CUDA_VISIBLE_DEVICES="$list" \
        -x GCSH_SHARED_QUICK=1 -x GCSH_SHARED_TIMES=1 -x GCSH_SHARED_TARGET_US=none \
        -np "$NP" "$GCSH" tests/gpu/shared_route.lua
fi

# as gpu-check.sh runs it: only gcsh instrumented, API errors not reported
# (NCCL probes kernel images of other architectures)
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$SANITIZER" ]; then
    run "memcheck, 2 shared ranks (small sizes)" 60 \
        "${mpi[@]}" -x GCSH_SHARED_QUICK=1 -np 2 \
        "$SANITIZER" --tool memcheck --error-exitcode 3 --report-api-errors no \
        --target-processes application-only "$GCSH" tests/gpu/shared_route.lua
    wait_no_folders
else
    echo "gpu-shared: no compute-sanitizer here: its run skipped"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
