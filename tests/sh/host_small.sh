#!/usr/bin/env bash
# The host backend's shared-memory path for small collectives (issue 40,
# src/host/host_small.c): a rank waiting in it is named where it waits and
# ends on Ctrl-C, whichever rank is interrupted; a frozen rank in a loop of
# them leaves a usable session; ranks that call differently with .check off
# get an error naming both calls; and the MPI path (GCSH_HOST_SMALL_BYTES=0)
# still gives the same results.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap 'tags_cleanup; rm -rf "$TMP"' EXIT

is_stopped() { [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]; }
no_crash() { # NAME
    expect_not_contains "$1: no segfault" "$OUT" "Segmentation fault"
    expect_not_contains "$1: no sanitizer report" "$OUT" "Sanitizer"
    expect_not_contains "$1: no rank lost" "$OUT" "is gone"
}

# ---- .check off: ranks 0..n-2 wait in a small all-reduce for rank n-1,
# which sleeps; the hang report shows the wait in shared memory (so the call
# took that path), Ctrl-C ends it on every rank, and a fresh world works
for n in 2 4; do
    last=$((n - 1))
    bg_start $n
    bg_line '.check off'
    bg_line 'c = comm.world(); t = tensor.new(2):fill(1)'
    bg_line "if rank == $last then gcsh.sleep(120) else c:allreduce(t) end"
    if bg_wait_out "waits at shared-memory call #1 for [$last]'s word (now 0)" 90; then pass; else
        fail "$n ranks: the hang report names the wait in shared memory"; context "$(cat "$TMP/out")"; fi
    kill -INT "$BG"
    bg_wait_out "gcsh: interrupted"
    bg_line 'c = comm.world()'
    bg_line '=c:allreduce(tensor.new(3):fill(rank + 1))[2]'
    bg_line '=c:allgather(tensor.new(1):fill(rank), tensor.new(c.size))[c.size - 1]'
    bg_end
    no_crash "$n ranks"
    expect_all_ranks "$n ranks: the waiting ranks were interrupted in it" "$OUT" \
        "stdin:1: interrupted in allreduce #1:" $last
    expect_all_ranks "$n ranks: their communicator is aborted" "$OUT" \
        "the communicator is aborted on every rank; comm.world() makes a fresh one" $last
    expect_contains "$n ranks: the sleeping rank was interrupted" "$OUT" "[$last] interrupted!"
    expect_contains "$n ranks: a fresh all-reduce is right" "$OUT" "[0-$last] $((n * (n + 1) / 2)).0"
    expect_contains "$n ranks: a fresh all-gather is right" "$OUT" "[0-$last] $last.0"
    expect_eq "$n ranks: exit 1 (the interrupted line)" "$RC" 1
    expect_no_procs "$n ranks: no process left" "$TAG"
done

# ---- .check on: a loop of small all-reduces, rank 1 frozen (SIGSTOP) in
# it, Ctrl-C, then rank 1 resumes: rank 0 leaves whatever it waited in (the
# check or the shared-memory path), rank 1 stops at its next wait, and the
# session goes on with a fresh world
bg_start 2
bg_line 'c = comm.world(); t = tensor.new(2):fill(1); print("up") for i = 1, 1e9 do c:allreduce(t) end'
bg_wait_all up 2
R1=$(rank_pid "$TAG" 1)
kill -STOP "$R1"
wait_until 10 is_stopped "$R1"
kill -INT "$BG"
sleep 1 # the frozen time under test: rank 0 must leave its wait meanwhile
kill -CONT "$R1"
bg_wait_out "gcsh: interrupted"
bg_line 'c = comm.world()'
bg_line 'for i = 1, 100 do c:allreduce(tensor.new(2)) end print("after", rank)'
bg_line '=c:reducescatter(tensor.new(2 * c.size):fill(2), tensor.new(2))[1]'
bg_end
no_crash "frozen rank"
expect_contains "frozen rank: the loop was interrupted on rank 0" "$OUT" "[0] stdin:1: interrupted"
expect_contains "frozen rank: rank 0 goes on" "$OUT" "[0] after	0"
expect_contains "frozen rank: rank 1 goes on" "$OUT" "[1] after	1"
expect_contains "frozen rank: a fresh reduce-scatter is right" "$OUT" "[0-1] 4.0"
expect_eq "frozen rank: exit 1 (the interrupted line)" "$RC" 1
expect_no_procs "frozen rank: no process left" "$TAG"

# ---- .check off, ranks that call differently: an error naming both calls
# on the ranks that see it, the others' call abandoned, never a result
for n in 2 4; do
    last=$((n - 1))
    TAG=$(new_tag); TAGS+=("$TAG")
    OUT=$(printf '%s\n' '.check off' 'c = comm.world()' \
        'c:allreduce(tensor.new(rank == 1 and 5 or 4))' 'c = comm.world()' \
        "c:broadcast(tensor.new(4), rank == $last and 1 or 0)" 'c = comm.world()' \
        '=c:allreduce(tensor.new(2):fill(1))[0]' |
        GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n $n 2>&1); RC=$?
    no_crash "mismatch, $n ranks"
    expect_match "mismatch, $n ranks: the counts are named" "$OUT" \
        '^\[[0-9,-]+\] stdin:1: allreduce #1: ranks called the collective differently: rank [0-9] allreduce of [45] f32 \(sum\), rank [0-9] allreduce of [45] f32 \(sum\); the communicator is aborted on every rank'
    expect_match "mismatch, $n ranks: the roots are named" "$OUT" \
        '^\[[0-9,-]+\] stdin:1: broadcast #1: ranks called the collective differently: rank [0-9] broadcast of 4 f32 to/from root [01], rank [0-9] broadcast of 4 f32 to/from root [01];'
    expect_not_contains "mismatch, $n ranks: no MPI error" "$OUT" "MPI_ERR"
    expect_contains "mismatch, $n ranks: a fresh world works" "$OUT" "[0-$last] $n.0"
    expect_eq "mismatch, $n ranks: exit 1 (failed lines)" "$RC" 1
    expect_no_procs "mismatch, $n ranks: no process left" "$TAG"
done

# ---- the MPI path gives what the shared-memory path gives: every
# collective, dtype and op (comm_collectives.lua, comm_scan.lua) with
# GCSH_HOST_SMALL_BYTES=0, and with simulated nodes of one rank (no
# communicator within one node)
for env in GCSH_HOST_SMALL_BYTES=0 GCSH_RANKS_PER_NODE=1; do
    for t in comm_collectives comm_scan; do
        OUT=$(env $env timeout 120 "$GCSH" -n 2 "tests/lua/$t.lua" 2>&1 </dev/null); RC=$?
        expect_eq "$env $t: exit 0" "$RC" 0
        expect_not_contains "$env $t: no failure" "$OUT" "FAIL"
    done
done

finish
