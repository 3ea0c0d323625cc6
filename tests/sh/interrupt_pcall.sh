#!/usr/bin/env bash
# One interrupt ends the command even when the user's code catches errors
# (bind/l_protect.c): a loop of pcalls, xpcalls or coroutine.resumes around
# collectives, or around pure Lua, stops at the first SIGINT to rank 0 (lua.c
# needs a second Ctrl-C that kills it); an xpcall's handler still runs; the
# next line runs in step; outside an interrupt pcall is Lua's own.  (A rank
# may catch errors before the interrupt reaches it: a peer's abort of the
# communicator is an error like any other until then; "next N" counts them.)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TAGS=()
trap 'for t in "${TAGS[@]}"; do for p in $(tagged_pids "$t"); do kill -9 $p 2>/dev/null; done; done' EXIT

rank0_pid() { # TAG
    local p
    for p in $(tagged_pids "$1"); do
        grep -qxzF "OMPI_COMM_WORLD_RANK=0" "/proc/$p/environ" 2>/dev/null && echo "$p"
    done
}
# interrupted N 'code that prints "go" then loops': one SIGINT to rank 0 once
# every rank said go; then the line after
interrupted() {
    local n=$1 tag out
    tag=$(new_tag); TAGS+=("$tag"); out=$(mktemp)
    ( printf '%s\n' "$2"
      wait_until 120 all_said "$out" go "$n"
      kill -INT $(rank0_pid "$tag")
      wait_until 60 grep -q '^gcsh: interrupted \[' "$out"
      printf '%s\n' 'print("next", caught)' ) |
        GCSH_TEST_FAULTS=1 GCSH_TEST_TAG=$tag timeout 120 "$GCSH" -n "$n" >"$out" 2>&1
    RC=$?; OUT=$(cat "$out"); rm -f "$out"
}
for n in 2 4; do
    interrupted $n 'c = comm.world() caught = 0 print("go")
for i = 1, 1e9 do if not pcall(c.barrier, c) then caught = caught + 1 end end'
    expect_eq "[$n] pcall(c.barrier): one interrupt ends it, the line failed" "$RC" 1
    expect_eq "[$n] pcall(c.barrier): one interrupt" "$(grep -c '^gcsh: interrupting' <<<"$OUT")" 1
    expect_all_ranks_match "[$n] pcall(c.barrier): the next line runs" "$OUT" "next	[0-9]+" $n

    interrupted $n 'c = comm.world() t = tensor.new(4) caught = 0 print("go")
for i = 1, 1e9 do pcall(function() c:allreduce(t) end) end'
    expect_all_ranks_match "[$n] pcall around an all-reduce" "$OUT" "next	[0-9]+" $n
    expect_eq "[$n] pcall around an all-reduce: the line failed" "$RC" 1

    interrupted $n 'c = comm.world() caught = 0 print("go")
for i = 1, 1e9 do xpcall(c.barrier, function(e) caught = 1 return e end, c) end'
    expect_all_ranks_match "[$n] xpcall: the command ended" "$OUT" "next	[01]" $n
    expect_eq "[$n] xpcall: the line failed" "$RC" 1

    interrupted $n 'c = comm.world() caught = 0 print("go")
for i = 1, 1e9 do if not coroutine.resume(coroutine.create(function() c:barrier() end)) then caught = caught + 1 end end'
    expect_all_ranks_match "[$n] coroutine.resume passes the interrupt on" "$OUT" "next	[0-9]+" $n
    expect_eq "[$n] coroutine.resume: the line failed" "$RC" 1

    interrupted $n 'caught = 0 print("go")
for i = 1, 1e12 do if not pcall(function() for j = 1, 10 do end end) then caught = caught + 1 end end'
    expect_all_ranks "[$n] pure Lua in pcalls" "$OUT" "next	0" $n
    expect_eq "[$n] pure Lua in pcalls: the line failed" "$RC" 1
done

# outside an interrupt: Lua's own pcall, xpcall, resume and yields across them
OUT=$(timeout 60 "$GCSH" -n 2 -e 'print(pcall(error, "x"))
print(xpcall(error, function(e) return "h:" .. e end, "y"))
local co = coroutine.wrap(function() local ok, v = pcall(function() return coroutine.yield(1) + 1 end) coroutine.yield(ok and v) end)
print(co(), co(41))
print(coroutine.resume(coroutine.create(function() error("z", 0) end)))
print(select("#", pcall(function() return 1, 2, 3 end)))
print(pcall(os.exit, 3))' 2>&1 </dev/null); RC=$?
expect_eq "Lua's own semantics otherwise; os.exit is never caught" "$RC:$OUT" "3:[0-1] false	x
[0-1] false	h:y
[0-1] 1	42
[0-1] false	z
[0-1] 4"
finish
