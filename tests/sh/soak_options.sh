#!/usr/bin/env bash
# tests/lua/soak.lua's knobs (issue 35's diagnoses): a part or a split
# divisor it does not know is an error, not a run of empty rounds that
# passes.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
soak() { env "$@" GCSH_SOAK_ROUNDS=10 LUA_PATH="$PWD/tests/lua/?.lua;;" timeout 60 "$GCSH" tests/lua/soak.lua 2>&1; }
OUT=$(soak GCSH_SOAK_ONLY=split,windows); RC=$?
expect_eq "an unknown part: exit 1" "$RC" 1
expect_contains "an unknown part: named, with the valid ones" "$OUT" \
    "GCSH_SOAK_ONLY: unknown part 'windows' (valid: split,window,signals,graph,"
OUT=$(soak GCSH_SOAK_ONLY=); RC=$?
expect_eq "no part: exit 1" "$RC" 1
expect_contains "no part: said" "$OUT" "GCSH_SOAK_ONLY: unknown part '' (valid: split,window,signals,graph, comma-separated, none empty)"
OUT=$(soak GCSH_SOAK_SPLIT_BY=0); RC=$?
expect_eq "a split by 0: exit 1" "$RC" 1
expect_contains "a split by 0: said" "$OUT" "GCSH_SOAK_SPLIT_BY must be an integer >= 1"
# known parts run their rounds (the RSS verdict is not this test's: 10
# rounds allow 6.4 KiB, a page or two that a loaded machine can move)
OUT=$(soak GCSH_SOAK_ONLY=signals,graph)
expect_contains "known parts: the soak's line" "$OUT" "rank 0: 10 rounds (host)"
expect_not_contains "known parts: no part refused" "$OUT" "unknown part"
# the curve: every rank, every N measured rounds, not after the last (the
# verdict is not this test's: RSS over 40 rounds on a loaded machine; malloc's
# count where glibc's malloc counts: not under AddressSanitizer)
OUT=$(env GCSH_SOAK_ONLY=signals GCSH_SOAK_EVERY=16 GCSH_SOAK_ROUNDS=40 \
    LUA_PATH="$PWD/tests/lua/?.lua;;" timeout 60 "$GCSH" -n 2 tests/lua/soak.lua 2>&1)
for r in 0 1; do
    for i in 16 32; do
        expect_match "the curve: rank $r after $i rounds" "$OUT" \
            "soak: rank $r, $i measured rounds: RSS [+-][0-9]+ KiB(, malloc in use [+-][0-9]+ KiB)?$"
    done
    expect_contains "the curve: rank $r's verdict line follows" "$OUT" "rank $r: 40 rounds (host)"
done
expect_eq "the curve: no mark at the last round (the verdict's line says it)" \
    "$(grep -c 'measured rounds:' <<<"$OUT")" 4
finish
