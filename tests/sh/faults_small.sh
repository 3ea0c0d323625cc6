#!/usr/bin/env bash
# The smaller findings of issue 26, each as the session that showed it:
# c:agree on one rank, .timeout nan and --timeout nan, an error after a
# partial line of output.  (c.rank = 5, repro's and bench's arguments:
# tests/lua/comm_agree.lua and repro_args.lua; a non-zero exit's speed:
# tests/sh/lost_ranks.sh.)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

# ---- c:agree on a subset of the ranks: named at once, as any collective
gcsh_pipe 2 'c = comm.world()
if rank == 1 then c:agree("x") end
=c:agree("r" .. rank)[2]'
expect_contains "agree on one rank: named at once" "$OUT" \
    "[1] stdin:1: agree #1: [1] waited 0.0 s for [0]: [0] finished the command"
expect_contains "agree on one rank: the next one is in step" "$OUT" "[0-1] r1"
expect_eq "agree on one rank: exit 1" "$RC" 1
gcsh_pipe 4 'c = comm.world()
if rank % 2 == 1 then c:agree("x") else c:barrier() end'
expect_all_ranks "agree against a barrier" "$OUT" \
    "stdin:1: collective mismatch: [0,2] barrier #1, [1,3] agree #1" 4

# ---- .timeout nan and --timeout nan: refused, naming the bound
gcsh_pipe 2 '.timeout nan
.timeout'
expect_eq ".timeout nan" "$OUT" "gcsh: .timeout: SECONDS must be a number 0..1e6, got 'nan'
timeout 10 s (reports only: collective checks keep waiting)"
OUT=$("$GCSH" --timeout nan -e 'print(1)' 2>&1); RC=$?
expect_contains "--timeout nan" "$OUT" "'--timeout' needs seconds 0..1e6"
expect_eq "--timeout nan: a usage error" "$RC" 128
OUT=$("$GCSH" --timeout -nan -e 'print(1)' 2>&1); RC=$?
expect_eq "--timeout -nan: a usage error" "$RC" 128

# ---- a partial line, then an error: the error starts a line of its own
gcsh_pipe 2 'io.write("partial no newline") error("boom")
_ = io.write("no newline at the end")
print("next")'
expect_contains "partial line, then an error" "$OUT" "[0-1] partial no newline
[0-1] stdin:1: boom"
expect_contains "a partial line at the end of a command is ended" "$OUT" "[0-1] no newline at the end
[0-1] next"

finish
