#!/usr/bin/env bash
# The instructor's page (lua/tutorial/INSTRUCTOR.md): it covers every
# lesson with three mistakes, and the shell answers each mistake as the
# page says (tests/sh/instructor.lua, at 4 ranks).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

LUA=$(command -v lua5.4 || command -v lua)
if [ -z "$LUA" ]; then
    skip "no lua5.4 to run tests/sh/instructor.lua with"
else
    while IFS= read -r line; do
        case "$line" in
        "pass "*) pass ;;
        "fail "*) fail "${line#fail }" ;;
        *) printf '%s\n' "$line" ;;
        esac
    done < <("$LUA" tests/sh/instructor.lua "$GCSH")
fi
finish
