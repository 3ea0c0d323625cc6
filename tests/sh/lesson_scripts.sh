#!/usr/bin/env bash
# Every lesson (lua/tutorial/NN-name.lua) runs to the end as a plain script
# at 2 and 4 ranks, passes its checkpoints, and prints no line over 80
# columns (the ranks' tags included).  Apart from lessons.sh so that each
# stays well within the runner's time for one test on a loaded machine.
# tests/run.sh: slow (not in make check)
# tests/run.sh: timeout 900
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

lessons=(lua/tutorial/[0-9][0-9]-*.lua)

# ---- every lesson as a plain script
for f in "${lessons[@]}"; do
    name=$(basename "$f" .lua)
    for n in 2 4; do
        out=$(timeout 180 "$GCSH" -n $n "$f" 2>&1 </dev/null); rc=$?
        if [ $rc = 0 ] && grep -q "checkpoint: \|right: " <<<"$out" && ! grep -q "checkpoint FAILED\|not yet" <<<"$out"; then
            pass
        else
            fail "$name as a script at $n ranks (exit $rc)"; printf '%s\n' "$out" | tail -n 15 | sed 's/^/  | /'
        fi
        # every line it prints fits 80 columns, the ranks' tags included
        wide=$(awk 'length($0) > 80' <<<"$out")
        [ -z "$wide" ] && pass || { fail "$name as a script at $n ranks: lines over 80 columns"; printf '  | %s\n' "$wide"; }
    done
done

finish
