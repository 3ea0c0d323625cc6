#!/usr/bin/env bash
# Ranks on several nodes under a real mpirun, as on a cluster: the nodes
# are simulated on this machine by scripts/simnode, Open MPI's launch agent
# here (a host name, /etc/hosts and mount namespace per node: mpirun starts
# a daemon per node, shared memory stays inside a node, ranks of different
# nodes talk TCP over loopback).  What a user types on a cluster is the
# same command without --mca plm_rsh_agent (README "Several nodes").
# NODES nodes of 2 ranks (2 here; tests/sh/nodes3.sh runs 3): start-up and
# .info, a script only rank 0 has, values of the collectives and of every
# all-reduce algorithm across nodes, hier's plan and stepper, puts, gets
# and signals across nodes
# over the network path, windows that name the boundary,
# Ctrl-C, a lost node, the flight recorder of every node.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
NODES=${NODES:-2}
PER=2
N=$((NODES * PER))
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT
if ! scripts/simnode probe true 2>"$TMP/probe"; then
    skip "scripts/simnode cannot make namespaces here: $(head -c 200 "$TMP/probe")"
    finish
    exit
fi
HOSTS=$TMP/hosts
{
    echo "$(hostname) slots=$PER"
    for ((i = 1; i < NODES; i++)); do echo "node$i slots=$PER"; done
} >"$HOSTS"
ON_NODES=(--hostfile "$HOSTS" --mca plm_rsh_agent "$PWD/scripts/simnode"
          --mca btl tcp,vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
LAST=$((N - 1))
LASTNODE=$((NODES - 1))
# the ranks of node i as gcsh folds them ("2-3")
ranks_of() { echo "$(($1 * PER))-$(($1 * PER + PER - 1))"; }
run() { # INPUT [ARGS...]: a piped session on the nodes; OUT, RC
    local input=$1
    shift
    OUT=$(printf '%s\n' "$input" | timeout 120 "$GCSH" -n "$N" "${ON_NODES[@]}" "$@" 2>&1); RC=$?
}

# ---- start-up: .info names the nodes; every rank knows its own
run '.info
print(gcsh.node, gcsh.nodes, gcsh.local_rank, io.popen("hostname"):read())'
expect_eq "start-up: exit 0" "$RC" 0
expect_contains ".info: the nodes" "$OUT" "backend host: $N ranks on $NODES nodes"
expect_match ".info: node 0 is this machine" "$OUT" "^ +1 +$(hostname) +0 +[0-9]+ +1 +cpu"
expect_match ".info: rank $LAST on node $LASTNODE" "$OUT" "^ +$LAST +node$LASTNODE +$LASTNODE +[0-9]+ +1 +cpu"
expect_contains "rank $LAST's facts" "$OUT" "[$LAST] $LASTNODE${T:=	}$NODES${T}1${T}node$LASTNODE"
expect_contains "rank 0's facts" "$OUT" "[0] 0${T}$NODES${T}0${T}$(hostname)"
# other machines named: Open MPI's choice, and mpirun without gcsh's
# loopback preload (shell/launch_net.h)
expect_contains ".info: the network is Open MPI's" "$OUT" \
    "MPI network: machines from --hostfile: Open MPI's choice of interfaces"
expect_not_contains ".info: no loopback preload for mpirun" "$OUT" "mpirun listens"

# ---- a script that only rank 0's node has: read by rank 0, sent to every rank
mkdir -p "$TMP/only0"
printf '%s\n' 'print(io.open(arg[0]) ~= nil, ...)' \
    'if gcsh.node == gcsh.nodes - 1 and arg[1] == "fail" then error("failed on the last node") end' \
    >"$TMP/only0/s.lua"
OUT=$(SIMNODE_HIDE=$TMP/only0 timeout 120 "$GCSH" -n "$N" "${ON_NODES[@]}" "$TMP/only0/s.lua" a b 2>&1); RC=$?
expect_eq "a script only node 0 has: exit 0" "$RC" 0
expect_contains "node 0 has the file" "$OUT" "[0-1] true${T}a${T}b"
expect_contains "the other nodes have not, and ran it" "$OUT" "[2-$LAST] false${T}a${T}b"
OUT=$(SIMNODE_HIDE=$TMP/only0 timeout 120 "$GCSH" -n "$N" "${ON_NODES[@]}" "$TMP/only0/s.lua" fail 2>&1); RC=$?
expect_eq "a script that fails on the last node only: exit 1" "$RC" 1
expect_contains "the last node's error, under its ranks" "$OUT" "[$(ranks_of "$LASTNODE")] $TMP/only0/s.lua:2: failed on the last node"

# ---- values across nodes: the communicator's collectives, windows whose
# team is the node, every all-reduce algorithm (tests/sh/nodes_values.lua)
OUT=$(timeout 300 "$GCSH" -n "$N" "${ON_NODES[@]}" tests/sh/nodes_values.lua 2>&1); RC=$?
expect_eq "values across nodes: exit 0" "$RC" 0
expect_all_ranks "values across nodes: every check" "$OUT" "nodes_values ok" "$N"
[ "$RC" = 0 ] || printf '%s\n' "$OUT" | tail -n 20 | sed 's/^/  | /'

# ---- hier's plan and stepper across nodes: the three phases, which moves
# cross the network, the same plan on every rank (tests/lua/hier_plan.lua,
# which tests/run.sh also runs on one node), and what the terminal shows
OUT=$(LUA_PATH="$PWD/tests/lua/?.lua;;" timeout 300 "$GCSH" -n "$N" "${ON_NODES[@]}" tests/lua/hier_plan.lua 2>&1); RC=$?
expect_eq "hier's plan and stepper across nodes: exit 0" "$RC" 0
expect_all_ranks "hier's plan and stepper across nodes: every check" "$OUT" "hier_plan: ok" "$N"
[ "$RC" = 0 ] || printf '%s\n' "$OUT" | tail -n 20 | sed 's/^/  | /'
# ---- hier refuses nodes with unequal shares, on every rank, saying whose:
# without rank 0, node 0 holds one rank of the split, every other node two
run 'c = comm.world()
s = c:split(rank == 0 and -1 or 0)
if s then
  w = s:window(8, "i32")
  local ok, err = pcall(kernel.allreduce, w, {algo = "hier"})
  print(ok, err)
  w:free()
  s:free()
end'
expect_eq "hier, unequal nodes: exit 0" "$RC" 0
expect_contains "hier, unequal nodes: node 0's rank names node 1's two" "$OUT" \
    "[1] false	allreduce: algo 'hier' needs the same number of the communicator's ranks on every node: node 1 has 2, this rank's team (node 0) 1; use algo 'comm' (the communicator's all-reduce)"
for ((k = 1; k < NODES; k++)); do
    expect_contains "hier, unequal nodes: node $k's ranks name node 0's one" "$OUT" \
        "[$(ranks_of "$k")] false	allreduce: algo 'hier' needs the same number of the communicator's ranks on every node: node 0 has 1, this rank's team (node $k) 2;"
done

# (the session line for line at 2 x 2 only: hier_plan.lua checks the
# stepper's marks and widths at every node count)
if [ "$NODES" = 2 ]; then
    run 'w = comm.world():window(8, "i32") w:tensor():fill(1 << rank)
st = step.allreduce(w, {algo = "hier"})
st:next()
st:next()
st:next()
=kernel.plan(w, {algo = "hier"}).phases[2]'
    expect_eq "hier's stepper: exit 0" "$RC" 0
    # (a slow machine's notes, "gcsh: 10.0 s: ... still running", are the shell's)
    expect_eq "hier's stepper: every line fits 80 columns" "$(awk 'length($0) > 80 && !/^gcsh: /' <<<"$OUT")" ""
    expect_contains "hier's plan: the phase across nodes, the same on every rank" "$OUT" "[0-$LAST] {
[0-$LAST]   name = \"all-reduce\",
[0-$LAST]   network = true,
[0-$LAST]   over = \"member t of every node: the communicator's all-reduce\",
[0-$LAST] }"
    expect_contains "hier's stepper: the end" "$OUT" "[0] result: every rank's region equals the reference (c:allreduce)"
    expect_eq "hier's stepper at 2 x 2: what the terminal shows" "$(grep -v '^gcsh: ' <<<"$OUT" | sed '/^\[0-3\]/,$d')" \
'[0] hier allreduce (sum) of 8 i32 on 4 ranks, 2 nodes: step 1 of 3
[0]   (reduce-scatter in the node)
[0]   r0: sum(r0.c0, r1.c0) -> r0.c0   r1: sum(r0.c1, r1.c1) -> r1.c1
[0]   r2: sum(r2.c0, r3.c0) -> r2.c0   r3: sum(r2.c1, r3.c1) -> r3.c1
[0]       c0    c1
[0]   r0  0,1*  0
[0]   r1  1     0,1*
[0]   r2  2,3*  2
[0]   r3  3     2,3*
[0]   cells: the ranks whose data a chunk holds (from its values: r put 2^r)
[0]   * changed in this step
[0] hier allreduce (sum) of 8 i32 on 4 ranks, 2 nodes: step 2 of 3 (all-reduce
[0]   across nodes)
[0]   r0: sum(r0.c0, r2.c0) -> r0.c0 (net)
[0]   r1: sum(r1.c1, r3.c1) -> r1.c1 (net)
[0]   r2: sum(r0.c0, r2.c0) -> r2.c0 (net)
[0]   r3: sum(r1.c1, r3.c1) -> r3.c1 (net)
[0]   (net): crosses the network: member t of every node, by the
[0]   communicator'"'"'s all-reduce of chunk t (loads and stores stay in a node)
[0]       c0    c1
[0]   r0  0-3*  0
[0]   r1  1     0-3*
[0]   r2  0-3*  2
[0]   r3  3     0-3*
[0]   cells: the ranks whose data a chunk holds (from its values: r put 2^r)
[0]   * changed in this step
[0] hier allreduce (sum) of 8 i32 on 4 ranks, 2 nodes: step 3 of 3 (all-gather
[0]   in the node)
[0]   r0: r0.c0 -> r1.c0   r1: r1.c1 -> r0.c1   r2: r2.c0 -> r3.c0
[0]   r3: r3.c1 -> r2.c1
[0]       c0    c1
[0]   r0  0-3   0-3*
[0]   r1  0-3*  0-3
[0]   r2  0-3   0-3*
[0]   r3  0-3*  0-3
[0]   cells: the ranks whose data a chunk holds (from its values: r put 2^r)
[0]   * changed in this step
[0] result: every rank'"'"'s region equals the reference (c:allreduce)'
fi

# ---- one-sided across nodes over the network path (tests/sh/nodes_net.lua)
OUT=$(timeout 300 "$GCSH" -n "$N" "${ON_NODES[@]}" tests/sh/nodes_net.lua 2>&1); RC=$?
expect_eq "one-sided across nodes: exit 0" "$RC" 0
expect_all_ranks "one-sided across nodes: every check" "$OUT" "nodes_net ok" "$N"
[ "$RC" = 0 ] || printf '%s\n' "$OUT" | tail -n 20 | sed 's/^/  | /'

# ---- ordering across nodes: w:fence() and c:quiet() (tests/lua/xfer_order.lua;
# each rank's next rank is on another node for half of them)
OUT=$(timeout 300 "$GCSH" -n "$N" "${ON_NODES[@]}" tests/lua/xfer_order.lua 2>&1); RC=$?
expect_eq "fence and quiet across nodes: exit 0" "$RC" 0
[ "$RC" = 0 ] || printf '%s\n' "$OUT" | tail -n 20 | sed 's/^/  | /'

# ---- the trace names the network path: a put's post and a signal's add
TR=$TMP/trace.json
run "c = comm.world() w = c:window(8) s = c:signals(2) far = (rank + $PER) % size
w:put(far, tensor.new(2):fill(1), 6):post() s:add(far, 1, 1) c:barrier()" --trace "$TR"
expect_eq "trace: exit 0" "$RC" 0
SPANS=$(python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e["ph"] == "X" and e["pid"] == 0 and e["name"] in ("xfer.post", "win.net"):
        a = e["args"]
        print(e["name"], a.get("peer"), a.get("bytes"), a.get("path"), a.get("slot", "-"))' "$TR" 2>&1)
expect_eq "trace: rank 0's put and add to node 1, over the network" "$SPANS" "xfer.post $PER 8 network -
win.net $PER 8 network 1"

# ---- w:peer off the node: refused, naming both nodes
run 'w = comm.world():window(4)
print(#w.team, table.concat(w:info().network, ","))
print(select(2, pcall(function() return w:peer((rank + 2) % size) end)))
print(kernel.allreduce(w, {algo = "hier"})[0] ~= nil)'
expect_eq "the window's team is the node: exit 0" "$RC" 0
expect_contains "rank 0's team is its node; the others are network" "$OUT" "[0-1] 2${T}$(seq -s , 2 "$LAST")"
expect_contains "w:peer off the node" "$OUT" "[0] stdin:1: bad argument #1 to 'peer' (rank 2 is on node 1; loads and stores reach only node 0's ranks 0-1"
expect_contains "w:peer off the node, from the other side" "$OUT" "[$((N - 2))] stdin:1: bad argument #1 to 'peer' (rank 0 is on node 0; loads and stores reach only node $LASTNODE's ranks $(ranks_of "$LASTNODE")"

# ---- Ctrl-C (SIGINT to gcsh -n): every node's ranks interrupted, the session reads on
bg_start "$N" "${ON_NODES[@]}"
bg_line 'print("ready") while true do end'
if bg_wait_all ready "$N" 120; then pass; else fail "Ctrl-C: the session did not start"; fi
kill -INT "$BG"
if bg_wait_out "gcsh: interrupted [0-$LAST]" 60; then pass; else fail "Ctrl-C: no interrupt"; cat "$TMP/out"; fi
bg_line 'print("next", gcsh.node)'
bg_end
expect_contains "Ctrl-C: the loop was interrupted on every node" "$OUT" "[0-$LAST] interrupted!"
expect_contains "Ctrl-C: the next line ran on the last node" "$OUT" "next${T}$LASTNODE"
expect_eq "Ctrl-C: exit 1 (a line failed)" "$RC" 1
expect_no_procs "Ctrl-C: no process left" "$TAG"

# ---- a lost node: every rank of the last node killed while the prompt waits
bg_start "$N" "${ON_NODES[@]}"
bg_line 'print("up")'
if bg_wait_all up "$N" 120; then pass; else fail "lost node: the session did not start"; fi
# (their pids first: mpirun ends the node's other rank once one is killed)
VICTIMS=$(for r in $(seq $((LASTNODE * PER)) "$LAST"); do rank_pid "$TAG" "$r"; done)
kill -9 $VICTIMS
bg_wait_out " is gone" 60
bg_end
expect_match "lost node: rank 0 names a rank of it" "$OUT" \
    "^gcsh: rank ($(seq -s '|' $((LASTNODE * PER)) "$LAST")) is gone \(its connection to rank 0 closed\)$"
expect_contains "lost node: the session ends" "$OUT" "gcsh: the session cannot go on without it; every rank exits with status 69"
expect_eq "lost node: exit 69" "$RC" 69
expect_no_procs "lost node: no process left (the other nodes' daemons too)" "$TAG"

# ---- the flight recorder: every node's ranks, gathered on rank 0
F=$TMP/flight.json
run "c = comm.world() c:barrier()
.flight $F"
expect_contains ".flight: every rank's calls" "$OUT" "flight recorder written to $F: "
expect_match ".flight: from every rank" "$OUT" "from $N ranks"
LASTS=$(python3 -c '
import json, sys
print(sorted({e["pid"] for e in json.load(open(sys.argv[1]))["traceEvents"]
              if e["ph"] == "X" and e["name"] == "comm.barrier"}))' "$F" 2>&1)
expect_eq ".flight: the barrier on every node's ranks" "$LASTS" "[$(seq -s ', ' 0 "$LAST")]"
finish
