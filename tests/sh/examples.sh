#!/usr/bin/env bash
# The reproducers (lua/examples): exit 0 plain, 1 with --bug and their
# message, 125 where they cannot run (one rank), 128 on an unknown argument;
# repro.sweep's out= script; os.exit's statuses.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'

run() { OUT=$(timeout 120 "$GCSH" "$@" 2>&1 </dev/null); RC=$?; }

# script | what --bug prints (a fixed substring)
cases=(
  "reuse_no_barrier|] round 1 sum: 4 of 4 elements differ; first at [0]: expected RANKSUM, got "
  "free_then_read|reading a peer's slice after w:free(): gcsh refused it:"
  "cpu_spin|[0] rank 0 read the block: 32 of 64 elements differ; first at [0]: expected 7, got 0"
  "bad_option|gcsh refused it: lua/examples/bad_option.lua:21: allreduce: unknown option 'algorithm' (valid: op offset n out algo)"
  "tail_drop|tail dropped: smallest failing case n=4 offset=1 f32 sum"
  "off_by_one|sum of elements 4..11: 1 of 8 elements differ; first at [7]: expected SUM11, got -1"
  "putv_two_peers|(descriptor 2 targets peer"
  "window_order|gcsh refused it: window #1: ranks disagree: [0EVEN] 64 f32 host, [1ODD] 128 f32 host"
  "window_offset|gcsh refused it: lua/examples/window_offset.lua:22: collective mismatch: kernel.allreduce #2: [0] f32 x16 sum window 1 offset 8 "
)
for n in 2 4; do
  for c in "${cases[@]}"; do
    name=${c%%|*} want=${c#*|}
    # numbers that depend on the rank count
    sum=$((n * (n + 1) / 2)); sum11=0
    for ((r = 0; r < n; r++)); do sum11=$((sum11 + r * 100 + 11)); done
    even=""; odd=""; [ "$n" -gt 2 ] && even=",2" odd=",3"
    want=${want//RANKSUM/$sum}; want=${want//SUM11/$sum11}; want=${want//EVEN/$even}; want=${want//ODD/$odd}
    f=lua/examples/$name.lua
    run -n "$n" "$f"
    expect_eq "$name at $n ranks: exit 0" "$RC" 0
    expect_not_contains "$name at $n ranks: no error" "$OUT" "traceback"
    run -n "$n" "$f" --bug
    expect_eq "$name --bug at $n ranks: exit 1" "$RC" 1
    expect_contains "$name --bug at $n ranks: says what went wrong" "$OUT" "$want"
  done
done

# one rank: 125 with the reason, except tail_drop (a local kernel)
for c in "${cases[@]}"; do
  name=${c%%|*}
  run -n 1 "lua/examples/$name.lua" --bug
  if [ "$name" = tail_drop ]; then
    expect_eq "$name at 1 rank --bug: exit 1" "$RC" 1
  else
    expect_eq "$name at 1 rank: exit 125" "$RC" 125
    expect_contains "$name at 1 rank: why" "$OUT" "cannot run here: needs at least 2 ranks, has 1"
  fi
done

run -n 2 lua/examples/off_by_one.lua --bgu
expect_eq "unknown argument: exit 128 (usage)" "$RC" 128
expect_contains "unknown argument: usage" "$OUT" "unknown argument '--bgu' (usage: gcsh -n N lua/examples/off_by_one.lua [--bug])"

# ---- repro.sweep's out= script: the smallest case, standalone
cat >"$TMP/sweep.lua" <<'EOF'
local WIDTH = 4                 -- an upvalue the script must carry
local function dropped(i, n)    -- a helper function it must carry too
  return n > WIDTH and n % WIDTH ~= 0 and i >= n - n % WIDTH
end
local function reference(case)
  return tensor.new(case.n, case.dtype):fill(1)
end
local function candidate(case)
  local t = reference(case)
  for i = 0, case.n - 1 do if dropped(i, case.n) then t[i] = 0 end end
  return t
end
local found = repro.sweep { candidate = candidate, reference = reference, n = { 4, 8, 12, 13 },
                            out = arg[1] }
print(found.n, found.offset)
local found = repro.sweep { candidate = candidate, reference = reference, n = { 4, 8, 12, 13 },
                            out = arg[1] }
print(found.n, found.offset)
EOF
run -n 2 "$TMP/sweep.lua" "$TMP/case.lua"
expect_eq "sweep with out=: exit 0" "$RC" 0
expect_contains "sweep: the summary" "$OUT" "[0] sweep: 1 of 4 cases fail; smallest: n=5 offset=0 f32 sum on [0-1]: 1 of 5 elements differ; first at [4]: expected 1, got 0"
expect_contains "sweep: shrunk below the grid" "$OUT" "[1] 5	0"
run -n 2 "$TMP/case.lua"
expect_eq "the out= script fails on its case: exit 1" "$RC" 1
expect_contains "the out= script says what differs" "$OUT" "[0-1] n=5 offset=0 f32 sum: 1 of 5 elements differ; first at [4]: expected 1, got 0"
run -n 3 "$TMP/case.lua"
expect_eq "the out= script at another rank count: exit 125" "$RC" 125
expect_contains "the out= script: why" "$OUT" "found at 2 ranks: run gcsh -n 2"
sed -i 's/t\[i\] = 0/t[i] = 1/' "$TMP/case.lua"
run -n 2 "$TMP/case.lua"
expect_eq "the out= script with the candidate fixed: exit 0" "$RC" 0
expect_contains "the out= script passes" "$OUT" "candidate matches reference"

# a function typed at the prompt: its source is kept, the script is whole
OUT=$(printf '%s\n' 'f = function(k) return tensor.new(k.n):fill(rank) end' \
  'g = function(k) return tensor.new(k.n):fill(0) end' \
  "=repro.sweep{candidate = f, reference = g, n = {1}, out = '$TMP/x.lua', quiet = true}.n" |
  timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "out= with functions typed at the prompt: the sweep" "$OUT" "[0-1] 1"
expect_contains "out= with functions typed at the prompt: their text" "$(cat "$TMP/x.lua")" "local candidate = function(k) return tensor.new(k.n):fill(rank) end
local reference = function(k) return tensor.new(k.n):fill(0) end"
run -n 2 "$TMP/x.lua"
expect_eq "the prompt's case runs alone: it fails as found (exit 1, rank 1 differs)" "$RC" 1
expect_contains "the prompt's case: what differs" "$OUT" "[1] n=1 offset=0 f32 sum: 1 of 1 elements differ; first at [0]: expected 0, got 1"

# globals, tables of functions and communicators go into the script
cat >"$TMP/whole.lua" <<'EOF'
function vreduce(a, b, op) return OPS[op](a, b) end -- a global helper
OPS = { sum = function(x, y) return x + y end, max = function(x, y) return math.max(x, y) end }
local c = comm.world()                               -- an upvalue communicator
local LANES = { f32 = 4, f16 = 8 }                   -- an upvalue table
local function reference(case)
  local t = tensor.new(case.n, case.dtype):fill(rank + 1)
  return c:allreduce(t, case.op)
end
local function candidate(case)
  local lanes = LANES[case.dtype]
  local out = tensor.new(case.n, case.dtype):fill(rank + 1)
  local all = c:allreduce(tensor.new(case.n, case.dtype):fill(rank + 1), case.op)
  for i = 0, case.n - 1 - case.n % lanes do out[i] = all[i] end  -- forgets the tail
  for i = case.n - case.n % lanes, case.n - 1 do out[i] = vreduce(out[i], 0, case.op) end
  return out
end
local found = repro.sweep { candidate = candidate, reference = reference, n = { 16, 13 },
                            dtype = { "f16", "f32" }, op = { "max", "sum" }, out = arg[1] }
print(found.n, found.dtype, found.op)
EOF
run -n 2 "$TMP/whole.lua" "$TMP/whole_case.lua"
expect_eq "globals and upvalues: the sweep" "$RC" 0
expect_all_ranks "shrunk over dtype and op too, whatever their order" "$OUT" "1${T}f32${T}sum" 2
W=$(cat "$TMP/whole_case.lua")
expect_contains "the global helper is written" "$W" "vreduce = function(a, b, op) return OPS[op](a, b) end"
expect_contains "the global table of functions is written" "$W" 'OPS = {["max"] = function(x, y) return math.max(x, y) end, ["sum"] = function(x, y) return x + y end}'
expect_contains "the communicator is made again" "$W" "c = comm.world()"
expect_contains "the upvalue table" "$W" 'LANES = {["f16"] = 8, ["f32"] = 4}'
run -n 2 "$TMP/whole_case.lua"
expect_eq "the whole case runs alone and fails as found: exit 1" "$RC" 1
expect_contains "the whole case: what differs" "$OUT" "n=1 offset=0 f32 sum: 1 of 1 elements differ; first at [0]: expected 3, got 2"
expect_not_contains "the whole case: no missing global" "$OUT" "nil value"
sed 's/dtype = { "f16", "f32" }, op = { "max", "sum" }/dtype = { "f32", "f16" }, op = { "sum", "max" }/' "$TMP/whole.lua" >"$TMP/whole2.lua"
run -n 2 "$TMP/whole2.lua"
expect_all_ranks "the same answer with the lists in another order" "$OUT" "1${T}f32${T}sum" 2

# a helper module the candidate uses is written as a live require: the
# case runs the module as it is where it runs (a bisect tests it), and
# freeze = true writes today's copy; a one-upvalue function whose upvalue
# is not the first local is found in its file (issue 36)
mkdir -p "$TMP/proj"
cat >"$TMP/proj/helper.lua" <<'EOF2'
local M = {}
function M.fill(k) local t = tensor.new(k.n):fill(1) if k.n > 2 then t[0] = 0 end return t end
return M
EOF2
cat >"$TMP/proj/live.lua" <<'EOF2'
local helper = require("helper")
local unused, make = 0, function(k) return tensor.new(k.n):fill(1) end
local function reference(k) return make(k) end
repro.sweep { candidate = helper.fill, reference = reference, n = { 1, 2, 3 },
              out = arg[1], freeze = arg[2] == "freeze", quiet = true }
EOF2
LUA_PATH="$TMP/proj/?.lua;;" run -n 2 "$TMP/proj/live.lua" "$TMP/live_case.lua"
expect_eq "a helper module: the sweep writes its case: exit 0" "$RC" 0
expect_contains "a helper module: a live require" "$(cat "$TMP/live_case.lua")" 'local candidate = require("helper").fill'
expect_contains "one upvalue, not the first local: carried" "$(cat "$TMP/live_case.lua")" "local reference = function(k) return make(k) end"
LUA_PATH="$TMP/proj/?.lua;;" run -n 2 "$TMP/live_case.lua"
expect_eq "the live case fails with the module as it is: exit 1" "$RC" 1
sed -i 's/if k.n > 2 then t\[0\] = 0 end //' "$TMP/proj/helper.lua"
LUA_PATH="$TMP/proj/?.lua;;" run -n 2 "$TMP/live_case.lua"
expect_eq "the module fixed: the live case passes: exit 0" "$RC" 0
sed -i 's/tensor.new(k.n):fill(1) /tensor.new(k.n):fill(1) if k.n > 2 then t[0] = 0 end /' "$TMP/proj/helper.lua"
LUA_PATH="$TMP/proj/?.lua;;" run -n 2 "$TMP/proj/live.lua" "$TMP/frozen_case.lua" freeze
expect_eq "freeze = true: exit 0" "$RC" 0
expect_not_contains "freeze = true: no require" "$(cat "$TMP/frozen_case.lua")" 'require("helper")'
expect_contains "freeze = true: the function's copy" "$(cat "$TMP/frozen_case.lua")" "local candidate = function(k) local t = tensor.new(k.n)"
run -n 2 -e "repro.sweep{candidate = function(k) return tensor.new(k.n) end, reference = function(k) return tensor.new(k.n) end, n = {1}, frozen = true}"
expect_eq "sweep{frozen=}: a usage error" "$RC" 128
expect_contains "sweep{frozen=}: the valid keys named" "$OUT" "freeze"

# what a script cannot carry is refused before any case runs
run -n 2 -e "local w = tensor.new(4) local calls = 0
repro.sweep{candidate = function(k) calls = calls + 1 return w end, reference = function(k) return w end, n = {1, 2}, out = '$TMP/no.lua', quiet = true}"
expect_eq "a tensor upvalue: a usage error (the sweep cannot be written as asked)" "$RC" 128
expect_contains "a tensor upvalue: named, before the sweep" "$OUT" "sweep: out=$TMP/no.lua: upvalue 'w' of candidate is a tensor, which a script cannot rebuild"
if [ -e "$TMP/no.lua" ]; then fail "a tensor upvalue: a file was written"; else pass; fi
# an unwritable out= is an error on every rank, before the sweep
run -n 2 -e "repro.sweep{candidate = function(k) error('never called') end, reference = function(k) return tensor.new(k.n) end, n = {1}, out = '/nonexistent/dir/x.lua', quiet = true}"
expect_eq "out= unwritable: a usage error, 128" "$RC" 128
expect_contains "out= unwritable: named" "$OUT" "sweep: out=/nonexistent/dir/x.lua: cannot write /nonexistent/dir/x.lua: No such file or directory"
expect_not_contains "out= unwritable: checked before the sweep" "$OUT" "never called"

# a rank whose candidate fails before a collective: its own error, at once
cat >"$TMP/early.lua" <<'EOF'
local c = comm.world()
local function reference(case) return tensor.new(case.n, case.dtype):fill(size) end
local function candidate(case)
  if rank == 1 and case.n == 3 then error("blew up on rank 1") end
  return c:allreduce(tensor.new(case.n, case.dtype):fill(1))
end
local f = repro.sweep { candidate = candidate, reference = reference, n = { 1, 2, 3, 4 }, quiet = true }
print(f.ranks, f.detail)
EOF
run -n 2 "$TMP/early.lua"
expect_eq "a rank failing before a collective: exit 0, no stall" "$RC" 0
expect_contains "a rank failing before a collective: that rank's own error" "$OUT" "[0-1] 1${T}candidate raised: $TMP/early.lua:4: blew up on rank 1"

# ---- os.exit: the session's status
run -n 2 -e 'os.exit(3)'
expect_eq "os.exit(3)" "$RC" 3
run -n 2 -e 'if rank == 1 then os.exit(true) end print("ran")'
expect_eq "os.exit(true) on one rank" "$RC" 0
expect_contains "os.exit on one rank: the others finish" "$OUT" "[0] ran"
OUT=$(printf 'print(1)\nos.exit(false)\nprint(2)\n' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "os.exit(false) in a piped session: 1" "$RC" 1
expect_eq "os.exit ends the session there" "$OUT" "[0-1] 1"
run -n 2 -e 'os.exit(300)'
expect_contains "os.exit(300): bounds" "$OUT" "bad argument #1 to 'exit' (status must be 0..255)"
finish
