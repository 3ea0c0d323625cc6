#!/usr/bin/env bash
# A recording notes the command-line options that change what the session
# prints or does ("-- Options:": -W, --timeout, --deadline,
# --deadline-status, --first-failure, --tag, --share-gpu; --seed is in its
# script{} header), and --replay runs with them: a replay of a -W session
# shows its warnings and matches; an option the replay's command line
# contradicts is refused by name (those that only bound or show the run,
# --deadline, --deadline-status and --tag, are the command line's to
# choose); the reading stage refuses an options line no gcsh writes;
# --diff says when two recordings ran with different options.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# record FILE OPTIONS... <lines: records a piped session at 2 ranks
record() {
    local f=$1
    shift
    timeout 60 "$GCSH" -n 2 "$@" --record "$f" >/dev/null 2>&1
}
# replay FILE [OPTIONS]: OUT (both streams) and RC
replay() {
    local f=$1
    shift
    OUT=$(timeout 60 "$GCSH" "$@" --replay "$f" 2>&1 </dev/null); RC=$?
}

# ---- -W: the warnings are the session's output, and the replay's
for n in 1 2 4; do
    F=$TMP/w$n.lua
    printf '%s\n' 'warn("from ", rank)' 'print("after")' |
        timeout 60 "$GCSH" -n $n -W --record "$F" >/dev/null 2>&1
    expect_eq "$n ranks: -W noted" "$(sed -n 3p "$F")" "-- Options: -W"
    expect_contains "$n ranks: the rerun says it" "$(head -n 6 "$F")" "gcsh -n $n -W $F"
    replay "$F"
    expect_eq "$n ranks: the replay takes -W: exit 0" "$RC" 0
    expect_contains "$n ranks: said" "$OUT" "gcsh: replay: as recorded, with -W"
    expect_contains "$n ranks: its warnings shown" "$OUT" "Lua warning: from 0"
    expect_contains "$n ranks: every line matches" "$OUT" "gcsh: replay: 2 lines of $F match"
done
printf '%s\n' 'warn("x")' | record "$TMP/plain.lua"
expect_eq "no option: none" "$(sed -n 3p "$TMP/plain.lua")" "-- Options: none"
replay "$TMP/plain.lua" -W
expect_eq "-W on a replay of a session without: refused (128)" "$RC" 128
expect_eq "-W: named" "$OUT" "gcsh: --replay: $TMP/plain.lua was recorded without -W: leave out -W"
replay "$TMP/w2.lua" -W
expect_eq "-W given as recorded: runs" "$RC" 0

# ---- --timeout: a limit makes a slow rank's collective fail; the replay
# keeps it (without, the barrier would wait for the sleeper and succeed)
F=$TMP/timeout.lua
printf '%s\n' 'ok = pcall(function() if rank == 1 then gcsh.sleep(4) end comm.world():barrier() end)' \
    'print(ok)' | record "$F" --timeout 1
expect_eq "--timeout noted" "$(sed -n 3p "$F")" "-- Options: --timeout=1"
expect_contains "--timeout: the barrier failed when recorded" "$(cat "$F")" "[0-1] false"
replay "$F"
expect_eq "--timeout: the replay fails it too: exit 0" "$RC" 0
expect_contains "--timeout: said" "$OUT" "gcsh: replay: as recorded, with --timeout=1"
replay "$F" --timeout 9
expect_eq "--timeout of its own: refused" "$RC" 128
expect_eq "--timeout of its own: named" "$OUT" \
    "gcsh: --replay: $F was recorded with --timeout=1: leave out --timeout=9"
# .timeout and gcsh.deadline before .record: what the session runs with then
printf '%s\n' '.timeout 4' 'gcsh.deadline(500)' ".record $TMP/later.lua" 'print(1)' |
    timeout 60 "$GCSH" -n 2 >/dev/null 2>&1
expect_eq ".timeout before .record: noted" "$(sed -n 3p "$TMP/later.lua")" \
    "-- Options: --timeout=4 --deadline=500"

# ---- what only bounds or shows the run: the command line's wins
F=$TMP/tags.lua
printf '%s\n' 'if rank == 1 then print("one") end' |
    record "$F" --tag=auto --deadline 300 --deadline-status 3 --first-failure
expect_eq "the options, in order" "$(sed -n 3p "$F")" \
    "-- Options: --deadline=300 --deadline-status=3 --first-failure --tag=auto"
replay "$F"
expect_eq "tags as recorded: exit 0" "$RC" 0
expect_contains "tags as recorded: one rank's line bare" "$OUT" $'\none\n'
replay "$F" --tag=always --deadline 200
expect_eq "a tag and a deadline of its own: runs" "$RC" 0
expect_contains "a tag of its own: used" "$OUT" "[1] one"
expect_contains "said" "$OUT" \
    "gcsh: replay: as recorded, with --deadline-status=3 --first-failure (this run's own: --deadline=200 --tag=always)"
replay "$F" --first-failure
expect_eq "--first-failure as recorded: runs" "$RC" 0
replay "$TMP/plain.lua" --first-failure
expect_eq "--first-failure on a replay of a session without: refused" "$RC" 128
replay "$TMP/plain.lua" --share-gpu
expect_eq "--share-gpu on a replay of a session without: refused" "$RC" 128
expect_contains "--share-gpu: named" "$OUT" "was recorded without --share-gpu: leave out --share-gpu"

# ---- --seed: in the script{} header (t:rand()'s seeds follow it)
printf '%s\n' 'print(tensor.new(2):rand())' | record "$TMP/seeded.lua" --seed 7
printf '%s\n' 'print(tensor.new(2):rand())' | record "$TMP/unseeded.lua"
replay "$TMP/seeded.lua"
expect_eq "--seed: the replay takes it" "$RC|$(grep -c 'as recorded, with --seed=7' <<<"$OUT")" "0|1"
replay "$TMP/seeded.lua" --seed 8
expect_eq "--seed of its own: refused" "$RC" 128
expect_contains "--seed of its own: named" "$OUT" "was recorded with --seed=7: leave out --seed=8"
replay "$TMP/unseeded.lua" --seed 7
expect_eq "--seed on a replay of a session without: refused" "$RC" 128
expect_contains "named" "$OUT" "was recorded without --seed: leave out --seed=7"

# ---- the reading stage: an options line no gcsh writes is refused, by name
# crafted NAME LINE: the -W recording with its options line replaced
crafted() { sed "3s/.*/$2/" "$TMP/w2.lua" >"$TMP/$1.lua"; replay "$TMP/$1.lua"; }
crafted unknown '-- Options: --frobnicate=3'
expect_eq "an option this gcsh does not know: cannot replay here (125)" "$RC" 125
expect_contains "named" "$OUT" "was recorded with --frobnicate, which this gcsh cannot replay"
crafted exec '-- Options: -e os.exit(3)'
expect_eq "a space inside a word: malformed" "$RC" 128
crafted exec2 '-- Options: -e'
expect_eq "an option no recording notes: malformed" "$RC" 128
expect_contains "named" "$OUT" "its options line names -e, which no recording notes"
crafted value '-- Options: --timeout=soon'
expect_eq "a bad value: malformed" "$RC" 128
expect_contains "named with its bound" "$OUT" "says '--timeout=soon' (--timeout takes seconds 0..1e6)"
crafted twice '-- Options: -W -W'
expect_eq "an option twice: malformed" "$RC" 128
crafted quote "-- Options: -W;print(1)"
expect_eq "other characters: malformed" "$RC" 128
crafted gone '-- Replay'
expect_eq "format 3 without its options line: malformed" "$RC" 128
expect_contains "said" "$OUT" "the line after its '-- gcsh recording' line is not the options"
{ sed -n 1,2p "$TMP/w2.lua"; printf -- '-- Options: -W%s\n' "$(printf ' -W%.0s' $(seq 1 300))"
  sed -n '4,$p' "$TMP/w2.lua"; } >"$TMP/long.lua"
replay "$TMP/long.lua"
expect_eq "a line longer than any gcsh writes: malformed" "$RC" 128
expect_not_contains "no mpirun started for a refused one" "$OUT" "mpirun"

# ---- --diff: options that differ are the first difference
OUT=$(timeout 60 "$GCSH" --diff "$TMP/plain.lua" "$TMP/w2.lua" 2>&1); RC=$?
expect_eq "--diff: different options: exit 1" "$RC" 1
expect_contains "--diff: said first" "$OUT" "options differ:
  $TMP/plain.lua: none
  $TMP/w2.lua: -W"
OUT=$(timeout 60 "$GCSH" --diff "$TMP/w2.lua" "$TMP/w2.lua" 2>&1); RC=$?
expect_eq "--diff: the same recording: exit 0" "$RC" 0

finish
