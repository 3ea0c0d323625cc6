#!/usr/bin/env bash
# What a 4-GPU machine is needed for (issues 35, 40 and 41), in parts that
# each fit a device call of 10 minutes, logs under $OUT (or build-gpu/four):
#
#   GCSH_FOUR_PARTS="check soak" bash scripts/gpu-four.sh
#
#   check   scripts/gpu-check.sh at 4 GPUs and 4 ranks sharing 2 (every GPU
#           test, Ctrl-C during persistent all-reduces among them:
#           tests/gpu/faults.sh; the sanitizer runs at 4 ranks)
#   soak    the soak's long form at 4 GPUs (tests/gpu/soak.lua,
#           GCSH_SOAK_ROUNDS, default 600): RSS, fds, threads, /dev/shm and
#           device memory flat after the warm-up (issue 35)
#   multi   every all-reduce algorithm (ll128 among them) and collective
#           against nccl-tests in one job (GCSH_BENCH_ONLY=multi; issue 40's
#           4-GPU table, auto's 4-rank row: the crossovers it prints)
#   graph   the persistent all-reduce rung from graphs and every algorithm
#           from graphs against nccl-tests -R 2 -G 100 (GCSH_BENCH_ONLY=graph)
#   shared  4 ranks sharing one GPU against nccl-tests run the same way
#           (GCSH_BENCH_ONLY=shared)
#   nodes   2 simulated nodes of 2 GPUs (scripts/gpu-nodes.sh: hier against
#           nccl-tests with the same host ids; issue 41)
# Each part's last lines are printed; the whole log is in its file.  The
# build is scripts/gpu-check.sh's (GCSH_GPU_TESTS=none builds only), made
# once by the first part that needs it.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUTDIR=${OUT:-build-gpu/four}
mkdir -p "$OUTDIR"
parts=${GCSH_FOUR_PARTS-check soak multi graph shared nodes}
[ -n "${parts// /}" ] || { echo "gpu-four: GCSH_FOUR_PARTS is empty: nothing to run" >&2; exit 2; }
for p in $parts; do
    case $p in check | soak | multi | graph | shared | nodes) ;;
    *) echo "gpu-four: unknown part '$p' (check soak multi graph shared nodes)" >&2; exit 2 ;;
    esac
done
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$ngpu" -ge 4 ] || { echo "gpu-four: needs 4 GPUs, found $ngpu" >&2; exit 2; }
built() { [ -x build-gpu/gcsh ] || GCSH_GPU_TESTS=none bash scripts/gpu-check.sh >"$OUTDIR/build.log" 2>&1; }
rc=0
for p in $parts; do
    log="$OUTDIR/$p.log"
    echo "== gpu-four: $p ($(date +%T))"
    case $p in
    check) GCSH_GPU_RANKS="4 4s" GCSH_GPU_SANITIZE_RANKS=4 bash scripts/gpu-check.sh >"$log" 2>&1 ;;
    soak) built && GCSH_SOAK_ROUNDS=${GCSH_SOAK_ROUNDS:-600} GCSH_TEST_TIMEOUT=3600 \
        GCSH_GPU_TESTS=soak GCSH_GPU_RANKS=4 GCSH_GPU_SANITIZE=0 bash scripts/gpu-check.sh >"$log" 2>&1 ;;
    multi) built && GCSH_BENCH_ONLY=multi GCSH_BENCH_RANKS=4 GCSH_BENCH_OUT="$OUTDIR/bench" \
        bash scripts/bench-gpu.sh >"$log" 2>&1 ;;
    graph) built && GCSH_BENCH_ONLY=graph GCSH_BENCH_RANKS=4 GCSH_BENCH_OUT="$OUTDIR/bench" \
        bash scripts/bench-gpu.sh >"$log" 2>&1 ;;
    shared) built && GCSH_BENCH_ONLY=shared GCSH_BENCH_SHARED=4 GCSH_BENCH_OUT="$OUTDIR/bench" \
        bash scripts/bench-gpu.sh >"$log" 2>&1 ;;
    nodes) built && bash scripts/gpu-nodes.sh >"$log" 2>&1 ;;
    esac
    r=$?
    [ "$r" = 0 ] || rc=1
    echo "-- $p: exit $r; last lines of $log"
    tail -n 25 "$log"
done
exit "$rc"
