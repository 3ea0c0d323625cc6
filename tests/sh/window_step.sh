#!/usr/bin/env bash
# step.window as the terminal shows it, and registrations that fail: the
# stepped registration of a host window at 2 ranks, line for line; a stage
# failing on one rank (gcsh.debug.inject "stage:NAME") through the stepper
# and through c:window(), which run the same stages; Ctrl-C during a stage
# (SIGINT to rank 0 while one rank waits in it for the interrupt:
# "stage_slow:NAME"), in
# st:next(), st:run() and c:window(); a stepper dropped part-way, reported
# and freed at exit.  After each failure nothing stays registered (the
# split communicator it used can be freed) and the next window works.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.."
. tests/sh/lib.sh
TAGS=()
trap 'for t in "${TAGS[@]}"; do for p in $(tagged_pids "$t"); do kill -9 $p 2>/dev/null; done; done' EXIT

# Addresses differ from run to run; the check board decides the fingerprints
# unless a rank is slow to post, when rank 0 does (collcheck.h); the line
# says which, the same on every rank.
no_addresses() { sed -E -e 's/0x[0-9a-f]+/0x?/g' \
    -e "s/^(\[0-1\]   fingerprints agree: compared) (on the node's check board|by rank 0|on the node's check board and by rank 0)$/\1 (board or rank 0)/"; }

# ---- a stepped registration, line for line ---------------------------------------------
gcsh_pipe 2 'c = comm.world()
st = step.window(c, 1024)
st:show()
st:next()
st:next()
st:next()
=st:run()
=st.step, st.steps, st.algo, st.window.seq
st:next()
st:reset()
=st.step, st.window'
expect_eq "stepped registration: exit status" "$RC" 0
expect_eq "stepped registration: what the terminal shows" "$(no_addresses <<<"$OUT")" \
"[0-1] register-host: a window (1024 f32), step 0 of 3
[0-1]   1 check     next
[0-1]   2 segment
[0-1]   3 peers
[0-1] step 1/3 check
[0-1]   every rank asks for window #1: 1024 f32, kind host
[0-1]   fingerprints agree: compared (board or rank 0)
[0-1]   proposals exchanged: n, dtype, kind and seq agree
[0-1]   56 KiB per rank: 4 KiB of data + 51072 B of kernel state
[0-1]     (ll slots and sync words), rounded up to the 4 KiB granularity
[0-1] step 2/3 segment
[0-1]   MPI_Comm_split by node: team 0-1 on node 0 (2 of 2 ranks)
[0-1]   MPI_Win_allocate_shared: one segment, 56 KiB per member
[0-1]   MPI_Win_lock_all: passive access for the window's life
[0-1]   rank 0: my slice at 0x? (in my own address space)
[0-1]   rank 1: my slice at 0x? (in my own address space)
[0-1] step 3/3 peers
[0-1]   MPI_Win_shared_query x 2: the peer pointer table
[0-1]   member i at member 0's slice + i x 56 KiB, in each rank's own mapping
[0-1]   zeroed my 56 KiB, MPI_Win_sync
[0-1]   st.window is ready: window #1, registered on every rank
[0-1] window #1 works: each rank wrote its rank into its slice and
[0-1]   read the 2 slices of its team back
[0-1] true
[0-1] 3	3	register-host	1
[0-1] all 3 steps are done (st:reset() starts again)
[0-1] reset: window #1 released on every rank (it was at step 3 of 3)
[0-1] 0	nil"

# .check off: the check step says there were no fingerprints
gcsh_pipe 2 '.check off
st = step.window(comm.world(), 8)
st:next()'
expect_contains "check off: no fingerprints" "$OUT" "[0-1]   fingerprints: none (.check off)"

# ---- a stage failing on one rank: undone everywhere, by either path ------------------------
check_failures() { # NP
    local n=$1 all="0-$(($1 - 1))"
    OUT=$(printf '%s\n' 'c = comm.world()' 'sub = c:split(0)' 'st = step.window(sub, 64)' 'st:next()' \
        'if rank == 1 then gcsh.debug.inject("stage:segment") end' 'st:next()' \
        '=st.step, st.window' \
        'if rank == 1 then gcsh.debug.inject("stage:peers") end' 'st:run()' \
        '=st.step, st.window' \
        'sub:free() print("nothing registered")' \
        'if rank == 1 then gcsh.debug.inject("stage:peers") end' 'w = c:window(16)' \
        'w = c:window(16) print("next window", w.seq, #w.team)' \
        '=step.window(c, 4):run()' |
        GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n "$n" 2>&1); RC=$?
    # (a bare st:next() is a tail call, so its error carries no line number)
    expect_contains "$n ranks: segment fails on rank 1, every rank says so" "$OUT" \
        "[$all] window #1: stage 'segment' failed on rank 1: injected failure (gcsh.debug.inject); nothing stays registered"
    expect_contains "$n ranks: the stepper is back at step 0" "$OUT" "[$all] 0	nil"
    expect_all_ranks "$n ranks: run prints the steps that ran" "$OUT" "step 2/3 segment" "$n"
    expect_all_ranks "$n ranks: peers fails within run" "$OUT" \
        "window #2: stage 'peers' failed on rank 1: injected failure (gcsh.debug.inject); nothing stays registered" "$n"
    expect_eq "$n ranks: no peers step but the last run's" "$(grep -c 'step 3/3 peers' <<<"$OUT")" 1
    expect_contains "$n ranks: the comm holds nothing" "$OUT" "[$all] nothing registered"
    expect_contains "$n ranks: c:window runs the same stages" "$OUT" \
        "[$all] stdin:1: window #1: stage 'peers' failed on rank 1: injected failure (gcsh.debug.inject); nothing stays registered"
    expect_contains "$n ranks: the next window" "$OUT" "[$all] next window	2	$n"
    expect_all_ranks "$n ranks: a stepped window after the failures" "$OUT" "true" "$n"
    expect_eq "$n ranks: exit status (the failed lines)" "$RC" 1
}
check_failures 2
check_failures 4

# an unknown stage name is refused, naming the valid ones
OUT=$(printf '%s\n' 'gcsh.debug.inject("stage:bogus")' | GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n 1 2>&1)
expect_contains "inject: unknown stage" "$OUT" \
    "gcsh.debug.inject: no window stage is called 'bogus' on the host backend (valid: segment peers allocate register devcomm export exchange map access table)"

# ---- Ctrl-C during a stage: undone everywhere, the communicator stays usable ---------------
rank_pid() { # TAG RANK
    local p
    for p in $(tagged_pids "$1"); do
        grep -qxzF "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# interrupted 'lines' 'lines after': SIGINT to rank 0 once the session printed
# "go" (the line that prints it then enters a stage where rank 1 waits for it);
# the lines after once the interrupt is said
interrupted() {
    local tag out
    tag=$(new_tag); TAGS+=("$tag"); out=$(mktemp)
    ( printf '%s\n' "$1"
      for i in $(seq 300); do grep -q '] go$' "$out" && break; sleep 0.1; done
      kill -INT $(rank_pid "$tag" 0)
      for i in $(seq 300); do grep -q 'interrupted' "$out" && break; sleep 0.1; done
      printf '%s\n' "$2" ) |
        GCSH_TEST_FAULTS=1 GCSH_TEST_TAG=$tag timeout 120 "$GCSH" -n 2 >"$out" 2>&1
    OUT=$(cat "$out"); rm -f "$out"
}
AFTER='sub:free() print("nothing registered")
c:barrier() print("comm usable")
=step.window(c, 4):run()'

interrupted 'c = comm.world() sub = c:split(0) st = step.window(sub, 64) st:next()
if rank == 1 then gcsh.debug.inject("stage_slow:segment") end print("go") st:next()' \
"=st.step, st.window
$AFTER"
expect_contains "Ctrl-C in st:next(): the stage is undone" "$OUT" \
    "[0-1] stdin:1: window #1: interrupted in stage 'segment' (on rank 1); nothing stays registered"
expect_contains "Ctrl-C in st:next(): step 0" "$OUT" "[0-1] 0	nil"
expect_contains "Ctrl-C in st:next(): nothing registered" "$OUT" "[0-1] nothing registered"
expect_contains "Ctrl-C in st:next(): the comm works" "$OUT" "[0-1] comm usable"
expect_all_ranks "Ctrl-C in st:next(): the next window" "$OUT" "true" 2

interrupted 'c = comm.world() sub = c:split(0) st = step.window(sub, 64)
if rank == 1 then gcsh.debug.inject("stage_slow:peers") end print("go") st:run()' "$AFTER"
expect_all_ranks "Ctrl-C in st:run(): the steps before it were printed" "$OUT" "step 2/3 segment" 2
expect_all_ranks "Ctrl-C in st:run(): undone" "$OUT" \
    "stdin:1: window #1: interrupted in stage 'peers' (on rank 1); nothing stays registered" 2
expect_contains "Ctrl-C in st:run(): nothing registered" "$OUT" "[0-1] nothing registered"
expect_all_ranks "Ctrl-C in st:run(): the next window" "$OUT" "true" 2

interrupted 'c = comm.world() sub = c:split(0)
if rank == 1 then gcsh.debug.inject("stage_slow:segment") end print("go") w = sub:window(64)' \
"=w
$AFTER"
expect_contains "Ctrl-C in c:window(): undone" "$OUT" \
    "[0-1] stdin:1: window #1: interrupted in stage 'segment' (on rank 1); nothing stays registered"
expect_contains "Ctrl-C in c:window(): no window" "$OUT" "[0-1] nil"
expect_contains "Ctrl-C in c:window(): nothing registered" "$OUT" "[0-1] nothing registered"
expect_all_ranks "Ctrl-C in c:window(): the next window" "$OUT" "true" 2

# ---- a stepper dropped part-way: reported once, freed at exit ----------------------------
gcsh_pipe 2 'c = comm.world()
st = step.window(c, 8) st:next() st:next()
st = nil collectgarbage() collectgarbage()
print("after")'
expect_eq "dropped stepper: exit status" "$RC" 0
expect_contains "dropped stepper: reported" "$OUT" \
    "[0-1] gcsh: window #1 (8 f32, host, registered up to stage 1 of 2) was garbage-collected before its last stage; it stays registered and is freed at exit (st:reset() frees a stepper's registration)"
expect_eq "dropped stepper: reported once" "$(grep -c 'garbage-collected' <<<"$OUT")" 1
expect_not_contains "dropped stepper: freed at exit" "$OUT" "could not free"
finish
