#!/usr/bin/env bash
# The lessons (lua/tutorial/NN-name.lua): every one runs to the end as a
# plain script at 2 and 4 ranks, its checkpoints passing, and through the
# shell's .lesson N / .next in a piped session; .lessons lists them; an
# exercise's check names the wrong elements of a wrong answer; errors in a
# lesson name the lesson file's own lines; the hang lesson's report shows
# with .timeout 1.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

lessons=(lua/tutorial/[0-9][0-9]-*.lua)
[ ${#lessons[@]} -ge 10 ] && pass || fail "at least ten lessons (found ${#lessons[@]})"

# ---- every lesson as a plain script
for f in "${lessons[@]}"; do
    name=$(basename "$f" .lua)
    for n in 2 4; do
        out=$(timeout 180 "$GCSH" -n $n "$f" 2>&1 </dev/null); rc=$?
        if [ $rc = 0 ] && grep -q "checkpoint: \|right: " <<<"$out" && ! grep -q "FAILED\|not yet" <<<"$out"; then
            pass
        else
            fail "$name as a script at $n ranks (exit $rc)"; printf '%s\n' "$out" | tail -n 15 | sed 's/^/  | /'
        fi
    done
done

# ---- every lesson through .lesson N and .next, at 4 ranks (at 2 too for
# the first and the ring)
for f in "${lessons[@]}"; do
    name=$(basename "$f" .lua)
    num=$((10#${name:0:2}))
    parts=$(grep -c '^---' "$f")
    input=".lesson $num"
    for ((i = 0; i < parts; i++)); do input+=$'\n.next'; done
    ranks="4"
    case $num in 1 | 8) ranks="2 4" ;; esac
    for n in $ranks; do
        gcsh_pipe $n "$input"
        if [ "$RC" = 0 ] && grep -qF "(end of lesson $num)" <<<"$OUT" && ! grep -q "FAILED\|not yet" <<<"$OUT"; then
            pass
        else
            fail "$name through .next at $n ranks (exit $RC)"; printf '%s\n' "$OUT" | tail -n 15 | sed 's/^/  | /'
        fi
    done
done

# ---- .lessons, .lesson by name, the end, and the errors
gcsh_pipe 2 ".next
.lessons
.lesson ring
.lesson
.lesson 99"
expect_contains ".next with no lesson open" "$OUT" "no lesson is open: .lessons lists them, .lesson N opens one"
expect_contains ".lessons lists lesson 1" "$OUT" "   1  Ranks and folded output"
expect_contains ".lessons lists the ring" "$OUT" "   8  Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N"
expect_contains ".lesson by name opens it" "$OUT" "Lesson 8: Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N"
expect_contains ".lesson runs the introduction's code, echoed" "$OUT" 'gcsh[0-1]> lesson = require "gcsh.lesson"'
expect_contains ".lesson alone says where we are" "$OUT" "lesson 8 (Ring all-reduce, and why its bus bandwidth factor is 2(N-1)/N): part 1 of 6 is next; .next shows it"
expect_contains ".lesson 99 is refused" "$OUT" "gcsh: .lesson: no lesson '99' (.lessons lists them)"
expect_eq "the session succeeded" "$RC" 0

gcsh_pipe 2 ".lesson 1
.next
.next
.next
.next
.next
.next
.next
.lessons"
expect_contains "a part's title" "$OUT" "[1.1] Every rank runs the line"
expect_contains "its prose, once, without a rank prefix" "$OUT" $'\n''`rank` and `size` are globals on every rank.'
expect_contains "its code, as typed" "$OUT" 'gcsh[0-1]> print("hello from rank " .. rank .. " of " .. size)'
expect_contains "its output, from every rank" "$OUT" "[1] hello from rank 1 of 2"
expect_contains "an exercise leaves the learner a turn" "$OUT" "(your turn: answer at the prompt and check it; .next shows the solution)"
expect_not_contains "an exercise's check is not echoed" "$OUT" "gcsh[0-1]> function check_sum(v)"
expect_contains "the end" "$OUT" "(end of lesson 1)"
expect_contains "past the end" "$OUT" "lesson 1 is done: .lesson 2 opens the next one (.lessons lists them)"
expect_contains ".lessons marks the open one" "$OUT" " > 1  Ranks and folded output"

# ---- an exercise: a wrong answer gets the wrong elements named; the
# error names the lesson's line; the lesson's solution passes
check_line=$(grep -n 'lesson.grade(x, function(i) return i end' lua/tutorial/02-tensors.lua | cut -d: -f1)
gcsh_pipe 2 ".lesson 2
.next
.next
.next
.next
.next
mine = tensor.new(size):fill(1)
check_ranks(mine)
.next"
expect_contains "a wrong answer names the wrong element" "$OUT" "02-tensors.lua:$check_line: not yet: element i is i on every rank (rank 0): [0] is 1, want 0"
expect_contains "on every rank" "$OUT" "not yet: element i is i on every rank (rank 1): [0] is 1, want 0"
expect_contains "the lesson's solution passes" "$OUT" "[0-1] right: element i is i on every rank"

# ---- lines the lesson runs keep their line numbers in errors
TMP=$(mktemp -d)
mkdir -p "$TMP/tutorial" "$TMP/gcsh"
cp lua/gcsh/*.lua "$TMP/gcsh/"
printf '%s\n' '-- A broken lesson' '-- Intro.' 'x = 1' '' '--- Part one' '-- Prose.' 'error("boom")' >"$TMP/tutorial/01-broken.lua"
OUT=$(printf '%s\n' '.lesson 1' '.next' | GCSH_LUA_DIR="$TMP" timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains "a lesson's error names its file and line" "$OUT" "[0-1] 01-broken.lua:7: boom"
expect_eq "a failed part fails the piped session" "$RC" 1
rm -rf "$TMP"

# ---- the hang lesson: with .timeout 1, the report names where ranks are
hang_parts=$(grep -n '^--- The hang report' lua/tutorial/12-hang.lua | cut -d: -f1)
before=$(head -n "$hang_parts" lua/tutorial/12-hang.lua | grep -c '^---')
input=".lesson 12"
for ((i = 1; i < before; i++)); do input+=$'\n.next'; done
input+=$'\n.timeout 1\n.next'
gcsh_pipe 4 "$input"
input+=$'\n.next'
gcsh_pipe 4 "$input"
expect_contains "hang report: who is done and who runs" "$OUT" "still running [0-3]; waiting"
expect_match "hang report: the waiting ranks" "$OUT" '^gcsh:   \[0-2\] in signal wait'
expect_contains "hang report: the slow rank" "$OUT" "gcsh:   [3] in gcsh.sleep(1.5)"
expect_all_ranks "then the part completes" "$OUT" "checkpoint: the slow rank signalled, and the wait ended" 4
expect_contains "a collective's check gives up" "$OUT" "[0-2] barrier #"
expect_contains "and names the slow rank" "$OUT" "waited 1.0 s for [3]: [3] in gcsh.sleep(2)"
expect_all_ranks "the lesson goes on" "$OUT" "checkpoint: a slow rank: a late barrier, or an error naming it" 4

finish
