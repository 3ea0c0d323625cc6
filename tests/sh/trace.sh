#!/usr/bin/env bash
# Traces: gcsh --trace FILE and .trace FILE|off write Chrome trace JSON that
# python3's json loads (tests/sh/trace_check.py): a process per rank,
# monotone timestamps, flows linking each collective across ranks and each
# put or signal to the wait it released, the calls' arguments (a region's
# offset and n, a put's dst_offset, the word a signal wait saw) and Lua
# lines, checks inside their collective; a hang report and a device fault
# write it with the running calls unfinished, a dead rank's last calls
# included; the cap keeps the most recent spans and says so; bad arguments
# are named.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CHECK="python3 tests/sh/trace_check.py"

SESSION='c = comm.world()
t = tensor.new(1024):fill(rank)
c:allreduce(t)
.check off
c:allreduce(t)
.check on
w = c:window(64)
w:tensor():fill(rank + 1)
out = kernel.allreduce(w, {algo = "oneshot", offset = 8})
s = c:signals(2)
x = w:put((rank + 1) % size, tensor.new(4):fill(1), 3, {signal = {s, 0}})
x:post():wait{cpu = true, timeout = 10}
s:wait(0, 1)
s:free(); w:free()'

for n in 2 4; do
  F=$TMP/t$n.json
  OUT=$(printf '%s\n' "$SESSION" | timeout 60 "$GCSH" -n "$n" --trace "$F" 2>&1); RC=$?
  expect_eq "$n ranks: a traced session: exit 0" "$RC" 0
  expect_contains "$n ranks: says where" "$OUT" "tracing to $F"
  expect_match "$n ranks: written at the end" "$OUT" "^trace written to $F: [0-9]+ spans from $n ranks$"
  C=$($CHECK "$F" "$n" comm.allreduce kern.allreduce.oneshot xfer.prepare xfer.post win.signal_wait win.create_begin win.create_stage \
      win.destroy "check allreduce #1" mem.fill 'c:allreduce(t)' "allreduce #1" 2>&1); RC=$?
  expect_eq "$n ranks: python3's json loads it; processes, timestamps and flows check out" "$RC" 0
  printf '%s\n' "$C" | grep '^FAIL' | sed 's/^/  | /'
  all=$(seq -s ' ' 0 $((n - 1)))
  expect_contains "$n ranks: one process per rank, named" "$C" "process $((n - 1)): rank $((n - 1)) ("
  expect_contains "$n ranks: a flow links allreduce #1 on every rank" "$C" "flow allreduce #1: ranks $all"
  expect_contains "$n ranks: with .check off, sequence numbers still count" "$C" "flow allreduce #2: ranks $all"
  expect_contains "$n ranks: the kernel collective's flow" "$C" "flow kernel.allreduce #4: ranks $all"
  expect_contains "$n ranks: window free's flow" "$C" "flow window:free #7: ranks $all"
  expect_contains "$n ranks: allreduce args, with the Lua line that made it" "$C" 'span comm.allreduce: {"bytes": 4096, "collective": "allreduce #1", "comm": "world 0", "dtype": "f32", "lua": "stdin:1", "n": 1024, "op": "sum", "seq": 1}'
  expect_contains "$n ranks: the collective's own span, holding its check and call" "$C" 'span allreduce #1: {"collective": "allreduce #1", "comm": "world 0", "lua": "stdin:1", "seq": 1}'
  expect_contains "$n ranks: kernel args" "$C" 'span kern.allreduce.oneshot: {"algo": "oneshot", "bytes": 224, "collective": "kernel.allreduce #4"'
  expect_match "$n ranks: kernel args: the region's first element and length" "$C" '^span kern\.allreduce\.oneshot: .*"n": 56, "object": "0000000000000001", "offset": 8, "op": "sum"'
  expect_contains "$n ranks: transfer args: peer, signal slot and value" "$C" 'span xfer.prepare: {"bytes": 16, "dst_offset": 3, "lua": "stdin:1", "object": "0000000000000002", "peer": 1, "slot": 0, "value": 1}'
  expect_contains "$n ranks: a signal wait's args" "$C" 'span win.signal_wait: {"cmp": ">=", "lua": "stdin:1", "object": "0000000000000002", "rank": 0, "seen": 1, "slot": 0, "value": 1}'
  expect_contains "$n ranks: a flow from the put that released the wait" "$C" "signal signal slot 0: rank $((n - 1)) -> rank 0"
  expect_contains "$n ranks: the Lua line" "$C" 'span c:allreduce(t): {"source": "c:allreduce(t)"}'
done

# a graph (gcsh.graph): its replay is one span, inside the collective of
# its check, which every rank's flow links; capturing traces no call
F=$TMP/graph.json
OUT=$(printf '%s\n' 'c = comm.world(); t = tensor.new(8):fill(1)' \
      'g = gcsh.graph(function() c:allreduce(t); c:allreduce(t) end)' 'g:replay(5)' |
      timeout 60 "$GCSH" -n 2 --trace "$F" 2>&1); RC=$?
expect_eq "graph: a traced session: exit 0" "$RC" 0
C=$($CHECK "$F" 2 graph.launch 2>&1); RC=$?
expect_eq "graph: python3's json loads it" "$RC" 0
expect_contains "graph: the replay's flow across ranks" "$C" "flow graph.replay #3: ranks 0 1"
expect_contains "graph: one span for the replay, n in its args" "$C" 'span graph.launch: {"collective": "graph.replay #3"'
expect_not_contains "graph: the captured calls ran nowhere" "$C" "span comm.allreduce"

# (each command ends with a mem.sync span: the shell waits for what it left on the stream)
# .trace in a session: status, a second file, off, errors; the shell goes on
OUT=$(printf '%s\n' '.trace' ".trace $TMP/a.json" '.trace' 'c = comm.world(); c:barrier()' \
      ".trace $TMP/b.json" 'c:barrier()' '.trace off' '.trace off' '.trace /nonexistent/dir/t.json' \
      'print("still here")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq ".trace in a session" "$OUT" "not tracing (.trace FILE starts)
tracing to $TMP/a.json
tracing to $TMP/a.json (.trace off writes it)
trace written to $TMP/a.json: 12 spans from 2 ranks
tracing to $TMP/b.json
trace written to $TMP/b.json: 10 spans from 2 ranks
not tracing (.trace FILE starts)
gcsh: .trace: cannot write /nonexistent/dir/t.json: No such file or directory
[0-1] still here"
C=$($CHECK "$TMP/a.json" 2 'comm.barrier' 2>&1)
expect_contains ".trace FILE: the first file holds the first barrier" "$C" "flow barrier #1: ranks 0 1"
C=$($CHECK "$TMP/b.json" 2 'comm.barrier' 2>&1)
expect_contains ".trace FILE: the second file holds the second" "$C" "flow barrier #2: ranks 0 1"
expect_not_contains ".trace FILE: and not the first" "$C" "barrier #1"

# a hang report writes the file: rank 0 shown waiting in the barrier (with
# .check on, the check would give up at the timeout instead)
F=$TMP/hang.json
printf '%s\n' '.timeout 1' '.check off' 'c = comm.world()' 'if rank == 1 then gcsh.sleep(12) end c:barrier()' |
  timeout 60 "$GCSH" -n 2 --trace "$F" >"$TMP/hang.out" 2>&1 &
pid=$!
seen=""
for i in $(seq 100); do
  if grep -q 'hang report' "$F" 2>/dev/null; then seen=1; break; fi
  sleep 0.1
done
if [ -n "$seen" ]; then pass; else fail "hang report: the trace was not written within 10 s"; fi
C=$($CHECK "$F" 2 2>&1)
expect_contains "hang report: the note" "$C" "note: written at a hang report"
expect_contains "hang report: where rank 0 stopped" "$(cat "$F")" '"name":"comm.barrier (unfinished)","cat":"collective","pid":0'
expect_contains "hang report: where rank 1 is" "$(cat "$F")" '"name":"if rank == 1 then gcsh.sleep(12) end c:barrier() (unfinished)","cat":"lua","pid":1'
wait $pid
expect_contains "hang report: printed" "$(cat "$TMP/hang.out")" "[1] in gcsh.sleep(12)"
C=$($CHECK "$F" 2 comm.barrier 2>&1)
expect_not_contains "the final file: nothing unfinished" "$(cat "$F")" "unfinished"
expect_contains "the final file: the barrier's flow" "$C" "flow barrier #1: ranks 0 1"

# a device fault ends the session: the file says where each rank was
F=$TMP/fatal.json
# (rank 1 faults once rank 0 is on its way into the barrier: it signalled)
OUT=$(printf '%s\n' 'c = comm.world() s = c:signals(1)' \
      'if rank == 1 then s:wait(0, 1) gcsh.sleep(0.3) gcsh.debug.inject("fatal") else s:add(1, 0, 1) end c:barrier()' |
      GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n 2 --trace "$F" 2>&1); RC=$?
expect_eq "fault: exit 70" "$RC" 70
expect_contains "fault: written" "$OUT" "gcsh: trace written to $F (a device fault cannot be recovered from)"
C=$($CHECK "$F" 2 2>&1); RC=$?
expect_eq "fault: the file loads" "$RC" 0
expect_contains "fault: rank 0 stopped in the barrier's check" "$(cat "$F")" '"name":"check barrier #2 (unfinished)","cat":"control","pid":0'

# the cap keeps each rank's most recent spans and says how many it dropped
F=$TMP/cap.json
OUT=$(printf '%s\n' 'print("first")' 'for i = 1, 50 do tensor.new(1):fill(i) end' 'print("last")' |
      GCSH_TRACE_EVENTS=20 timeout 60 "$GCSH" -n 2 --trace "$F" 2>&1); RC=$?
expect_match "the cap: said on the terminal" "$OUT" "^trace written to $F: 40 spans from 2 ranks; [0-9]+ older spans dropped \(each rank keeps its most recent 20: GCSH_TRACE_EVENTS\)$"
C=$($CHECK "$F" 2 'print("last")' 2>&1)
expect_contains "the cap: the most recent spans are kept" "$C" 'span print("last"): {"source": "print(\"last\")"}'
expect_not_contains "the cap: the oldest are dropped" "$(cat "$F")" 'print(\"first\")'

# a rank that dies leaves what it had: the file shows its last calls
F=$TMP/dead.json
OUT=$(printf '%s\n' 'c = comm.world()' 'c:barrier()' 'if rank == 1 then os.execute("kill -9 $PPID") gcsh.sleep(30) end c:barrier()' |
      timeout 60 "$GCSH" -n 2 --trace "$F" 2>&1); RC=$?
expect_eq "a dead rank: exit 69" "$RC" 69
C=$($CHECK "$F" 2 2>&1); RC=$?
expect_eq "a dead rank: the file checks out" "$RC" 0
expect_contains "a dead rank: the note" "$C" "rank 1 died: its last calls are from its flight recorder"
expect_contains "a dead rank: its barrier" "$(cat "$F")" '"name":"barrier #1","cat":"collective","pid":1'
expect_contains "a dead rank: the line it died in" "$(cat "$F")" '"name":"if rank == 1 then os.execute(\"kill -9 $PPID\") gcsh.sleep(30) (unfinished)","cat":"lua","pid":1'

# bad arguments
OUT=$(timeout 60 "$GCSH" -n 2 --trace /nonexistent/dir/t.json -e 'print(1)' </dev/null 2>&1); RC=$?
expect_eq "--trace unwritable: exit 128 (a usage error)" "$RC" 128
expect_contains "--trace unwritable: named" "$OUT" "gcsh: .trace: cannot write /nonexistent/dir/t.json: No such file or directory"
expect_not_contains "--trace unwritable: nothing ran" "$OUT" "[0-1] 1"
OUT=$(timeout 60 "$GCSH" --trace </dev/null 2>&1)
expect_contains "--trace without a file" "$OUT" "'--trace' needs a file name"
# a script under --trace: the file covers it
OUT=$(timeout 60 "$GCSH" -n 2 --trace "$TMP/s.json" -e 'comm.world():barrier()' </dev/null 2>&1); RC=$?
expect_eq "--trace with -e: exit 0" "$RC" 0
C=$($CHECK "$TMP/s.json" 2 2>&1)
expect_contains "--trace with -e: traced" "$C" "flow barrier #1: ranks 0 1"
finish
