#!/usr/bin/env bash
# Every lesson through the shell at 2, 3 and 4 ranks: every claim its text
# makes about its output holds, a wrong answer gets one folded line,
# .part/.prev/.again work and a reopened lesson leaves nothing unfreed
# (tests/sh/lesson_claims.lua).
# tests/run.sh: slow (not in make check)
# tests/run.sh: timeout 900
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

# ---- every lesson through the shell, its claims checked
LUA=$(command -v lua5.4 || command -v lua)
if [ -z "$LUA" ]; then
    skip "no lua5.4 to check the lessons' claims with"
else
    for n in 2 3 4; do
        while IFS= read -r line; do
            case "$line" in
            "pass "*) pass ;;
            "fail "*) fail "${line#fail }" ;;
            *) printf '%s\n' "$line" ;;
            esac
        done < <("$LUA" tests/sh/lesson_claims.lua "$GCSH" "$n")
    done
fi

finish
