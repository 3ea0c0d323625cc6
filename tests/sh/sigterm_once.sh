#!/usr/bin/env bash
# Signals from outside as requests (issue 35 finding 9, issue 36 items 4 and
# 8): a SIGTERM to gcsh -n's launcher and to its process group (what
# `timeout` sends) is one request, answered with the interrupt, the flight
# dump and 143; a stopped rank 0 is reported and Ctrl-C ends the job (130);
# --replay stopped by SIGTERM exits 143; SIGINT or SIGTERM during start-up
# end the job with 130 or 143.  (sigterm.sh: a stuck rank 0.)  Every run is
# under `timeout 20` and waits for a marker the Lua code writes, never a
# fixed time.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; tags_cleanup' EXIT


# ---- SIGTERM to the launcher and then to its process group (what timeout
# and kill -- -PGID send): one request, answered with the interrupt and the
# flight dump
start_bg group setsid "$GCSH" -n 2 --flight "$TMP/flight.json" \
    -e "$(mark "$TMP/group") while true do end"
wait_file "$TMP/group"
L=$(child_of "$P")
t0=$(date +%s%N)
kill -TERM "$L"
kill -TERM -- "-$L"
wait "$P"; RC=$?
SECS=$((($(date +%s%N) - t0) / 1000000000))
OUT=$(cat "$TMP/group.out")
expect_eq "SIGTERM twice (the launcher, its group): exit 143" "$RC" 143
within "SIGTERM twice" 10
expect_contains "SIGTERM twice: said once" "$OUT" "gcsh: terminated (SIGTERM or SIGHUP): every rank stops after this command"
expect_eq "SIGTERM twice: one request" "$(grep -c 'gcsh: terminated' <<<"$OUT")" 1
expect_contains "SIGTERM twice: the command interrupted" "$OUT" "[0-1] interrupted!"
expect_eq "SIGTERM twice: the flight dump" "$(flight_said "$OUT")" "$TMP/flight.json"
expect_not_contains "SIGTERM twice: not a second SIGTERM" "$OUT" "a second SIGTERM"
expect_no_procs "SIGTERM twice: no process left" "$TAG"

# ---- a stopped rank 0: reported, and Ctrl-C (SIGINT to the launcher) ends the job
start_bg stopped "$GCSH" -n 2 -e "$(mark "$TMP/stopped") gcsh.sleep(60)"
wait_file "$TMP/stopped"
L=$(child_of "$P")
R0=$(rank_pid "$TAG" 0)
kill -STOP "$R0"
wait_until 10 sh -c "grep -q '^State:.*T' /proc/$R0/status"
after_kill INT "$L"
OUT=$(cat "$TMP/stopped.out")
expect_eq "Ctrl-C with rank 0 stopped: exit 130" "$RC" 130
within "Ctrl-C with rank 0 stopped" 10
expect_contains "Ctrl-C with rank 0 stopped: reported" "$OUT" "gcsh: rank 0 (pid $R0) is stopped and cannot take Ctrl-C; the job ends through mpirun"
expect_no_procs "Ctrl-C with rank 0 stopped: no process left" "$TAG"

# ---- --replay stopped by SIGTERM: 143, not 1
printf '%s\n' "#!/usr/bin/env gcsh" "-- gcsh recording (format 2): 2 ranks, backend host" \
    'local line = require("gcsh.record").script { ranks = 2, backend = "host" }' \
    "line(1, \"0-1\", [==[$(mark "$TMP/replay") gcsh.sleep(60)]==])" \
    'line(2, "0-1", [==[print("never")]==])' 'line.finish(2)' >"$TMP/long.lua"
start_bg replay "$GCSH" --replay "$TMP/long.lua"
wait_file "$TMP/replay"
L=$(child_of "$P")
after_kill TERM "$L"
OUT=$(cat "$TMP/replay.out")
expect_eq "--replay stopped by SIGTERM: exit 143" "$RC" 143
within "--replay stopped by SIGTERM" 10
expect_contains "--replay stopped by SIGTERM: said" "$OUT" "gcsh: replay: stopped by SIGTERM at line 1 of $TMP/long.lua"
expect_not_contains "--replay stopped by SIGTERM: no difference claimed" "$OUT" "differ"

# ---- start-up: SIGINT and SIGTERM before rank 0 is there (an mpirun that
# never starts the ranks holds the job in start-up)
printf '#!/bin/sh\ntouch "%s"\nexec sleep 60\n' "$TMP/started" >"$TMP/mpirun"
chmod +x "$TMP/mpirun"
for sig in INT TERM; do
    rm -f "$TMP/started"
    start_bg "startup_$sig" env GCSH_MPIRUN="$TMP/mpirun" "$GCSH" -n 2 -e 'print(1)'
    wait_file "$TMP/started"
    after_kill "$sig" "$(child_of "$P")"
    OUT=$(cat "$TMP/startup_$sig.out")
    status=$((128 + $(kill -l $sig)))
    expect_eq "SIG$sig during start-up: exit $status" "$RC" "$status"
    within "SIG$sig during start-up" 10
    expect_not_contains "SIG$sig during start-up: no lost rank" "$OUT" "status 69"
done
expect_contains "SIGINT during start-up: said" "$(cat "$TMP/startup_INT.out")" "gcsh: interrupted (Ctrl-C) during start-up, before rank 0 was ready; the job ends through mpirun"
expect_not_contains "SIGINT during start-up: not SIGTERM's words" "$(cat "$TMP/startup_INT.out")" "terminated (SIGTERM or SIGHUP)"

# ---- SIGTERM 0.05 s after the start: 143 (whichever stage it meets)
TAG=$(new_tag); TAGS+=("$TAG")
GCSH_TEST_TAG=$TAG timeout -k 5 20 "$GCSH" -n 2 -e 'gcsh.sleep(30)' >"$TMP/early.out" 2>&1 </dev/null &
P=$!
PIDS+=("$P")
sleep 0.05
wait_until 5 test -n "$(child_of "$P")"
after_kill TERM "$(child_of "$P")"
expect_eq "SIGTERM at 0.05 s: exit 143" "$RC" 143
expect_no_procs "SIGTERM at 0.05 s: no process left" "$TAG"

finish
