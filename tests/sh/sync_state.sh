#!/usr/bin/env bash
# The machinery made visible (issue 37): a hang report names what each rank
# waits for inside a kernel collective or a signal wait, the rank whose word
# it is and the value it sees now; after Ctrl-C the window stays readable,
# and show(w, "sync") marks the rank that never reached the barrier.  At 2
# and 4 ranks, host backend (a GPU's barriers wait on the device).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT

for N in 2 4; do
    L=$((N - 1))
    OTHERS="0-$((L - 1))"
    [ $N = 2 ] && OTHERS=0
    # ---- a two-shot that rank L never joins (checks off), rank L in s:wait
    bg_start "$N"
    bg_line 'c = comm.world(); w = c:window(8); w:tensor():fill(rank + 1); s = c:signals(2); s:set(rank, 1, 3)'
    bg_line '.timeout 1'
    bg_line "gcsh.check(false) if rank == $L then s:wait(1, 5) else kernel.allreduce(w, {algo = 'twoshot'}) end"
    bg_wait_out "gcsh:   [$L] in signal wait" 60
    OUT=$(cat "$TMP/out")
    expect_match "$N ranks: the others wait at the first barrier, for rank $L's word" "$(unwrapped "$OUT")" \
        "^gcsh:   \[$OTHERS\] in kernel\.allreduce #[0-9]+ for [0-9.]+(-[0-9.]+)? s: waits at barrier ready #1 for \[$L\]'s word \(now 0\)$"
    expect_match "$N ranks: rank $L's s:wait says its slot's value now" "$(unwrapped "$OUT")" \
        "^gcsh:   \[$L\] in signal wait \(slot 1 >= 5\) for [0-9.]+(-[0-9.]+)? s: slot 1 is now 3$"
    kill -INT "$BG"
    bg_wait_out "gcsh: interrupted" 60
    bg_line 'show(w, "sync")'
    bg_line 'show(w)'
    bg_line '.quit'
    bg_end
    expect_eq "$N ranks: piped, the interrupted line makes the status 1" "$RC" 1
    expect_contains "$N ranks: the communicator was aborted" "$OUT" "the communicator is aborted on every rank"
    # after the abort: the others entered barrier 1 and see their own word
    # and each other's, not rank L's (marked); rank L entered none
    b_others=$(for ((r = 0; r < L; r++)); do printf ' +1'; done)
    b_last=$(for ((r = 0; r < L; r++)); do printf ' +1\\*'; done)
    ll=$(for ((r = 0; r <= L; r++)); do printf ' +0'; done)
    expect_match "$N ranks: show(w, \"sync\"): the others' row" "$OUT" \
        "^\[0\] \[$OTHERS\] +1$b_others +0\* +0$ll$"
    expect_match "$N ranks: show(w, \"sync\"): rank $L's row" "$OUT" \
        "^\[0\] \[$L\] +0$b_last +0 +0$ll$"
    expect_contains "$N ranks: the mark is explained" "$OUT" \
        "[0]  * = not this rank's own count: r is behind or ahead)"
    expect_match "$N ranks: the window's data is readable after the abort" "$OUT" \
        "^\[0\] +$L +$N +$N +$N +$N +$N +$N +$N +$N$"
    expect_not_contains "$N ranks: nothing refused" "$OUT" "attempt to use"

    # ---- an ll all-reduce that rank L never joins: the flag it waits for
    OUT=$(timeout 120 "$GCSH" -n "$N" --deadline 3 \
        -e "local w = comm.world():window(8); gcsh.check(false); if rank ~= $L then kernel.allreduce(w, {algo = 'll'}) else gcsh.sleep(100) end" 2>&1 </dev/null)
    expect_match "$N ranks: ll: the flag, the set and the line, rank $L's word" "$(unwrapped "$OUT")" \
        "^gcsh:   \[$OTHERS\] in kernel\.allreduce #[0-9]+ for [0-9.]+(-[0-9.]+)? s: waits at ll flag 1 \(set 0, line 0\) for \[$L\]'s word \(now 0\)$"
done
finish
