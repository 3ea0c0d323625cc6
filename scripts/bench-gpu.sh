#!/usr/bin/env bash
# Collective benchmarks on a GPU machine, after scripts/gpu-check.sh built
# build-gpu/gcsh there: at 2 ranks, and at 4 when 4 GPUs are visible,
#   1. bench.overhead: the NCCL all-reduce loop issued from Lua against the
#      same loop in C (c:loop), in one run, at 8 B, 1 MiB, 64 MiB and 1 GiB;
#   2. bench.collective: NCCL all-reduce f32 sum, 8 B .. 1 GiB, nccl-tests columns.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.."
GCSH=${GCSH:-build-gpu/gcsh}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
mpi=(mpirun -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
counts=(2)
[ "$ngpu" -ge 4 ] && counts+=(4)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1
for np in "${counts[@]}"; do
    echo "== $np ranks: Lua-issued all-reduce against the C loop (c:loop)"
    "${mpi[@]}" -np "$np" "$GCSH" -e 'require("gcsh.bench").overhead{
        sizes = {8, 1 << 20, 64 << 20, 1 << 30}, iters = 50, reps = 3 }'
    echo "== $np ranks: bench.collective all-reduce f32"
    "${mpi[@]}" -np "$np" "$GCSH" -e 'require("gcsh.bench").collective{
        op = "allreduce", min = 8, max = 1 << 30, factor = 8, iters = 20, warmup = 5, check = true }'
done
