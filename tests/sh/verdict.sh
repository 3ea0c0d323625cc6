#!/usr/bin/env bash
# One verdict for the job from every rank (issue 36): the worst outcome
# (abort >= 128 > bad 1-124 > skip 125 > good 0), no rank's os.exit hiding
# another's error; 125 only from what happened (a file that cannot be read
# or compiled, a module not found), never from an error's text; misuse of
# repro's API is 128.  At 2 and 4 ranks, host backend.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }
# case NAME WANT ARGS...: the job's status is WANT
case_rc() {
    local name=$1 want=$2
    shift 2
    run "$@"
    expect_eq "$name: exit $want" "$RC" "$want"
}

printf 'local M = {\nfunction M.f() return 1 end\nreturn M\n' >broken.lua
printf 'local M = {}\nfunction M.f() return 1 end\nreturn M\n' >helper.lua
mkdir -p adir

for N in 2 4; do
    L=$((N - 1))
    OTHERS=1-$L
    [ $N = 2 ] && OTHERS=1
    # ---- one verdict from every rank
    case_rc "$N ranks: rank 0 os.exit(0), the others fail" 1 -n $N \
        -e 'if rank == 0 then os.exit(0) end; error("rank " .. rank .. " fails")'
    expect_contains "$N ranks: who ended how is said" "$OUT" \
        "[0] os.exit(0), [$OTHERS] failed (1): the session ends; every rank exits with status 1, the worst"
    case_rc "$N ranks: the last rank os.exit(125) while rank 0 fails" 1 -n $N \
        -e "if rank == $L then os.exit(125) end; if rank == 0 then error('rank 0 fails') end"
    case_rc "$N ranks: skip beats good" 125 -n $N -e "if rank == $L then repro.skip('no NVLink') end"
    case_rc "$N ranks: abort beats bad" 128 -n $N \
        -e "if rank == 0 then os.exit(3) elseif rank == $L then repro.abort('stop') end"
    case_rc "$N ranks: bad beats skip, whichever rank" 7 -n $N \
        -e "if rank == 0 then os.exit(125) else os.exit(7) end"
    case_rc "$N ranks: a usage error beats an os.exit(1)" 128 -n $N \
        -e "if rank == $L then os.exit(1) else repro.need{rank = 2} end"
    case_rc "$N ranks: every rank os.exit(0)" 0 -n $N -e 'os.exit(0)'
    expect_not_contains "$N ranks: nothing said when all agree" "$OUT" "the session ends"
    # a crash is always 69, never the signal's 139
    case_rc "$N ranks: a rank killed by SIGSEGV" 69 -n $N -e "
        local c = comm.world(); c:barrier()
        if rank == $L then os.execute('kill -SEGV ' .. io.open('/proc/self/stat'):read('n')) end
        gcsh.sleep(60)"
    expect_contains "$N ranks: the crash is named" "$OUT" "rank $L is gone (killed by signal 11"

    # ---- a runtime error is 1 whatever its text
    case_rc "$N ranks: a nil call through a table field" 1 -n $N -e 'local t = {}; t.handler()'
    case_rc "$N ranks: a method that does not exist" 1 -n $N \
        -e 'comm.world():allreduce_fast(tensor.new(4))'
    case_rc "$N ranks: a global table that does not exist" 1 -n $N -e 'kernel_v2.reduce()'
    case_rc "$N ranks: a wrapped error" 1 -n $N \
        -e 'local ok, e = pcall(require, "no_such_module"); error("wrapped: " .. e)'
    case_rc "$N ranks: an optional module caught, then a bug" 1 -n $N \
        -e 'pcall(require, "no_such_module"); error("the bug")'

    # ---- 125 from structure
    case_rc "$N ranks: a directory as the script" 125 -n $N adir
    expect_contains "$N ranks: a directory: why" "$OUT" "gcsh: cannot read adir: Is a directory"
    case_rc "$N ranks: a missing script" 125 -n $N missing.lua
    case_rc "$N ranks: a missing module" 125 -n $N -e 'local m = require("no_such_module")'
    case_rc "$N ranks: -l of a missing module" 125 -n $N -l no_such_module -e 'print(1)'
    case_rc "$N ranks: -l of a module that does not compile" 125 -n $N -l broken -e 'print(1)'
    case_rc "$N ranks: a missing dofile" 125 -n $N -e 'dofile("no_such_file.lua")'
    for how in 'require("broken")' 'dofile("broken.lua")' 'loadfile("broken.lua")()' \
               'assert(loadfile("broken.lua"))()' 'local ok = pcall(require, "broken"); require("broken").f()'; do
        case_rc "$N ranks: a helper that does not compile, through $how" 125 -n $N -e "$how"
    done
    case_rc "$N ranks: a helper that compiles, then a bug" 1 -n $N -e 'require("helper").f(); error("bug")'

    # ---- misuse of repro's API: 128 with the message
    case_rc "$N ranks: repro.need{rank=2}" 128 -n $N -e 'repro.need{rank = 2}'
    expect_contains "$N ranks: repro.need: the message" "$OUT" \
        "(command line):1: bad argument #1 to 'repro.need' (unknown requirement 'rank' (valid: ranks gpu))"
    case_rc "$N ranks: a bad repro.expect argument" 128 -n $N -e 'repro.expect(1, tensor.new(2))'
    expect_contains "$N ranks: repro.expect: the message" "$OUT" \
        "bad argument #1 to 'repro.expect' (tensor expected, got number)"
    case_rc "$N ranks: a bad sweep option" 128 -n $N \
        -e 'local f = function() return tensor.new(1) end
            repro.sweep{candidate = f, reference = f, n = {1}, size = 3}'
    expect_contains "$N ranks: sweep: the message" "$OUT" "sweep: unknown option 'size'"
    case_rc "$N ranks: misuse caught by pcall is no verdict" 0 -n $N -e 'pcall(repro.need, {rank = 2})'
done

# ---- a piped session: the worst of its lines
OUT=$(printf '%s\n' 'y = = 2' 'repro.need{rank = 2}' 'error("boom")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "a piped session with a usage error among its failures: 128" "$RC" 128

# ---- --replay agrees with the script run alone
printf 'local h = require("helper")\nprint("f", h.f())\n' >uses.lua
run -n 2 --record rec.lua uses.lua
expect_eq "a recording with a helper: exit 0" "$RC" 0
run --replay rec.lua
expect_eq "its replay: exit 0" "$RC" 0
cp broken.lua helper.lua
case_rc "the script with its helper broken" 125 -n 2 uses.lua
case_rc "the replay with the helper broken, as the script" 125 --replay rec.lua
expect_contains "the replay says why" "$OUT" "gcsh: replay: rec.lua: line 1 cannot be tested here"
finish
