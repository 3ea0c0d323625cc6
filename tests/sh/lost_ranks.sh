#!/usr/bin/env bash
# Every lost rank is reported, whichever it is and whenever it dies (at the
# prompt as during a command, piped or at a terminal), with status 69
# (issue 26).  Host backend.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
SOCK="$TMP/tmux"
TAGS=()
trap tmux_cleanup EXIT

# once the session printed "up" (on UP_RANKS ranks, default all), kills
# RANK; once the loss is said, sends one more line (it must not run); the
# input stays open until the job is gone
kill_after_up() { # RANK [SIGNAL]
    piped_wait_all up 60 "${UP_RANKS:-$PIPED_N}"
    kill "-${2:-9}" "$(rank_pid "$TAG" "$1")"
    piped_wait_out " is gone" 30
    echo 'print("NOT-RUN")'
    job_gone 30
}
lost_rank_said() { # NAME N VICTIM
    if [ "$3" = 0 ]; then
        # the survivors say it (mpirun may end some of them first)
        expect_match "$1: the others say rank 0 is gone" "$OUT" \
            '^gcsh: rank [1-9][0-9]*: rank 0 is gone; exiting \(status 69\)$'
    else
        expect_contains "$1: rank 0 names it" "$OUT" \
            "gcsh: rank $3 is gone (its connection to rank 0 closed)"
        expect_contains "$1: the session ends" "$OUT" \
            "gcsh: the session cannot go on without it; every rank exits with status 69"
    fi
    expect_not_contains "$1: no false stop" "$OUT" "terminated (SIGTERM"
    expect_not_contains "$1: nothing runs after" "$OUT" "NOT-RUN"
    expect_eq "$1: the job exits 69" "$RC" 69
    expect_no_procs "$1: no process left" "$TAG"
}

# ---- kill -9 while the shell is idle (at the prompt), every rank in turn
for case in "2 0" "2 1" "4 0" "4 2" "4 3"; do
    set -- $case
    piped_while "$1" 'print("up")' kill_after_up "$2"
    lost_rank_said "idle, $1 ranks, rank $2" "$1" "$2"
done

# ---- during a command: rank 0 itself, and a rank the command does not run on
piped_while 2 'c = comm.world() c:barrier()
print("up") if rank == 1 then c:barrier() else gcsh.sleep(20) end' kill_after_up 0
lost_rank_said "in a command, rank 0" 2 0
UP_RANKS=2 piped_while 4 '.ranks 0-1
print("up") gcsh.sleep(20)' kill_after_up 3
lost_rank_said "in a command, a rank it does not run on" 4 3

# ---- a real terminal: a rank killed at the prompt is a lost rank, not a stop
if ! command -v tmux >/dev/null; then
    skip "tmux is not installed (the terminal case)"
    finish
    exit
fi
start t1 -n 2
check_wait "pty: prompt" "gcsh[0-1]>" 30
kill -9 "$(rank_pid "$TAG" 1)"
check_wait "pty: rank 1 is gone" "gcsh: rank 1 is gone (its connection to rank 0 closed)" 10
check_wait "pty: status 69" "EXIT=69" 15
expect_not_contains "pty: no false stop" "$(screen)" "terminated"
expect_no_procs "pty: no process left" "$TAG"

finish
