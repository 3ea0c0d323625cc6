#!/usr/bin/env bash
# Time limits that fit scripts: a collective that waits for a slow but live
# rank keeps waiting (with hang reports saying where every rank is) unless
# the user set a limit: --timeout S, .timeout S or gcsh.timeout(S) in the
# script; then the check fails after S, naming where the late rank is.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'

cat >"$TMP/slow.lua" <<'EOF'
local c = comm.world()
if rank == 1 then gcsh.sleep(tonumber(arg[1])) end
c:barrier()
print("barrier done")
EOF

# the default: a report after 10 s, and the barrier completes when rank 1 comes
OUT=$(timeout 120 "$GCSH" -n 2 "$TMP/slow.lua" 14 2>&1 </dev/null); RC=$?
expect_eq "a slow rank, no limit set: exit 0" "$RC" 0
expect_all_ranks "a slow rank, no limit set: the barrier completes" "$OUT" "barrier done" 2
expect_match "a slow rank: the hang report" "$OUT" '^gcsh: 1[0-9]\.[0-9] s: done \[\], still running \[0-1\]; Ctrl-C interrupts$'
# (each rank times its own state, the barrier or the sleep, which begins
# after the script's start by as long as getting there takes: 9.8 s at a
# 10.0 s report under load)
expect_match "a slow rank: where rank 0 is" "$OUT" '^gcsh:   \[0\] in barrier #1 \(waiting for the others, 1?[0-9]\.[0-9] s\)$'
expect_match "a slow rank: where rank 1 is" "$OUT" '^gcsh:   \[1\] in gcsh\.sleep\(14\) for 1?[0-9]\.[0-9] s$'
expect_not_contains "a slow rank: no check gave up" "$OUT" "waited"

# a piped session without .timeout waits too
OUT=$(printf '%s\n' 'c = comm.world()' 'if rank == 1 then gcsh.sleep(2) end c:barrier() print("in step")' |
      timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "piped, no limit: exit 0" "$RC:$OUT" "0:[0-1] in step"

# --timeout 1 sets a limit: the check fails after 1 s, naming where rank 1 is
OUT=$(timeout 60 "$GCSH" -n 2 --timeout 1 "$TMP/slow.lua" 3 2>&1 </dev/null); RC=$?
expect_eq "--timeout 1: exit 1" "$RC" 1
expect_match "--timeout 1: rank 0's check fails" "$OUT" '^\[0\] .*slow\.lua:3: barrier #1: \[0\] waited 1\.[0-9] s for \[1\]: \[1\] in gcsh\.sleep\(3\) for 1\.[0-9] s$'

# gcsh.timeout(1) in the script: the same
cat >"$TMP/limited.lua" <<'EOF'
gcsh.timeout(1)
local c = comm.world()
if rank == 1 then gcsh.sleep(3) end
c:barrier()
EOF
OUT=$(timeout 60 "$GCSH" -n 2 "$TMP/limited.lua" 2>&1 </dev/null); RC=$?
expect_eq "gcsh.timeout(1): exit 1" "$RC" 1
expect_match "gcsh.timeout(1): rank 0's check fails" "$OUT" '^\[0\] .*limited\.lua:4: barrier #1: \[0\] waited 1\.[0-9] s for \[1\]: \[1\] in gcsh\.sleep\(3\) for 1\.[0-9] s$'
expect_match "gcsh.timeout(1): reports every second" "$OUT" '^gcsh: 1\.[0-9] s: done \[\], still running \[0-1\]'
OUT=$(timeout 60 "$GCSH" -n 2 -e 'gcsh.timeout(-1)' 2>&1 </dev/null); RC=$?
expect_contains "gcsh.timeout: bounds" "$OUT" "bad argument #1 to 'timeout' (seconds must be 0..1e6)"
# two ranks waiting for each other in collectives on different communicators
# can never meet: both checks fail at once, each naming where the other
# waits, with no limit set (a sweep's rank that gave up on a case meets
# this), and the ranks stay in step
cat >"$TMP/cross.lua" <<'EOF'
local a = comm.world()
local b = a:split(0)
local t = tensor.new(4):fill(rank + 1)
local ok, err = pcall(function()
  if rank == 0 then return a:allreduce(t) else return b:allreduce(t) end
end)
print(ok, err)
print(a:allreduce(t)[0], b:allreduce(t)[0])
EOF
OUT=$(timeout 60 "$GCSH" -n 2 "$TMP/cross.lua" 2>&1 </dev/null); RC=$?
expect_eq "a cycle of waits: exit 0" "$RC" 0
expect_match "a cycle of waits: rank 0's check fails at once" "$OUT" '^\[0\] false	.*cross\.lua:5: allreduce #2: \[0\] waited 0\.[0-9] s for \[1\]: \[1\] in allreduce #1 on comm [0-9a-f]+ \(waiting for the others, 0\.[0-9] s\)$'
expect_match "a cycle of waits: rank 1's too" "$OUT" '^\[1\] false	.*cross\.lua:5: allreduce #1 on comm [0-9a-f]+: \[1\] waited 0\.[0-9] s for \[0\]: \[0\] in allreduce #2 \(waiting for the others, 0\.[0-9] s\)$'
expect_all_ranks "a cycle of waits: the ranks stay in step" "$OUT" "3.0${T}6.0" 2
finish
