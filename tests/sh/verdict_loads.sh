#!/usr/bin/env bash
# A load failure the script handles is no verdict: 125 ("cannot test
# here") only when what ended the command is the failure itself (a module
# that does not compile raised through require, dofile's own error, the
# message of loadfile raised, a call of the nil loadfile returned), never
# because a loadfile, pcall(require) or pcall(dofile) failed earlier and the
# script went on (rank/verdict.c).  At 1, 2 and 4 ranks, with the broken
# load on every rank and on the last alone.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

printf 'local M = {\nfunction M.f() return 1 end\nreturn M\n' >broken.lua
printf 'local M = {}\nfunction M.f() return 1 end\nreturn M\n' >helper.lua
# each script loads broken.lua on the ranks arg[1] names ("all" or one
# rank), helper.lua on the others
WHO='local who = arg[1] == "all" or tonumber(arg[1]) == rank
local name = who and "broken" or "helper"'
# the reproducer of the report: the nil handled, then a failure of its own
cat >handled.lua <<EOF
$WHO
local f = loadfile(name .. ".lua")
if not f then print("optional module skipped") end
error("wrong sum")
EOF
cat >handled_ok.lua <<EOF
$WHO
local f = loadfile(name .. ".lua")
if not f then print("optional module skipped") end
print("done")
EOF
cat >pcall_require.lua <<EOF
$WHO
local ok = pcall(require, name)
error("wrong sum")
EOF
cat >pcall_dofile.lua <<EOF
$WHO
local ok = pcall(dofile, name .. ".lua")
error("wrong sum")
EOF
# unhandled: the failure ends the command
cat >called.lua <<EOF
$WHO
local f = loadfile(name .. ".lua")
print("loaded")
f()
EOF
cat >asserted.lua <<EOF
$WHO
local f = assert(loadfile(name .. ".lua"))
f()
EOF
cat >required.lua <<EOF
$WHO
require(name).f()
EOF

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
case_rc() { # NAME WANT ARGS...
    local name=$1 want=$2
    shift 2
    run "$@"
    expect_eq "$name: exit $want" "$RC" "$want"
    [ "$RC" = "$want" ] || context "$OUT"
}

for N in 1 2 4; do
    L=$((N - 1))
    WHOS="all"
    [ $N -gt 1 ] && WHOS="all $L"
    for W in $WHOS; do
        at="$N ranks, broken on $W"
        case_rc "$at: loadfile's nil handled, then error()" 1 -n $N handled.lua $W
        expect_contains "$at: the script's own error is shown" "$OUT" "handled.lua:5: wrong sum"
        expect_contains "$at: it said it skipped" "$OUT" "optional module skipped"
        case_rc "$at: loadfile's nil handled, nothing else failed" 0 -n $N handled_ok.lua $W
        expect_contains "$at: and it went on" "$OUT" "done"
        case_rc "$at: pcall(require) of it, then error()" 1 -n $N pcall_require.lua $W
        case_rc "$at: pcall(dofile) of it, then error()" 1 -n $N pcall_dofile.lua $W
        case_rc "$at: loadfile's nil called on a later line" 125 -n $N called.lua $W
        case_rc "$at: assert(loadfile(...))" 125 -n $N asserted.lua $W
        case_rc "$at: require of it" 125 -n $N required.lua $W
    done
    # one-liners: everything on line 1
    case_rc "$N ranks: -e, loadfile's nil handled, then error()" 1 -n $N \
        -e 'local f = loadfile("broken.lua") if not f then print("skip") end error("wrong sum")'
    case_rc "$N ranks: -e, loadfile's nil handled, then an arithmetic error" 1 -n $N \
        -e 'local f = loadfile("broken.lua") if not f then print("skip") end local y; y = y + 1'
    case_rc "$N ranks: -e, loadfile(...)()" 125 -n $N -e 'loadfile("broken.lua")()'
    case_rc "$N ranks: -e, its message raised by error()" 125 -n $N \
        -e 'local f, e = loadfile("broken.lua") if not f then error(e) end'
done
finish
