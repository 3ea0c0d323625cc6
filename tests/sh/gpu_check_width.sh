#!/usr/bin/env bash
# scripts/gpu-check.sh's too_wide (no GPU needed): a lesson's mpirun log is
# judged as gcsh -n would show it at 80 columns: a text every rank printed
# counts with "[0-3] ", one some ranks printed with their folded tag, and
# lines without a rank tag are not the lesson's.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
eval "$(sed -n '/^too_wide() {/,/^}/p' scripts/gpu-check.sh)"
TMP=$(mktemp -d)
x() { printf "%${1}s" "" | tr ' ' "$2"; } # x N C: N times C

# 74 columns of text on every rank: 80 with "[0-3] ", fits
for r in 0 1 2 3; do echo "[$r] $(x 74 a)"; done >"$TMP/fits"
echo "[0-3] $(x 74 b)" >>"$TMP/fits"
echo "mpirun noise $(x 90 n)" >>"$TMP/fits"
expect_eq "80 columns at most, untagged lines aside: nothing" "$(too_wide "$TMP/fits")" ""

# 75 on every rank, each under its own tag: 81 once folded
for r in 0 1 2 3; do echo "[$r] $(x 75 w)"; done >"$TMP/wide"
expect_eq "75 columns on every rank: named once, with its folded tag" "$(too_wide "$TMP/wide")" \
    "81 columns: [0-3] $(x 75 w)"

# ranks 0, 2 and 3 print a 73-column text: "[0,2-3] " makes it 81
for r in 0 2 3; do echo "[$r] $(x 73 u)"; done >"$TMP/some"
echo "[1] $(x 76 v)" >>"$TMP/some"
expect_eq "three ranks' text: counted with [0,2-3]" "$(too_wide "$TMP/some")" \
    "81 columns: [0,2-3] $(x 73 u)"

# a line gcsh folded already keeps its tag
echo "[0-1] $(x 75 f)" >"$TMP/folded"
expect_eq "a folded line as it is" "$(too_wide "$TMP/folded")" "81 columns: [0-1] $(x 75 f)"

# at most three named
for i in 1 2 3 4 5; do echo "[0] $i$(x 80 z)"; done >"$TMP/many"
expect_eq "the first three" "$(too_wide "$TMP/many" | grep -c "columns: ")" 3

rm -rf "$TMP"
finish
