#!/usr/bin/env bash
# Several nodes on one GPU machine (issue 41): its GPUs as NODES nodes of PER
# GPUs (2 x 2 on 4 GPUs), simulated under a real mpirun as tests/sh/nodes.sh
# does on the host (scripts/simnode: each node a host name and mount
# namespace of its own and its own Open MPI daemon; MPI's TCP between
# nodes, shared memory inside one).  Every rank of node j gets node j's
# GPUs (CUDA_VISIBLE_DEVICES) and NCCL_HOSTID gcsh-simnode<j>, so NCCL sees
# NODES hosts and reduces across them with its network transport (sockets
# over loopback: NCCL_SOCKET_IFNAME=lo, no InfiniBand).
#
#   bash scripts/gpu-nodes.sh     after scripts/gpu-check.sh built build-gpu/gcsh
#                                 (GCSH_GPU_TESTS=nodes_hier bash scripts/gpu-check.sh
#                                 builds it and runs only that test, on one node)
#
#   1. tests/gpu/nodes_hier.lua on the nodes: kernel.allreduce's hier, auto
#      and comm give the communicator's result on every rank (dtypes, ops,
#      odd sizes, offsets, the window's end) on every window kind that
#      works, auto picks hier, the team algorithms are refused;
#   2. nccl-tests' all_reduce_perf on the same nodes, the same way (the same
#      host file, launch agent, host ids and GPUs), in place and out of
#      place, 8 B .. GCSH_NODES_MAX (64 MiB), GCSH_NODES_ITERS (200) calls a
#      size (scripts/nccl-tests.sh builds it from the carried .nccl-tests/);
#   3. scripts/bench/nodes.lua on the nodes: bench.allreduce of NCCL, hier
#      and auto at the same sizes and calls, hier's time per call against
#      nccl-tests' in-place time per size as ratios, and the issue's
#      targets (hier <= 1.0x at 8 B .. 64 KiB, <= 1.1x above).
# GCSH_NODES_SANITIZE="memcheck synccheck" also runs part 1 under
# compute-sanitizer with each tool (any report fails it);
# GCSH_NODES_PARTS (default "1 1b 2 3"; 1b is the sanitizer's, run only
# with GCSH_NODES_SANITIZE) runs some; an unknown or empty list is an error
# (it would run nothing and pass).
# Logs and CSV in GCSH_BENCH_OUT (build-gpu/nodes).  The last line is "N
# passed, N failed" (parts 1 and 3 ran; whether the targets were met is
# printed, not counted: they are measurements).
#
# GCSH_NODES_DRY=1: the same launches on the host backend, without GPUs or
# nccl-tests (part 3 then compares hier with gcsh's own row of the
# communicator's all-reduce, labelled comm there: MPI, or the node's shared
# memory for small sizes): checks the launch and the scripts on any machine with
# namespaces (root, or user namespaces), e.g. GCSH=build/gcsh.
#
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), whatever the caller's
# environment says.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
DRY=${GCSH_NODES_DRY:-0}
GCSH=${GCSH:-build-gpu/gcsh}
OUTDIR=${GCSH_BENCH_OUT:-build-gpu/nodes}
MAX=${GCSH_NODES_MAX:-67108864}
ITERS=${GCSH_NODES_ITERS:-200}
PER=${GCSH_NODES_PER:-2}
TIMEOUT=${GCSH_TEST_TIMEOUT:-600}
passed=0 failed=0
die() { echo "gpu-nodes: $*" >&2; echo "$passed passed, $((failed + 1)) failed"; exit 1; }
result() { # NAME OK(0|1) [DETAIL]
    if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok    $1"
    else failed=$((failed + 1)); echo "FAIL  $1${3:+: $3}"; fi
}

read -r -a parts <<<"${GCSH_NODES_PARTS-1 1b 2 3}" # (words, no globbing)
PARTS=" ${parts[*]} "
part() { [[ $PARTS == *" $1 "* ]]; }
for p in "${parts[@]}"; do # a part not known would run nothing and pass
    case $p in 1 | 1b | 2 | 3) ;; *) die "GCSH_NODES_PARTS: unknown part '$p' (valid: 1 1b 2 3)" ;; esac
done
[ "${#parts[@]}" -gt 0 ] || die "GCSH_NODES_PARTS is empty (valid parts: 1 1b 2 3)"
[ -x "$GCSH" ] || die "no $GCSH: build it first (GCSH_GPU_TESTS=nodes_hier bash scripts/gpu-check.sh)"
mkdir -p "$OUTDIR" || die "cannot make $OUTDIR"
if [ "$DRY" = 1 ]; then
    NODES=2
    backend=(--backend host)
    echo "gpu-nodes: dry run: host backend, $NODES nodes of $PER ranks, no GPUs, no nccl-tests"
else
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    [ "$ngpu" -ge $((2 * PER)) ] || die "needs $((2 * PER)) GPUs or more for 2 nodes of $PER (found $ngpu)"
    NODES=$((ngpu / PER))
    backend=()
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1
fi
NP=$((NODES * PER))
scripts/simnode probe true 2>"$OUTDIR/simnode-probe.log" ||
    die "scripts/simnode cannot make namespaces here: $(head -c 300 "$OUTDIR/simnode-probe.log")"

# The nodes: this machine is node 0 (mpirun's own daemon; named by
# GCSH_SIMNODE_NODE0, default its host name), node1.. are simulated;
# by-slot mapping puts ranks j*PER .. j*PER+PER-1 on node j.
HOSTS=$OUTDIR/hosts
{
    echo "${GCSH_SIMNODE_NODE0:-$(hostname)} slots=$PER"
    for ((j = 1; j < NODES; j++)); do echo "node$j slots=$PER"; done
} >"$HOSTS"
# `--mca plm rsh`: the launcher that starts a daemon per host through the
# agent, whatever the environment pins (the device machines set
# OMPI_MCA_plm=isolated, which starts none and so finds too few slots).
# shellcheck disable=SC2054 # (tcp,vader,self is one word)
mpi=(mpirun -np "$NP" --hostfile "$HOSTS" --map-by slot --bind-to none
     --mca plm rsh --mca plm_rsh_agent "$ROOT/scripts/simnode"
     --mca btl tcp,vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
     -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST
     -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1
     -x LUA_PATH="$ROOT/tests/lua/?.lua;$ROOT/tests/gpu/lib/?.lua;;")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
# Each rank, before the program: its node's host id and GPUs (sh -c's $0 is
# the program).  The node is the rank's place in the by-slot mapping.
# shellcheck disable=SC2016 # (expanded by each rank's shell)
per_node='j=$((OMPI_COMM_WORLD_RANK / '"$PER"')); first=$((j * '"$PER"'))
export NCCL_HOSTID=gcsh-simnode$j
[ "$GCSH_NODES_DRY" = 1 ] || export CUDA_VISIBLE_DEVICES=$(seq -s, $first $((first + '"$PER"' - 1)))
exec "$0" "$@"'
export GCSH_NODES_DRY=$DRY
on_nodes() { timeout "$TIMEOUT" "${mpi[@]}" -x GCSH_NODES_DRY sh -c "$per_node" "$@"; }
echo "gpu-nodes: $NODES nodes of $PER (host file $HOSTS), NCCL_HOSTID gcsh-simnode0..$((NODES - 1))"

# ---- 1. values ---------------------------------------------------------------------
log=$OUTDIR/nodes_hier.log
if part 1; then
    on_nodes "$GCSH" "${backend[@]}" tests/gpu/nodes_hier.lua >"$log" 2>&1
    rc=$?
    grep -q "nodes_hier: [0-9]* ranks on $NODES nodes" "$log" && [ "$rc" = 0 ] &&
        [ "$(grep -c 'nodes_hier: ok' "$log")" -ge 1 ] && ! grep -q "check failed" "$log"
    result "tests/gpu/nodes_hier.lua on $NODES nodes of $PER" $? "exit $rc; see $log"
    grep -E "nodes_hier:|check failed" "$log" | head -12 | sed 's/^/      /'
fi

# ---- 1b. the same under compute-sanitizer (GCSH_NODES_SANITIZE=memcheck|synccheck) --
# hier's kernels and the network path's copies across the node boundary;
# API errors are not reported (NCCL probes kernel images of other chips).
part 1b || GCSH_NODES_SANITIZE=
for tool in ${GCSH_NODES_SANITIZE:-}; do
    san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    [ -n "$san" ] || { echo "gpu-nodes: no compute-sanitizer here: $tool left out"; break; }
    log=$OUTDIR/nodes_hier-$tool.log
    on_nodes "$san" --tool "$tool" --error-exitcode 3 --report-api-errors no \
        --target-processes application-only "$GCSH" "${backend[@]}" tests/gpu/nodes_hier.lua >"$log" 2>&1
    rc=$?
    [ "$rc" = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$log" && ! grep -q "check failed" "$log"
    result "compute-sanitizer $tool: nodes_hier.lua on $NODES nodes of $PER" $? "exit $rc; see $log"
    grep -E "ERROR SUMMARY|nodes_hier: ok" "$log" | sort | uniq -c | head -4 | sed 's/^/      /'
done

# ---- 2. nccl-tests on the same nodes ----------------------------------------------------
ref=""
if [ "$DRY" != 1 ] && part 2; then
    # shellcheck source=scripts/nccl-tests.sh
    . scripts/nccl-tests.sh # NT, build_nccl_tests
    if build_nccl_tests "$OUTDIR"; then
        ref=$OUTDIR/nccl-tests-nodes-np$NP.out
        echo "== nccl-tests all_reduce_perf -b 8 -e $MAX -f 2 -g 1 -n $ITERS -w 20 on the same nodes"
        on_nodes "$NT/all_reduce_perf" -b 8 -e "$MAX" -f 2 -g 1 -n "$ITERS" -w 20 >"$ref" 2>&1
        rc=$?
        [ "$rc" = 0 ] || echo "nccl-tests failed: the comparison falls back to gcsh's NCCL row"
        result "nccl-tests all_reduce_perf on $NODES nodes of $PER" "$rc" "exit $rc; see $ref"
        grep -E '^#  *(size|\(B\))|^ +[0-9]|Rank|out of bounds|wrong' "$ref" | head -50
    fi
fi

# ---- 3. hier against it ---------------------------------------------------------------
log=$OUTDIR/nodes-bench.log
if part 3; then
    on_nodes "$GCSH" "${backend[@]}" --timeout 0 scripts/bench/nodes.lua "$OUTDIR" "$MAX" "$ITERS" \
        ${ref:+"$ref"} >"$log" 2>&1
    rc=$?
    cat "$log"
    [ "$rc" = 0 ] && grep -q "^\(\[0\] \)\{0,1\}target: hier" "$log" && ! grep -q "WRONG values" "$log"
    result "scripts/bench/nodes.lua on $NODES nodes of $PER (values right, ratios printed)" $? \
        "exit $rc; see $log"
fi

# parts that ran nothing here (1b without GCSH_NODES_SANITIZE, 2 in a dry
# run) must not make a run that checked nothing pass
[ $((passed + failed)) -gt 0 ] ||
    result "some part checked something (GCSH_NODES_PARTS='${parts[*]}')" 1 \
        "nothing ran: 1b needs GCSH_NODES_SANITIZE, 2 needs GPUs (not a dry run)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
