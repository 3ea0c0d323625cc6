#!/usr/bin/env bash
# Collective benchmarks on a GPU machine, after scripts/gpu-check.sh built
# build-gpu/gcsh there: at 2 ranks, and at 4 when 4 GPUs are visible,
#   1. bench.overhead: the NCCL all-reduce loop issued from Lua against the
#      same loop in C (c:loop), in one run, at 8 B, 1 MiB, 64 MiB and 1 GiB;
#   2. bench.collective: NCCL all-reduce f32 sum, 8 B .. 1 GiB, nccl-tests columns;
#   3. windows (test_cuda_window --bench): registration time of a 1 GiB window
#      per kind, and rank 0 copying 1 GiB of rank 1's slice by cudaMemcpyAsync
#      through the peer pointer (the path of a tensor copy from w:peer(r)),
#      by cudaMemcpyPeerAsync, and by the peer-read kernel, in one run;
#   4. the same copy issued from Lua, out:copy(w:peer(1)), per kind (needs
#      the window binding).
#   5. one-sided transfers, at 2 ranks: test_cuda_xfer --bench (put and get
#      of 1 GiB per engine and kind against cudaMemcpyPeerAsync in the same
#      run, with the ratio), then scripts/bench/xfer.lua (putv of 4096 x 4 KiB
#      against 4096 separate puts, with the ratio; 8-byte put-with-signal
#      ping-pong latency in us).
#   6. bench.allreduce: NCCL plain, NCCL on a symmetric window (nccl_sym),
#      one-shot, two-shot, ring, multicast (emulated: NVLS stays off),
#      nccl_dev (NCCL's device API) and auto,
#      f32 sum, 8 B .. 1 GiB, in one run; CSV into $GCSH_BENCH_OUT (default
#      build-gpu/bench), a busbw chart, and the issue's targets as ratios
#      (one-shot time / NCCL plain and / nccl_sym at <= 64 KiB; two-shot busbw
#      / NCCL at >= 256 MiB; auto / best) with the crossovers measured for
#      src/core/kreduce_tune.h.
#   7. against nccl-tests, in the same run: nccl-tests is built here from the
#      source carried in .nccl-tests/ (a snapshot of github.com/NVIDIA/nccl-tests,
#      ignored by git, never committed: copy it there before the run), then
#      all_reduce_perf runs plain, with -R 2 (symmetric registration) and
#      with -G 20 (CUDA graphs), 8 B .. 1 GiB, and gcsh's bench.collective
#      runs the same sizes with .check off and on; bench.compare prints the
#      time per call of each against nccl-tests' as ratios, with busbw and
#      gcsh's host issue time.
#   9. graphs (issue 21), GCSH_BENCH_ONLY=graph: nccl-tests all_reduce_perf
#      -G 100, -R 2 -G 100 and plain, 8 B .. 1 MiB, then in one gcsh run: bench.collective
#      all-reduce with graph=100 and without, each against both references
#      (bench.compare); bench.allreduce of NCCL and every kernel algorithm at
#      8 B .. 1 MiB with and without graph=100, with the per-algorithm ratio
#      (without / with: what a graph saves); and the launch floor at 8 B:
#      algo "empty" (one empty kernel per call) beside every algorithm; then
#      scripts/bench/persistent_graph.lua at 8 B and 4 KiB (the persistent
#      all-reduce from a graph), each against nccl-tests -R 2 -G 100 in place.
#      GCSH_BENCH_RANKS (default 1) picks the rank counts; with --share-gpu
#      style sharing use GCSH_BENCH_SHARED="2 4" (MPS).
#  10. several GPUs (issue 28), GCSH_BENCH_ONLY=multi: nccl-tests
#      all_reduce_perf plain, -R 2, -R 2 -D 1 and -D 2, -G 100, -R 2 -G 100, the other
#      collectives' _perf, then in one gcsh job every all-reduce algorithm
#      (nccl_dev included) plain and from graphs, and every NCCL collective,
#      each against its nccl-tests run, with the issue's targets as ratios
#      (scripts/bench/multi.lua; CSV into $GCSH_BENCH_OUT).
# GCSH_BENCH_ONLY=windows runs parts 3 and 4 only; GCSH_BENCH_ONLY=xfer part 5;
# GCSH_BENCH_ONLY=allreduce part 6; GCSH_BENCH_ONLY=nccl-tests part 7.
# GCSH_BENCH_MAX (bytes, default 1 GiB) and GCSH_BENCH_ITERS (default 20)
# bound part 7's sizes and set its timed calls per size (both sides alike).
# GCSH_BENCH_RANKS="2 4" picks the rank counts (default 2, and 4 with 4 GPUs;
# 1 on a one-GPU machine, as a smoke run).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.."
# a value not known here would run part of the default set, or nothing
case "${GCSH_BENCH_ONLY-}" in
    "" | windows | xfer | allreduce | nccl-tests | graph | multi | shared) ;;
    *) echo "bench-gpu: GCSH_BENCH_ONLY=${GCSH_BENCH_ONLY}: unknown (valid: windows xfer" \
            "allreduce nccl-tests graph multi shared; unset: every part)" >&2
       exit 2 ;;
esac
GCSH=${GCSH:-build-gpu/gcsh}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
mpi=(mpirun -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
counts=(2)
[ "$ngpu" -ge 4 ] && counts+=(4)
[ "$ngpu" -lt 2 ] && counts=(1)
[ -n "${GCSH_BENCH_RANKS:-}" ] && read -r -a counts <<<"$GCSH_BENCH_RANKS"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1
OUTDIR=${GCSH_BENCH_OUT:-build-gpu/bench}
mkdir -p "$OUTDIR"

# ---- part 7: nccl-tests, built from the carried source ----------------------
# shellcheck source=scripts/nccl-tests.sh
. scripts/nccl-tests.sh # NT, build_nccl_tests
# nt_run NP BINARY TAG MAX ITERS [FLAGS...]: one nccl-tests run, 8 B .. MAX
# bytes by factors of 2, ITERS timed calls after 5, into
# $OUTDIR/nccl-tests-TAG-npNP.out (bench.nccl_tests reads it); prints its rows.
nt_run() {
    local np=$1 bin=$2 tag=$3 max=$4 iters=$5
    shift 5
    local out="$OUTDIR/nccl-tests-$tag-np$np.out"
    echo "== $np ranks: nccl-tests $bin $* -b 8 -e $max -f 2 -g 1 -n $iters -w 5"
    "${mpi[@]}" -np "$np" "$NT/$bin" -b 8 -e "$max" -f 2 -g 1 -n "$iters" -w 5 "$@" >"$out" 2>&1 ||
        echo "nccl-tests $bin $* failed (exit $?): comparisons with it say n/a; see $out"
    grep -E '^#  *(size|\(B\))|^ +[0-9]' "$out" | head -40
}
# nccl_tests_vs_gcsh NP: the reference runs, then gcsh's, then the ratios.
nccl_tests_vs_gcsh() {
    local np=$1 flags max=${GCSH_BENCH_MAX:-1073741824} iters=${GCSH_BENCH_ITERS:-20}
    for variant in plain R2 G20; do
        case $variant in plain) flags=() ;; R2) flags=(-R 2) ;; G20) flags=(-G 20) ;; esac
        nt_run "$np" all_reduce_perf "$variant" "$max" "$iters" "${flags[@]}"
    done
    echo "== $np ranks: gcsh bench.collective all-reduce f32, same sizes, .check off and on, against them"
    "${mpi[@]}" -np "$np" "$GCSH" --timeout 0 -e "local b = require('gcsh.bench')
        local o = { op = 'allreduce', min = 8, max = $max, factor = 2, iters = $iters, warmup = 5,
                    check = true, quiet = true }
        local off = b.collective(o)
        o.checked = true
        local on = b.collective(o)
        for _, v in ipairs { 'plain', 'R2', 'G20' } do
          local ref = b.nccl_tests('$OUTDIR/nccl-tests-' .. v .. '-np$np.out')
          b.compare(off, ref, { label = 'gcsh (.check off)', ref_label = 'nccl-tests ' .. v })
          b.compare(on, ref, { label = 'gcsh (.check on)', ref_label = 'nccl-tests ' .. v })
        end"
}
if [ -z "${GCSH_BENCH_ONLY:-}" ] || [ "${GCSH_BENCH_ONLY:-}" = nccl-tests ]; then
    if build_nccl_tests "$OUTDIR"; then
        for np in "${counts[@]}"; do nccl_tests_vs_gcsh "$np"; done
    fi
fi
[ "${GCSH_BENCH_ONLY:-}" = nccl-tests ] && exit 0

# ---- part 10: several GPUs against nccl-tests (issue 28) ---------------------
# GCSH_BENCH_ONLY=multi, on every GPU of the machine (2 at least;
# GCSH_BENCH_RANKS picks other counts), one job per count: nccl-tests
# all_reduce_perf plain, -R 2, -R 2 -D 1, -R 2 -D 2, -G 100 and -R 2 -G 100, and
# broadcast, reduce, all_gather, reduce_scatter and alltoall _perf, 8 B ..
# GCSH_BENCH_MAX (1 GiB), and every collective's _perf again from 8 B to 1 MiB
# with GCSH_BENCH_SMALL_ITERS (1000) calls a size; then
# scripts/bench/multi.lua: bench.allreduce of
# NCCL, nccl_sym and every kernel algorithm (nccl_dev included), plain and
# with graph=100 (up to GCSH_BENCH_GRAPH_MAX, 64 MiB: 2000 calls a size),
# bench.collective of every collective with .check on, each against its
# nccl-tests run (ratios), the issue's targets as ratios, CSV in $OUTDIR.
# Took 180 s on 2 H200s and 222 s on 4 (2026-11-26, nccl-tests' build
# included), before the small-size runs (about 30 s more).
multi_bench() {
    local np=$1 max=${GCSH_BENCH_MAX:-1073741824} iters=${GCSH_BENCH_ITERS:-20}
    local gmax=${GCSH_BENCH_GRAPH_MAX:-67108864} variant flags bin
    local small_iters=${GCSH_BENCH_SMALL_ITERS:-1000}
    # -D 1 and -D 2: nccl-tests' LSA kernels (device API; never -D 3 or 4,
    # which use NVLink multicast)
    for variant in plain R2 R2D1 R2D2 G100 R2G100; do
        case $variant in
        plain) flags=() ;; R2) flags=(-R 2) ;; R2D1) flags=(-R 2 -D 1) ;; R2D2) flags=(-R 2 -D 2) ;;
        G100) flags=(-G 100) ;; R2G100) flags=(-R 2 -G 100) ;;
        esac
        nt_run "$np" all_reduce_perf "multi-$variant" "$max" "$iters" "${flags[@]}"
    done
    for bin in broadcast reduce all_gather reduce_scatter alltoall; do
        nt_run "$np" "${bin}_perf" "multi-$bin" "$max" "$iters"
    done
    # the small sizes again over many calls (one hiccup in 20 calls of 10 us
    # moves the mean by more than the 10% the targets allow); gcsh the same
    for bin in all_reduce broadcast reduce all_gather reduce_scatter alltoall; do
        nt_run "$np" "${bin}_perf" "multi-small-$bin" 1048576 "$small_iters"
    done
    "${mpi[@]}" -np "$np" "$GCSH" --timeout 0 scripts/bench/multi.lua "$OUTDIR" "$max" "$iters" "$gmax" \
        "$small_iters"
}
if [ "${GCSH_BENCH_ONLY:-}" = multi ]; then
    [ "$ngpu" -ge 2 ] || { echo "GCSH_BENCH_ONLY=multi needs 2 or more GPUs (found $ngpu)"; exit 1; }
    build_nccl_tests "$OUTDIR" || exit 1
    multi_counts=("$ngpu")
    [ -n "${GCSH_BENCH_RANKS:-}" ] && read -r -a multi_counts <<<"$GCSH_BENCH_RANKS"
    for np in "${multi_counts[@]}"; do multi_bench "$np"; done
    exit 0
fi

# ---- part 9: graphs (gcsh.graph) against nccl-tests -G ----------------------
# graph_bench NP [share]: share = "mps" runs NP ranks on device 0 (as part 8).
graph_bench() {
    local np=$1 share=${2:-} max=${GCSH_BENCH_MAX:-1048576} iters=${GCSH_BENCH_ITERS:-20}
    local tag="np$np${share:+-shared}" nt_env=() gcsh_env=()
    [ -n "$share" ] && nt_env=(-x NCCL_TESTS_DEVICE=0) && gcsh_env=(-x GCSH_SHARE_GPU=1)
    # a host id per process only where ranks share a GPU (NCCL refuses two ranks
    # on one GPU of one host); on GPUs of their own, distinct host ids would send
    # nccl-tests over sockets (31 us at 8 B on 2 H200s instead of NVLink's few)
    local host_id=""
    [ -n "$share" ] && host_id='NCCL_HOSTID=nccltests$OMPI_COMM_WORLD_RANK '
    local dir=""
    if [ -n "$share" ]; then dir=$(mktemp -d /tmp/gcsh-bench-mps-XXXXXX); mps_daemon start "$dir"; fi
    for variant in plain G100 R2G100; do
        local flags=()
        [ "$variant" = G100 ] && flags=(-G 100)
        [ "$variant" = R2G100 ] && flags=(-R 2 -G 100)
        echo "== $np ranks${share:+ sharing one GPU}: nccl-tests all_reduce_perf ${flags[*]} -b 8 -e $max -f 2 -g 1 -n $iters -w 5"
        env ${dir:+CUDA_MPS_PIPE_DIRECTORY=$dir/pipe} "${mpi[@]}" -np "$np" "${nt_env[@]}" \
            ${dir:+-x CUDA_MPS_PIPE_DIRECTORY} sh -c "${host_id}"'exec "$0" "$@"' \
            "$NT/all_reduce_perf" -b 8 -e "$max" -f 2 -g 1 -n "$iters" \
            -w 5 "${flags[@]}" >"$OUTDIR/nccl-tests-$variant-$tag.out" 2>&1
        grep -E '^#  *(size|\(B\))|^ +[0-9]' "$OUTDIR/nccl-tests-$variant-$tag.out" | head -20
    done
    [ -n "$dir" ] && mps_daemon stop "$dir"
    echo "== $np ranks${share:+ sharing one GPU}: gcsh graphs (graph=100) and plain calls, against both"
    "${mpi[@]}" -np "$np" "${gcsh_env[@]}" "$GCSH" --timeout 0 -e "local b = require('gcsh.bench')
        print(gcsh.info().device)
        local o = { op = 'allreduce', min = 8, max = $max, factor = 2, iters = $iters, warmup = 5,
                    check = true, quiet = rank ~= 0 }
        local plain = b.collective(o)
        o.graph = 100
        local graph = b.collective(o)
        local G = b.nccl_tests('$OUTDIR/nccl-tests-G100-$tag.out')
        local P = b.nccl_tests('$OUTDIR/nccl-tests-plain-$tag.out')
        b.compare(graph, G)
        b.compare(plain, P)
        b.compare(graph, P)
        local algos = { 'empty', 'nccl' }
        for _, a in ipairs(kernel.algos) do -- nccl_dev needs kind nccl: not on one GPU
          if a ~= 'comm' and a ~= 'nccl_dev' then algos[#algos + 1] = a end
        end
        local ar = { algos = algos, min = 8, max = $max, factor = 8, iters = $iters, warmup = 5,
                     kind = 'vmm', chart = false }
        local without = b.allreduce(ar)
        ar.graph = 100
        local with = b.allreduce(ar)
        if rank == 0 then
          print('# per call at each size: without a graph / with graph=100 (above 1: the graph saves)')
          print(string.format('# %10s %10s %10s %10s %7s', 'size', 'algo', 'plain(us)', 'graph(us)', 'ratio'))
          for i, r in ipairs(without) do
            local g = with[i]
            print(string.format('  %10d %10s %10.2f %10.2f %7.2f', r.size, r.algo, r.time_us, g.time_us,
                                r.time_us / g.time_us))
          end
        end"
    echo "== $np ranks${share:+ sharing one GPU}: the persistent all-reduce from a graph against nccl-tests -R 2 -G 100"
    for bytes in 8 4096; do
        "${mpi[@]}" -np "$np" "${gcsh_env[@]}" "$GCSH" --timeout 0 scripts/bench/persistent_graph.lua \
            "$bytes" 20 "$OUTDIR/nccl-tests-R2G100-$tag.out" | grep persistent_graph
    done
}

# ---- part 8: ranks sharing one GPU (gcsh --share-gpu) -----------------------
# nccl-tests runs the same way: every process on device 0
# (NCCL_TESTS_DEVICE=0), a NCCL_HOSTID of its own, and the same MPS (a
# private daemon of this script's for its runs; gcsh starts its own for
# each job); then gcsh's bench.collective (.check off and on) against it,
# and the kernel algorithms against NCCL from gcsh (bench.allreduce, vmm
# windows: NCCL offers no symmetric memory to ranks sharing a GPU).  With
# MPS (mps) and without (nomps: time-sliced, so fewer calls).  Shared-GPU
# figures, never dedicated-GPU ones.  GCSH_BENCH_SHARED="2 4" picks the rank
# counts.
mps_daemon() { # start DIR | stop DIR
    if [ "$1" = start ]; then
        mkdir -p "$2/pipe" "$2/log"
        CUDA_MPS_PIPE_DIRECTORY=$2/pipe CUDA_MPS_LOG_DIRECTORY=$2/log nvidia-cuda-mps-control -d
    else
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$2/pipe nvidia-cuda-mps-control
        for _ in $(seq 100); do [ -e "$2/pipe/nvidia-cuda-mps-control.pid" ] || break; sleep 0.1; done
        rm -rf "$2"
    fi
}
shared_bench() { # NP mps|nomps
    local np=$1 mode=$2 max=${GCSH_BENCH_MAX:-1048576} iters=${GCSH_BENCH_ITERS:-200}
    [ "$mode" = nomps ] && iters=20
    local share=$([ "$mode" = mps ] && echo 1 || echo nomps) dir="" out
    out="$OUTDIR/nccl-tests-shared-$mode-np$np.out"
    if [ "$mode" = mps ]; then dir=$(mktemp -d /tmp/gcsh-bench-mps-XXXXXX); mps_daemon start "$dir"; fi
    echo "== $np ranks sharing one GPU ($mode): nccl-tests all_reduce_perf -b 8 -e $max -f 8 -n $iters -w 20"
    env ${dir:+CUDA_MPS_PIPE_DIRECTORY=$dir/pipe} "${mpi[@]}" -np "$np" -x NCCL_TESTS_DEVICE=0 \
        ${dir:+-x CUDA_MPS_PIPE_DIRECTORY} sh -c 'NCCL_HOSTID=nccltests$OMPI_COMM_WORLD_RANK exec "$0" "$@"' \
        "$NT/all_reduce_perf" -b 8 -e "$max" -f 8 -g 1 -n "$iters" -w 20 >"$out" 2>&1
    grep -E '^#  *(size|\(B\))|^ +[0-9]' "$out" | head -12
    [ -n "$dir" ] && mps_daemon stop "$dir"
    echo "== $np ranks sharing one GPU ($mode): gcsh, the same sizes"
    "${mpi[@]}" -np "$np" -x GCSH_SHARE_GPU="$share" "$GCSH" --timeout 0 -e "local b = require('gcsh.bench')
        local o = { op = 'allreduce', min = 8, max = $max, factor = 8, iters = $iters, warmup = 20,
                    check = true, quiet = true }
        local off = b.collective(o)
        o.checked = true
        local on = b.collective(o)
        local ref = b.nccl_tests('$out')
        b.compare(off, ref, { label = 'gcsh (.check off)', ref_label = 'nccl-tests' })
        b.compare(on, ref, { label = 'gcsh (.check on)', ref_label = 'nccl-tests' })
        print(gcsh.info().mps)
        b.allreduce{ algos = {'nccl', 'll', 'oneshot', 'twoshot', 'ring'}, min = 8, max = 65536,
                     factor = 8, iters = $iters, warmup = 20, kind = 'vmm',
                     csv = '$OUTDIR/allreduce-shared-$mode-np$np.csv' }"
}
if [ "${GCSH_BENCH_ONLY:-}" = graph ]; then
    build_nccl_tests "$OUTDIR" || exit 1
    read -r -a graph_counts <<<"${GCSH_BENCH_RANKS:-1}"
    for np in "${graph_counts[@]}"; do graph_bench "$np"; done
    if [ -n "${GCSH_BENCH_SHARED:-}" ]; then
        read -r -a shared_counts <<<"$GCSH_BENCH_SHARED"
        for np in "${shared_counts[@]}"; do graph_bench "$np" mps; done
    fi
    exit 0
fi
if [ "${GCSH_BENCH_ONLY:-}" = shared ]; then
    build_nccl_tests "$OUTDIR" || exit 1
    read -r -a shared_counts <<<"${GCSH_BENCH_SHARED:-2 4}"
    for mode in mps nomps; do
        for np in "${shared_counts[@]}"; do shared_bench "$np" "$mode"; done
    done
    echo "== start-up: gcsh -n 4 --share-gpu -e 'comm.world()' (s), three times"
    for _ in 1 2 3; do
        s=$(date +%s.%N); "$GCSH" -n 4 --share-gpu -e 'comm.world()' >/dev/null 2>&1
        awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }'
    done
    exit 0
fi

if [ "${GCSH_BENCH_ONLY:-}" = xfer ]; then counts=(); fi
for np in "${counts[@]}"; do
    if [ -z "${GCSH_BENCH_ONLY:-}" ] || [ "${GCSH_BENCH_ONLY:-}" = allreduce ]; then
    # NCCL runs on the communicators' blocking twins (cuda_comm.c), stream-ordered,
    # as nccl-tests runs it: no override needed any more
    echo "== $np ranks: bench.allreduce f32 sum, 8 B .. 1 GiB (kernels against NCCL; csv: $OUTDIR/allreduce-np$np.csv)"
    "${mpi[@]}" -np "$np" "$GCSH" --timeout 0 -e "local b = require('gcsh.bench')
        local rows = b.allreduce{ algos = {'nccl', 'nccl_sym', 'oneshot', 'twoshot', 'ring', 'multicast',
                                           'nccl_dev', 'auto'},
            min = 8, max = 1 << 30, factor = 2, iters = 20, warmup = 5, kind = 'nccl',
            csv = '$OUTDIR/allreduce-np$np.csv', chart = 'busbw' }
        b.allreduce_targets(rows)"
    fi
    [ "${GCSH_BENCH_ONLY:-}" = allreduce ] && continue
    if [ "${GCSH_BENCH_ONLY:-}" != windows ]; then
    echo "== $np ranks: Lua-issued all-reduce against the C loop (c:loop)"
    "${mpi[@]}" -np "$np" "$GCSH" -e 'require("gcsh.bench").overhead{
        sizes = {8, 1 << 20, 64 << 20, 1 << 30}, iters = 50, reps = 3 }'
    echo "== $np ranks: bench.collective all-reduce f32"
    "${mpi[@]}" -np "$np" "$GCSH" -e 'require("gcsh.bench").collective{
        op = "allreduce", min = 8, max = 1 << 30, factor = 8, iters = 20, warmup = 5, check = true }'
    fi
    echo "== $np ranks: windows, C (registration 1 GiB; rank 0 <- rank 1 copies 1 GiB)"
    "${mpi[@]}" -np "$np" "${GCSH_UNIT:-build-gpu/tests/test_cuda_window}" --bench |
        grep -E '^(bench|FAIL|[0-9]+ passed)'
    echo "== $np ranks: windows, Lua: out:copy(w:peer(1)), 1 GiB, best of 5"
    "${mpi[@]}" -np "$np" "$GCSH" -e '
      local c = comm.world()
      if not pcall(function() assert(c.window) end) then print("no window binding in this build") return end
      for _, kind in ipairs{"nccl", "vmm"} do
        c:barrier()
        local t0 = gcsh.wtime()
        local w = c:window(1 << 28, "f32", {kind = kind})
        local reg = gcsh.wtime() - t0
        local out, best = tensor.new(1 << 28, "f32"), math.huge
        if rank == 0 then
          for i = 0, 5 do
            gcsh.sync(); local t = gcsh.wtime()
            out:copy(w:peer(1)); gcsh.sync()
            if i > 0 then best = math.min(best, gcsh.wtime() - t) end
          end
          print(string.format("lua %s: register 1 GiB %.1f ms (rank 0); out:copy(w:peer(1)) %.1f GB/s",
                              kind, reg * 1e3, (1 << 30) / best / 1e9))
        end
        c:barrier()
        w:free()
      end'
done
if [ -z "${GCSH_BENCH_ONLY:-}" ] || [ "${GCSH_BENCH_ONLY:-}" = xfer ]; then
    echo "== 2 ranks: one-sided transfers, C: put/get 1 GiB per engine vs cudaMemcpyPeerAsync"
    "${mpi[@]}" -np 2 "${GCSH_XFER_UNIT:-build-gpu/tests/test_cuda_xfer}" --bench |
        grep -E '^(bench|FAIL|[0-9]+ passed)'
    echo "== 2 ranks: one-sided transfers, Lua: putv vs separate puts; put-with-signal ping-pong"
    "${mpi[@]}" -np 2 "$GCSH" scripts/bench/xfer.lua
fi
