#!/usr/bin/env bash
# The lessons (lua/tutorial/NN-name.lua): .lessons lists them; .lesson by
# name, ambiguous names, the commands' errors; a lesson that needs more
# ranks says so at 1; the kinds of exercise feedback; errors in a lesson
# name the lesson file's own lines.  Each lesson as a script:
# lesson_scripts.sh; each lesson's claims: lesson_claims.sh.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

lessons=(lua/tutorial/[0-9][0-9]-*.lua)
[ ${#lessons[@]} -ge 15 ] && pass || fail "at least fifteen lessons (found ${#lessons[@]})"

# ---- .lessons, .lesson by name, the end, and the errors
# the last lesson, and its parts (the "---" lines)
last_file=${lessons[-1]}
last_num=$((10#$(basename "$last_file" | cut -c1-2)))
last_parts=$(grep -c '^---' "$last_file")
gcsh_pipe 2 ".next
.again
.prev
.part 2
.lessons
.lesson ring
.lesson
.part 0
.part 9
.part x
.lesson 99
.lesson shot
.lesson $last_num
$(for ((i = 0; i <= last_parts; i++)); do echo .next; done)"
expect_contains ".next with no lesson open" "$OUT" "no lesson is open: .lessons lists them, .lesson N opens one"
expect_contains ".again with no lesson open" "$OUT" "gcsh: .again: no lesson is open (.lesson N opens one)"
expect_contains ".prev with no lesson open" "$OUT" "gcsh: .prev: no lesson is open (.lesson N opens one)"
expect_contains ".part with no lesson open" "$OUT" "gcsh: .part: no lesson is open (.lesson N opens one)"
expect_contains ".lessons lists lesson 1" "$OUT" "   1  Ranks and folded output"
expect_contains ".lessons lists the ring" "$OUT" "   8  Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N"
expect_contains ".lessons lists the protocols" "$OUT" "  14  LL or simple: a flag in every line, or one after a fence"
expect_contains ".lessons lists NCCL's choice" "$OUT" "  15  What NCCL chose for a call, and why"
expect_contains ".lessons lists the resident kernel" "$OUT" "  16  A resident kernel: rung, not launched"
expect_contains ".lesson by name opens it" "$OUT" "Lesson 8: Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N"
expect_contains ".lesson runs the introduction's code, echoed" "$OUT" 'gcsh[0-1]> lesson = require "gcsh.lesson"'
expect_contains ".lesson alone says where we are" "$OUT" "lesson 8 (Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N): part 1 of 6 is next; .next shows it"
expect_contains ".part past the end is refused" "$OUT" "gcsh: .part: N is a part of lesson 8: 1..6 (0: the introduction), got '9'"
expect_contains ".part of no number is refused" "$OUT" "gcsh: .part: N is a part of lesson 8: 1..6 (0: the introduction), got 'x'"
expect_contains ".lesson 99 is refused" "$OUT" "gcsh: .lesson: no lesson '99' (.lessons lists them)"
expect_contains ".lesson NAME matching several lists them" "$OUT" "gcsh: .lesson: 'shot' matches 2 lessons:
   6  One-shot all-reduce by hand
   7  Two-shot: reduce-scatter by loads, all-gather by stores
(.lesson 6 opens the first)"
expect_contains ".lessons lists the halves" "$OUT" "  17  Reduce-scatter and all-gather: the ring's two halves"
expect_contains ".lessons lists the cost model" "$OUT" "  18  A cost model fitted to this machine"
expect_contains ".lessons lists Simple against LL" "$OUT" "  19  Simple or LL on one algorithm: put + signal, or a flag per 8 bytes"
expect_contains ".lessons lists channels and trees" "$OUT" "  20  Rings with channels and slices, and NCCL's double binary tree"
expect_contains ".lessons lists the node boundary" "$OUT" "  21  The node boundary: a hierarchical all-reduce, and what crosses it"
expect_contains "the last lesson says it is the last" "$OUT" "(end of lesson $last_num, the last lesson)"
expect_contains "past the last lesson" "$OUT" "lesson $last_num is done, the last lesson (.lessons lists them)"
expect_eq "the session's refused .part and .lesson make it a usage error" "$RC" 128

# .part 0: the introduction again, after freeing what the lesson made
gcsh_pipe 2 ".lesson 13
.next
.part 0
collectgarbage()"
expect_contains ".part 0 frees what the lesson made" "$OUT" "(freed what the lesson made: tree, w)"
expect_eq ".part 0 shows the introduction again" "$(grep -c '^Lesson 13: ' <<<"$OUT")" 2
expect_not_contains ".part 0 leaves nothing unfreed" "$OUT" "garbage-collected"

# the learner's own stepper on the lesson's window goes with the window
gcsh_pipe 2 ".lesson 6
.next
mine = step.allreduce(w)
.again
print(mine)"
expect_contains ".again frees the learner's stepper on the lesson's window, and says so" "$OUT" \
    "(freed what the lesson made: w
freed your stepper mine: it stepped a window the lesson freed)"
expect_contains "the stepper says it is freed" "$OUT" "[0-1] stepper(ring allreduce (sum) of 8 f32 on 2 ranks, step 0 of 2, freed)"
expect_not_contains "no error from it" "$OUT" "freed window"

# ---- a lesson that needs more ranks says so, and runs what it can
for num in 5 8 17 19 20 13; do
    f=$(ls lua/tutorial/$(printf %02d $num)-*.lua)
    input=".lesson $num"
    for ((i = 0; i < $(grep -c '^---' "$f"); i++)); do input+=$'\n.next'; done
    gcsh_pipe 1 "$input"
    expect_contains "lesson $num at 1 rank says it needs 2" "$OUT" \
        "note: this lesson needs 2 ranks or more to show what it teaches;
  with 1 it runs what it can (start gcsh -n 4)"
    if grep -q "checkpoint FAILED\|stopped at that error\|traceback" <<<"$OUT"; then
        fail "lesson $num at 1 rank runs what it can"; printf '%s\n' "$OUT" | grep -B5 "FAILED\|stopped\|traceback" | head -20 | sed 's/^/  | /'
    else pass; fi
done
expect_contains "a stepper on 1 rank says why it has no steps" "$OUT" \
    "tree broadcast from r0 of 4 i32 on 1 rank: no steps
  one rank holds every result already: run it on 2 ranks or more"

# ---- exercise feedback: a value that is no function, an error in the
# learner's code (one line at their line, on the ranks where it happened,
# no traceback), a wrong tensor (each rank its own numbers, folded where
# identical; a right rank says where the wrong ones are)
gcsh_pipe 3 ".lesson 6
.next
.next
check_oneshot(nil)
check_oneshot(function(w, out) if rank == 1 then error('my bug') end end)
check_oneshot(function(w, out) if rank == 2 then out:arange(3, 3) else out:fill(0) end end)"
FLAT=$(perl -0pe 's/\n\[[\d,-]+\]   +/ /g' <<<"$OUT")
expect_contains "no function: one line" "$FLAT" "[0-2] not yet: you passed nil, want a function (define my_oneshot first)"
expect_contains "an error in the learner's code: its message at their line" "$FLAT" "[1] not yet: my_oneshot failed: stdin:1: my bug"
expect_not_contains "no traceback" "$OUT" "stack traceback"
expect_contains "the other ranks: one line" "$FLAT" "[0,2] not yet: my_oneshot failed on rank 1 (its error is shown there)"
expect_contains "a wrong tensor: the wrong ranks' element, dtype, count" "$FLAT" \
    "[0-1] not yet: your one-shot equals c:allreduce: [0] is 0, want 3 (8 of 8 f32 elements wrong)"
expect_contains "a right rank among wrong ones says where they are" "$FLAT" \
    "[2] not yet: your one-shot equals c:allreduce: right here, wrong on ranks 0-1"
expect_eq "wrong answers fail the piped session" "$RC" 1

# ---- lines the lesson runs keep their line numbers in errors
TMP=$(mktemp -d)
mkdir -p "$TMP/tutorial" "$TMP/gcsh"
cp lua/gcsh/*.lua "$TMP/gcsh/"
printf '%s\n' '-- A broken lesson' '-- Intro.' 'x = 1' '' '--- Part one' '-- Prose.' 'y = 2' 'error("boom")' 'z = 3' >"$TMP/tutorial/01-broken.lua"
OUT=$(printf '%s\n' '.lesson 1' '.next' '=z' | GCSH_LUA_DIR="$TMP" timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains "a lesson's error names its file and line" "$OUT" "[0-1] 01-broken.lua:8: boom"
expect_contains "the part stops at that error" "$OUT" "(part 1.1 stopped at that error; .again runs it again)"
expect_contains "the statements after it did not run" "$OUT" "[0-1] nil"
expect_eq "a failed part fails the piped session" "$RC" 1
rm -rf "$TMP"

# the README's lesson table and time table name every lesson, with its title
for f in "${lessons[@]}"; do
    num=$((10#$(basename "$f" | cut -c1-2)))
    title=$(head -n 1 "$f" | sed 's/^-- //')
    expect_contains "README's table: lesson $num" "$(cat README.md)" "| $num | $title |"
done
expect_match "README's time table: a column per lesson" "$(grep '^| lesson | 1 |' README.md)" \
    "\| ${#lessons[@]} \|\$"

finish
