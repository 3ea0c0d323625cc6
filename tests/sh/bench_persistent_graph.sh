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
finish
