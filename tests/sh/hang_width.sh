#!/usr/bin/env bash
# A hang report fits 80 columns whatever the machine gives it: a flight
# file in a long folder (its path broken after a '/', and read back whole),
# a long --seed on the first line, ll wait notes on the ranks' lines, at 4
# ranks; nothing is cut (each wrapped line, joined, says what it said).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# gcsh's own folder, 0700, far longer than a line
LONG=$TMP/$(printf 'folder%.0s' $(seq 12))/$(printf 'deeper%.0s' $(seq 8))/state
mkdir -p -m 0700 "$LONG"
chmod 0700 "$TMP"/folder* "$TMP"/folder*/deeper*

# ranks 0-2 wait in an ll all-reduce for rank 3's lines while rank 3 sleeps
# past the report (checks off, so nothing stops them first); then it joins
OUT=$(GCSH_STATE_DIR=$LONG timeout 120 "$GCSH" -n 4 --timeout 1 --seed 2147483647 -e '
local c = comm.world(); local w = c:window(64)
w:tensor():fill(rank + 1); c:barrier(); gcsh.check(false)
if rank == 3 then gcsh.sleep(3) end
kernel.allreduce(w, {algo = "ll"})
print("sum", w:tensor()[0]); w:free()' 2>&1 </dev/null); RC=$?
expect_eq "a late rank in ll: the job ends well" "$RC" 0
expect_all_ranks "a late rank in ll: the sum is right after the report" "$OUT" "sum${T:-	}10.0" 4

wide=$(awk 'length($0) > 80' <<<"$OUT")
[ -z "$wide" ] && pass || { fail "hang report lines over 80 columns"; printf '  | %s\n' "$wide"; }

# joined again, the lines say it all
JOINED=$(unwrapped "$OUT")
expect_match "the first line, with the seed, joined" "$JOINED" \
    '^gcsh: [0-9.]+ s \(--seed 2147483647\): done \[\], still running \[0-3\]; Ctrl-C interrupts$'
expect_match "ranks 0-2: their ll wait, joined" "$JOINED" \
    "^gcsh:   \[[0-2,-]+\] in kernel\.allreduce #[0-9]+ for [0-9.]+(-[0-9.]+)? s: waits at ll flag [0-9]+ \(set [01], line [0-9]+\) for \[[0-3]\]'s word \(now [0-9]+\)$"
expect_match "rank 3: its sleep" "$JOINED" '^gcsh:   \[3\] in gcsh\.sleep\(3\) for [0-9.]+(-[0-9.]+)? s$'
expect_match "the pids, joined" "$JOINED" '^gcsh:   pid \[0\] [0-9]+, \[1\] [0-9]+, \[2\] [0-9]+, \[3\] [0-9]+ \(gdb -p PID attaches\)$'
expect_contains "the flight note's first line" "$OUT" "$FLIGHT_SAID"
F=$(flight_said "$OUT")
case "$F" in
    "$LONG"/gcsh-flight-*.json) pass ;;
    *) fail "the flight file's path, read back whole: '$F'" ;;
esac
[ -s "$F" ] && pass || fail "the file the report names is there: '$F'"
expect_match "the path: broken after a /" "$OUT" '^gcsh:     [^ ].*/$'
finish
