#!/usr/bin/env bash
# One SIGTERM always ends the job (issue 35 finding 9): whatever rank 0 is
# stuck in (a finalizer that loops at exit, a write to
# a pipe nobody reads, a FIFO history), ONE SIGTERM to gcsh -n's launcher
# ends the job within 10 s with status 143 (rank 0 gives up 6 s after it,
# sigint.h), and `timeout` always ends gcsh; at a terminal, a rank 0 stopped
# from outside is said, and Ctrl-C ends the job.  (sigterm_once.sh: the
# requests themselves.)  Every run is under `timeout 20` and waits for a
# marker the Lua code writes, never a fixed time.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
need_tmux
tmux_setup
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; tmux_cleanup' EXIT


# ---- a finalizer that loops at exit, on rank 0
start_bg gc_loop "$GCSH" -n 2 -e "if rank == 0 then x = setmetatable({}, {__gc = function() $(mark "$TMP/gc_loop") while true do end end}) end"
wait_file "$TMP/gc_loop"
L=$(child_of "$P")
after_kill TERM "$L"
OUT=$(cat "$TMP/gc_loop.out")
expect_eq "a looping finalizer at exit: one SIGTERM: exit 143" "$RC" 143
within "a looping finalizer at exit" 10
expect_contains "a looping finalizer: said" "$OUT" "gcsh: SIGTERM: the session did not end within 6 s"
expect_no_procs "a looping finalizer: no process left" "$TAG"

# ---- a finalizer that calls a collective at exit, on rank 0 alone: the
# session releases its communicators before Lua's last collection, so the
# barrier fails at once (a finalizer's error is dropped, as lua drops it)
# and the job ends by itself, with no SIGTERM to ask
start_bg gc_coll "$GCSH" -n 2 -e "c = comm.world() if rank == 0 then x = setmetatable({}, {__gc = function() $(mark "$TMP/gc_coll") c:barrier() end}) end"
wait_file "$TMP/gc_coll"
t0=$(date +%s%N)
wait "$P"; RC=$?
SECS=$((($(date +%s%N) - t0) / 1000000000))
expect_eq "a collective in a finalizer at exit: the job ends by itself, exit 0" "$RC" 0
within "a collective in a finalizer at exit" 10
expect_no_procs "a collective in a finalizer: no process left" "$TAG"

# ---- stdout a pipe nobody reads
mkfifo "$TMP/pipe"
sleep 60 <"$TMP/pipe" &
READER=$!
PIDS+=("$READER")
TAG=$(new_tag); TAGS+=("$TAG")
GCSH_TEST_TAG=$TAG timeout -k 5 20 "$GCSH" -n 2 \
    -e "$(mark "$TMP/pipe_mark") while true do print(string.rep('x', 1000)) end" >"$TMP/pipe" 2>"$TMP/pipe.err" &
P=$!
PIDS+=("$P")
wait_file "$TMP/pipe_mark"
L=$(child_of "$P")
after_kill TERM "$L"
kill "$READER" 2>/dev/null
expect_eq "stdout a full pipe: exit 143" "$RC" 143
within "stdout a full pipe" 10
expect_no_procs "stdout a full pipe: no process left" "$TAG"

# ---- `timeout` always ends gcsh: with -n, and one rank without a launcher
for n in "-n 2" ""; do
    TAG=$(new_tag); TAGS+=("$TAG")
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    GCSH_TEST_TAG=$TAG timeout 3 "$GCSH" $n -e "x = setmetatable({}, {__gc = function() while true do end end})" \
        >/dev/null 2>&1 </dev/null
    RC=$?
    SECS=$((($(date +%s%N) - t0) / 1000000000))
    expect_eq "timeout 3 gcsh ${n:-(one rank)} with a looping finalizer: timeout's status" "$RC" 124
    within "timeout 3 gcsh ${n:-(one rank)}" 14
    expect_no_procs "timeout gcsh ${n:-(one rank)}: no process left" "$TAG"
done

# ---- at a terminal, rank 0 stopped from outside holds the foreground: the
# launcher says so and takes the terminal, so Ctrl-C reaches it and ends the job
HIST=""
start stopped -n 2
check_wait "a stopped rank 0 at a terminal: the prompt" "gcsh[0-1]>" 60
R0=$(rank_pid "$TAG" 0)
kill -STOP "$R0"
check_wait "a stopped rank 0 at a terminal: said" "gcsh: rank 0 (pid $R0) is stopped (SIGSTOP from outside); Ctrl-C ends the job, kill -CONT $R0 continues it" 10
t0=$(date +%s%N)
press C-c
check_wait "a stopped rank 0 at a terminal: Ctrl-C ends the job" "EXIT=130" 10
SECS=$((($(date +%s%N) - t0) / 1000000000))
within "a stopped rank 0 at a terminal" 10
expect_no_procs "a stopped rank 0 at a terminal: no process left" "$TAG"

# ---- a terminal whose history file is a FIFO (the open blocks)
mkfifo "$TMP/hist.fifo"
HIST="$TMP/hist.fifo"
start hist -n 2
check_wait "a FIFO history: the banner" "; .help for help" 60
L=$(launcher_pid "$TAG")
t0=$(date +%s%N)
kill -TERM "$L"
check_wait "a FIFO history: one SIGTERM ends the job with 143" "EXIT=143" 12
SECS=$((($(date +%s%N) - t0) / 1000000000))
within "a FIFO history" 12
expect_no_procs "a FIFO history: no process left" "$TAG"

finish
