#!/usr/bin/env bash
# Ctrl-C in a lesson at an 80-column terminal (tmux), at 2 and 4 ranks: an
# interrupt is said as one (not "stopped at that error", not a failure),
# during a shown part, the introduction, or the quiet catch-up that .part N
# runs first; .again then makes the part asked for ready again (not the one
# the catch-up stopped in); and every line fits 80 columns, lesson 12's
# whole walk included.  The interrupts land in a lesson of the test's own
# (a lesson folder beside gcsh's modules, GCSH_LUA_DIR): each of its waits
# marks a file and holds while a file of the test's is there, so Ctrl-C
# comes when the part waits, whatever the machine's load.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

tmux_setup
need_tmux
LUA="$TMP/lua"
mkdir -p "$LUA/tutorial"
ln -s "$PWD/lua/gcsh" "$LUA/gcsh"
ln -s "$PWD/lua/tutorial/12-hang.lua" "$LUA/tutorial/12-hang.lua"
H="$TMP/hold" M="$TMP/mark"
cat >"$LUA/tutorial/98-wait.lua" <<'EOF'
-- Interrupts (tests/sh/lesson_interrupt.sh)
-- Each wait marks a file, then holds while the test's file is there.
lesson = require "gcsh.lesson"
c = comm.world()
mark, held = os.getenv("GCSH_TEST_MARK"), os.getenv("GCSH_TEST_HOLD")
function hold(what)
  io.open(mark .. "." .. what .. "." .. rank, "w"):close()
  while io.open(held .. "." .. what) do gcsh.sleep(0.05) end
end
hold("intro")

--- Wait in a check
-- The last rank holds; the others wait for it in a barrier's check.
do
  if rank == size - 1 then hold("check") end
  c:barrier()
end

--- Two
lesson.check(true, "two")
EOF

# start80 NAME ARGS...: gcsh ARGS in a new 80-column pane (start's, narrower)
start80() {
    S=$1; shift
    TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 50 "cd '$PWD' && GCSH_HISTORY='' GCSH_TEST_TAG='$TAG' \
GCSH_LUA_DIR='$LUA' GCSH_TEST_HOLD='$H' GCSH_TEST_MARK='$M' '$GCSH' $*; echo EXIT=\$?; exec sleep 300"
}
# held WHAT N: N ranks hold at WHAT (their marks are there; taken away)
marks() { [ "$(ls "$M.$1".* 2>/dev/null | wc -l)" -ge "$2" ]; }
held() { wait_until 60 marks "$1" "$2" && rm -f "$M.$1".*; }

for N in 2 4; do
    P="gcsh[0-$((N - 1))]>"
    start80 "l$N" -n $N
    check_wait "$N: prompt" "$P" 60

    # the introduction, shown, interrupted
    touch "$H.intro"
    keys ".lesson 98" Enter
    held intro $N || fail "$N: the introduction did not hold"
    press C-c
    check_wait "$N: the introduction's interrupt is said" \
        "(the introduction interrupted; .again runs it again)" 30

    # .part 2's catch-up, interrupted in the introduction, then in part 1
    keys ".part 2" Enter
    held intro $N || fail "$N: the catch-up's introduction did not hold"
    press C-c
    check_wait "$N: a catch-up interrupted in the introduction" \
        "gcsh: lesson 98: interrupted in the introduction while part 2 was made ready" 30
    check_wait "$N: ... and what .again does" "(.again makes part 2 ready again)" 5
    rm -f "$H.intro"
    touch "$H.check"
    keys ".part 2" Enter
    held check 1 || fail "$N: part 1 did not hold"
    press C-c
    check_wait "$N: a catch-up interrupted in part 1" \
        "gcsh: lesson 98: interrupted in part 1 while part 2 was made ready" 30
    expect_not_contains "$N: an interrupt is no failure" "$(screen)" "failed (output above)"
    # .again: part 2, the one asked for, with part 1 run quietly again
    rm -f "$H.check"
    keys ".again" Enter
    check_wait "$N: .again shows the part asked for" "[98.2] Two" 30
    expect_not_contains "$N: ... not the part the catch-up stopped in" "$(screen)" "[98.1]"

    # a shown part interrupted while ranks wait in a check
    touch "$H.check"
    keys ".part 1" Enter
    held check 1 || fail "$N: part 1 (shown) did not hold"
    press C-c
    check_wait "$N: a shown part's interrupt is said" \
        "(part 98.1 interrupted; .again runs it again)" 30
    expect_not_contains "$N: ... not as an error" "$(screen)" "(part 98.1 stopped at that error"
    rm -f "$H.check"

    # lesson 12, the whole walk, at 80 columns
    keys ".lesson 12" Enter
    check_wait "$N: lesson 12 opens" "(6 parts; .next shows the first)" 30
    keys ".part 6" Enter
    check_wait "$N: lesson 12, part 6" "(end of lesson 12; .lesson 98 opens the next one)" 60

    OVER=$(screen | awk 'length($0) > 80')
    if [ -z "$OVER" ]; then pass; else fail "$N: lines over 80 columns"; context "$OVER"; fi
    press C-d
    check_wait "$N: Ctrl-D" "EXIT=" 30
    expect_no_procs "$N: no process left" "$TAG"
done
finish
