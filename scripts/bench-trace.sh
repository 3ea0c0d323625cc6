#!/usr/bin/env bash
# What tracing costs per call on the host backend (trace.h):
#   bash scripts/bench-trace.sh [build/gcsh] [calls] [rounds]
# Runs scripts/bench/trace.lua (t:fill on a one-element tensor: one cheap
# backend call per Lua call) four ways at 1 rank, ROUNDS times each, and
# takes each way's best:
#   nothing recorded (GCSH_FLIGHT_CALLS=0: the backend's own table);  the
#   flight recorder alone (the default: every call through the recording
#   layer into the ring);  traced, then .trace off (the flight recorder
#   again);  with --trace (every call a span too).
# Prints ns per call and the differences: the flight recorder's cost (the
# target: near nothing) and the trace's (target <= 1000 ns per call).  Not a
# test: timings on a shared machine vary.
set -euo pipefail
cd "$(dirname "$0")/.."
GCSH=${1:-build/gcsh}
CALLS=${2:-50000}
ROUNDS=${3:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export GCSH_HISTORY=""

best() { sort -g | head -n 1; }
run_bare() { GCSH_FLIGHT_CALLS=0 "$GCSH" -n 1 scripts/bench/trace.lua "$CALLS"; }
run_plain() { "$GCSH" -n 1 scripts/bench/trace.lua "$CALLS"; }
run_traced() { "$GCSH" -n 1 --trace "$TMP/on.json" scripts/bench/trace.lua "$CALLS" | grep -v '^trac'; }
run_after_off() {
    printf '%s\n' ".trace $TMP/off.json" '.trace off' "arg = {[0] = 'trace.lua', '$CALLS'}" \
        'dofile("scripts/bench/trace.lua")' | "$GCSH" -n 1 | grep -v '^trac'
}
bare=$(for _ in $(seq "$ROUNDS"); do run_bare; done | best)
plain=$(for _ in $(seq "$ROUNDS"); do run_plain; done | best)
after=$(for _ in $(seq "$ROUNDS"); do run_after_off; done | best)
traced=$(for _ in $(seq "$ROUNDS"); do run_traced; done | best)
printf 't:fill on host, ns per call (best of %d x 5 loops of %d calls):\n' "$ROUNDS" "$CALLS"
printf '  nothing recorded    %8.1f   (GCSH_FLIGHT_CALLS=0)\n' "$bare"
printf '  flight recorder     %8.1f   (%+.1f: the recording layer and the ring)\n' "$plain" \
    "$(echo "$plain - $bare" | bc -l)"
printf '  after .trace off    %8.1f   (%+.1f: the flight recorder again)\n' "$after" \
    "$(echo "$after - $plain" | bc -l)"
printf '  traced              %8.1f   (%+.1f: spans too, target <= 1000)\n' "$traced" \
    "$(echo "$traced - $bare" | bc -l)"
