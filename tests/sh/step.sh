#!/usr/bin/env bash
# Steppers beyond tests/lua/step_*.lua: those files at 3 ranks (run.sh runs
# them at 1, 2 and 4), a window whose team is not the whole communicator,
# and a stepper interrupted (SIGINT to rank 0, as Ctrl-C) while ranks wait
# for a late one: its next call puts it back at the start and it works.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
export LUA_PATH="$PWD/tests/lua/?.lua;;"
TAGS=()
trap kill_tagged EXIT

# ---- the Lua step tests at 3 ranks
for t in tests/lua/step_*.lua; do
    out=$(timeout 180 "$GCSH" -n 3 "$t" 2>&1 </dev/null); rc=$?
    name=$(basename "$t" .lua)
    if [ $rc = 0 ]; then pass; else
        fail "$name at 3 ranks (exit $rc)"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/  | /'; fi
done

# ---- a team smaller than the communicator: refused with the reason
OUT=$(printf '%s\n' 'w = comm.world():window(8, "i32")' 'st = step.allreduce(w)' 'w:free()' |
    GCSH_RANKS_PER_NODE=2 timeout 60 "$GCSH" -n 4 2>&1); RC=$?
expect_contains "team: refused" "$OUT" "[0-3] stdin:1: step.allreduce: the window's team (2 ranks) is not its whole communicator (4 ranks)"
expect_eq "team: exit status" "$RC" 1

# ---- SIGINT to rank 0 while rank 0 waits at a barrier for rank 1, which
# sleeps (delay) at step 2 of a two-step call: the hang report of .timeout 1
# says when rank 1 is in its sleep; the lines after once the interrupt is said
TMP=$(mktemp -d)
trap 'kill_tagged; rm -rf "$TMP"' EXIT
TAG=$(new_tag); TAGS+=("$TAG")
said() { grep -qF -- "$1" "$TMP/out"; }
(printf '%s\n' '.timeout 1' 'c = comm.world() w = c:window(8, "i32") w:tensor():fill(1 << rank)' \
        'st = step.allreduce(w, {algo = "ring", delay = {rank = 1, ms = 60000, step = 2}})' \
        'st:next(2)'
    wait_until 60 said "gcsh:   [1] in gcsh.sleep(60)"
    kill -INT "$(rank_pid "$TAG" 0)"
    wait_until 30 said "gcsh: interrupted"
    printf '%s\n' '.timeout 0' 'st:next()' '=st.step' 'st:reset()' '=st.step' \
        'other = step.allreduce(w, {algo = "twoshot"})' '=other:run{quiet = true}' 'other:free()' \
        '=c:allreduce(tensor.new(1):fill(1))[0]' 'st:free() w:free()') |
    GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 2 >"$TMP/out" 2>&1; RC=$?
OUT=$(cat "$TMP/out")
expect_contains "interrupt: the wait is interrupted" "$OUT" "gcsh: interrupted [0-1]"
expect_contains "interrupt: the next call recovers" "$OUT" "[0] step: the last call was interrupted; data, signals and step count are reset"
expect_contains "interrupt: then takes step 1" "$OUT" "[0] ring allreduce (sum) of 8 i32 on 2 ranks: step 1 of 2 (reduce-scatter)"
expect_contains "interrupt: step 1 holds both ranks' data" "$OUT" "[0]   r0  0,1*"
expect_contains "interrupt: .step is 1" "$OUT" "[0-1] 1"
expect_contains "interrupt: reset works" "$OUT" "[0] ring allreduce (sum) of 8 i32 on 2 ranks: back at step 0 of 2"
expect_contains "interrupt: .step is 0" "$OUT" "[0-1] 0"
expect_contains "interrupt: another stepper on the window is right" "$OUT" "[0-1] true"
expect_contains "interrupt: the communicator still works" "$OUT" "[0-1] 2.0"
expect_eq "interrupt: exit status (the interrupted line failed)" "$RC" 1

# ---- st:free() on some ranks only (.ranks) fails there and leaves the
# stepper whole: a free on every rank then works, at 2 and 4 ranks
for n in 2 4; do
    OUT=$(printf '%s\n' 'w = comm.world():window(8, "i32")' 'st = step.allreduce(w, {algo = "ring"})' \
        '.ranks 0' 'st:free()' '.ranks all' 'st:free()' '=st.steps' 'print(tostring(st):match("freed"))' |
        timeout 60 "$GCSH" -n $n 2>&1); RC=$?
    expect_contains "$n ranks: a free on rank 0 alone is refused, named" "$OUT" \
        "[0] signals:free #"
    expect_not_contains "$n ranks: no rank believes it freed" "$OUT" "this stepper was freed"
    expect_contains "$n ranks: the free on every rank went through" "$OUT" "[0-$((n - 1))] freed"
    expect_not_contains "$n ranks: no error points into gcsh's own Lua" "$OUT" "gcsh/step.lua:"
done

finish
