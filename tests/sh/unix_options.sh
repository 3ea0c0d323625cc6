#!/usr/bin/env bash
# Unix habits (issue 39), options at 2 and 4 ranks: mpirun's spellings of -n,
# LUA_INIT and -E as lua takes them, dot-commands given with -e.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
T=$'\t'

for n in 2 4; do
    all="[0-$((n - 1))]"
    for spelling in "--np $n" "--n $n" "-c $n" "-c$n" "-n=$n" "-np=$n" "-n $n" "-np $n"; do
        # shellcheck disable=SC2086 # the spelling is two words or one
        OUT=$(timeout 60 "$GCSH" $spelling -e 'print(size)' 2>&1 </dev/null); RC=$?
        expect_eq "[$n] $spelling starts $n ranks" "$RC:$OUT" "0:$all $n"
    done

    # ---- LUA_INIT_5_4, else LUA_INIT: a chunk, or @file; -E ignores them
    OUT=$(LUA_INIT='x = 42' timeout 60 "$GCSH" -n $n -e 'print(x)' 2>&1 </dev/null)
    expect_eq "[$n] LUA_INIT runs first on every rank" "$OUT" "$all 42"
    OUT=$(LUA_INIT_5_4='x = 54' LUA_INIT='x = 1' timeout 60 "$GCSH" -n $n -e 'print(x)' 2>&1 </dev/null)
    expect_eq "[$n] LUA_INIT_5_4 wins over LUA_INIT" "$OUT" "$all 54"
    printf 'y = "from a file"\n' >"$TMP/init.lua"
    OUT=$(LUA_INIT="@$TMP/init.lua" timeout 60 "$GCSH" -n $n -e 'print(y)' 2>&1 </dev/null)
    expect_eq "[$n] LUA_INIT=@file runs the file" "$OUT" "$all from a file"
    OUT=$(printf 'print(y)\n' | LUA_INIT="@$TMP/init.lua" timeout 60 "$GCSH" -n $n 2>&1)
    expect_eq "[$n] LUA_INIT before a piped session" "$OUT" "$all from a file"
    OUT=$(LUA_INIT='x = 42' LUA_INIT_5_4='x = 54' timeout 60 "$GCSH" -n $n -E -e 'print(x)' 2>&1 </dev/null)
    expect_eq "[$n] -E ignores them" "$OUT" "$all nil"
    OUT=$(LUA_INIT='error("bad init", 0)' timeout 60 "$GCSH" -n $n -e 'print("ran")' 2>&1 </dev/null); RC=$?
    expect_eq "[$n] a failing LUA_INIT: status 1, its error" "$RC:$(head -n 1 <<<"$OUT")" "1:$all bad init"
    expect_eq "[$n] a failing LUA_INIT: nothing else runs" "$(grep -c ' ran$' <<<"$OUT")" 0
    OUT=$(LUA_INIT="@$TMP/none.lua" timeout 60 "$GCSH" -n $n -e 'print("ran")' 2>&1 </dev/null); RC=$?
    expect_eq "[$n] LUA_INIT=@missing: status 1" "$RC" 1
    expect_contains "[$n] LUA_INIT=@missing: said" "$OUT" "gcsh: LUA_INIT: cannot open $TMP/none.lua"

    # ---- dot-commands given with -e, as typed at the prompt
    OUT=$(timeout 60 "$GCSH" -n $n -e '.timeout 3' -e '.check off' -e 'print(gcsh.check())' 2>&1 </dev/null)
    RC=$?
    expect_eq "[$n] -e '.timeout 3' -e '.check off'" "$RC:$OUT" "0:timeout 3 s
check off
$all false"
    OUT=$(timeout 60 "$GCSH" -n $n -e '.info' 2>&1 </dev/null)
    expect_match "[$n] -e .info" "$OUT" "^backend host: $n ranks on 1 node"
    OUT=$(timeout 60 "$GCSH" -n $n -e '.bogus' -e 'print("ran")' 2>&1 </dev/null); RC=$?
    expect_eq "[$n] -e '.bogus': a usage error, 128" "$RC" 128
    expect_contains "[$n] -e '.bogus': named" "$OUT" "gcsh: unknown command '.bogus'"
    expect_eq "[$n] -e '.bogus': nothing after it runs" "$(grep -c ' ran$' <<<"$OUT")" 0
    # a dot-command that refuses its argument is a usage error too: the
    # lines after it never run as if it had worked (on every rank, say)
    for dot in ".ranks $n" '.ranks 1-x' '.timeout soon' '.check maybe' '.time of' \
               '.traceback yes' '.lesson 99' '.info extra' '.quit now'; do
        OUT=$(timeout 60 "$GCSH" -n $n -e "$dot" -e 'print("ran")' 2>&1 </dev/null); RC=$?
        expect_eq "[$n] -e '$dot': a usage error, 128" "$RC" 128
        expect_match "[$n] -e '$dot': said" "$OUT" "^gcsh: \.[a-z]+(:| takes no argument)"
        expect_eq "[$n] -e '$dot': nothing after it runs" "$(grep -c ' ran$' <<<"$OUT")" 0
    done

    # ---- a mistyped method of gcsh's own types: did you mean
    OUT=$(timeout 60 "$GCSH" -n $n -e 'c = comm.world() c:alreduce(tensor.new(2))' 2>&1 </dev/null); RC=$?
    expect_all_ranks "[$n] c:alreduce: did you mean" "$OUT" \
        "(command line):1: attempt to call a nil value (method 'alreduce'); did you mean allreduce (a method of comm)?" $n
    expect_eq "[$n] c:alreduce: a runtime error, whatever its text (1)" "$RC" 1
    OUT=$(timeout 60 "$GCSH" -n $n -e 't = tensor.new(2) t:fil(1)' 2>&1 </dev/null)
    expect_contains "[$n] t:fil: did you mean fill" "$OUT" "did you mean fill (a method of tensor)?"
    OUT=$(timeout 60 "$GCSH" -n $n -e 'c = comm.world() c:zzzzzz()' 2>&1 </dev/null)
    expect_not_contains "[$n] nothing close: no suggestion" "$OUT" "did you mean"
    OUT=$(timeout 60 "$GCSH" -n $n -e 't = tensor.new(3) print(t.n, #t) print(t.size)' 2>&1 </dev/null)
    expect_contains "[$n] t.size: an error naming t.n" "$OUT" "$all 3${T}3
$all (command line):1: a tensor has no field 'size': its length is t.n (or #t)"
    OUT=$(timeout 60 "$GCSH" -n $n -e 'x = {} x:allreduc()' 2>&1 </dev/null)
    expect_not_contains "[$n] not a gcsh type: no suggestion" "$OUT" "did you mean"
done

# ---- the man page renders without warnings; --help and the README say where
# it is in a build tree
if command -v groff >/dev/null; then
    expect_eq "groff -man -ww: no warning" "$(groff -man -ww -z src/gcsh.1 2>&1)" ""
    expect_contains "0x… renders" "$(LC_ALL=C.UTF-8 groff -man -Tutf8 src/gcsh.1 2>/dev/null | col -bx)" \
        "address shown as 0x…,"
else
    skip "groff is not installed"
fi
expect_eq "--help names the build tree's man page" \
    "$(timeout 60 "$GCSH" --help </dev/null | grep '^Manual:')" "Manual:    man $PWD/src/gcsh.1"
expect_contains "the README names src/gcsh.1" "$(cat README.md)" "man ./src/gcsh.1"

finish
