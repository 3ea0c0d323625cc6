#!/usr/bin/env bash
# Faults on GPUs (issue 6), run by scripts/gpu-check.sh:
#   bash tests/gpu/faults.sh path/to/gcsh NP
# A mismatched NCCL all-reduce caught before launch; Ctrl-C (SIGINT to rank 0)
# out of a blocked NCCL collective and out of a blocked signal wait; Ctrl-C
# in a window's registration stage (nccl, vmm); an injected out-of-bounds
# kernel write ending every rank with status 70; an injected out-of-memory on
# one rank.  Each asserts the next command works.
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
. tests/sh/lib.sh
if [ "$NP" -lt 2 ]; then
  # every case here is between ranks: a mismatch, one rank's fault seen by
  # the others, an interrupt undone everywhere
  skip "tests/gpu/faults.sh needs 2 ranks or more (NP=$NP)"
  finish; exit
fi
LAST=$((NP - 1))
OTHERS=$([ "$NP" = 2 ] && echo 0 || echo "0,2-$LAST")
TAGS=()
trap 'for t in "${TAGS[@]}"; do for p in $(tagged_pids "$t"); do kill -9 $p 2>/dev/null; done; done' EXIT

rank_pid() { # TAG RANK
    local p
    for p in $(tagged_pids "$1"); do
        grep -qxzF "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# interrupted TAG 'lines before' 'lines after': a piped session that gets
# SIGINT on rank 0 three seconds into its last "before" line
interrupted() {
    local tag=$1
    ( printf '%s\n' "$2"
      for i in $(seq 100); do [ -n "$(rank_pid "$tag" 0)" ] && break; sleep 0.1; done
      sleep 5; kill -INT $(rank_pid "$tag" 0); sleep 3
      printf '%s\n' "$3" ) |
        GCSH_TEST_TAG=$tag timeout 120 "$GCSH" -n "$NP" --backend cuda 2>&1
}

# ---- a mismatched all-reduce: caught before NCCL sees it
gcsh_pipe "$NP" 'c = comm.world()
c:allreduce(tensor.new(rank == 1 and 5 or 4))
=c:allreduce(tensor.new(1):fill(1))[0]' --backend cuda
# (ranks sharing a GPU route c:allreduce to gcsh's kernels, through a staging
# window made first: "allreduce/ll #2", bind/comm_route.c)
expect_match "mismatch caught" "$OUT" \
    "^\[0-$LAST\] stdin:1: collective mismatch: allreduce( #1|/ll #2): \[$OTHERS\] f32 x4 sum, \[1\] f32 x5 sum$"
expect_contains "mismatch: the next all-reduce works" "$OUT" "[0-$LAST] $NP.0"

# ---- .check off: one rank's argument error while the others' kernel is
# queued (it returns at once on cuda): the command's end stops waiting for
# it, says who failed, and the next command works (issue 35)
gcsh_pipe "$NP" '.check off
c = comm.world() w = c:window(1024)
kernel.allreduce(w, {algo = rank == 1 and "bogus" or "oneshot"})
c = comm.world() print(c:allreduce(tensor.new(1):fill(1))[0])' --backend cuda
expect_contains "check off: rank 1's own error" "$OUT" "[1] stdin:1: allreduce: unknown algo 'bogus'"
expect_contains "check off: the queued kernel abandoned" "$OUT" "abandoned: rank 1 failed before joining it"
expect_contains "check off: the next command works" "$OUT" "[0-$LAST] $NP.0"
expect_eq "check off: exit status (rank 1's line failed)" "$RC" 1
# ... and gcsh.sync() in the same command waits as the command's end does
gcsh_pipe "$NP" '.check off
c = comm.world() w = c:window(1024)
kernel.allreduce(w, {algo = rank == 1 and "bogus" or "oneshot"}) gcsh.sync() print("synced")
c = comm.world() print(c:allreduce(tensor.new(1):fill(1))[0])' --backend cuda
expect_match "check off: gcsh.sync() stopped by the abandon" "$OUT" \
    "^\[0[^]]*\] stdin:1: kernel.allreduce #2: abandoned: rank 1 failed before joining it"
expect_not_contains "check off: gcsh.sync() never returned as if done" "$OUT" "synced"
expect_contains "check off: after gcsh.sync(), the next command works" "$OUT" "[0-$LAST] $NP.0"

# ---- Ctrl-C out of a blocked NCCL all-reduce (unchecked, so it is launched)
TAG=$(new_tag); TAGS+=("$TAG")
OUT=$(interrupted "$TAG" '.check off
c = comm.world() c:barrier()
if rank == 0 then c:allreduce(tensor.new(1024)) else gcsh.sleep(60) end' '.check on
print(c)
c = comm.world()
=c:allreduce(tensor.new(1):fill(1))[0]')
# stream-ordered: the all-reduce was enqueued; the command's end waits for it
# (ranks sharing a GPU run it on gcsh's kernels, through the staging window
# made as #1: the call itself waits for its peers there)
expect_match "Ctrl-C: the blocked all-reduce" "$OUT" \
    "^\[0\] (interrupted while the GPU ran this command's work \(last: allreduce #2\):|stdin:1: interrupted in allreduce/ll #2:)$"
expect_eq "Ctrl-C: every line of the error within 80 columns" \
    "$(grep -E '^\[0\] (interrupted|the communicators|comm.world\(\) makes)' <<<"$OUT" | awk 'length > 80')" ""
expect_contains "Ctrl-C: aborted everywhere" "$OUT" "[0-$LAST] comm(aborted)"
expect_contains "Ctrl-C: a fresh world works" "$OUT" "[0-$LAST] $NP.0"

# ---- Ctrl-C out of a blocked signal wait (when signals exist)
if "$GCSH" -n 1 --backend cuda -e 'assert(comm.world().signals)' >/dev/null 2>&1; then
    TAG=$(new_tag); TAGS+=("$TAG")
    OUT=$(interrupted "$TAG" 'c = comm.world() s = c:signals(1)
if rank == 0 then s:wait(0, 1) gcsh.sync() else gcsh.sleep(60) end' 'c = comm.world()
=c:allreduce(tensor.new(1):fill(1))[0]')
    expect_contains "Ctrl-C: signal wait interrupted" "$OUT" "gcsh: interrupted [0-$LAST]"
    expect_contains "Ctrl-C: signal wait: next command" "$OUT" "[0-$LAST] $NP.0"
else
    skip "signals: not in this build"
fi

# ---- out of memory on one rank: every rank gets an error, the next command works
OUT=$(printf '%s\n' 'c = comm.world()' \
    'if rank == 1 then gcsh.debug.inject("oom") end t = tensor.new(4) c:allreduce(t)' \
    '=c:allreduce(tensor.new(1):fill(1))[0]' |
    GCSH_TEST_FAULTS=1 timeout 120 "$GCSH" -n "$NP" --backend cuda 2>&1)
expect_contains "OOM: the rank's own error" "$OUT" "[1] stdin:1: "
expect_contains "OOM: cudaErrorMemoryAllocation" "$OUT" "cudaErrorMemoryAllocation"
expect_contains "OOM: the others' error names rank 1" "$OUT" "[1] ended the command with an error"
expect_contains "OOM: the next command works" "$OUT" "[0-$LAST] $NP.0"

# ---- Ctrl-C during a window's registration (step.window's stages, which
# c:window() runs): rank 1 waits in the stage for the interrupt (gcsh.debug.inject
# "stage_slow:NAME"), which SIGINT to rank 0 brings; the stage is undone on
# every rank, and the communicator and the next window work
interrupted_at_go() { # TAG 'lines' 'lines after': SIGINT once "go" is printed
    local tag=$1 out
    out=$(mktemp)
    ( printf '%s\n' "$2"
      for i in $(seq 600); do grep -q '] go$' "$out" && break; sleep 0.1; done
      kill -INT $(rank_pid "$tag" 0); sleep 6
      printf '%s\n' "$3" ) |
        GCSH_TEST_TAG=$tag GCSH_TEST_FAULTS=1 timeout 120 "$GCSH" -n "$NP" --backend cuda >"$out" 2>&1
    cat "$out"; rm -f "$out"
}
# the kinds that work here (nccl needs NCCL's symmetric memory: not at one
# rank, not for ranks sharing a GPU)
KINDS=$(LUA_PATH="$PWD/tests/lua/?.lua;$PWD/tests/gpu/lib/?.lua;${LUA_PATH:-;}" timeout 120 \
    "$GCSH" -n "$NP" --backend cuda tests/gpu/lib/kinds.lua 2>&1 |
    sed -n 's/^\(\[0\] \)\{0,1\}kinds: //p' | tail -n 1)
[ -n "$KINDS" ] || fail "no window kind works here"
for kind in $KINDS; do
    stage=$([ $kind = nccl ] && echo register || echo exchange)
    TAG=$(new_tag); TAGS+=("$TAG")
    OUT=$(interrupted_at_go "$TAG" "c = comm.world()
if rank == 1 then gcsh.debug.inject('stage_slow:$stage') end print('go') w = c:window(4096, 'f32', {kind = '$kind'})" \
"=w
w = c:window(16, 'f32', {kind = '$kind'}) w:tensor():fill(rank + 1) c:barrier()
=w:peer((rank + 1) % size)[0] == (rank + 1) % size + 1
=c:allreduce(tensor.new(1):fill(1))[0]")
    expect_contains "Ctrl-C in $kind's $stage stage: undone everywhere" "$OUT" \
        "[0-$LAST] stdin:1: window #1: interrupted in stage '$stage' (on rank 1); nothing stays registered"
    expect_contains "Ctrl-C in $kind's $stage stage: no window" "$OUT" "[0-$LAST] nil"
    expect_contains "Ctrl-C in $kind's $stage stage: the next window" "$OUT" "[0-$LAST] true"
    expect_contains "Ctrl-C in $kind's $stage stage: the comm works" "$OUT" "[0-$LAST] $NP.0"
done

# ---- Ctrl-C during a loop of persistent all-reduces (issue 35), at a
# terminal (script(1) gives gcsh a pty; Ctrl-C is the byte 0x03 typed): the
# interrupted command stops the residents it rang on every rank, the window
# stays readable, w:free() and .quit say nothing more, and the job exits 0
# (at a terminal; a piped session's status would be 1 for the interrupted
# line)
if command -v script >/dev/null; then
    TAG=$(new_tag); TAGS+=("$TAG")
    OUTF=$(mktemp)
    # kind vmm: its slices stay readable after the abort (kind nccl's go with
    # NCCL's LSA mappings, and reading one is refused: evidence.sh)
    ( printf '%s\n' "c = comm.world() w = c:window(1024, 'f32', {kind = 'vmm'}) p = kernel.persistent(w) p:allreduce()" \
          "print('go') while true do p:allreduce() end"
      for i in $(seq 600); do grep -q '\] go' "$OUTF" && break; sleep 0.1; done
      sleep 3; printf '\003'
      for i in $(seq 600); do grep -q 'gcsh: interrupted' "$OUTF" && break; sleep 0.1; done
      printf '%s\n' '=w:tensor()[0] ~= nil' 'w:free()' "print('freed')" '.quit'
      for i in $(seq 600); do [ -z "$(tagged_pids "$TAG")" ] && break; sleep 0.1; done ) |
        GCSH_TEST_TAG=$TAG timeout 120 script -qefc "$GCSH -n $NP --backend ${FAULTS_BACKEND:-cuda}" /dev/null \
        >"$OUTF" 2>&1
    RC=$?
    OUT=$(tr -d '\r' <"$OUTF"); rm -f "$OUTF"
    expect_contains "Ctrl-C in persistent loop: it ran" "$OUT" "[0-$LAST] go"
    expect_contains "Ctrl-C in persistent loop: interrupted" "$OUT" "gcsh: interrupted"
    expect_contains "Ctrl-C in persistent loop: the window reads" "$OUT" "[0-$LAST] true"
    expect_contains "Ctrl-C in persistent loop: w:free() then" "$OUT" "[0-$LAST] freed"
    expect_not_contains "Ctrl-C in persistent loop: no could-not-free" "$OUT" "could not free"
    expect_not_contains "Ctrl-C in persistent loop: w:free() not refused" "$OUT" "p:stop() it first"
    expect_eq "Ctrl-C in persistent loop: .quit exits 0" "$RC" 0
    [ "$RC" = 0 ] || context "$OUT"
    expect_no_procs "Ctrl-C in persistent loop: no process left" "$TAG"
else
    skip "Ctrl-C in a persistent loop at a terminal: no script(1) here"
fi

# ---- an out-of-bounds kernel write: sticky; every rank exits 70, none left
TAG=$(new_tag); TAGS+=("$TAG")
OUT=$(printf '%s\n' 'c = comm.world() c:barrier()' \
    'if rank == 1 then gcsh.debug.inject("oob_write") gcsh.sync() end c:barrier()' 'print("never")' |
    GCSH_TEST_TAG=$TAG GCSH_TEST_FAULTS=1 timeout 120 "$GCSH" -n "$NP" --backend cuda 2>&1); RC=$?
expect_contains "oob write: the fault, its rank and last operation" "$OUT" "gcsh: rank 1: unrecoverable fault at stdin:1:"
expect_contains "oob write: illegal address" "$OUT" "cudaErrorIllegalAddress"
expect_contains "oob write: last operation" "$OUT" "(last operation: barrier #1)"
expect_contains "oob write: every rank exits" "$OUT" "every rank exits with status 70"
expect_not_contains "oob write: nothing after" "$OUT" "never"
expect_eq "oob write: exit status" "$RC" 70
expect_no_procs "oob write: no process left" "$TAG"

finish
