#!/usr/bin/env bash
# Unix habits (issue 39), at 2 and 4 ranks: output folds in runs of any
# length, whichever rank is ahead; io.write's partial lines show while the
# command runs (a progress of dots); at the prompt an argument error is one
# line (.traceback on gives the traceback), Tab completes file names in a
# string.
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
need_tmux
tmux_setup   # a tmux server of our own (its socket in $TMP), gone with $TMP

# start80 NAME ARGS...: gcsh ARGS in an 80-column pane, in $TMP/work (HOME
# there too, no history); EXIT=code at its end.
mkdir -p "$TMP/work/sub"
start80() {
    S=$1; shift
    TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 30 \
        "cd '$TMP/work' && unset XDG_CONFIG_HOME; HOME='$TMP/work' GCSH_HISTORY= GCSH_TEST_TAG='$TAG' '$GCSH' $*; echo EXIT=\$?; exec sleep 300"
}
# until_file PATH: Lua that waits (60 s at most) until the test makes PATH,
# so that what a test sees on the screen came before it (no fixed sleep).
until_file() {
    printf 'local t0 = os.time() while not io.open("%s") and os.time() - t0 < 60 do gcsh.sleep(0.05) end' "$1"
}

for n in 2 4; do
    all="0-$((n - 1))"
    # ---- runs of any length: 100,000 identical lines fold, every one
    OUT=$(timeout 120 "$GCSH" -n $n -e 'for i = 1, 1e5 do print("x") end' </dev/null | sort | uniq -c)
    expect_eq "[$n] 100,000 identical lines: one folded line each" "$(echo $OUT)" "100000 [$all] x"
    # odd ranks fall behind now and then (a sleep, a busy loop): still folded
    OUT=$(timeout 120 "$GCSH" -n $n -e 'for i = 1, 1e5 do print("x")
        if rank % 2 == 1 and i % 5000 == 0 then gcsh.sleep(0.2) end end' </dev/null | sort | uniq -c)
    expect_eq "[$n] ranks at different speeds (sleeps): still folded" "$(echo $OUT)" "100000 [$all] x"
    OUT=$(timeout 120 "$GCSH" -n $n -e 'for i = 1, 2e4 do print("x", i)
        if rank % 2 == 1 and i % 1000 == 0 then local t = os.clock() while os.clock() - t < 0.05 do end end
        end' </dev/null | sed 's/\t.*//' | sort | uniq -c)
    expect_eq "[$n] ranks at different speeds (busy): still folded" "$(echo $OUT)" "20000 [$all] x"
    # lines that differ stay apart, each rank's in order
    OUT=$(timeout 60 "$GCSH" -n $n -e 'print("r" .. rank)' </dev/null | head -n 2)
    expect_eq "[$n] lines that differ: each rank's" "$OUT" "[0] r0
[1] r1"

    # ---- partial lines in a pipe: printed while the command runs
    GO=$TMP/go-pipe$n
    timeout 60 "$GCSH" -n $n -e "io.write('half') io.flush() $(until_file "$GO") print(' whole')" \
        </dev/null >"$TMP/pipe$n.out" 2>&1 &
    P=$!
    if wait_until 30 grep -qF "[$all] half" "$TMP/pipe$n.out"; then pass; else
        fail "[$n] a partial line did not reach the pipe while the command ran"; fi
    : >"$GO"
    wait $P
    expect_eq "[$n] the line goes on where it stopped" "$(cat "$TMP/pipe$n.out")" "[$all] half whole"

    # ---- a progress of dots at the terminal (80 columns): the dots show as
    # they come, on one line, before the loop ends
    GO=$TMP/go-dots$n
    start80 "d$n" -n $n
    check_wait "[$n] prompt" "gcsh[$all]>" 30
    keys "for i = 1, 5 do io.write('.') io.flush() gcsh.sleep(0.1) end $(until_file "$GO") print('end')" Enter
    check_wait "[$n] dots while the loop runs" "[$all] ....." 30
    expect_not_contains "[$n] the loop has not ended" "$(screen)" ".....end"
    : >"$GO"
    check_wait "[$n] the line ends with the loop" "[$all] .....end" 30
    # one rank's dots, not broken by the progress line (the others are done)
    GO=$TMP/go-one$n
    keys "if rank == 0 then for i = 1, 5 do io.write('.') io.flush() gcsh.sleep(0.1) end $(until_file "$GO") print('end') end" Enter
    check_wait "[$n] rank 0's dots" "[0] ....." 30
    sleep 1   # a time under test: the progress line would show after 0.5 s
    expect_eq "[$n] the dots: one line, nothing else on it" "$(screen | grep -cxF '[0] .....')" 1
    : >"$GO"
    check_wait "[$n] rank 0's line ends" "[0] .....end" 30

    # ---- an argument error at the prompt: one line; .traceback on: the whole
    keys 'string.rep()' Enter
    check_wait "[$n] an argument error" "[$all] stdin:1: bad argument #1 to 'rep'" 15
    keys 'print("mark1")' Enter
    check_wait "[$n] next line" "[$all] mark1" 15
    expect_eq "[$n] an argument error is one line" \
        "$(screen | sed -n '/string.rep()/,/^\[[^]]*\] mark1/p' | grep -c '^\[')" 2
    printf '%s\n' 'local function inner() error("deep") end' 'function outer() inner() end' >"$TMP/work/mine.lua"
    keys 'dofile("mine.lua") outer()' Enter
    check_wait "[$n] an error in the user's function: its place" "[$all] mine.lua:1: deep" 15
    check_wait "[$n] ... and the way there" "[$all]   mine.lua:2: in function 'outer'" 15
    keys '.traceback on' Enter
    check_wait "[$n] .traceback on" "traceback on" 15
    keys 'string.rep()' Enter
    check_wait "[$n] .traceback on: the traceback" "[$all]   [C]: in function 'string.rep'" 15

    # ---- Tab completes a file name inside a string
    printf 'print("ran s%s.lua")\n' $n >"$TMP/work/s$n.lua"
    printf 'x = 1\n' >"$TMP/work/sub/other.lua"
    keys "dofile(\"s$n." Tab
    keys ")" Enter
    check_wait "[$n] dofile(\"s$n. Tab: the file name, closed" "[$all] ran s$n.lua" 15
    expect_contains "[$n] the line as completed" "$(screen)" "dofile(\"s$n.lua\")"
    keys "f = \"su" Tab
    keys "o" Tab
    keys "" Enter
    keys '=f' Enter
    check_wait "[$n] a folder, then a file in it" "[$all] sub/other.lua" 15
    keys "string.fo" Tab
    keys "('%d', 7)" Enter
    check_wait "[$n] outside a string: Lua names as before" "[$all] 7" 15
    keys '.quit' Enter
    check_wait "[$n] quit" "EXIT=0" 15

    # ---- Ctrl-Z under a plain mpirun (no gcsh -n): the job cannot stop as one
    if ! command -v mpirun >/dev/null; then skip "no mpirun"; continue; fi
    S="z$n"; TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 30 "cd '$TMP/work' && HOME='$TMP/work' GCSH_HISTORY= GCSH_TEST_TAG='$TAG' mpirun --oversubscribe --stdin none -np $n '$GCSH'; echo EXIT=\$?; exec sleep 300"
    check_wait "[$n] mpirun --stdin none: prompt" "gcsh[$all]>" 60
    press C-z
    check_wait "[$n] mpirun --stdin none: Ctrl-Z at the prompt says why nothing stops" \
        "gcsh: Ctrl-Z stops a session started with gcsh -n N; under a plain mpirun the job cannot stop as one" 15
    # Ctrl-Z only once the command runs: a terminal throws away what is
    # typed and not yet read when Ctrl-Z comes (no NOFLSH), the Enter too
    keys 'print("going") gcsh.sleep(3) print("slept")' Enter
    check_wait "[$n] mpirun --stdin none: a command runs" "[$all] going" 30
    press C-z
    check_wait "[$n] mpirun --stdin none: Ctrl-Z while a command runs: it goes on" "[$all] slept" 30
    expect_eq "[$n] ... and said so twice" "$(screen | grep -c 'the job cannot stop as one')" 2
    keys '.quit' Enter
    check_wait "[$n] mpirun --stdin none: quit" "EXIT=0" 30
    # mpirun forwards the terminal: it turns Ctrl-Z into SIGSTOP for every
    # rank (no program can catch it) and keeps the terminal, as the note says
    # (typed at an interactive bash, as a user runs it: mpirun forwards Ctrl-Z
    # only from a shell with job control)
    S="f$n"; TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 30 "cd '$TMP/work' && HOME='$TMP/work' PS1='$ ' exec bash --norc -i"
    keys "GCSH_HISTORY= GCSH_TEST_TAG='$TAG' mpirun --oversubscribe -np $n '$GCSH'; echo EXIT=\$?" Enter
    check_wait "[$n] plain mpirun: the note says what Ctrl-Z does" \
        "Ctrl-Z stops every rank but not mpirun (Ctrl-C then ends it)" 60
    keys 'print("up")' Enter
    check_wait "[$n] plain mpirun: lines run" "[$all] up" 30
    PIDS_NOW=$(tagged_pids "$TAG" | tr '\n' ',' | sed 's/,$//')   # mpirun and the ranks
    press C-z
    want_stopped=$n   # (wait_until has an n of its own)
    stopped() { [ "$(ps -o stat= -p "$PIDS_NOW" 2>/dev/null | grep -c "^T")" -ge $want_stopped ]; }
    if wait_until 30 stopped; then pass; else
        fail "[$n] plain mpirun: Ctrl-Z did not stop the ranks"
        ps -o pid=,stat=,args= -p "$PIDS_NOW" | sed 's/^/  | /'; screen | grep -v '^$' | tail -n 5 | sed 's/^/  | /'
    fi
    press C-c
    check_wait "[$n] plain mpirun: Ctrl-C then ends the job" "EXIT=" 30
done

finish
