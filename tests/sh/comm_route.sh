#!/usr/bin/env bash
# Where c:allreduce and kin run (bind/comm_route.c), as the session shows it:
# .info's "collectives:" line by --share-gpu and GCSH_COMM_ROUTE; a trace's
# spans named by the route (the kernels' ll, the library's fallback for
# f64, the library asked for); c:choose; tests/lua/comm_route.lua with
# --share-gpu (auto on the kernels); nodes; GCSH_COMM_ROUTE's bad value named.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

gcsh_pipe 2 '.info'
expect_contains ".info without shared GPUs: MPI, and the small calls' shared memory" "$OUT" \
    "collectives: MPI (no GPU shared); up to 4 KiB a rank through shared memory"
OUT=$(printf '.info\n' | GCSH_HOST_SMALL_BYTES=1k timeout 60 "$GCSH" -n 2 2>&1)
expect_contains ".info: GCSH_HOST_SMALL_BYTES's bound" "$OUT" \
    "collectives: MPI (no GPU shared); up to 1 KiB a rank through shared memory"
OUT=$(printf '.info\n' | GCSH_HOST_SMALL_BYTES=0 timeout 60 "$GCSH" -n 2 2>&1)
expect_contains ".info: GCSH_HOST_SMALL_BYTES=0, MPI alone" "$OUT" "collectives: MPI (no GPU shared)
"
OUT=$(printf '.info\n' | GCSH_RANKS_PER_NODE=2 timeout 60 "$GCSH" -n 4 2>&1)
expect_contains ".info on 2 nodes: shared memory in a node only" "$OUT" \
    "collectives: MPI (no GPU shared); in a node, to 4 KiB a rank by shared memory"
gcsh_pipe 2 '.info' --share-gpu
expect_contains ".info with --share-gpu: the kernels" "$OUT" "collectives: kernels (--share-gpu)"
OUT=$(printf '.info\n' | GCSH_COMM_ROUTE=kernel timeout 60 "$GCSH" -n 2 2>&1)
expect_contains ".info with GCSH_COMM_ROUTE=kernel" "$OUT" "collectives: kernels (GCSH_COMM_ROUTE=kernel)"
OUT=$(printf '.info\n' | GCSH_COMM_ROUTE=comm timeout 60 "$GCSH" -n 2 --share-gpu 2>&1)
expect_contains ".info with GCSH_COMM_ROUTE=comm (folded at 80 columns)" "$OUT" \
    "collectives: MPI (GCSH_COMM_ROUTE=comm);
  up to 4 KiB a rank through shared memory"

# the route of each call: its check and trace span carry it
F=$TMP/t.json
gcsh_pipe 2 'c = comm.world(); t = tensor.new(4):fill(1)
c:allreduce(t)
c:allreduce(t, "sum", nil, {algo = "comm"})
x = tensor.new(4, "f64"):fill(1); c:allreduce(x)
=t[0], x[0]
=c:choose("allreduce", 4)
=c:choose("allreduce", 4, "f64")' --share-gpu --trace "$F"
expect_eq "a traced session on the kernel route: exit 0" "$RC" 0
expect_contains "the values" "$OUT" "[0-1] 4.0	2.0"
expect_match "c:choose: ll, why, the staging window" "$OUT" \
    "^\[0-1\] ll	--share-gpu: the host takes the route shared GPUs take	[0-9]+$"
expect_contains "c:choose: f64 falls back, saying why" "$OUT" \
    "[0-1] comm	the kernels reduce f32 f16 bf16 i32 u32, not f64"
C=$(python3 tests/sh/trace_check.py "$F" 2 2>&1); RC=$?
expect_eq "the trace loads and checks out" "$RC" 0
expect_contains "the kernels' span" "$C" "flow allreduce/ll #2: ranks 0 1"
expect_contains "the library asked for" "$C" "flow allreduce/comm #3: ranks 0 1"
expect_contains "f64's fallback" "$C" "flow allreduce/comm #4: ranks 0 1"

# ranks that ask for different routes: the check names each rank's call,
# the kernel route's staging window included (made, or freed to grow it,
# in a check of its own before the call's), and the next call works
gcsh_pipe 2 'c = comm.world(); t = tensor.new(8):fill(1)
=c:allreduce(t, {algo = rank == 0 and "kernel" or "comm"})[0]
=c:allreduce(tensor.new(1):fill(1))[0]
=c:allreduce(tensor.new(rank == 0 and 8 or 100000):fill(1))[0]
=c:allreduce(tensor.new(1):fill(1))[0]' --share-gpu
expect_match "routes differ: each rank's call named" "$OUT" \
    '^\[0-1\] stdin:1: collective mismatch: \[0\] allreduce/[a-z]+ #1 \(its staging window\), \[1\] allreduce/comm #1 f32 x8 sum$'
expect_match "sizes differ: the growing rank's free named after its call" "$OUT" \
    '^\[0-1\] stdin:1: collective mismatch: \[0\] allreduce/[a-z]+ #3 f32 x8 sum, \[1\] allreduce/[a-z]+ #3 \(frees its staging window\)$'
expect_eq "after each mismatch the next call works" "$(grep -c '^\[0-1\] 2.0$' <<<"$OUT")" 2

# without shared GPUs nothing changes: the plain label
gcsh_pipe 2 'c = comm.world(); t = tensor.new(4):fill(1)
c:allreduce(t)' --trace "$F"
C=$(python3 tests/sh/trace_check.py "$F" 2 2>&1)
expect_contains "unrouted: the plain span" "$C" "flow allreduce #1: ranks 0 1"

# GCSH_COMM_ROUTE=kernel: the kernels by the table, the library past its
# last crossover (kernel.choose's "comm")
SMALL=$("$GCSH" -e 'io.write(kernel.choose(8, 2))' 2>/dev/null)
OUT=$(printf 'c = comm.world()\n=c:choose("allreduce", 2)\n=c:choose("allreduce", 1 << 20)\n' |
    GCSH_COMM_ROUTE=kernel timeout 60 "$GCSH" -n 2 2>&1)
expect_contains "GCSH_COMM_ROUTE=kernel: a small all-reduce on the kernels" "$OUT" \
    "[0-1] $SMALL	GCSH_COMM_ROUTE=kernel	0"
expect_contains "GCSH_COMM_ROUTE=kernel: 4 MiB on the library" "$OUT" \
    "[0-1] comm	past two-shot's crossover, where the library wins (kreduce_tune.h)	0"

# nodes (simulated: a node a rank): the world falls back, a node's split not
OUT=$(printf 'c = comm.world()\n=c:choose("allreduce", 2, "f32", "sum", {algo = "kernel"})\ns = c:split(gcsh.node)\n=s:choose("allreduce", 2, "f32", "sum", {algo = "kernel"})\nt = tensor.new(2):fill(1); c:allreduce(t, {algo = "kernel"}); print(t[0])\n' |
    GCSH_RANKS_PER_NODE=1 timeout 60 "$GCSH" -n 2 2>&1)
expect_contains "across nodes: the library, saying why" "$OUT" \
    "[0-1] comm	the communicator spans nodes: the kernels reach one node	0"
expect_contains "a node's split: the kernels" "$OUT" "[0-1] oneshot	asked for (algo='kernel')	0"
expect_contains "across nodes: the library's sum" "$OUT" "[0-1] 2.0"

# the Lua test of every dtype, op and size, with auto taking the kernels
OUT=$(LUA_PATH="$PWD/tests/lua/?.lua;;" timeout 300 "$GCSH" -n 2 --share-gpu tests/lua/comm_route.lua 2>&1); RC=$?
expect_eq "tests/lua/comm_route.lua with --share-gpu: exit 0" "$RC" 0
expect_match "tests/lua/comm_route.lua with --share-gpu: its calls" "$OUT" "^\[0\] comm_route: [0-9]+ calls checked$"

# a value that is not a route: refused at start, before any rank runs
# (env_check.sh has the other variables that take a word)
OUT=$(printf 'c = comm.world(); c:allreduce(tensor.new(2))\n' |
    GCSH_COMM_ROUTE=fast timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "GCSH_COMM_ROUTE=fast is refused at start" "$RC:$OUT" \
    "128:gcsh: GCSH_COMM_ROUTE=fast: not auto, kernel, comm or nccl (ENVIRONMENT in the manual lists them)"
# nccl, the library's name on cuda, is said as it was set
OUT=$(printf '.info\nc = comm.world()\n=c:choose("allreduce", 4)\n' |
    GCSH_COMM_ROUTE=nccl timeout 60 "$GCSH" -n 2 2>&1)
expect_contains "GCSH_COMM_ROUTE=nccl: .info says it as set" "$OUT" "collectives: MPI (GCSH_COMM_ROUTE=nccl);"
expect_contains "GCSH_COMM_ROUTE=nccl: c:choose says it as set" "$OUT" "[0-1] comm	GCSH_COMM_ROUTE=nccl	0"
finish
