#!/usr/bin/env bash
# The cuda network path (issue 41, src/cuda/cuda_net.c) on a 4-GPU machine
# as 2 simulated nodes of 2 GPUs, launched as scripts/gpu-nodes.sh does
# (scripts/simnode: a host name and mount namespace per node, MPI's TCP
# between nodes; each node's ranks its own GPUs in CUDA_VISIBLE_DEVICES and
# one NCCL_HOSTID, so NCCL's LSA team is the node).  On windows of kind
# nccl and vmm (GCSH_TEST_KIND, `-l window_kind` as scripts/gpu-check.sh):
#
#   0. a put with its signal to the other node: the kind asked for, a
#      team of the node's 2 ranks, x.path "tcp";
#   1. tests/sh/nodes_net.lua: w:put, w:get, w:putv, put-with-signal,
#      s:set, s:add, s:fetch_add to a rank of the other node land exactly
#      (i32, f32, u8; the window's end; odd sizes and offsets; 4 MiB
#      pieces and a bit), x.path "tcp" and tostring "network tcp";
#   2. tests/lua/xfer_order.lua: w:fence() and c:quiet() order puts and
#      signals to the next rank, which is on the other node for ranks 1
#      and 3 (a flag seen before its data fails);
#   3. tests/lua/hier_plan.lua: hier's plan and stepper across the nodes
#      (its barriers are signals across nodes: the network path).
#
#   bash scripts/gpu-proxy.sh BUILD/gcsh
#
# Prints "PASS name (secs)" or "FAIL name: why" per run, the tail of a
# failed run's log, and last "N passed, N failed".  Logs in
# GCSH_BENCH_OUT (default /tmp/gcsh-proxy).  GCSH_PROXY_DRY=1: the same
# launches on the host backend (its emulated nccl and vmm kinds), without
# GPUs.  NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
GCSH=$(realpath "${1:?usage: scripts/gpu-proxy.sh PATH/TO/gcsh}") || exit 1
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
DRY=${GCSH_PROXY_DRY:-0}
OUTDIR=${GCSH_BENCH_OUT:-/tmp/gcsh-proxy}
PER=2 NODES=2
NP=$((NODES * PER))
passed=0 failed=0 skipped=0
mkdir -p "$OUTDIR" || exit 1
die() { echo "gpu-proxy: $*"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

backend=()
if [ "$DRY" = 1 ]; then
    backend=(--backend host)
    echo "gpu-proxy: dry run: host backend, $NODES nodes of $PER ranks"
else
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    [ "$ngpu" -ge "$NP" ] || die "needs $NP GPUs (found $ngpu)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1
fi
scripts/simnode probe true 2>"$OUTDIR/simnode-probe.log" ||
    die "scripts/simnode cannot make namespaces here: $(head -c 300 "$OUTDIR/simnode-probe.log")"

HOSTS=$OUTDIR/hosts
# node 0 is this machine (GCSH_SIMNODE_NODE0, default its host name)
printf '%s slots=%d\nnode1 slots=%d\n' "${GCSH_SIMNODE_NODE0:-$(hostname)}" "$PER" "$PER" >"$HOSTS"
# `--mca plm rsh`: as scripts/gpu-nodes.sh (an environment may pin another
# launcher, which cannot start the simulated nodes' daemons)
# shellcheck disable=SC2054 # (tcp,vader,self is one word)
mpi=(mpirun -np "$NP" --hostfile "$HOSTS" --map-by slot --bind-to none
     --mca plm rsh --mca plm_rsh_agent "$ROOT/scripts/simnode"
     --mca btl tcp,vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
     -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST
     -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 -x GCSH_PROXY_DRY -x GCSH_TEST_KIND
     -x LUA_PATH="$ROOT/tests/lua/?.lua;$ROOT/tests/gpu/lib/?.lua;;")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
# each rank: its node's host id and GPUs (sh -c's $0 is the program)
# shellcheck disable=SC2016 # (expanded by each rank's shell)
per_node='j=$((OMPI_COMM_WORLD_RANK / '"$PER"')); first=$((j * '"$PER"'))
export NCCL_HOSTID=gcsh-simnode$j
[ "$GCSH_PROXY_DRY" = 1 ] || export CUDA_VISIBLE_DEVICES=$(seq -s, $first $((first + '"$PER"' - 1)))
exec "$0" "$@"'
export GCSH_PROXY_DRY=$DRY

# How many ranks printed the line TEXT in LOG: gcsh folds equal lines under
# their ranks ("[0-1,3] TEXT").
ranks_saying() { # TEXT LOG
    awk -v want="$1" '
        match($0, /^\[[0-9,-]+\] /) && substr($0, RLENGTH + 1) == want {
            n = split(substr($0, 2, RLENGTH - 3), part, ",")
            for (i = 1; i <= n; i++) {
                if (split(part[i], ab, "-") == 1) ab[2] = ab[1]
                for (r = ab[1] + 0; r <= ab[2] + 0; r++) seen[r] = 1
            }
        }
        END { c = 0; for (r in seen) c++; print c }' "$2"
}

check() { # NAME KIND EXPECT(text every rank prints, or "") SCRIPT: 0 pass, 1 fail, 2 skip
    local name=$1 kind=$2 expect=$3 script=$4 log="$OUTDIR/$1.log" t0=$SECONDS rc why=""
    GCSH_TEST_KIND=$kind timeout 100 "${mpi[@]}" sh -c "$per_node" "$GCSH" "${backend[@]}" \
        -l window_kind "$script" >"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && grep -q "^\[0[^]]*\] refused: " "$log"; then
        skipped=$((skipped + 1))
        echo "SKIP  $name: $(grep -m1 "refused: " "$log")"
        return 2
    fi
    [ "$rc" = 0 ] || why="exit $rc"
    if [ -z "$why" ] && [ -n "$expect" ]; then
        local n
        n=$(ranks_saying "$expect" "$log")
        [ "$n" = "$NP" ] || why="'$expect' from $n of $NP ranks"
    fi
    if grep -q "check failed" "$log"; then why="${why:+$why; }a check failed"; fi
    if [ -z "$why" ]; then
        passed=$((passed + 1))
        echo "PASS  $name ($((SECONDS - t0)) s)"
        return 0
    fi
    failed=$((failed + 1))
    echo "FAIL  $name: $why ($((SECONDS - t0)) s; $log)"
    tail -n 15 "$log" | sed 's/^/      | /'
    return 1
}

# the kind the runs get, a team of the node, the other node over the network
# (whether NCCL offers symmetric memory across NCCL hosts is NCCL's to say:
# a refusal of the kind is printed and that kind's runs skipped)
cat >"$OUTDIR/kind.lua" <<'EOF'
local c = comm.world()
local ok, w = pcall(c.window, c, 3, "u8")
if not ok and tostring(w):find("does not work here", 1, true) then
  print("refused: " .. tostring(w):gsub("\n.*", ""))
  return
end
assert(ok, w)
local s = c:signals(1)
local x = w:put((c.rank + c.size // 2) % c.size, tensor.new(1, "u8"):fill(c.rank), 2,
                { signal = { s, 0 } })
x:post()
s:wait(0, 1)
assert(w:tensor()[2] == (c.rank + c.size // 2) % c.size, "the byte from the other node")
print(string.format("kind %s, team %d, path %s", w.kind, #w.team, x.path))
s:free()
w:free()
EOF

echo "gpu-proxy: $NODES nodes of $PER (NCCL_HOSTID gcsh-simnode0..1), gcsh $GCSH"
for kind in nccl vmm; do
    check "kind-$kind" "$kind" "kind $kind, team $PER, path tcp" "$OUTDIR/kind.lua"
    [ $? = 2 ] && continue
    check "nodes_net-$kind" "$kind" "nodes_net ok" tests/sh/nodes_net.lua
    check "xfer_order-$kind" "$kind" "" tests/lua/xfer_order.lua
    check "hier_plan-$kind" "$kind" "hier_plan: ok" tests/lua/hier_plan.lua
done
echo "$passed passed, $failed failed, $skipped kinds skipped"
[ "$failed" = 0 ] && [ "$skipped" -lt 2 ]
