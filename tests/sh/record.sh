#!/usr/bin/env bash
# Record and replay: gcsh --record / .record write a session as a script;
# gcsh --replay reruns it and exits 1 at the first line whose output differs
# (naming the line); gcsh -n N FILE reruns it as a plain script; bad
# arguments are named.
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
print(({}))
io.write("no newline")'

for n in 2 4; do
  F=$TMP/s$n.lua
  OUT=$(printf '%s\n' "$SESSION" | GCSH_SPIN_US=20 timeout 60 "$GCSH" -n "$n" --record "$F" 2>&1); RC=$?
  expect_eq "$n ranks: a recorded piped session with errors exits 1" "$RC" 1
  expect_contains "$n ranks: says where" "$OUT" "recording to $F"
  HEAD=$(head -n 12 "$F")
  expect_contains "$n ranks: header line" "$HEAD" "-- gcsh recording (format 1): $n ranks, backend host"
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

  OUT=$(timeout 60 "$GCSH" --replay "$F" 2>&1 </dev/null); RC=$?
  expect_eq "$n ranks: replay matches: exit 0" "$RC" 0
  expect_contains "$n ranks: replay: the transcript" "$OUT" "gcsh[1]> if true then error(\"boom\") end
[1] stdin:1: boom"
  expect_contains "$n ranks: replay: continuation prompts" "$OUT" "gcsh[0-$((n - 1))]>>   print(\"tick\", i, rank % 2)"
  expect_contains "$n ranks: replay: summary" "$OUT" "gcsh: replay: 13 lines of $F match"
  expect_contains "$n ranks: replay: varying output not compared" "$OUT" "(1 with output that varies between runs, shown but not compared)"
  expect_contains "$n ranks: replay: the environment that differs" "$OUT" "gcsh: replay: note: GCSH_SPIN_US was '20' when recorded, is unset now"

  OUT=$(timeout 60 "$GCSH" -n "$n" "$F" 2>&1 </dev/null); RC=$?
  expect_eq "$n ranks: rerun as a plain script: exit 0" "$RC" 0
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
record off
[0-1] after
not recording (.record FILE starts)"
expect_not_contains ".record: only the lines while on" "$(cat "$TMP/part.lua")" "after"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/part.lua" 2>&1 </dev/null); RC=$?
expect_eq ".record: a recording that starts mid-session replays (x is nil there)" "$RC" 1
expect_contains ".record: the missing state shows" "$OUT" "attempt to perform arithmetic on a nil value (global 'x')"

# bad arguments
OUT=$(timeout 60 "$GCSH" -n 2 --record /nonexistent/dir/r.lua </dev/null 2>&1); RC=$?
expect_eq "--record unwritable: exit 1" "$RC" 1
expect_contains "--record unwritable: named" "$OUT" "gcsh: .record: cannot write /nonexistent/dir/r.lua: No such file or directory"
OUT=$(printf '.record /nonexistent/dir/r.lua\nprint(1)\n' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains ".record unwritable: named, the shell goes on" "$OUT" "gcsh: .record: cannot write /nonexistent/dir/r.lua: No such file or directory
[0-1] 1"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/nothere.lua" </dev/null 2>&1); RC=$?
expect_eq "--replay of a missing file: exit 2" "$RC" 2
expect_contains "--replay of a missing file: named" "$OUT" "gcsh: --replay: cannot open $TMP/nothere.lua: No such file or directory"
echo 'print(1)' >"$TMP/plain.lua"
OUT=$(timeout 60 "$GCSH" --replay "$TMP/plain.lua" </dev/null 2>&1); RC=$?
expect_eq "--replay of a script that is no recording: exit 2" "$RC" 2
expect_contains "--replay of a non-recording: why" "$OUT" "is not a gcsh recording"
OUT=$(timeout 60 "$GCSH" -n 3 --replay "$F" </dev/null 2>&1); RC=$?
expect_eq "--replay at another rank count: exit 2" "$RC" 2
expect_contains "--replay at another rank count: why" "$OUT" "was recorded at 2 ranks; this run has 3"
OUT=$(timeout 60 "$GCSH" -n 3 "$F" </dev/null 2>&1); RC=$?
expect_eq "plain rerun at another rank count: exit 125" "$RC" 125
OUT=$(timeout 60 "$GCSH" --replay "$F" -e 'x = 1' </dev/null 2>&1); RC=$?
expect_contains "--replay with -e: refused" "$OUT" "'--replay' runs the recording alone"
OUT=$(timeout 60 "$GCSH" --replay </dev/null 2>&1); RC=$?
expect_contains "--replay without a file" "$OUT" "'--replay' needs a file name"
OUT=$(timeout 60 "$GCSH" --recrod x </dev/null 2>&1); RC=$?
expect_contains "a mistyped option" "$OUT" "unrecognized option '--recrod'"
finish
