#!/usr/bin/env bash
# What an attendee's wrong answers get (tests/sh/lesson_feedback.lua), at
# 2 and 4 ranks: one true line per group of ranks for the slips of lessons
# 1, 2, 6, 7, 10, 14 and 15, without a traceback or gcsh's own files; and,
# in every lesson with an exercise, its globals overwritten cannot turn a
# wrong answer right nor a right one wrong.  An error gcsh's own Lua raises
# for the learner's call (a bad stepper option) shows no frame of it.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

for n in 2 4; do lua_checks tests/sh/lesson_feedback.lua "$GCSH" "$n"; done

# ---- a bad option to gcsh's Lua: the message at the learner's line, the
# traceback without gcsh's own frames (none left: none at all)
gcsh_pipe 2 "w = comm.world():window(8)
step.allreduce(w, {algo = 'bogus'})
function f() local st = step.allreduce(w, {algo = 'bogus'}) end f()
error('mine')"
expect_contains "the option's error" "$OUT" "[0-1] step.allreduce: algo 'bogus' is not one of: ring, oneshot, twoshot, multicast, ll, hier
[0-1] stdin:1: step.allreduce: algo 'bogus' is not one of:"
expect_not_contains "no frame of gcsh's own Lua" "$OUT" "/gcsh/"
expect_contains "the learner's frames stay" "$OUT" "[0-1] 	stdin:1: in function 'f'"
# (an error raised at the prompt's own line is its message alone, as every
# error that passed through no function of the learner's: unix_output.sh)
expect_contains "an error of the learner's own: its message at their line" "$OUT" "[0-1] stdin:1: mine"
expect_not_contains "... with no traceback that says nothing more" "$OUT" "[0-1] stdin:1: mine
[0-1] stack traceback:"
finish
