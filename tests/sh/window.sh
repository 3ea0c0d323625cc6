#!/usr/bin/env bash
# Windows and signals as a session sees them: garbage windows are reported
# once and freed at exit (status 0), and the window and signal Lua tests
# under GCSH_RANKS_PER_NODE=2 at 4 ranks (two emulated nodes, teams of 2).
cd "$(dirname "$0")/../.."
. tests/sh/lib.sh
export LUA_PATH="$PWD/tests/lua/?.lua;;"

# A window dropped without :free() is reported at the end of the command,
# once, and the session still exits 0 after freeing it.
gcsh_pipe 2 'c = comm.world()
w = c:window(4)
keep = c:window(8, "i32")
w = nil; collectgarbage(); collectgarbage()
print("after")
collectgarbage()
s = c:signals(2); s = nil; collectgarbage()'
expect_eq "garbage session exit status" "$RC" 0
expect_contains "garbage window reported" "$OUT" \
  "[0-1] gcsh: window #1 (4 f32, host) was garbage-collected without :free(); it stays registered and is freed at exit"
expect_contains "garbage signals reported" "$OUT" "[0-1] gcsh: signals #3 (2 slots, host) was garbage-collected"
expect_eq "reported once" "$(grep -c 'window #1 (4 f32' <<<"$OUT")" 1
expect_not_contains "kept window is not reported" "$OUT" "window #2"
expect_not_contains "no failure at exit" "$OUT" "could not free"

# A script that ends with windows still open exits 0 (freed at exit).
script=$(mktemp --suffix=.lua)
printf 'local c = comm.world()\nW = c:window(16)\nlocal s = c:signals(3)\nprint("done")\n' >"$script"
OUT=$(timeout 60 "$GCSH" -n 4 "$script" 2>&1); RC=$?
rm -f "$script"
expect_eq "open windows at exit: status" "$RC" 0
expect_eq "open windows at exit: output" "$OUT" "[0-3] done"

# GCSH_RANKS_PER_NODE=2: the team is the emulated node
gcsh_pipe 4 'w = comm.world():window(4)
print(table.concat(w.team, ","))'
expect_eq "one team without GCSH_RANKS_PER_NODE" "$OUT" "[0-3] 0,1,2,3"
OUT=$(printf '%s\n' 'w = comm.world():window(4)' 'print(table.concat(w.team, ","))' \
      'print(select(2, pcall(function() return w:peer((rank + 2) % size) end)))' |
      GCSH_RANKS_PER_NODE=2 timeout 60 "$GCSH" -n 4 2>&1)
expect_contains "team of ranks 0-1" "$OUT" "[0-1] 0,1"
expect_contains "team of ranks 2-3" "$OUT" "[2-3] 2,3"
expect_contains "outside the team" "$OUT" "[0] stdin:1: bad argument #1 to 'peer' (rank 2 is on node 1; loads and stores reach only node 0's ranks 0-1: use w:put/w:get (s:set/s:add for signals), which reach it over the network (tcp))"

for t in tests/lua/window_*.lua tests/lua/signal_*.lua tests/lua/xfer_*.lua tests/lua/check_board.lua; do
    OUT=$(GCSH_RANKS_PER_NODE=2 timeout 120 "$GCSH" -n 4 "$t" 2>&1 </dev/null); RC=$?
    if [ "$RC" = 0 ]; then pass; else
        fail "$t under GCSH_RANKS_PER_NODE=2 at 4 ranks (exit $RC)"
        printf '%s\n' "$OUT" | tail -n 15 | sed 's/^/  | /'
    fi
done
# every rank its own node: every put, signal and wait between ranks takes
# the network path (the ordering of w:fence and c:quiet, a put's signal to slot 0)
for N in 2 4; do
    OUT=$(GCSH_RANKS_PER_NODE=1 timeout 120 "$GCSH" -n "$N" tests/lua/xfer_order.lua 2>&1 </dev/null); RC=$?
    if [ "$RC" = 0 ]; then pass; else
        fail "tests/lua/xfer_order.lua under GCSH_RANKS_PER_NODE=1 at $N ranks (exit $RC)"
        printf '%s\n' "$OUT" | tail -n 15 | sed 's/^/  | /'
    fi
done
finish
