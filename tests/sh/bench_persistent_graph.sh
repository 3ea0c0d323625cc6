#!/usr/bin/env bash
# scripts/bench/persistent_graph.lua runs on the host backend (its figures
# mean nothing there; on GPUs they are the README's): it prints its line,
# checks a replay's values, and refuses a size it cannot time.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
# three ranks: its check once overflowed f32 past two
OUT=$(timeout 120 "$GCSH" -n 3 scripts/bench/persistent_graph.lua 8 1 2>&1); RC=$?
expect_eq "three ranks: exit 0" "$RC" 0
expect_match "three ranks: the line, every figure" "$OUT" \
    "persistent_graph: 3 ranks, 8 B, host: us a call: persistent from a graph [0-9.]+, ll from a graph [0-9.]+ \(ratio [0-9.]+\); persistent rung from Lua [0-9.]+, ll launched [0-9.]+"
OUT=$(timeout 60 "$GCSH" -n 1 scripts/bench/persistent_graph.lua 6 2>&1); RC=$?
expect_eq "6 bytes: refused" "$RC" 1
expect_contains "6 bytes: the bound named" "$OUT" "bytes must be a multiple of 4 in 4..4096 (an ll call), got 6"
# against an nccl-tests output: the in-place time at the size, and the ratio;
# a size it lacks is said, not a failure
REF=$(mktemp); trap 'rm -f "$REF"' EXIT
printf '%s\n' "#  graph: 100" \
    "           8             2     float     sum      -1     9.10    0.00    0.00      0     8.90    0.00    0.00      0" >"$REF"
OUT=$(timeout 120 "$GCSH" -n 2 scripts/bench/persistent_graph.lua 8 1 "$REF" 2>&1); RC=$?
expect_eq "with a reference: exit 0" "$RC" 0
expect_match "with a reference: its in-place time and the ratio" "$OUT" \
    "persistent_graph: against nccl-tests \(graph 100\) in place at 8 B: 8.90 us; persistent from a graph / nccl-tests = [0-9.]+"
OUT=$(timeout 120 "$GCSH" -n 2 scripts/bench/persistent_graph.lua 16 1 "$REF" 2>&1); RC=$?
expect_eq "a size the reference lacks: exit 0" "$RC" 0
expect_contains "a size the reference lacks: said" "$OUT" "has no in-place row at 16 B: no ratio"
finish
