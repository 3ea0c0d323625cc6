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
for n in 2 3 4; do lua_checks tests/sh/lesson_claims.lua "$GCSH" "$n"; done

finish
