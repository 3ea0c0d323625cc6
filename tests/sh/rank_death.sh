#!/usr/bin/env bash
# Evidence survives any rank's death (issue 36), a short form of
# scripts/death-soak.sh: a script job in which one rank runs Lua and the
# others wait in a barrier; one rank is killed from outside (kill -SEGV,
# kill -9), rank 0 included.  Every run exits 69, leaves a flight file with
# every rank and, with --trace, a trace with every rank that loads
# (trace_check.py).  When rank 0 dies, its heir (rank 1) writes both, the
# trace with the other ranks' own spans.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
. tests/sh/death_lib.sh
DEATH_TMP=$(mktemp -d)
trap death_cleanup EXIT

note_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["otherData"].get("note",""))' "$1" 2>&1; }

for case in "2 first SEGV yes" "2 last KILL no" "4 first KILL yes" "4 mid-coll SEGV yes" \
            "4 mid-lua KILL no" "4 last SEGV yes"; do
    set -- $case
    death_run "$@"
    expect_eq "$case: the job exits 69" "$DEATH_RC" 69
    expect_eq "$case: the flight file, every rank" "$DEATH_FLIGHT" ok
    [ "$4" = yes ] && expect_eq "$case: the trace loads, every rank" "$DEATH_TRACE" ok
    OUT=$(cat "$DEATH_DIR/out")
    if [ "$2" = first ]; then
        expect_contains "$case: the heir says where the flight file is" "$OUT" \
            "gcsh: rank 1: flight recorder: $DEATH_DIR/flight.json (every rank's last calls)"
        expect_contains "$case: the flight file says why" "$(note_of "$DEATH_DIR/flight.json")" \
            "written by rank 1 as the session ended: rank 0 died"
        if [ "$4" = yes ]; then
            expect_contains "$case: the heir wrote the trace" "$OUT" \
                "gcsh: rank 1: trace written to $DEATH_DIR/trace.json (rank 0 died)"
            expect_eq "$case: rank 0 from its ring, the others' own spans" \
                "$(note_of "$DEATH_DIR/trace.json")" \
                "written by rank 1 as the session ended: rank 0 died; its last calls are from its flight recorder"
        fi
        expect_eq "$case: no copy left behind" "$(ls "$DEATH_DIR/state" | grep -c heir)" 0
    else
        expect_contains "$case: rank 0 names the dead rank" "$OUT" "gcsh: rank $(death_ranks "$1" "$2" | cut -d' ' -f1) is gone ("
    fi
done

# the same with the flight recorder off: the trace still comes from the heir
GCSH_FLIGHT_CALLS=0 death_run 4 first KILL yes
expect_eq "no flight recorder: the job exits 69" "$DEATH_RC" 69
expect_eq "no flight recorder: no flight file" "$DEATH_FLIGHT" missing
expect_contains "no flight recorder: rank 1 wrote the trace" "$(cat "$DEATH_DIR/out")" \
    "gcsh: rank 1: trace written to $DEATH_DIR/trace.json (rank 0 died)"
finish
