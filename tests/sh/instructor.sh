#!/usr/bin/env bash
# The instructor's page (lua/tutorial/INSTRUCTOR.md): it covers every
# lesson with three mistakes, and the shell answers each mistake as the
# page says (tests/sh/instructor.lua, at 4 ranks).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

lua_checks tests/sh/instructor.lua "$GCSH"
finish
