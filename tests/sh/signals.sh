#!/usr/bin/env bash
# Signals from outside to `gcsh -n N` (launch.h): the launcher stays mpirun's
# parent and turns SIGINT into the interrupt Ctrl-C gives (the session reads
# on), SIGTERM and SIGHUP into a clean stop of every rank (status 143).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
T=$'\t'
TMP=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT

# wait_out TEXT SECONDS: until $TMP/out holds TEXT.
wait_out() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        grep -qF -- "$1" "$TMP/out" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# start N TAG: gcsh -n N reading $TMP/in (fd 3 writes it), output in $TMP/out.
start() {
    rm -f "$TMP/in" "$TMP/out"
    mkfifo "$TMP/in"
    GCSH_TEST_TAG=$2 "$GCSH" -n "$1" <"$TMP/in" >"$TMP/out" 2>&1 &
    PID=$!
    exec 3>"$TMP/in"
}
# finish_run: closes the input, waits; sets OUT and RC.
end_run() {
    exec 3>&-
    wait "$PID"; RC=$?; PID=""
    OUT=$(cat "$TMP/out")
}

# ---- as the README shows it: timeout -s INT interrupts the command, the session reads on
TAG=$(new_tag)
OUT=$(printf '%s\n' 'print("start")' 'while true do end' 'print("after", rank)' |
      GCSH_TEST_TAG=$TAG timeout -s INT 10 "$GCSH" -n 2 --flight "$TMP/flight.json" 2>&1); RC=$?
expect_eq "timeout -s INT: interrupted, then the next line" "$(sed '/^gcsh:   /d' <<<"$OUT")" "[0-1] start

gcsh: interrupting [0-1]
[0-1] interrupted!
gcsh: interrupted [0-1]
$FLIGHT_SAID
[0] after${T}0
[1] after${T}1"
expect_eq "timeout -s INT: the flight file said" "$(flight_said "$OUT")" "$TMP/flight.json"
expect_eq "timeout -s INT: timeout's status" "$RC" 124
expect_no_procs "timeout -s INT: no process left" "$TAG"

# ---- SIGINT during a command, step by step: one interrupt, then the next line runs
TAG=$(new_tag)
start 2 "$TAG"
# (one line: once "ready" is out, the sleep runs)
printf '%s\n' 'print("ready") gcsh.sleep(60)' >&3
if wait_until 60 all_said "$TMP/out" ready 2; then pass; else fail "SIGINT: the session did not start"; fi
kill -INT "$PID"
if wait_out "gcsh: interrupted [0-1]" 30; then pass; else fail "SIGINT: no interrupt"; cat "$TMP/out"; fi
printf '%s\n' 'print("next")' >&3
end_run
expect_contains "SIGINT: the sleep was interrupted" "$OUT" "[0-1] interrupted!"
expect_eq "SIGINT: said once" "$(grep -c 'gcsh: interrupting' <<<"$OUT")" 1
expect_eq "SIGINT: the session read on" "$(tail -n 1 <<<"$OUT")" "[0-1] next"
expect_eq "SIGINT: exit 1 (a line failed)" "$RC" 1
expect_no_procs "SIGINT: no process left" "$TAG"

# ---- SIGINT while idle: dropped; the next command is not interrupted
TAG=$(new_tag)
start 2 "$TAG"
printf '%s\n' 'print("ready")' >&3
wait_out "[0-1] ready" 60
# Nothing shows that the line has ended (no prompt in a piped session), nor
# that an idle SIGINT was dropped: 0.3 s for the one, 0.5 s for the other
# (an interrupt that came later would interrupt the next line: a failure)
sleep 0.3
kill -INT "$PID"
sleep 0.5
printf '%s\n' 'gcsh.sleep(0.5) print("slept")' >&3
end_run
expect_eq "SIGINT while idle: nothing interrupted" "$OUT" "[0-1] ready
[0-1] slept"
expect_eq "SIGINT while idle: exit 0" "$RC" 0

# ---- SIGTERM during a command: interrupted, every rank stops, status 143
for sig in TERM HUP; do
    TAG=$(new_tag)
    start 3 "$TAG"
    printf '%s\n' 'print("ready") gcsh.sleep(60)' 'print("never")' >&3
    wait_until 60 all_said "$TMP/out" ready 3
    kill -$sig "$PID"
    wait_out "gcsh: interrupted" 30
    end_run
    expect_contains "SIG$sig during a command: said" "$OUT" "gcsh: terminated (SIGTERM or SIGHUP): every rank stops after this command"
    expect_contains "SIG$sig during a command: interrupted" "$OUT" "[0-2] interrupted!"
    expect_not_contains "SIG$sig during a command: nothing after" "$OUT" "never"
    expect_eq "SIG$sig during a command: exit 143" "$RC" 143
    expect_no_procs "SIG$sig during a command: no process left" "$TAG"
done

# ---- SIGTERM while waiting for input
TAG=$(new_tag)
start 2 "$TAG"
printf '%s\n' 'print("ready")' >&3
wait_out "[0-1] ready" 60
sleep 0.3 # for the line's end (not shown in a piped session): SIGTERM while idle
kill -TERM "$PID"
wait_out "every rank stops" 30
end_run
expect_eq "SIGTERM while idle" "$OUT" "[0-1] ready
gcsh: terminated (SIGTERM or SIGHUP): every rank stops"
expect_eq "SIGTERM while idle: exit 143" "$RC" 143
expect_no_procs "SIGTERM while idle: no process left" "$TAG"

# ---- a script: SIGINT interrupts it (the script fails), SIGTERM too
printf '%s\n' 'print("in script")' 'gcsh.sleep(60)' 'print("never")' >"$TMP/long.lua"
TAG=$(new_tag)
GCSH_TEST_TAG=$TAG "$GCSH" -n 2 "$TMP/long.lua" >"$TMP/out" 2>&1 </dev/null &
PID=$!
wait_until 60 all_said "$TMP/out" "in script" 2
kill -INT "$PID"
wait "$PID"; RC=$?; PID=""
OUT=$(cat "$TMP/out")
expect_contains "SIGINT to a script: interrupted" "$OUT" "gcsh: interrupted [0-1]"
expect_eq "SIGINT to a script: exit 1" "$RC" 1
expect_no_procs "SIGINT to a script: no process left" "$TAG"

finish
