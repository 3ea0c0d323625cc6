#!/usr/bin/env bash
# Record and replay: gcsh --record / .record write a session as a script;
# gcsh --replay reruns it and exits 1 at the first line whose output differs
# (naming the line; --keep-going lists them all); gcsh -n N FILE reruns it
# as a plain script; bad arguments are named.  Recordings never lie: a
# script and -e are recorded, the line a killed rank ended is kept with how
# it ended, an empty or cut recording is refused, an existing file is never
# replaced without a word, math.random and gcsh.wtime replay as recorded.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'

SESSION='c = comm.world()
t = tensor.new(4):arange(rank)
c:allreduce(t)
r = tensor.new(1000):rand()
=r:checksum()
.ranks 1
if true then error("boom") end
.ranks all
x = = 1
for i = 1, 2 do
  print("tick", i, rank % 2)
end
=gcsh.wtime() + rank
=os.clock() >= 0
print(({}))
io.write("no newline")'

# One rank: the header says "1 rank" (no plural), and replay reads it.
F=$TMP/one.lua
OUT=$(printf '%s\n' 'x = 6 * 7' '=x' | timeout 60 "$GCSH" -n 1 --record "$F" 2>&1); RC=$?
expect_eq "1 rank: recorded: exit 0" "$RC" 0
expect_contains "1 rank: header line" "$(head -n 3 "$F")" "-- gcsh recording (format 3): 1 rank, backend host"
OUT=$(timeout 60 "$GCSH" --replay "$F" 2>&1 </dev/null); RC=$?
expect_eq "1 rank: replay: exit 0" "$RC" 0
expect_contains "1 rank: replay matches" "$OUT" "gcsh: replay: 2 lines of $F match"

for n in 2 4; do
  F=$TMP/s$n.lua
  OUT=$(printf '%s\n' "$SESSION" | GCSH_SPIN_US=20 timeout 60 "$GCSH" -n "$n" --record "$F" 2>&1); RC=$?
  expect_eq "$n ranks: a recorded piped session with errors exits 1" "$RC" 1
  expect_contains "$n ranks: says where" "$OUT" "recording to $F"
  HEAD=$(head -n 12 "$F")
  expect_contains "$n ranks: header line" "$HEAD" "-- gcsh recording (format 3): $n ranks, backend host"
  expect_contains "$n ranks: header: how to replay" "$HEAD" "gcsh --replay $F"
  expect_contains "$n ranks: header: how to rerun" "$HEAD" "gcsh -n $n $F"
  expect_match "$n ranks: header: versions" "$HEAD" '^-- Recorded .* with gcsh [0-9.]+, Lua 5\.4\.[0-9]+, .*MPI'
  expect_contains "$n ranks: header: devices" "$HEAD" "-- device [0-$((n - 1))] cpu"
  expect_contains "$n ranks: header: environment" "$HEAD" "-- env GCSH_SPIN_US=20"
  expect_contains "$n ranks: header: rand seeds" "$HEAD" ":rand() without a seed is seeded with the rank"
  expect_contains "$n ranks: a line with its ranks" "$(cat "$F")" 'line(7, "1", [==[
if true then error("boom") end]==], {failed = "1", out = [==[
[1] stdin:1: boom'
  expect_contains "$n ranks: a syntax error" "$(cat "$F")" "{syntax = [==[
stdin:1: unexpected symbol near '=']==]}"
  expect_contains "$n ranks: a clock's output varies" "$(cat "$F")" "varies = true"
  expect_contains "$n ranks: gcsh.wtime's values are recorded" "$(cat "$F")" "{wtime = {[0] = {"
  expect_contains "$n ranks: says where it was written" "$OUT" "recording written to $F: 14 lines"
  expect_eq "$n ranks: the closing line" "$(tail -n 1 "$F")" "line.finish(14)"

  OUT=$(timeout 60 "$GCSH" --replay "$F" 2>&1 </dev/null); RC=$?
  expect_eq "$n ranks: replay matches: exit 0" "$RC" 0
  expect_contains "$n ranks: replay: the transcript" "$OUT" "gcsh[1]> if true then error(\"boom\") end
[1] stdin:1: boom"
  expect_contains "$n ranks: replay: continuation prompts" "$OUT" "gcsh[0-$((n - 1))]>>   print(\"tick\", i, rank % 2)"
  expect_contains "$n ranks: replay: summary" "$OUT" "gcsh: replay: 14 lines of $F match"
  expect_contains "$n ranks: replay: varying output not compared" "$OUT" "(1 with output that varies between runs, shown but not compared)"
  expect_contains "$n ranks: replay: the environment that differs" "$OUT" "gcsh: replay: note: GCSH_SPIN_US was '20' when recorded, is unset now"

  OUT=$(timeout 60 "$GCSH" -n "$n" "$F" 2>&1 </dev/null); RC=$?
  expect_eq "$n ranks: rerun as a plain script: its verdict, exit 1" "$RC" 1
  expect_contains "$n ranks: plain rerun: the failed line, at the end" "$OUT" "[1] recorded line 7 failed on rank 1"
  expect_contains "$n ranks: plain rerun: the syntax error's line" "$OUT" "[0] recorded line 9 failed on rank 0"
  expect_contains "$n ranks: plain rerun: output" "$OUT" "tensor(f32, 4, host)"
  expect_contains "$n ranks: plain rerun: the error, traceback cut at the line" "$OUT" "[1] ${T}stdin:1: in main chunk"
  expect_not_contains "$n ranks: plain rerun: no runner frames" "$OUT" "xpcall"
done

F=$TMP/s2.lua
# one expected output edited: exit 1, naming that line of the file
sed 's/^\[0-1\] tensor(f32, 4, host) \[1, 3, 5, 7\]$/[0-1] tensor(f32, 4, host) [1, 3, 5, 8]/' "$F" >"$TMP/edited.lua"
AT=$(grep -n '^line(3, ' "$TMP/edited.lua" | cut -d: -f1)
OUT=$(timeout 60 "$GCSH" --replay "$TMP/edited.lua" 2>&1 </dev/null); RC=$?
expect_eq "edited output: exit 1" "$RC" 1
expect_contains "edited output: the line, ranks, expected and got" "$OUT" "gcsh: replay: $TMP/edited.lua:$AT: line 3 differs on [0-1]
gcsh:   expected:
[0-1] tensor(f32, 4, host) [1, 3, 5, 8]
gcsh:   got:
[0-1] tensor(f32, 4, host) [1, 3, 5, 7]"
expect_not_contains "edited output: stops at the first difference" "$OUT" "gcsh[0-1]> =r:checksum()"

# one rank's output of a folded group edited: only that rank is named
sed 's/^\[1\] tick\t2\t1$/[1] tick\t2\t0/' "$F" >"$TMP/edited2.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/edited2.lua" 2>&1 </dev/null); RC=$?
expect_eq "one rank edited: exit 1" "$RC" 1
expect_contains "one rank edited: named" "$OUT" ": line 10 differs on [1]
gcsh:   expected:
[1] tick${T}1${T}1
[1] tick${T}2${T}0
gcsh:   got:
[1] tick${T}1${T}1
[1] tick${T}2${T}1"

# the rand data is compared (its checksum prints 16 hex digits, not an address)
sed -E 's/^(\[0\] 0x)[0-9a-f]/\10/' "$F" >"$TMP/edited5.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/edited5.lua" 2>&1 </dev/null); RC=$?
expect_eq "a checksum of :rand() data edited: exit 1" "$RC" 1
expect_contains "a checksum edited: named" "$OUT" ": line 5 differs on [0]"

# the failed ranks are compared too
sed 's/{failed = "1", out/{failed = "0", out/' "$F" >"$TMP/edited3.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/edited3.lua" 2>&1 </dev/null); RC=$?
expect_eq "failed ranks edited: exit 1" "$RC" 1
expect_contains "failed ranks edited: named" "$OUT" ": line 7: the ranks that failed differ: expected [0], got [1]"

# varying output is not compared, edited or not
sed '/varies = true/{n;s/.*/[0-1] 12345/}' "$F" >"$TMP/edited4.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/edited4.lua" 2>&1 </dev/null); RC=$?
expect_eq "varying output edited: still exit 0" "$RC" 0

# .record FILE / off in a session; the status line
OUT=$(printf '%s\n' 'x = 1' ".record $TMP/part.lua" '.record' '=x + 1' '.record off' 'print("after")' '.record' |
      timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq ".record in a session" "$OUT" "recording to $TMP/part.lua
recording to $TMP/part.lua (0 lines so far)
[0-1] 2
recording written to $TMP/part.lua: 1 line
[0-1] after
not recording (.record FILE starts)"
expect_not_contains ".record: only the lines while on" "$(cat "$TMP/part.lua")" "after"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/part.lua" 2>&1 </dev/null); RC=$?
expect_eq ".record: a recording that starts mid-session replays (x is nil there)" "$RC" 1
expect_contains ".record: the missing state shows" "$OUT" "attempt to perform arithmetic on a nil value (global 'x')"

# bad arguments
OUT=$(timeout 60 "$GCSH" -n 2 --record /nonexistent/dir/r.lua </dev/null 2>&1); RC=$?
expect_eq "--record unwritable: exit 128 (a usage error)" "$RC" 128
expect_contains "--record unwritable: named" "$OUT" "gcsh: .record: cannot write /nonexistent/dir/r.lua: No such file or directory"
OUT=$(printf '.record /nonexistent/dir/r.lua\nprint(1)\n' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains ".record unwritable: named, the shell goes on" "$OUT" "gcsh: .record: cannot write /nonexistent/dir/r.lua: No such file or directory
[0-1] 1"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/nothere.lua" </dev/null 2>&1); RC=$?
expect_eq "--replay of a missing file: exit 125 (cannot test)" "$RC" 125
expect_contains "--replay of a missing file: named" "$OUT" "gcsh: --replay: cannot open $TMP/nothere.lua: No such file or directory"
echo 'print(1)' >"$TMP/plain.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/plain.lua" </dev/null 2>&1); RC=$?
expect_eq "--replay of a script that is no recording: exit 125" "$RC" 125
expect_contains "--replay of a non-recording: why" "$OUT" "is not a gcsh recording"
OUT=$(timeout 60 "$GCSH" -n 3 --replay "$F" </dev/null 2>&1); RC=$?
expect_eq "--replay at another rank count: exit 125" "$RC" 125
expect_contains "--replay at another rank count: why" "$OUT" "was recorded at 2 ranks; this run has 3"
OUT=$(timeout 60 "$GCSH" -n 3 "$F" </dev/null 2>&1); RC=$?
expect_eq "plain rerun at another rank count: exit 125" "$RC" 125
OUT=$(timeout 60 "$GCSH" --replay "$F" -e 'x = 1' </dev/null 2>&1); RC=$?
expect_contains "--replay with -e: refused" "$OUT" "'--replay' runs the recording alone"
expect_eq "--replay with -e: exit 128" "$RC" 128
OUT=$(timeout 60 "$GCSH" --replay "$F" --record "$TMP/again.lua" </dev/null 2>&1); RC=$?
expect_eq "--replay with --record: one line, not the usage" "$OUT" "gcsh: '--replay' runs the recording alone (no script, -e, -l, -i or --record with it) (gcsh --help lists the options)"
expect_eq "--replay with --record: exit 128" "$RC" 128
OUT=$(timeout 60 "$GCSH" --keep-going -e 'x = 1' </dev/null 2>&1); RC=$?
expect_contains "--keep-going without --replay" "$OUT" "'--keep-going' goes with --replay FILE"
OUT=$(timeout 60 "$GCSH" --replay </dev/null 2>&1); RC=$?
expect_contains "--replay without a file" "$OUT" "'--replay' needs a file name"
OUT=$(timeout 60 "$GCSH" --recrod x </dev/null 2>&1); RC=$?
expect_contains "a mistyped option" "$OUT" "unrecognized option '--recrod'"
# ---- a script and -e are recorded, with the script's arguments
cat >"$TMP/script.lua" <<'EOF'
local c = comm.world()
print("args", ...)
print("sum", c:allreduce(tensor.new(2):fill(rank + 1)):sum())
EOF
OUT=$(timeout 60 "$GCSH" -n 2 --record "$TMP/sc.lua" -e 'print("e", rank)' "$TMP/script.lua" x y 2>&1 </dev/null); RC=$?
expect_eq "a recorded script: exit 0" "$RC" 0
expect_contains "a recorded script: two lines" "$OUT" "recording written to $TMP/sc.lua: 2 lines"
expect_contains "a recorded -e" "$(cat "$TMP/sc.lua")" 'line.chunk(1, "0-1", "=(command line)", [==[
print("e", rank)]==]'
expect_contains "a recorded script, with its arguments" "$(cat "$TMP/sc.lua")" "line.chunk(2, \"0-1\", \"@$TMP/script.lua\", [==[
local c = comm.world()"
expect_contains "a recorded script's arguments" "$(cat "$TMP/sc.lua")" '{args = {"x", "y"}, out = [==['
OUT=$(timeout 60 "$GCSH" --replay "$TMP/sc.lua" 2>&1 </dev/null); RC=$?
expect_eq "a recorded script replays: exit 0" "$RC" 0
expect_contains "a recorded script replays: its arguments" "$OUT" "[0-1] args${T}x${T}y"
expect_contains "a recorded script replays: summary" "$OUT" "gcsh: replay: 2 lines of $TMP/sc.lua match"
OUT=$(timeout 60 "$GCSH" -n 2 "$TMP/sc.lua" 2>&1 </dev/null); RC=$?
expect_eq "a recorded script as a plain script: exit 0" "$RC" 0
expect_all_ranks "a recorded script as a plain script: its arguments" "$OUT" "args${T}x${T}y" 2
# ---- a recording run as a plain script keeps the recorded run's verdict
# (issue 36): arg as recorded; a failing script 1, a skip 125, a usage
# error 128, a script that does not compile 125
printf '%s\n' 'print("arg", arg[0], arg[1], #arg, ...)' 'if rank == 1 then error("rank 1 fails") end' >"$TMP/fails.lua"
printf '%s\n' 'local repro = require("gcsh.repro")' 'if rank == 1 then repro.skip("no NVLink") end' >"$TMP/skips.lua"
printf '%s\n' 'local repro = require("gcsh.repro")' 'repro.need{rank = 2}' >"$TMP/misuse.lua"
printf '%s\n' 'x = = 1' >"$TMP/broken.lua"
# (a replay of a recorded skip is a skip too, as the script alone says)
for k in "fails 1 0" "skips 125 125" "misuse 128 0" "broken 125 0"; do
  set -- $k
  OUT=$(cd "$TMP" && timeout 60 "$GCSH" -n 2 --record "$TMP/rec-$1.lua" "$1.lua" a1 2>&1 </dev/null); RC=$?
  expect_eq "recorded $1.lua: exit $2" "$RC" "$2"
  OUT=$(timeout 60 "$GCSH" -n 2 "$TMP/rec-$1.lua" 2>&1 </dev/null); RC=$?
  expect_eq "recorded $1.lua, run as a plain script: exit $2 as recorded" "$RC" "$2"
  [ "$1" = fails ] && expect_all_ranks "recorded $1.lua, plain: arg as recorded" "$OUT" "arg${T}fails.lua${T}a1${T}1${T}a1" 2
  OUT=$(timeout 60 "$GCSH" --replay "$TMP/rec-$1.lua" 2>&1 </dev/null); RC=$?
  expect_eq "recorded $1.lua: replays, exit $3" "$RC" "$3"
done
sed "s/^print(\"sum\"/print(\"total\"/" "$TMP/sc.lua" >"$TMP/sc2.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/sc2.lua" 2>&1 </dev/null); RC=$?
expect_eq "an edited recorded script: exit 1" "$RC" 1
expect_contains "an edited recorded script: the line" "$OUT" ": line 2 differs on [0-1]"

# ---- nothing recorded: refused, nothing written; an existing recording kept
OUT=$(timeout 60 "$GCSH" -n 2 --record "$TMP/empty.lua" 2>&1 </dev/null); RC=$?
expect_eq "an empty recording: exit 125" "$RC" 125
expect_contains "an empty recording: said" "$OUT" "gcsh: .record: nothing was recorded: $TMP/empty.lua not written"
if [ -e "$TMP/empty.lua" ]; then fail "an empty recording: a file was written"; else pass; fi
cp "$F" "$TMP/golden.lua"
OUT=$(timeout 60 "$GCSH" -n 2 --record "$TMP/golden.lua" 2>&1 </dev/null); RC=$?
expect_eq "--record golden.lua < /dev/null: exit 125" "$RC" 125
expect_contains "--record golden.lua < /dev/null: the recording there is kept" "$OUT" "not written (the recording there is kept)"
if cmp -s "$F" "$TMP/golden.lua"; then pass; else fail "--record golden.lua < /dev/null: golden.lua changed"; fi
OUT=$(printf 'print(1)\n' | timeout 60 "$GCSH" -n 2 --record "$TMP/golden.lua" 2>&1); RC=$?
expect_match "replacing a recording is said" "$OUT" "^recording to $TMP/golden.lua \(it replaces a recording of 14 lines at 2 ranks, made [0-9-]+ [0-9:]+ when the recording ends\)$"
expect_eq "replacing a recording: exit 0" "$RC" 0
echo 'print("my own script")' >"$TMP/mine.lua"
OUT=$(printf 'print(1)\n' | timeout 60 "$GCSH" -n 2 --record "$TMP/mine.lua" 2>&1); RC=$?
expect_eq "a file that is no recording: refused, exit 128" "$RC" 128
expect_contains "a file that is no recording: why" "$OUT" "gcsh: .record: $TMP/mine.lua exists and is not a gcsh recording: gcsh does not replace it"
expect_eq "a file that is no recording: untouched" "$(cat "$TMP/mine.lua")" 'print("my own script")'

# ---- an empty or cut recording is refused at replay
head -n "$(grep -n '^line(5, ' "$F" | cut -d: -f1)" "$F" | head -n -1 >"$TMP/cut.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/cut.lua" 2>&1 </dev/null); RC=$?
expect_eq "a recording cut at a line boundary: exit 125" "$RC" 125
expect_contains "a cut recording: why" "$OUT" "gcsh: --replay: $TMP/cut.lua is cut short: it ends after 4 lines without its closing line.finish(N)"
sed '/^local line = /q' "$F" >"$TMP/none.lua"; echo 'line.finish(0)' >>"$TMP/none.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/none.lua" 2>&1 </dev/null); RC=$?
expect_eq "a recording without lines: exit 125" "$RC" 125
expect_contains "a recording without lines: why" "$OUT" "holds no lines: there is nothing to compare"
sed 's/^line.finish(14)$/line.finish(15)/' "$F" >"$TMP/damaged.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/damaged.lua" 2>&1 </dev/null); RC=$?
expect_contains "a closing line that does not match: refused" "$OUT" "is damaged: its closing line says 15 lines, it holds 14"

# ---- --keep-going lists every line that differs
sed -e 's/^\[0-1\] tensor(f32, 4, host) \[1, 3, 5, 7\]$/[0-1] tensor(f32, 4, host) [1, 3, 5, 8]/' \
    -e 's/^\[1\] tick\t2\t1$/[1] tick\t2\t0/' "$F" >"$TMP/two.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/two.lua" --keep-going 2>&1 </dev/null); RC=$?
expect_eq "--keep-going: exit 1" "$RC" 1
expect_contains "--keep-going: the first difference" "$OUT" ": line 3 differs on [0-1]"
expect_contains "--keep-going: the second" "$OUT" ": line 10 differs on [1]"
expect_contains "--keep-going: the list" "$OUT" "gcsh: replay: 2 of 14 lines of $TMP/two.lua differ: lines 3, 10"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/two.lua" 2>&1 </dev/null); RC=$?
expect_not_contains "without --keep-going: stops at the first" "$OUT" ": line 10 differs"

# ---- math.random and gcsh.wtime replay as recorded
OUT=$(printf '%s\n' 'print(math.random(1000000))' 'math.randomseed()' 'print(math.random(1000000))' \
      't0 = gcsh.wtime()' 'gcsh.sleep(0.01)' 'print(gcsh.wtime() - t0 > 0)' 'print(t0)' |
      timeout 60 "$GCSH" -n 2 --record "$TMP/rnd.lua" 2>&1); RC=$?
expect_eq "random and clocks recorded: exit 0" "$RC" 0
OUT=$(timeout 60 "$GCSH" --replay "$TMP/rnd.lua" 2>&1 </dev/null); RC=$?
expect_eq "random and clocks: the replay matches" "$RC" 0
expect_contains "random and clocks: every line compared" "$OUT" "gcsh: replay: 7 lines of $TMP/rnd.lua match"
expect_not_contains "random and clocks: nothing left uncompared" "$OUT" "varies between runs"

cat >"$TMP/timed.lua" <<'EOF'
local t0 = gcsh.wtime()
gcsh.sleep(0.01)
print(string.format("%.9f", gcsh.wtime() - t0))
EOF
OUT=$(timeout 60 "$GCSH" -n 2 --record "$TMP/timed_rec.lua" "$TMP/timed.lua" 2>&1 </dev/null); RC=$?
OUT=$(timeout 60 "$GCSH" --replay "$TMP/timed_rec.lua" 2>&1 </dev/null); RC=$?
expect_eq "a script printing a time it measured: the replay matches" "$RC" 0
expect_contains "a script printing a time: compared" "$OUT" "gcsh: replay: 1 line of $TMP/timed_rec.lua matches"

# ---- a rank killed during --record: its line is kept, with how the session ended
KILL='if rank == 1 then os.execute("kill -9 $PPID") gcsh.sleep(30) end print("three")'
OUT=$(printf '%s\n' 'x = 1' 'print("two", rank)' "$KILL" 'print("never")' |
      timeout 60 "$GCSH" -n 2 --record "$TMP/crash.lua" 2>&1); RC=$?
expect_eq "a killed rank: the session ends with 69" "$RC" 69
expect_contains "a killed rank: the recording is written" "$OUT" "recording written to $TMP/crash.lua: 3 lines"
expect_contains "a killed rank: the line it died on, with how" "$(cat "$TMP/crash.lua")" 'ended = {status = 69, lost = "1", why = [==[
rank 1: its connection to rank 0 closed; the session cannot go on without it]==]}'
OUT=$(timeout 60 "$GCSH" --replay "$TMP/crash.lua" 2>&1 </dev/null); RC=$?
expect_eq "a killed rank: the replay reproduces the ending: exit 0" "$RC" 0
expect_contains "a killed rank: said" "$OUT" "gcsh: replay: line 3 ended the session as recorded (status 69, [1] lost)
gcsh: replay: 3 lines of $TMP/crash.lua match"
sed 's/os.execute("kill -9 $PPID") //' "$TMP/crash.lua" >"$TMP/nocrash.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/nocrash.lua" 2>&1 </dev/null); RC=$?
expect_eq "a recorded ending that does not come: exit 1" "$RC" 1
expect_contains "a recorded ending that does not come: said" "$OUT" ": line 3: the recording ended the session here (status 69, [1] lost: rank 1: its connection to rank 0 closed"
OUT=$(printf '%s\n' 'print(1)' 'if rank == 1 then os.execute("kill -SEGV $PPID") gcsh.sleep(30) end' |
      timeout 60 "$GCSH" -n 2 --record "$TMP/segv.lua" 2>&1); RC=$?
expect_contains "a rank killed by a signal it can report" "$OUT" "gcsh: rank 1 is gone (killed by signal 11: Segmentation fault)"
expect_contains "the signal in the recording" "$(cat "$TMP/segv.lua")" "rank 1: killed by signal 11: Segmentation fault;"

# ---- which ranks called os.exit is recorded: a replay (or a --diff) where
# another rank does is another run, though the status is the same
for n in 2 4; do
    L=$((n - 1))
    EXIT_LINE='local who = tonumber(os.getenv("WHO_EXITS") or "'$L'") if rank == who then os.exit(3) end'
    OUT=$(timeout 60 "$GCSH" -n $n --record "$TMP/exit$n.lua" -e "$EXIT_LINE" 2>&1 </dev/null); RC=$?
    expect_eq "$n ranks: os.exit(3) on rank $L recorded: exit 3" "$RC" 3
    expect_contains "$n ranks: the recording names the rank" "$(cat "$TMP/exit$n.lua")" "{exit = 3, exited = \"$L\"}"
    OUT=$(timeout 60 "$GCSH" --replay "$TMP/exit$n.lua" 2>&1 </dev/null); RC=$?
    expect_eq "$n ranks: the same rank exits in the replay: it matches" "$RC" 0
    OUT=$(WHO_EXITS=0 timeout 60 "$GCSH" --replay "$TMP/exit$n.lua" 2>&1 </dev/null); RC=$?
    expect_eq "$n ranks: rank 0 exits instead: the replay differs (1)" "$RC" 1
    expect_contains "$n ranks: rank 0 exits instead: said" "$OUT" \
        "line 1: expected os.exit (status 3) on [$L], got os.exit (status 3) on [0]"
    WHO_EXITS=0 timeout 60 "$GCSH" -n $n --record "$TMP/exit0-$n.lua" -e "$EXIT_LINE" >/dev/null 2>&1 </dev/null
    OUT=$(timeout 60 "$GCSH" --diff "$TMP/exit$n.lua" "$TMP/exit0-$n.lua" 2>&1 </dev/null); RC=$?
    expect_eq "$n ranks: --diff of the two: different (1)" "$RC" 1
    expect_contains "$n ranks: --diff names rank 0's exit" "$OUT" "(another rank's os.exit 3)"
done
# a hand-made recording: exited without exit is malformed
sed 's/{exit = 3, exited = "1"}/{exited = "1"}/' "$TMP/exit2.lua" >"$TMP/exited_only.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/exited_only.lua" 2>&1 </dev/null); RC=$?
expect_eq "exited without exit: a malformed recording (128)" "$RC" 128
expect_contains "exited without exit: said" "$OUT" "has exited without exit"

# ---- a cuda recording on a machine without GPUs: cannot test here
sed '2s/backend host/backend cuda/' "$F" >"$TMP/cuda.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/cuda.lua" 2>&1 </dev/null); RC=$?
if [ "$(timeout 60 "$GCSH" -e 'print(gcsh.backend)' 2>/dev/null </dev/null)" = cuda ]; then
  skip "a cuda recording without GPUs: this machine has one"
else
  expect_eq "a cuda recording without GPUs: exit 125" "$RC" 125
fi
finish
