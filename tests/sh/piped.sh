#!/usr/bin/env bash
# Piped sessions: lines from a pipe, no prompts, each rank's output folded by
# rank range; exit status 1 when some chunk failed.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'

# ---- folding at 4 ranks
gcsh_pipe 4 'print(rank)
print("x")
print(rank % 2 == 0 and "even" or "odd")
print(rank == 3 and "three" or "other")'
expect_eq "4 ranks: folded output" "$OUT" "[0] 0
[1] 1
[2] 2
[3] 3
[0-3] x
[0,2] even
[1,3] odd
[0-2] other
[3] three"
expect_eq "4 ranks: exit status" "$RC" 0

# ---- one rank: no prefix
gcsh_pipe 1 'print(rank, size)
=1 + 1
"a", 2
error("one")'
expect_eq "1 rank: no prefix" "$OUT" "0${T}1
2
a${T}2
stdin:1: one"
expect_eq "1 rank: a failed chunk -> exit 1" "$RC" 1

# ---- values: =expr, bare expressions, several values, statements returning
gcsh_pipe 2 '=1 + 1
1 + 2
=1, "two", nil, 4.5
x = 5
=x
return rank, "r"
math.max(3, 7)
nil
local a = 1'
expect_eq "values" "$OUT" "[0-1] 2
[0-1] 3
[0-1] 1${T}two${T}nil${T}4.5
[0-1] 5
[0] 0${T}r
[1] 1${T}r
[0-1] 7
[0-1] nil"
expect_eq "values: exit status" "$RC" 0

# ---- a syntax error is printed once (not per rank) and nothing runs
gcsh_pipe 2 'n = 0
n = n + 1 print("ran") )
=n
x = = 1
print("next", rank)'
expect_eq "syntax error once, nothing ran" "$OUT" "stdin:1: unexpected symbol near ')'
[0-1] 0
stdin:1: unexpected symbol near '='
[0] next${T}0
[1] next${T}1"
expect_eq "syntax errors only: exit 125 (cannot test)" "$RC" 125

# ---- a runtime error on one rank: its message (one line: no function of
# the user's ran; .traceback on gives the traceback), the others' output, then on
gcsh_pipe 2 'if rank == 1 then error("boom") end print("after", rank)
print("next")'
expect_eq "error on one rank" "$OUT" "[0] after${T}0
[1] stdin:1: boom
[0-1] next"
expect_eq "error on one rank: exit 1" "$RC" 1

gcsh_pipe 4 'local function f() local t = nil; return t.x end
if rank == 2 then f() end
print("still here")'
expect_eq "a local of an earlier chunk is gone" "$OUT" "[2] stdin:1: attempt to call a nil value (global 'f')
[0-3] still here"
gcsh_pipe 4 'do
  local function f() local t = nil; return t.x end
  if rank == 2 then f() end
end
print("still here")'
expect_eq "error in a function at 4 ranks" "$OUT" "[2] stdin:2: attempt to index a nil value (local 't')
[2] stack traceback:
[2] ${T}stdin:2: in local 'f'
[2] ${T}stdin:3: in main chunk
[0-3] still here"
expect_eq "error at 4 ranks: exit 1" "$RC" 1

# .traceback on: the whole traceback of an error in gcsh's own C; off again
gcsh_pipe 2 '.traceback on
string.rep()
.traceback off
string.rep()
.traceback maybe'
expect_eq ".traceback on and off" "$OUT" "traceback on
[0-1] stdin:1: bad argument #1 to 'rep' (string expected, got no value)
[0-1] stack traceback:
[0-1] ${T}[C]: in function 'string.rep'
[0-1] ${T}stdin:1: in main chunk
traceback off
[0-1] stdin:1: bad argument #1 to 'rep' (string expected, got no value)
gcsh: .traceback: expected on or off, got 'maybe'"
# gcsh's own Lua (lua/gcsh/) is not the user's: its frames keep it one line
gcsh_pipe 2 'repro.expect(nil)'
expect_eq "an argument error from gcsh's Lua: one line" "$(grep -c . <<<"$OUT")" 1

# ---- incomplete chunks continue over lines (=expr ones too)
gcsh_pipe 2 'function add(a,
  b)
  return a + b
end
=add(1,
2)
for i = 1, 2 do
print(i)
end
s = [[one
two]]
=s
t = { 1,
2, 3 }; print(#t)'
expect_eq "incomplete chunks" "$OUT" "[0-1] 3
[0-1] 1
[0-1] 2
[0-1] one
[0-1] two
[0-1] 3"
expect_eq "incomplete chunks: exit 0" "$RC" 0

gcsh_pipe 2 'print("ok")
if true then
print("never")'
expect_eq "input ending inside a chunk" "$OUT" "[0-1] ok
stdin:2: 'end' expected (to close 'if' at line 1) near <eof>"
expect_eq "input ending inside a chunk: exit 125 (a syntax error)" "$RC" 125
gcsh_pipe 1 '=math.max(1,'
expect_eq "input ending inside an =expr" "$OUT" "stdin:1: unexpected symbol near <eof>"

# ---- .ranks: only the targeted ranks run
gcsh_pipe 4 '.ranks 0,2-3
c = (c or 0) + 1
print("on", rank)
.ranks 1
=rank
.ranks 5
.ranks 1-x
.ranks 3-1
.ranks -1
.ranks
=rank
.ranks all
=c
.ranks 1,3
.ranks'
expect_eq ".ranks" "$OUT" "[0] on${T}0
[2] on${T}2
[3] on${T}3
[1] 1
gcsh: .ranks: rank 5 out of range (valid 0..3)
gcsh: .ranks: cannot parse '1-x' (e.g. .ranks 0,2-3 or .ranks all)
gcsh: .ranks: empty range '3-1'
gcsh: .ranks: rank -1 out of range (valid 0..3)
ranks 1
[1] 1
[0,2-3] 1
[1] nil
ranks 1,3"
expect_eq ".ranks: exit 128 (a refused list is a usage error; the lines after it still run)" "$RC" 128

# ---- dot-commands: unknown, .help, .time, .timeout, .quit
USAGE='usage: .help [TOPIC] | .info | .ranks [LIST|all] | .timeout [SECONDS] | .time [on|off] | .check [on|off] | .traceback [on|off] | .record [FILE|off] | .trace [FILE|off] | .flight [FILE] | .abort (while a command runs) | .lessons | .lesson [N] | .next | .again | .prev | .part N | .quit'
gcsh_pipe 2 '.foo
.x 1 2
.help
.time on
x = 1
.time
.time off
x = 2
.time maybe
.timeout
.timeout 2.5
.timeout 0
.timeout -1
.timeout soon'
expect_eq "unknown dot-command" "$(head -n 2 <<<"$OUT")" "gcsh: unknown command '.foo'; $USAGE
gcsh: unknown command '.x'; $USAGE"
expect_contains ".help" "$OUT" ".ranks LIST|all"
expect_contains ".help names .info" "$OUT" ".info             one table: versions, each rank's host and device, links"
expect_contains ".help" "$OUT" "Ctrl-C interrupts a command"
expect_eq ".time on/off" "$(grep -E '^(time |gcsh: [0-9.]+ ms)' <<<"$OUT" | sed -E 's/[0-9]+\.[0-9]{3} ms$/N.NNN ms/')" \
    "time on
gcsh: N.NNN ms
time on
time off"
expect_eq ".time bad argument" "$(grep -c "gcsh: .time: expected on or off, got 'maybe'" <<<"$OUT")" 1
expect_eq ".timeout" "$(grep -E '^(gcsh: \.)?timeout' <<<"$OUT")" "timeout 10 s (reports only: collective checks keep waiting)
timeout 2.5 s
timeout 0 s (never report)
gcsh: .timeout: SECONDS must be a number 0..1e6, got '-1'
gcsh: .timeout: SECONDS must be a number 0..1e6, got 'soon'"

gcsh_pipe 2 'print(1)
.quit
print(2)'
expect_eq ".quit stops reading" "$OUT" "[0-1] 1"
expect_eq ".quit: exit 0" "$RC" 0
gcsh_pipe 2 'error("e", 0)
.quit'
expect_eq ".quit after a failure: exit 1" "$RC" 1

# ---- .timeout reports where ranks are while some rank waits for another,
# then keeps waiting (.check off: no collective check that the limit fails)
gcsh_pipe 4 '.timeout 0.4
.check off
c = comm.world()
if rank ~= 2 then print("done", rank) else gcsh.sleep(1.1) end c:barrier()
print("next")'
expect_eq ".timeout: output of the done ranks first" "$(sed -n 3,5p <<<"$OUT")" "[0] done${T}0
[1] done${T}1
[3] done${T}3"
expect_match ".timeout report" "$(sed -n 6p <<<"$OUT")" \
    '^gcsh: 0\.[4-9] s: done \[\], still running \[0-3\]; Ctrl-C interrupts$'
expect_eq ".timeout: it kept waiting" "$(grep -v '^gcsh: ' <<<"$OUT" | tail -n 1)" "[0-3] next"
n=$(grep -c 'still running \[0-3\]' <<<"$OUT")
if [ "$n" -ge 2 ] && [ "$n" -le 3 ]; then pass; else fail ".timeout: reports every 0.4 s (got $n in 1.1 s)"; fi
expect_eq ".timeout: exit 0" "$RC" 0
gcsh_pipe 2 'gcsh.check(false) if rank == 0 then gcsh.sleep(0.6) end comm.world():barrier()' --timeout 0.25
expect_match "--timeout" "$OUT" '^gcsh: 0\.[2-5] s: done \[\], still running \[0-1\]; Ctrl-C interrupts$'
gcsh_pipe 2 'gcsh.sleep(0.6) print("slept")' --timeout 0.25
expect_eq "no report while no rank waits for another" "$OUT" "[0-1] slept"
gcsh_pipe 2 'gcsh.sleep(0.3)'
expect_eq "no report under the timeout" "$OUT" ""

# ---- what Lua writes is captured: print, io.write, io.stdout, io.stderr
OUT=$(printf '%s\n' 'do io.write("w\n") io.stderr:write("e\n") io.stdout:write("o\n") print("p") end' \
    'do io.stderr:write("x", rank, "\n") end' | timeout 60 "$GCSH" -n 2 2>"$TMP/err"); RC=$?
expect_eq "io.write, io.stdout, print: program output, in order" "$OUT" "[0-1] w
[0-1] o
[0-1] p"
expect_eq "io.stderr: on gcsh's stderr, folded" "$(cat "$TMP/err")" "[0-1] e
[0] x0
[1] x1"
expect_eq "capture: exit 0" "$RC" 0

# ---- output without a trailing newline still ends its line
gcsh_pipe 2 'do io.write("a") end
do io.write(rank == 0 and "x" or "y") end
print("z")'
expect_eq "no trailing newline" "$OUT" "[0-1] a
[0] x
[1] y
[0-1] z"
gcsh_pipe 1 'do io.write("a") end
print("b")'
expect_eq "no trailing newline, 1 rank" "$OUT" "a
b"

# ---- GCSH_OUTPUT_CAP: what is past the cap is dropped, with a note
OUT=$(printf '%s\n' 'do io.write(string.rep("x", 100 + rank)) end' 'print("after")' |
    GCSH_OUTPUT_CAP=10 timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "output cap" "$OUT" "[0] xxxxxxxxxx
[0] gcsh: output capped at 10 bytes; 90 bytes dropped
[1] xxxxxxxxxx
[1] gcsh: output capped at 10 bytes; 91 bytes dropped
[0-1] after"
expect_eq "output cap: exit 0" "$RC" 0
OUT=$(printf '%s\n' 'for i = 1, 3 do print(i) end' | GCSH_OUTPUT_CAP=4 timeout 60 "$GCSH" 2>&1)
expect_eq "output cap, 1 rank" "$OUT" "1
2
gcsh: output capped at 4 bytes; 2 bytes dropped"

# ---- GCSH_CONTROL=tcp: the control plane over TCP works the same
UNIXCHECK='.ranks 0
=io.open("/proc/net/unix"):read("a"):find("@gcsh%-" .. io.popen("echo $PPID"):read("l") .. "%-", 1) ~= nil
.ranks all'
gcsh_pipe 2 "$UNIXCHECK"
expect_eq "default control plane: Unix sockets" "$OUT" "[0] true"
OUT=$(printf '%s\n' "$UNIXCHECK" 'print(rank)' '=1+1' 'if rank == 1 then error("tcp", 0) end' |
    GCSH_CONTROL=tcp timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "GCSH_CONTROL=tcp" "$OUT" "[0] false
[0] 0
[1] 1
[0-1] 2
[1] tcp"
expect_eq "GCSH_CONTROL=tcp: exit 1" "$RC" 1

# ---- a long command streams its output (folded) while it runs
printf '%s\n' 'print("first") gcsh.sleep(1.5) print("last")' |
    timeout 60 "$GCSH" -n 2 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$TMP/stream"
expect_eq "streamed lines" "$(cut -d' ' -f2- "$TMP/stream")" "[0-1] first
[0-1] last"
t1=$(sed -n 1p "$TMP/stream" | cut -d' ' -f1); t2=$(sed -n 2p "$TMP/stream" | cut -d' ' -f1)
if awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b - a >= 1.0) }'; then pass; else
    fail "streaming: first line came $(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }') s before the last (want >= 1)"; fi

# ---- end of input ends every process
TAG=$(new_tag)
GCSH_TEST_TAG=$TAG gcsh_pipe 4 'x = 1'
expect_eq "EOF: exit 0" "$RC" 0
expect_no_procs "EOF ends all ranks and mpirun" "$TAG"
TAG=$(new_tag)
GCSH_TEST_TAG=$TAG gcsh_pipe 2 'error("x")'
expect_no_procs "EOF after a failure ends all ranks" "$TAG"

# values print as values: tables through gcsh.pretty, folded across ranks
gcsh_pipe 2 '=({1, 2, {a = 1}, x = "y"})
t = {b = rank}
t
=setmetatable({}, {__tostring = function() return "own text" end})
=gcsh.info().rank, {n = 1}
.help tensor
help(comm.world())'
expect_contains "a table prints as a table, folded" "$OUT" '[0-1] {1, 2, {a = 1}, x = "y"}'
expect_contains "a bare expression: each rank's table" "$OUT" "[0] {b = 0}
[1] {b = 1}"
expect_contains "__tostring wins" "$OUT" "[0-1] own text"
expect_contains "tables among several values" "$OUT" "[1] 1${T}{n = 1}"
expect_contains ".help tensor: the title" "$OUT" "
tensor: typed 1-D arrays where the rank's collectives run (GPU on cuda)
  tensor.new(n [, dtype=\"f32\"])"
expect_contains ".help tensor: a method" "$OUT" "  t:fill(v)                     every element = v; returns t"
expect_contains "help(c): the comm topic, on every rank" "$OUT" "[0-1] comm: communicators and their collectives"
expect_contains "help(c): a method" "$OUT" "[0-1]   c:barrier()                   wait for every rank of c"
gcsh_pipe 2 '.help nothing'
expect_eq ".help unknown topic" "$OUT" "gcsh: help: no topic or function named 'nothing' (topics: bench comm devcomm gcsh graph kernel lesson multicast persistent repro signals step tensor timer window winstage xfer; Lua's: _G coroutine debug file io math os package string table utf8)"
gcsh_pipe 2 '.help string.format'
expect_eq ".help a function by name" "$(head -n 2 <<<"$OUT")" "string.format: string manipulation (section 6.4); s:method(...) works too
  string.format(formatstring, ...)"

# progress lines only on a terminal: nothing in a pipe, even for long work
gcsh_pipe 2 'for i = 1, 12 do gcsh.progress(i, 12, "demo") gcsh.sleep(0.1) end print("done")
if rank == 1 then gcsh.sleep(1) end
gcsh.progress(1, 0)
gcsh.progress(3, 2)
gcsh.progress(1, 2, string.rep("x", 48))'
expect_eq "progress: the output alone" "$(head -n 1 <<<"$OUT")" "[0-1] done"
expect_contains "progress: total >= 1" "$OUT" "bad argument #2 to 'progress' (total must be at least 1)"
expect_contains "progress: done <= total" "$OUT" "bad argument #1 to 'progress' (done must be 0..total)"
expect_contains "progress: label length" "$OUT" "bad argument #3 to 'progress' (label must be shorter than 48 bytes)"
expect_eq "progress: no escape anywhere" "$(printf '%s' "$OUT" | tr -d '\n' | od -c | grep -cE '\\r|033')" 0

# .info: one table; a line per rank, not one per fact and rank
SHORT_HOST=$(hostname | cut -d. -f1 | cut -c1-16)
for n in 1 2 4; do
    gcsh_pipe $n '.info'
    expect_match ".info at $n: versions once" "$(head -n 1 <<<"$OUT")" '^gcsh 0\.1\.0, Lua 5\.4\.[0-9]+, Open MPI v'
    expect_eq ".info at $n: backend line" "$(sed -n 2p <<<"$OUT")" "backend host: $n rank$([ $n = 1 ] || echo s) on 1 node"
    expect_eq ".info at $n: the networks MPI may use, in 80 columns" "$(sed -n 3,4p <<<"$OUT")" \
        "MPI network: this machine only: pml ob1, btl self,vader, oob lo;
  mpirun listens on loopback only"
    expect_eq ".info at $n: where the collectives run" "$(sed -n 5p <<<"$OUT")" \
        "collectives: MPI (no GPU shared); up to 4 KiB a rank through shared memory"
    expect_match ".info at $n: table header" "$(sed -n 6p <<<"$OUT")" "^rank  host$(printf '%*s' $(( ${#SHORT_HOST} > 4 ? ${#SHORT_HOST} - 4 : 0 )) '')  +pid  local  device  numa\$"
    expect_eq ".info at $n: 6 lines + one per rank" "$(wc -l <<<"$OUT")" $((6 + n))
    expect_match ".info at $n: rank $((n - 1))'s row" "$(tail -n 1 <<<"$OUT")" "^ +$((n - 1))  [^ ]+ +[0-9]+ +$((n - 1))  cpu +(-|[0-9]+)\$"
    expect_eq ".info at $n: exit 0" "$RC" 0
done
gcsh_pipe 4 '.ranks 2
.info
=gcsh.info().backend, gcsh.info().local_rank'
expect_eq ".info with .ranks 2: every rank still" "$(grep -cE '^ +[0-3]  ' <<<"$OUT")" 4
expect_contains "gcsh.info() fields" "$OUT" "[2] host${T}2"

finish
