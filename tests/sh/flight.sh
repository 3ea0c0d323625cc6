#!/usr/bin/env bash
# The flight recorder: without --trace, every rank keeps its last calls
# (GCSH_FLIGHT_CALLS, default 2000) and a hang report, a crash, an
# interrupt or .flight FILE writes them as a trace file (python3's json
# loads it, tests/sh/trace_check.py checks it), at 1, 2 and 4 ranks; a rank
# that is stuck or dead still tells its last calls.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CHECK="python3 tests/sh/trace_check.py"
export GCSH_STATE_DIR=$TMP/state # where automatic dumps go by default (made 0700)

# span NAME FILE: the args of every slice named NAME, as "rank R: {...}"
# (the call number left out: calls_in_order checks those)
span() {
    python3 -c '
import json, sys
name, path = sys.argv[1], sys.argv[2]
for e in json.load(open(path))["traceEvents"]:
    if e["ph"] == "X" and e["name"] == name:
        e["args"].pop("call", None)
        print("rank %d: %s" % (e["pid"], json.dumps(e["args"], sort_keys=True)))
' "$1" "$2"
}
# calls_in_order FILE: "yes" when each rank's calls, in start order, have
# rising numbers
calls_in_order() {
    python3 -c '
import json, sys
last, ok = {}, True
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e["ph"] == "X" and "call" in e["args"]:
        ok = ok and e["args"]["call"] > last.get(e["pid"], 0)
        last[e["pid"]] = e["args"]["call"]
print("yes" if ok and last else "no")
' "$1"
}

for n in 1 2 4; do
  last=$((n - 1))
  if [ "$n" -eq 1 ]; then
    # ---- one rank waits for no other: a long command is no hang (issue 39)
    OUT=$(printf '%s\n' '.timeout 1' 'gcsh.sleep(2.5) comm.world():barrier()' |
          timeout 60 "$GCSH" --flight "$TMP/hang1.json" 2>&1)
    expect_eq "1 rank: no hang report, no flight file" "$OUT:$(ls "$TMP/hang1.json" 2>/dev/null)" "timeout 1 s:"
  else
    # ---- a hang report writes it: every rank's calls, the running ones
    # unfinished (copied as soon as the report says it is there: later
    # reports write it again)
    F=$TMP/hang$n.json
    printf '%s\n' '.timeout 1' '.check off' 'c = comm.world()' \
          'if rank == size - 1 then gcsh.sleep(6) end c:barrier()' |
          timeout 60 "$GCSH" -n "$n" --flight "$F" >"$TMP/hang.out" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q "every rank's last calls" "$TMP/hang.out" && break; sleep 0.1; done
    cp "$F" "$F.first" 2>/dev/null
    wait $pid; RC=$?
    OUT=$(cat "$TMP/hang.out")
    expect_eq "$n ranks: a hang, no --trace: exit 0" "$RC" 0
    expect_eq "$n ranks: a hang report says where the last calls are" "$(flight_said "$OUT")" "$F"
    expect_eq "$n ranks: said once per command" "$(grep -c "every rank's last calls" <<<"$OUT")" 1
    C=$($CHECK "$F.first" "$n" 2>&1); RC=$?
    expect_eq "$n ranks: the hang's file loads and checks out" "$RC" 0
    printf '%s\n' "$C" | grep '^FAIL' | sed 's/^/  | /'
    expect_contains "$n ranks: the note" "$C" "note: the flight recorder (the last 2000 calls of each rank), written at a hang report"
    S=$(span 'if rank == size - 1 then gcsh.sleep(6) end c:barrier() (unfinished)' "$F.first")
    expect_contains "$n ranks: the sleeping rank's line, running" "$S" "rank $last: {\"source\": \"if rank == size - 1 then gcsh.sleep(6) end c:barrier()\", \"state\": \"running\", \"unfinished\": true}"
    S=$(span 'comm.world' "$F.first")
    expect_contains "$n ranks: a call done, with its Lua line" "$S" 'rank 0: {"lua": "stdin:1", "state": "done"}'
    if [ "$n" -gt 1 ]; then
      S=$(span 'comm.barrier (unfinished)' "$F.first")
      expect_contains "$n ranks: rank 0 stuck in the barrier" "$S" 'rank 0: {"collective": "barrier #1", "comm": "world 0", "lua": "stdin:1", "seq": 1, "state": "running", "unfinished": true}'
    fi
    expect_eq "$n ranks: call numbers rise on every rank" "$(calls_in_order "$F.first")" "yes"
  fi

  # ---- a crash writes it: a device fault ends every rank (70)
  OUT=$(printf '%s\n' 'c = comm.world()' 'c:barrier()' "if rank == $last then gcsh.debug.inject('fatal') end c:barrier()" |
        GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n "$n" 2>&1); RC=$?
  expect_eq "$n ranks: a device fault: exit 70" "$RC" 70
  F=$(flight_said "$OUT")
  case "$F" in "$TMP"/state/gcsh-flight-*.json) pass ;; *) fail "$n ranks: a fault: the default file in \$GCSH_STATE_DIR: '$F'"; F=/dev/null ;; esac
  C=$($CHECK "$F" "$n" 2>&1); RC=$?
  expect_eq "$n ranks: the fault's file checks out" "$RC" 0
  expect_contains "$n ranks: the fault's note" "$C" "written as the session ended (a device fault cannot be recovered from)"
  S=$(span 'barrier #1' "$F")
  expect_contains "$n ranks: the first barrier, done on the last rank" "$S" "rank $last: {\"collective\": \"barrier #1\", \"comm\": \"world 0\", \"lua\": \"stdin:1\", \"seq\": 1, \"state\": \"done\"}"

  # ---- an interrupt writes it
  OUT=$(printf '%s\n' 'c = comm.world()' 'while true do end' 'print("after")' |
        timeout -s INT 3 "$GCSH" -n "$n" 2>&1); RC=$?
  expect_contains "$n ranks: Ctrl-C: said after the interrupt" "$OUT" "gcsh: interrupted [0$([ "$n" -gt 1 ] && echo "-$last")]
$FLIGHT_SAID"
  F=$(flight_said "$OUT")
  C=$($CHECK "${F:-/dev/null}" "$n" 2>&1); RC=$?
  expect_eq "$n ranks: the interrupt's file checks out" "$RC" 0
  expect_contains "$n ranks: the interrupted line" "$(span 'while true do end' "${F:-/dev/null}")" 'rank 0: {"source": "while true do end", "state": "failed"}'
done

# ---- a rank killed: rank 0 still reads its ring (node shared memory)
F=$TMP/killed.json
OUT=$(printf '%s\n' 'c = comm.world()' 'c:barrier()' 'if rank == 1 then os.execute("kill -9 $PPID") gcsh.sleep(30) end c:barrier()' |
      timeout 60 "$GCSH" -n 2 --flight "$F" 2>&1); RC=$?
expect_eq "a killed rank: exit 69" "$RC" 69
expect_eq "a killed rank: said" "$(flight_said "$OUT")" "$F"
# (a ring keeps a Lua line's first 71 bytes)
S=$(span 'if rank == 1 then os.execute("kill -9 $PPID") gcsh.sleep(30) (unfinished)' "$F")
expect_contains "a killed rank: its last line, from its ring" "$S" 'rank 1: {"source": "if rank == 1 then os.execute(\"kill -9 $PPID\") gcsh.sleep(30) end c:barr", "state": "running", "unfinished": true}'

# ---- a rank on another node (GCSH_RANKS_PER_NODE=1): asked for its ring
F=$TMP/remote.json
OUT=$(printf '%s\n' '.timeout 1' '.check off' 'c = comm.world()' 'if rank == 1 then gcsh.sleep(2.5) end c:barrier()' ".flight $TMP/remote2.json" |
      GCSH_RANKS_PER_NODE=1 timeout 60 "$GCSH" -n 2 --flight "$F" 2>&1); RC=$?
S=$(span 'c = comm.world()' "$F")
expect_contains "another node's rank: its ring, sent when asked during a hang" "$S" 'rank 1: {"source": "c = comm.world()", "state": "done"}'
expect_contains ".flight FILE: said" "$OUT" "flight recorder written to $TMP/remote2.json: "
S=$(span 'comm.barrier' "$TMP/remote2.json")
expect_contains ".flight FILE: another node's rank, between commands" "$S" 'rank 1: {"collective": "barrier #1", "comm": "world 0", "lua": "stdin:1", "seq": 1, "state": "done"}'

# ---- .flight, GCSH_FLIGHT_CALLS, refused files
OUT=$(printf '%s\n' '.flight' '.flight /dev/full' 'print("still here")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_match ".flight: where it writes" "$OUT" "^flight recorder: $TMP/state/gcsh-flight-[0-9]+-[0-9a-f]{16}\.json$"
expect_contains ".flight: when" "$OUT" "  written at a hang report, a crash, an interrupt; .flight FILE writes one now"
expect_contains ".flight /dev/full: refused" "$OUT" "gcsh: flight recorder: cannot write /dev/full: it is a character device; gcsh writes only regular files"
expect_contains ".flight: the shell goes on" "$OUT" "[0-1] still here"
expect_eq ".flight /dev/full: the session fails (125)" "$RC" 125
OUT=$(printf '%s\n' 'for i = 1, 30 do tensor.new(1):fill(i) end' ".flight $TMP/small.json" |
      GCSH_FLIGHT_CALLS=10 timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains "GCSH_FLIGHT_CALLS=10: ten calls a rank" "$OUT" "flight recorder written to $TMP/small.json: 20 calls from 2 ranks"
OUT=$(printf '%s\n' ".flight $TMP/off.json" | GCSH_FLIGHT_CALLS=0 timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains "GCSH_FLIGHT_CALLS=0: off" "$OUT" "gcsh: .flight: the flight recorder is off (GCSH_FLIGHT_CALLS=0)"
finish
