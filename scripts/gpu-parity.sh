#!/usr/bin/env bash
# The cuda backend gives the host's results and messages (issue 37's
# done-when): the CI tests of the option checks, u64 signals, out= and the
# strict multicast rules run on GPUs, on windows of each kind that works
# there, at 4 ranks with a GPU each and at 4 ranks sharing one GPU.  The
# tests compare values and message text exactly, so a pass here is the
# host's wording on cuda.
#
#   bash scripts/gpu-parity.sh BUILD/gcsh      (from anywhere; gcsh built)
#
# Prints "PASS|FAIL <test> kind=<kind> <config>  <seconds>", a failure's
# log lines, and last "N passed, N failed"; exit 1 when any failed.
# GCSH_PARITY_CONFIGS="4 4s1" chooses the configurations: "N" N ranks with
# a GPU each, "Ns1" N ranks sharing GPU 0 (GCSH_SHARE_GPU=1: gcsh starts a
# private MPS daemon, as gcsh -n N --share-gpu does).  The same files run in
# scripts/gpu-check.sh's per-kind loop.  Then two sessions:
# tests/gpu/wait_note.sh (a stuck s:wait{cpu=true}'s hang report names the
# word's value now, as the host's does) and tests/gpu/evidence.sh (after
# an abort a window of kind vmm stays readable, kernel.reduce_peers too;
# one of kind nccl refuses every read, saying why: NCCL unmapped it).
set -uo pipefail

# NVLink multicast stays off, whatever the caller's environment says
# (src/DESIGN.md's safety rules): multicast is emulated, strictly.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
unset GCSH_MULTICAST

[ $# -ge 1 ] && [ -x "$1" ] || { echo "usage: $0 BUILD/gcsh (an executable gcsh)" >&2; exit 2; }
GCSH=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
LOGS=${GCSH_LOG_DIR:-/tmp/gcsh-parity-logs}
TIMEOUT=${GCSH_TEST_TIMEOUT:-90}
mkdir -p "$LOGS"

# The parity set (tests/lua, written against the default window kind, or
# KERNEL_TEST_KIND; `-l window_kind` makes GCSH_TEST_KIND the default).
TESTS=(tests/lua/options_checked.lua tests/lua/signal_u64.lua tests/lua/signal_fetch_add.lua
       tests/lua/kernel_out.lua tests/lua/mcast_emulated.lua)

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${ngpu:-0}" -lt 1 ]; then echo "FAIL no GPU visible (nvidia-smi -L lists none)"; echo "0 passed, 1 failed"; exit 1; fi
if [ -n "${GCSH_PARITY_CONFIGS:-}" ]; then read -r -a configs <<<"$GCSH_PARITY_CONFIGS"
elif [ "$ngpu" -ge 4 ]; then configs=(4 4s1)
else configs=("$ngpu" 4s1)
fi

base_mpi=(mpirun -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST)
[ "$(id -u)" = 0 ] && base_mpi+=(--allow-run-as-root)
LUA_TESTS="$ROOT/tests/lua/?.lua;$ROOT/tests/gpu/lib/?.lua;${LUA_PATH:-;}"
passed=0 failed=0

# a shared job's MPS daemon folder goes when its watcher is done: the next
# job must not meet it on the GPU
wait_no_folders() {
    for _ in $(seq 150); do
        ls -d /tmp/gcsh-mps-"$(id -u)"-* >/dev/null 2>&1 || return 0
        sleep 0.1
    done
}

for cfg in "${configs[@]}"; do
    np=${cfg%s1}
    mpi=("${base_mpi[@]}" -np "$np")
    [ "$cfg" != "$np" ] && mpi+=(-x GCSH_SHARE_GPU=1 -x CUDA_VISIBLE_DEVICES=0)
    label="np=$np$([ "$cfg" != "$np" ] && echo ' sharing GPU 0')"
    kinds=$("${mpi[@]}" env LUA_PATH="$LUA_TESTS" "$GCSH" tests/gpu/lib/kinds.lua 2>&1 |
        sed -n 's/^\(\[0\] \)\{0,1\}kinds: //p' | tail -n 1)
    wait_no_folders
    if [ -z "$kinds" ]; then
        echo "FAIL window kinds at $label: none found (tests/gpu/lib/kinds.lua)"
        failed=$((failed + 1))
        continue
    fi
    echo "parity: $label: window kinds here: $kinds"
    for kind in $kinds; do
        for t in "${TESTS[@]}"; do
            log="$LOGS/$(basename "$t" .lua).$kind.$cfg.log"
            t0=$SECONDS
            if timeout "$TIMEOUT" "${mpi[@]}" env GCSH_TEST_KIND="$kind" LUA_PATH="$LUA_TESTS" \
                "$GCSH" -l window_kind "$t" >"$log" 2>&1; then
                passed=$((passed + 1))
                printf 'PASS %-32s kind=%-4s %s  %ds\n' "$t" "$kind" "$label" $((SECONDS - t0))
            else
                rc=$?
                failed=$((failed + 1))
                printf 'FAIL %-32s kind=%-4s %s  rc=%d%s\n' "$t" "$kind" "$label" "$rc" \
                    "$([ $rc = 124 ] && echo " (timed out after ${TIMEOUT}s)")"
                grep -E 'check failed|rror' "$log" | head -8 | sed 's/^/      /'
            fi
            [ "$cfg" != "$np" ] && wait_no_folders
        done
    done
    # sessions (gcsh -n): a stuck s:wait{cpu=true}'s hang report, and an
    # aborted communicator's window read, in the host's words
    share_env=()
    [ "$cfg" != "$np" ] && share_env=(GCSH_SHARE_GPU=1 CUDA_VISIBLE_DEVICES=0)
    for t in tests/gpu/wait_note.sh tests/gpu/evidence.sh; do
        log="$LOGS/$(basename "$t" .sh).$cfg.log"
        t0=$SECONDS
        env "${share_env[@]}" timeout "$TIMEOUT" bash "$t" "$GCSH" "$np" >"$log" 2>&1
        if [ $? = 0 ] && grep -qE '^[1-9][0-9]* passed, 0 failed' "$log"; then
            passed=$((passed + 1))
            printf 'PASS %-32s %s  %ds\n' "$t" "$label" $((SECONDS - t0))
        else
            failed=$((failed + 1))
            printf 'FAIL %-32s %s\n' "$t" "$label"
            grep -E '^FAIL' -A6 "$log" | head -20 | sed 's/^/      /'
        fi
        [ "$cfg" != "$np" ] && wait_no_folders
    done
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
