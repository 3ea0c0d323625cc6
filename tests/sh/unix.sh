#!/usr/bin/env bash
# Unix habits (issue 39), at 2 and 4 ranks: a closed stdout stops every rank
# at once with 141, as lua and coreutils do under SIGPIPE; --tag=never prints
# every rank's lines as mpirun does; hang reports only while some rank waits
# for another.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT

# into_head N LINES CHUNK [gcsh args]: gcsh -n N -e CHUNK | head -LINES; sets
# HEAD (what head printed), ERR (gcsh's stderr), RC (gcsh's status) and
# AFTER (seconds from head's exit to gcsh's).
into_head() {
    local n=$1 lines=$2 chunk=$3 t_head t_end; shift 3
    TAG=$(new_tag); TAGS+=("$TAG")
    ( GCSH_TEST_TAG=$TAG timeout -k 5 60 "$GCSH" -n "$n" "$@" -e "$chunk" 2>"$TMP/err"
      echo $? >"$TMP/rc" ) | { head -"$lines" >"$TMP/head"; date +%s.%N >"$TMP/t_head"; }
    t_end=$(date +%s.%N)
    HEAD=$(cat "$TMP/head") ERR=$(cat "$TMP/err") RC=$(cat "$TMP/rc")
    AFTER=$(echo "$t_end - $(cat "$TMP/t_head")" | bc)
}
quick() { [ "$(echo "$1 < $2" | bc)" = 1 ]; }

for n in 2 4; do
    into_head $n 1 'for i = 1, 3e6 do print(i) end'
    expect_eq "[$n] | head -1: status 141 (SIGPIPE)" "$RC" 141
    expect_match "[$n] | head -1: one line" "$HEAD" '^\[[0-9,-]+\] 1$'
    quick "$AFTER" 2 && pass || fail "[$n] | head -1: gcsh took $AFTER s after head left"
    expect_eq "[$n] | head -1: nothing on stderr" "$ERR" ""
    expect_no_procs "[$n] | head -1: every rank gone" "$TAG"

    into_head $n 2 'while true do print(rank) end'
    expect_eq "[$n] endless printer | head -2: status 141" "$RC" 141
    expect_eq "[$n] endless printer | head -2: two lines" "$(wc -l <<<"$HEAD")" 2
    quick "$AFTER" 2 && pass || fail "[$n] endless | head -2: gcsh took $AFTER s after head left"
    expect_eq "[$n] endless printer: no hang report, no cap note" "$ERR" ""
    expect_no_procs "[$n] endless printer: every rank gone" "$TAG"

    into_head $n 1 'if rank == 1 then error("boom") end while true do print(rank) end'
    expect_eq "[$n] a rank failed first: status 1" "$RC" 1
    expect_contains "[$n] a rank failed first: its error said" "$ERR" "[1] (command line):1: boom"

    # a piped session: the line that prints into the closed pipe ends it
    TAG=$(new_tag); TAGS+=("$TAG")
    printf 'x = 1\nwhile true do print(x) end\nprint("never")\n' |
        GCSH_TEST_TAG=$TAG timeout -k 5 60 "$GCSH" -n $n 2>"$TMP/err" | head -1 >/dev/null
    expect_eq "[$n] piped session | head -1: status 141" "${PIPESTATUS[1]}" 141
    expect_eq "[$n] piped session | head -1: nothing on stderr" "$(cat "$TMP/err")" ""
    printf 'error("early")\nwhile true do print(1) end\n' |
        timeout -k 5 60 "$GCSH" -n $n 2>/dev/null | head -1 >/dev/null
    expect_eq "[$n] piped session, a line failed before: status 1" "${PIPESTATUS[1]}" 1
done

# one rank, no launcher: the same
into_head 1 1 'while true do io.write("x\n") end'
RC1=$RC
TAG=$(new_tag); TAGS+=("$TAG")
(GCSH_TEST_TAG=$TAG timeout -k 5 60 "$GCSH" -e 'while true do io.write("x\n") end' 2>"$TMP/err"
 echo $? >"$TMP/rc") | head -1 >/dev/null
expect_eq "one rank without -n | head -1: status 141" "$(cat "$TMP/rc")" 141
expect_eq "gcsh -n 1 | head -1: status 141" "$RC1" 141

# ---- --tag=never: mpirun's habit, every rank's lines, bare, not folded
for n in 2 4; do
    OUT=$(timeout 60 "$GCSH" -n $n --tag=never -e 'print("host-a")' </dev/null | sort | uniq -c)
    expect_eq "[$n] --tag=never | sort | uniq -c counts the ranks" "$(echo $OUT)" "$n host-a"
    OUT=$(timeout 60 "$GCSH" -n $n --tag=never \
          -e 'io.write("part") io.write(rank, "\n") io.stderr:write("err\n") error("x", 0)' 2>&1 </dev/null)
    expect_eq "[$n] --tag=never: no tag on any line" "$(grep -c '^\[' <<<"$OUT")" 0
    expect_eq "[$n] --tag=never: each rank's whole line" "$(grep -c '^part[0-9]$' <<<"$OUT")" $n
    expect_eq "[$n] --tag=never: errors too, one per rank" "$(grep -c '^x$' <<<"$OUT")" $n
    OUT=$(timeout 60 "$GCSH" -n $n -e 'print("host-a")' </dev/null)
    expect_eq "[$n] the default still folds and tags" "$OUT" "[0-$((n - 1))] host-a"
    OUT=$(timeout 60 "$GCSH" -n $n --tag=auto -e 'if rank == 0 then print("t") end' </dev/null)
    expect_eq "[$n] --tag=auto unchanged: rank 0 alone bare" "$OUT" "t"
done

# ---- hang reports only for waits: 13 s of Lua on every rank says nothing
for n in 2 4; do
    mkdir -p "$TMP/quiet"
    OUT=$(TMPDIR=$TMP/quiet timeout 120 "$GCSH" -n $n --timeout 2 \
          -e 'local t = gcsh.wtime() while gcsh.wtime() - t < 13 do end print("ok")' 2>&1 </dev/null)
    RC=$?
    expect_eq "[$n] 13 s of Lua, --timeout 2: no report" "$RC:$OUT" "0:[0-$((n - 1))] ok"
    OUT=$(printf '.timeout 2\n%s\n%s\n' 'if rank == 1 then gcsh.sleep(5) end print("ok")' \
              'local t = gcsh.wtime() while gcsh.wtime() - t < 5 do end print("ok")' |
          TMPDIR=$TMP/quiet timeout 120 "$GCSH" -n $n 2>&1)
    expect_eq "[$n] .timeout 2: a sleep, a loop on their own: no report" "$OUT" "timeout 2 s
[0-$((n - 1))] ok
[0-$((n - 1))] ok"
    # a real wait still reports, with the flight recorder
    expect_eq "[$n] no flight file either" "$(ls "$TMP/quiet")" ""
    OUT=$(TMPDIR=$TMP timeout 120 "$GCSH" -n $n --timeout 1 -e 'local c = comm.world()
if rank == 1 then local t = gcsh.wtime() while gcsh.wtime() - t < 3 do end end
c:barrier() print("ok")' 2>&1 </dev/null)
    expect_match "[$n] a barrier that waits: the report" "$OUT" '^gcsh: 1\.[0-9] s: done \[\], still running \[0-'$((n - 1))'\]'
    expect_contains "[$n] a barrier that waits: where rank 1 is" "$OUT" "[1] running line 2 of the chunk"
    expect_contains "[$n] a barrier that waits: the flight file" "$OUT" "$FLIGHT_SAID"
done

finish
