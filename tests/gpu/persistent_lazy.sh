#!/usr/bin/env bash
# kernel.persistent and CUDA's module loading, run by scripts/gpu-check.sh:
#   bash tests/gpu/persistent_lazy.sh path/to/gcsh NP
# gcsh loads every kernel when CUDA starts (CUDA_MODULE_LOADING=EAGER unless
# the user set it): a lazily loaded kernel's first launch waits for every
# running kernel to end, and a resident never ends.  With LAZY set,
# kernel.persistent refuses, saying why, and the shell goes on: a kernel
# collective runs after the refusal.
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
. tests/sh/lib.sh

gcsh_pipe "$NP" '=os.getenv("CUDA_MODULE_LOADING")' --backend cuda
expect_all_ranks "EAGER when the user set nothing" "$OUT" "EAGER" "$NP"

SCRIPT='c = comm.world()
w = c:window(8)
w:tensor():fill(rank + 1)
ok, err = pcall(kernel.persistent, w)
=ok, err
t = kernel.allreduce(w, {algo = "oneshot"})
=t[0]'
export CUDA_MODULE_LOADING=LAZY
gcsh_pipe "$NP" "$SCRIPT" --backend cuda
unset CUDA_MODULE_LOADING
expect_eq "LAZY: the session ends cleanly" "$RC" 0
expect_contains "LAZY: kernel.persistent refuses, naming the variable and why" "$OUT" \
    "CUDA_MODULE_LOADING=LAZY: a kernel loaded while a resident runs waits for it to end, which it never does; unset it (gcsh loads every kernel at start)"
expect_all_ranks_match "LAZY: every rank refused" "$OUT" "false	.*CUDA_MODULE_LOADING=LAZY.*" "$NP"
expect_all_ranks "LAZY: a kernel collective runs after the refusal" "$OUT" "$((NP * (NP + 1) / 2)).0" "$NP"

finish
