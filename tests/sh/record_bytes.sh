#!/usr/bin/env bash
# Recordings keep every byte of the output: a NUL, a carriage return, a
# byte that is no UTF-8 and a line without its newline are recorded and
# replay as a match at 2 and 4 ranks; a recording whose bytes were changed
# after the NUL does not match (the comparison sees past it).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

SESSION='io.write("a\0b", rank % 2, "\n")
io.write("cr\r\n", "\255\1", "\n")
io.write("no newline\0")
print("after")'
for n in 2 4; do
    R="$TMP/bytes$n.gcshrec"
    OUT=$(printf '%s\n' "$SESSION" | timeout 60 "$GCSH" -n $n --record "$R" 2>&1); RC=$?
    expect_eq "[$n] recorded" "$RC" 0
    expect_contains "[$n] the recording holds the NUL" "$(cat "$R")" 'a\000b0'
    OUT=$(timeout 60 "$GCSH" --replay "$R" 2>&1); RC=$?
    expect_eq "[$n] every byte replays as recorded" "$RC" 0
    expect_contains "[$n] replay says so" "$OUT" "gcsh: replay: 4 lines of $R match"
    # the bytes after the NUL changed: a difference, at the first line
    sed 's/a\\000b0/a\\000c0/' "$R" >"$TMP/changed.gcshrec"
    OUT=$(timeout 60 "$GCSH" --replay "$TMP/changed.gcshrec" 2>&1); RC=$?
    expect_eq "[$n] a byte after the NUL differs: status 1" "$RC" 1
    expect_contains "[$n] the line is named" "$OUT" "changed.gcshrec:"
    expect_contains "[$n] line 1 differs" "$OUT" ": line 1 differs on [0"
done
finish
