#!/usr/bin/env bash
# gcsh --diff A B (issue 36): where two runs part, rank by rank, for two
# flight files (the first differing call on each rank) and two recordings
# (the first differing line: source, that rank's output, failed or not);
# 0 the same, 1 they differ, 128 a file of neither kind, two of different
# kinds, or --diff with anything else.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'
cd "$TMP" || exit 1
run() { OUT=$(timeout 60 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }

# ---- two flight files: rank 1 makes one more call in the second run
printf '%s\n' 'c = comm.world()' 'c:barrier()' '.flight a.json' | timeout 60 "$GCSH" -n 2 >/dev/null 2>&1
printf '%s\n' 'c = comm.world()' 'if rank == 1 then tensor.new(4) end c:barrier()' '.flight b.json' |
    timeout 60 "$GCSH" -n 2 >/dev/null 2>&1
run --diff a.json a.json
expect_eq "a flight file and itself: exit 0" "$RC" 0
expect_eq "a flight file and itself: said" "$OUT" "the same: 2 ranks, every call"
run --diff a.json b.json
expect_eq "two flight files that differ: exit 1" "$RC" 1
expect_not_contains "rank 0 made the same calls" "$OUT" "rank 0:"
expect_match "rank 1: its first differing call" "$OUT" '^rank 1: call [0-9]+ differs:$'
expect_contains "rank 1: both files' calls" "$OUT" "
  a.json: barrier #1 {collective=barrier #1, comm=world 0, lua=stdin:1, seq=1}
  b.json: mem.alloc {bytes=16}"

# ---- two recordings: rank 1 fails in the first only
printf '%s\n' 'print("a", ...)' 'if rank == 1 then error("boom") end' >fails.lua
printf '%s\n' 'print("a", ...)' 'if rank == 7 then error("boom") end' >passes.lua
timeout 60 "$GCSH" -n 2 --record r1.lua fails.lua x >/dev/null 2>&1
timeout 60 "$GCSH" -n 2 --record r2.lua passes.lua x >/dev/null 2>&1
run --diff r1.lua r1.lua
expect_eq "a recording and itself: exit 0" "$RC" 0
expect_eq "a recording and itself: said" "$OUT" "the same: 2 ranks, every line"
run --diff r1.lua r2.lua
expect_eq "two recordings that differ: exit 1" "$RC" 1
expect_contains "rank 1: failed in the first" "$OUT" "rank 1: line 1 differs:
  r1.lua: print(\"a\", ...)
    if rank == 1 then error(\"boom\") end (failed)
      => a${T}x
         fails.lua:2: boom"

# ---- refused: 128
run --diff r1.lua a.json
expect_eq "a recording and a flight file: exit 128" "$RC" 128
expect_contains "... said" "$OUT" "gcsh: --diff: r1.lua is a recording, a.json a trace: compare two of a kind"
echo 'print(1)' >plain.lua
run --diff plain.lua r1.lua
expect_eq "a plain script: exit 128" "$RC" 128
expect_contains "... said" "$OUT" "gcsh: --diff: plain.lua: neither a recording nor a trace file"
echo '{"traceEvents": [' >cut.json
run --diff cut.json a.json
expect_eq "cut JSON: exit 128" "$RC" 128
expect_contains "... said" "$OUT" "gcsh: --diff: cut.json: not JSON at byte"
run --diff "$TMP/none.json" a.json
expect_eq "a missing file: exit 128" "$RC" 128
run --diff r1.lua
expect_eq "one file: exit 128" "$RC" 128
run -n 2 --diff r1.lua r1.lua
expect_eq "--diff with -n: exit 128" "$RC" 128
expect_contains "... said" "$OUT" "'--diff A B' compares two files alone"

# ---- a crafted recording is read within bounds (issue 35's reading stage):
# a loop, an entry flood, a huge rank count, metatables on its tables
printf '%s\n' 'local l = require("gcsh.record").script{ranks = 2}' 'while true do end' >loop.lua
run --diff loop.lua r1.lua
expect_eq "a recording that loops: exit 128" "$RC" 128
expect_contains "... said, naming the bound" "$OUT" "runs past 200000000 instructions: not a recording gcsh wrote"
printf '%s\n' 'local l = require("gcsh.record").script{ranks = 2}' \
    'for i = 1, 1e9 do l(i, "0-1", "x", {}) end' >flood.lua
run --diff flood.lua r1.lua
expect_eq "a recording of endless entries: exit 128" "$RC" 128
expect_contains "... said" "$OUT" "more than 200000 entries: not a recording gcsh wrote"
for ranks in 2000000000 0 1.5 '"2"'; do
    printf '%s\n' "local l = require(\"gcsh.record\").script{ranks = $ranks}" 'l(1, "0", "x", {})' >ranks.lua
    run --diff ranks.lua r1.lua
    expect_eq "ranks = $ranks: exit 128" "$RC" 128
    expect_contains "ranks = $ranks: said" "$OUT" "a recording's rank count is 1..4096 (as gcsh -n)"
done
printf '%s\n' 'local mt = { __index = function() while true do end end }' \
    'local l = require("gcsh.record").script(setmetatable({ ranks = 2 }, mt))' >meta.lua
run --diff meta.lua r1.lua
expect_eq "a recording with metatables (no setmetatable there): exit 128" "$RC" 128
finish
