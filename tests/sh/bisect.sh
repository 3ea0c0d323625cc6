#!/usr/bin/env bash
# Exit statuses as `git bisect run` reads them: 0 good, 1 the reproducer's
# own failure (any runtime error, whatever it says), 125 cannot test here
# (bisect skips: a file that cannot be read or compiled, a module not
# found), 128 a usage error (bisect stops).  Real `git bisect run gcsh -n 2
# check.lua`s over a generated history of 8 commits, one of which has a
# helper that does not compile, the helper loaded through require in one
# layout and through dofile in the other, must name the commit with the
# real bug in both.  (tests/sh/verdict.sh has every rank's part.)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }

# ---- what each kind of failure gives, in a script and with -e
cd "$TMP" || exit 1
printf 'x = = 1\n' >syntax.lua
printf 'comm.world():allreduce_fast(tensor.new(4))\n' >api.lua
printf 'local k = require("no_such_module")\n' >module.lua
printf 'kernel_v2.reduce()\n' >global.lua
printf 'if rank == 1 then comm.world():no_such_method() end comm.world():barrier()\n' >onerank.lua
printf 'assert(1 + 1 == 3, "arithmetic is broken")\n' >bug.lua
run -n 2 missing.lua
expect_eq "a missing script: 125" "$RC" 125
expect_contains "a missing script: says so" "$OUT" "gcsh: cannot open missing.lua: No such file or directory"
run -n 2 syntax.lua
expect_eq "a syntax error: 125" "$RC" 125
run -n 2 api.lua
expect_eq "an unknown method is a runtime error: 1" "$RC" 1
expect_contains "an unknown method: the error shows" "$OUT" "attempt to call a nil value (method 'allreduce_fast')"
run -n 2 module.lua
expect_eq "a failed require: 125" "$RC" 125
run -n 2 global.lua
expect_eq "an unknown global table is a runtime error: 1" "$RC" 1
run -n 2 onerank.lua
expect_eq "an unknown API on one rank (the other fails at the barrier): 1" "$RC" 1
run -n 2 bug.lua
expect_eq "the script's own failure: 1" "$RC" 1
run -n 2 -e 'x = = 1'
expect_eq "-e with a syntax error: 125" "$RC" 125
run -n 2 -e 'error("boom")'
expect_eq "-e failing on its own: 1" "$RC" 1
OUT=$(printf '%s\n' 'print(1)' 'y = = 2' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "a piped session whose only failure is a syntax error: 125" "$RC" 125
OUT=$(printf '%s\n' 'y = = 2' 'error("boom")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "a piped session with a failure of its own: 1" "$RC" 1
run -n 2 --backend no_such_backend -e 'print(1)'
expect_eq "an unknown backend: 128" "$RC" 128
run -n 2 --no-such-option x.lua
expect_eq "an unknown option: 128" "$RC" 128
run -n 2 --timeout
expect_eq "an option without its value: 128" "$RC" 128

# A failing run ends as fast as a passing one: mpirun sees every rank exit
# 0 (it takes a second or two more to tear down a job after a non-zero exit)
# while gcsh -n exits with the status rank 0 declared.
cat >"$TMP/mpirun" <<EOF
#!/bin/sh
mpirun "\$@"; echo \$? >"$TMP/mpirun.status"
EOF
chmod +x "$TMP/mpirun"
OUT=$(GCSH_MPIRUN=$TMP/mpirun timeout 60 "$GCSH" -n 2 -e 'error("boom")' 2>&1 </dev/null); RC=$?
expect_eq "a failing run: gcsh -n exits 1" "$RC" 1
expect_eq "a failing run: mpirun saw every rank exit 0" "$(cat "$TMP/mpirun.status")" 0
OUT=$(GCSH_MPIRUN=$TMP/mpirun timeout 60 "$GCSH" -n 2 syntax.lua 2>&1 </dev/null); RC=$?
expect_eq "a syntax error: gcsh -n exits 125, mpirun saw 0" "$RC:$(cat "$TMP/mpirun.status")" "125:0"

# ---- repro's own choices
run -n 2 -e 'repro.skip("no %s here", "NVLink")'
expect_eq "repro.skip: 125" "$RC" 125
expect_contains "repro.skip: why" "$OUT" "[0-1] cannot test here: no NVLink here"
run -n 2 -e 'repro.abort("the recording is from another machine")'
expect_eq "repro.abort: 128" "$RC" 128
expect_contains "repro.abort: why" "$OUT" "[0-1] stop: the recording is from another machine"
run -n 2 -e 'repro.need{gpu = true}'
expect_eq "repro.need{gpu=true} on the host backend: 125" "$RC" 125
expect_contains "repro.need{gpu=true}: why" "$OUT" "cannot run here: needs GPUs (the cuda backend); this session runs on host"
run -n 2 -e 'repro.need{ranks = "x"}'
expect_eq "repro.need: a bad requirement is a usage error: 128" "$RC" 128
expect_contains "repro.need: a bad requirement is named" "$OUT" "bad argument #1 to 'repro.need' (ranks must be a positive integer, got \"x\")"

# ---- real git bisect runs: the helper through require, then through dofile
commit() { git add -A && git -c user.name=t -c user.email=t@example.com commit -qm "$1" && git rev-parse HEAD; }
good='local M = {}
function M.allsum(c, t)
  return c:allreduce(t, "sum")
end
return M'
# history LAYOUT: 8 commits in $TMP/LAYOUT, the helper loaded through
# LAYOUT (require or dofile); c4's helper does not compile, c7 has the real
# bug; sets C1..C8
history() {
    local load repo=$TMP/$1
    mkdir -p "$repo" && cd "$repo" || exit 1
    git init -q .
    if [ "$1" = require ]; then load='require("lib")'; else load='dofile("lib.lua")'; fi
    cat >check.lua <<EOF
-- the reproducer: lib.allsum must equal c:allreduce
repro.need{ranks = 2}
local lib = $load
local c = comm.world()
local want = c:allreduce(tensor.new(8):fill(rank + 1))
repro.expect(lib.allsum(c, tensor.new(8):fill(rank + 1)), want, "allsum", c)
if rank == 0 then print("allsum matches") end
EOF
    printf '%s\n' "$good" >lib.lua
    C1=$(commit "allsum")
    printf '%s\n' "$good" '-- a comment' >lib.lua
    C2=$(commit "a comment")
    printf '%s\n' "$good" '-- another' >lib.lua
    C3=$(commit "another comment")
    # c4: git bisect's first look between c1 and c8
    printf '%s\n' 'local M = {' 'function M.allsum(c, t)' '  return c:allreduce(t, "sum")' 'end' 'return M' >lib.lua
    C4=$(commit "syntax error")
    printf '%s\n' "$good" '-- fixed' >lib.lua
    C5=$(commit "fix the syntax")
    printf '%s\n' 'local M = {}' 'function M.allsum(c, t) local u = t; return c:allreduce(u, "sum") end' 'return M' >lib.lua
    C6=$(commit "a local")
    printf '%s\n' 'local M = {}' 'function M.allsum(c, t)' '  return c:allreduce(t, "max")' 'end' 'return M' >lib.lua
    C7=$(commit "the real bug: max instead of sum")
    printf '%s\n' '-- later' >>lib.lua
    C8=$(commit "a later change")
}

for layout in require dofile; do
    history $layout
    # each commit alone gives what bisect needs
    for c in "$C4:125" "$C5:0" "$C6:0" "$C7:1"; do
        git checkout -q "${c%%:*}"
        OUT=$(timeout 120 "$GCSH" -n 2 check.lua 2>&1 </dev/null); RC=$?
        expect_eq "$layout: commit ${c%%:*}: exit ${c#*:}" "$RC" "${c#*:}"
    done
    git checkout -q "$C8"
    BIS=$(git bisect start "$C8" "$C1" 2>&1 && timeout 600 git bisect run "$GCSH" -n 2 check.lua 2>&1); RC=$?
    expect_eq "$layout: git bisect run: finishes" "$RC" 0
    expect_contains "$layout: git bisect run: names the real bug" "$BIS" "$C7 is the first bad commit"
    expect_contains "$layout: git bisect run: the untestable commit was met and skipped" \
        "$(git bisect log)" "git bisect skip $C4"
    git bisect reset -q >/dev/null 2>&1
done

# a usage error stops the bisect at once
BIS=$(git bisect start "$C8" "$C1" 2>&1 && timeout 600 git bisect run "$GCSH" -n 2 --no-such-option check.lua 2>&1); RC=$?
expect_eq "git bisect run with a usage error: stops with its status" "$RC" 128
expect_contains "git bisect run with a usage error: why" "$BIS" "exit code 128"
expect_eq "git bisect run with a usage error: after one run" "$(grep -c "^running" <<<"$BIS")" 1
git bisect reset -q >/dev/null 2>&1
cd "$TMP" || exit 1
finish
