#!/usr/bin/env bash
# scripts/preflight.sh (make preflight): a seat that runs every lesson's
# first part is "ready" in one line, exit 0; a broken lesson, a bad rank
# count or no gcsh is "NOT ready" naming it, exit 1.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

OUT=$(bash scripts/preflight.sh "$GCSH" 4 2>&1); RC=$?
expect_eq "a working seat: exit 0" "$RC" 0
expect_eq "one line" "$(wc -l <<<"$OUT")" 1
expect_match "it says ready, the backend, ranks and lessons" "$OUT" \
    "^preflight: ready: host, 4 ranks; every lesson's first part ran \\($(ls lua/tutorial/[0-9][0-9]-*.lua | wc -l) lessons, [0-9]+ s\\)$"

TMP=$(mktemp -d)
mkdir -p "$TMP/tutorial" "$TMP/gcsh"
cp lua/gcsh/*.lua "$TMP/gcsh/"
cp lua/tutorial/*.lua "$TMP/tutorial/"
sed -i 's/^c = comm.world()$/error("seat broken")/' "$TMP/tutorial/02-tensors.lua"
OUT=$(GCSH_LUA_DIR="$TMP" bash scripts/preflight.sh "$GCSH" 2 2>&1); RC=$?
expect_eq "a broken lesson: exit 1" "$RC" 1
expect_match "it names the lesson and its error" "$OUT" \
    "^preflight: NOT ready: lesson 2: \\[0-1\\] 02-tensors.lua:[0-9]+: seat broken \\(all of it: .*\\)$"
rm -f "$(sed -n 's/.*(all of it: \(.*\))$/\1/p' <<<"$OUT")"
rm -rf "$TMP"

OUT=$(bash scripts/preflight.sh "$GCSH" 0 2>&1); RC=$?
expect_eq "a bad rank count: exit 1" "$RC" 1
expect_eq "it names the bound" "$OUT" "preflight: NOT ready: RANKS must be a number of ranks 1..64, got '0'"
OUT=$(bash scripts/preflight.sh /nonexistent/gcsh 2>&1); RC=$?
expect_eq "no gcsh: exit 1" "$RC" 1
expect_eq "it says so" "$OUT" "preflight: NOT ready: no gcsh at /nonexistent/gcsh (run make first)"
finish
