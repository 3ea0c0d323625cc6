#!/usr/bin/env bash
# t:wait on a window element (issue 37): a rank stuck in one shows up in the
# hang report with the element, the rank whose slice it is, the condition
# and the element's value now (as the dtype prints it); Ctrl-C ends the wait
# and the shell stays usable.  At 2 and 4 ranks, host backend (a GPU run
# polls the element from the CPU the same way: cuda_window.c).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT

for N in 2 4; do
    L=$((N - 1))
    # ---- rank L waits on element 3 of its slice (a view from element 2),
    # which holds L + 0.5 and never reaches 7; rank 0 on a peer's slice
    bg_start "$N"
    bg_line 'c = comm.world(); w = c:window(8); w:tensor():fill(rank + 0.5); c:barrier()'
    bg_line '.timeout 1'
    bg_line "if rank == $L then w:tensor():view(2, 4):wait(1, 7, 'ge') elseif rank == 0 then w:peer($L):wait(5, -1) end"
    bg_wait_out "gcsh:   [$L] in t:wait" 60
    OUT=$(cat "$TMP/out")
    expect_match "$N ranks: rank $L's wait names the element, the condition and its value now" "$OUT" \
        "^gcsh:   \[$L\] in t:wait \(\[$L\]'s element 3 >= 7\) for [0-9.]+(-[0-9.]+)? s: element 3 is now $L\.5$"
    expect_match "$N ranks: rank 0 waits on rank $L's slice" "$OUT" \
        "^gcsh:   \[0\] in t:wait \(\[$L\]'s element 5 == -1\) for [0-9.]+(-[0-9.]+)? s: element 5 is now $L\.5$"
    kill -INT "$BG"
    bg_wait_out "gcsh: interrupted" 60
    bg_line 'print("after", w:tensor()[3])'
    bg_line '.quit'
    bg_end
    expect_eq "$N ranks: piped, the interrupted line makes the status 1" "$RC" 1
    expect_match "$N ranks: both waits were interrupted" "$OUT" "^\[0[,-]$L\] interrupted!$"
    expect_match "$N ranks: the shell goes on, the window readable" "$OUT" "^\[$L\] after	$L\.5$"
done
finish
