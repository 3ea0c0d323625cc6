#!/usr/bin/env bash
# Output as from any program: each rank's program output folded on gcsh's
# stdout, its errors (error messages and tracebacks, io.stderr, warn(),
# gcsh's notes) folded on gcsh's stderr with gcsh's own diagnostics, in the
# order written when both go to one place.  Texts that differ only in the
# addresses Lua prints fold, said once.  --tag.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
T=$'\t'
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# split NAME ARGS...: runs gcsh with stdin from /dev/null (unless the caller
# redirects it); sets OUT (stdout), ERR (stderr) and RC.
split() {
    timeout 60 "$GCSH" "$@" >"$TMP/out" 2>"$TMP/err"; RC=$?
    OUT=$(cat "$TMP/out") ERR=$(cat "$TMP/err")
}

# ---- a script: its output on stdout, its errors on stderr
cat >"$TMP/err1.lua" <<'EOF'
print("start", rank)
io.stderr:write("note from ", rank, "\n")
if rank == 1 then error("boom on 1") end
io.write("end ", rank, "\n")
EOF
split -n 2 "$TMP/err1.lua" </dev/null
expect_eq "stdout holds the program's output only" "$OUT" "[0] start${T}0
[0] end 0
[1] start${T}1"
expect_eq "stderr holds io.stderr and the traceback" "$ERR" "[0] note from 0
[1] note from 1
[1] $TMP/err1.lua:3: boom on 1
[1] stack traceback:
[1] ${T}[C]: in function 'error'
[1] ${T}$TMP/err1.lua:3: in main chunk"
expect_eq "a failing rank: exit 1" "$RC" 1
OUT=$(timeout 60 "$GCSH" -n 2 "$TMP/err1.lua" 2>&1 </dev/null)
expect_eq "both to one pipe: each rank's lines in the order written" "$OUT" "[0] start${T}0
[0] note from 0
[0] end 0
[1] start${T}1
[1] note from 1
[1] $TMP/err1.lua:3: boom on 1
[1] stack traceback:
[1] ${T}[C]: in function 'error'
[1] ${T}$TMP/err1.lua:3: in main chunk"
split "$TMP/err1.lua" </dev/null
expect_eq "one rank: stdout" "$OUT" "start${T}0
end 0"
expect_eq "one rank: stderr" "$ERR" "note from 0"

# ---- a piped session: lines' output and errors apart, in order together
LINES='print("a") io.stderr:write("b\n") print("c")
x = = 1
error("failed here", 0)
print("after")'
printf '%s\n' "$LINES" >"$TMP/lines"
split -n 2 <"$TMP/lines"
expect_eq "piped: stdout" "$OUT" "[0-1] a
[0-1] c
[0-1] after"
expect_eq "piped: stderr (the syntax error once, then the error)" "$ERR" "[0-1] b
stdin:1: unexpected symbol near '='
[0-1] failed here"
expect_eq "piped: exit 1" "$RC" 1
OUT=$(timeout 60 "$GCSH" -n 2 <"$TMP/lines" 2>&1)
expect_eq "piped, both to one pipe: in order" "$OUT" "[0-1] a
[0-1] b
[0-1] c
stdin:1: unexpected symbol near '='
[0-1] failed here
[0-1] after"

# ---- warnings: off until -W or warn("@on"), then on stderr
split -n 2 -e 'warn("not shown")' -e 'print("ok")' </dev/null
expect_eq "warnings off by default" "$OUT|$ERR" "[0-1] ok|"
split -n 2 -W -e 'warn("shown ", "once per rank")' </dev/null
expect_eq "-W: warnings on stderr" "$OUT|$ERR" "|[0-1] Lua warning: shown once per rank"
split -n 2 -e 'warn("@on") warn("on now")' </dev/null
expect_eq "warn('@on') turns them on" "$ERR" "[0-1] Lua warning: on now"

# ---- a missing final newline: the command's end ends the line, so the
# text folds with the same line ended by a newline; never an empty "[r] "
# line that no rank printed (-e, a script's line, a piped session)
split -n 2 -e 'io.write(rank == 0 and "val 5" or "val 5\n")' </dev/null
expect_eq "rank 0 without its newline folds" "$OUT|$ERR" "[0-1] val 5|"
split -n 2 -e 'io.write(rank == 1 and "val 5" or "val 5\n")' </dev/null
expect_eq "rank 1 without its newline folds" "$OUT|$ERR" "[0-1] val 5|"
split -n 2 -e 'io.write(rank == 0 and "val" or "val 5\n")' </dev/null
expect_eq "a shorter line ended by the command is its own" "$OUT" "[0] val
[1] val 5"
split -n 4 -e 'io.write("a\nb", rank % 2 == 0 and "" or "\n")' -e 'print("next")' </dev/null
expect_eq "4 ranks, every other without its newline" "$OUT|$ERR" "[0-3] a
[0-3] b
[0-3] next|"
split -n 4 -e 'io.write(({"x", "x\n", "x\ny", "x\n"})[rank + 1])' </dev/null
expect_eq "4 ranks, a longer one among them" "$OUT" "[0-3] x
[2] y"
# rank 0 finishes its line after rank 1's whole line went out (as it comes)
split -n 2 -e 'local c = comm.world()
if rank == 0 then io.write("val 5") io.stdout:flush() c:barrier() io.write("\n")
else print("val 5") c:barrier() end' </dev/null
expect_eq "a newline that comes later finishes the folded line" "$OUT|$ERR" "[0-1] val 5|"
split -n 2 -e 'local c = comm.world()
if rank == 0 then io.write("ab") io.stdout:flush() c:barrier() c:barrier() io.write("\n")
else c:barrier() print("x") io.stdout:flush() c:barrier() end' </dev/null
expect_eq "another rank's line between: no empty line after it" \
    "$(grep -c '^\[[0-9]\] $' <<<"$OUT")|$(grep -c '' <<<"$OUT")" "0|2"
printf '%s\n' 'do io.write(rank == 0 and "p" or "p\n") end' 'print("q")' \
    'do io.write(rank == 1 and "r" or "r\n") end' >"$TMP/mixed"
split -n 2 <"$TMP/mixed"
expect_eq "piped: lines without their newline fold" "$OUT|$ERR" "[0-1] p
[0-1] q
[0-1] r|"
split -n 4 <"$TMP/mixed"
expect_eq "piped at 4 ranks" "$OUT|$ERR" "[0-3] p
[0-3] q
[0-3] r|"

# ---- gcsh's own diagnostics: stderr, stdout empty
split -n 2 "$TMP/no-such.lua" </dev/null
expect_eq "a missing script: said on stderr" "$OUT|$ERR|$RC" \
    "|gcsh: cannot open $TMP/no-such.lua: No such file or directory|125"
split -n 2 --bogus </dev/null
expect_eq "a bad option: one line on stderr" "$OUT|$(wc -l <"$TMP/err")" "|1"
GCSH_OUTPUT_CAP=10 split -n 2 -e 'io.write(string.rep("x", 30), "\n")' </dev/null
expect_eq "the output cap: the kept bytes on stdout" "$OUT" "[0-1] xxxxxxxxxx"
expect_eq "the output cap: its note on stderr" "$ERR" \
    "[0-1] gcsh: output capped at 10 bytes; 21 bytes dropped"
split -n 2 -e 'os.exit(rank == 1 and 3 or 0)' </dev/null
expect_eq "os.exit's report on stderr" "$OUT|$ERR|$RC" \
    "|gcsh: [0] os.exit(0), [1] os.exit(3): the session ends; every rank exits with status 3, the worst|3"

# ---- addresses: texts that differ only there fold, the note said once
# (each rank allocates a different amount first, so that the addresses
# differ even where address space randomization is off)
PAD='local pad = {} for i = 1, 100 * (rank + 1) do pad[i] = {} end'
split -n 4 -e "$PAD print({})" -e "$PAD print('t', {}, print)" -e "$PAD print({}, rank)" </dev/null
expect_match "addresses fold: one line, differing addresses as 0x…" "$(sed -n 1p <<<"$OUT")" \
    '^\[0-3\] table: 0x…$'
expect_match "addresses fold: several in a line" "$(sed -n 2p <<<"$OUT")" \
    "^\\[0-3\\] t${T}table: 0x…${T}(function: builtin: |function: )(0x…|0x[0-9a-f]+)$"
expect_eq "other differences still split the ranks" "$(sed -n '3,$p' <<<"$OUT" | cut -c1-4 | tr '\n' ' ')" \
    "[0]  [1]  [2]  [3]  "
expect_eq "the note on 0x…, once" "$ERR" \
    "gcsh: 0x… is an address that differs between the ranks; their lines are otherwise the same"
split -n 2 -e 'print(string.format("checksum: 0x%08x", rank))' </dev/null
expect_eq "a hex number the program prints is no address" "$OUT|$ERR" \
    "[0] checksum: 0x00000000
[1] checksum: 0x00000001|"
printf 'string\n' | timeout 60 "$GCSH" -n 4 >"$TMP/out" 2>/dev/null
printf 'string\n' | timeout 60 "$GCSH" >"$TMP/one" 2>/dev/null
expect_eq "a table of functions prints once at 4 ranks" "$(wc -l <"$TMP/out")" "$(wc -l <"$TMP/one")"
expect_eq "a table of functions: every line under [0-3]" "$(grep -vc '^\[0-3\] ' "$TMP/out")" 0

# ---- --tag: always (the default), never, auto
split -n 2 -e 'print(rank)' -e 'print("same")' -e 'if rank == 0 then print("alone") end' </dev/null
expect_eq "--tag=always is the default" "$OUT" "[0] 0
[1] 1
[0-1] same
[0] alone"
split -n 2 --tag=never -e 'print(rank)' -e 'print("same")' -e 'error("err", 0)' </dev/null
expect_eq "--tag=never: the text alone, each rank's lines (mpirun's habit)" "$(sort <<<"$OUT")" "0
1
same
same"
expect_eq "--tag=never: errors bare too" "$(head -n 1 <<<"$ERR")" "err"
cat >"$TMP/table.lua" <<'EOF'
if rank == 0 then
  print("# size  time")
  for i = 1, 3 do print(string.format("%6d  %4d", 8 ^ i, i)) end
end
EOF
split -n 3 --tag=auto "$TMP/table.lua" </dev/null
expect_eq "--tag=auto: one rank's table goes to a file clean" "$OUT" "# size  time
     8     1
    64     2
   512     3"
split -n 3 --tag auto -e 'if rank == 2 then print("only two") error("two failed", 0) end' </dev/null
expect_eq "--tag=auto: a lone rank's output bare" "$OUT" "only two"
expect_eq "--tag=auto: errors tagged" "$(head -n 1 <<<"$ERR")" "[2] two failed"
split -n 2 --tag=auto -e 'print("same")' -e 'print(rank)' </dev/null
expect_eq "--tag=auto: output of several ranks tagged" "$OUT" "[0-1] same
[0] 0
[1] 1"
split -n 2 --tag=sometimes </dev/null
expect_eq "--tag: a bad value" "$ERR|$RC" \
    "gcsh: '--tag' needs always, never or auto, got 'sometimes' (gcsh --help lists the options)|128"

finish
