#!/usr/bin/env bash
# Unix habits (issue 39), at 2 and 4 ranks: `gcsh -` runs its input as one
# chunk, as lua does, reading a terminal until Ctrl-D; one Ctrl-C typed at
# the terminal ends a piped session (130).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
need_tmux
tmux_setup   # a tmux server of our own (its socket in $TMP), gone with $TMP

# start80 NAME ARGS...: gcsh ARGS in an 80-column pane (HOME=$TMP/home, no
# XDG_CONFIG_HOME); EXIT=code at its end.
mkdir -p "$TMP/home"
start80() {
    S=$1; shift
    TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 30 \
        "cd '$PWD' && unset XDG_CONFIG_HOME; HOME='$TMP/home' GCSH_HISTORY= GCSH_TEST_TAG='$TAG' '$GCSH' $*; echo EXIT=\$?; exec sleep 300"
}

for n in 2 4; do
    # ---- piped into `-`: one chunk, a script's statuses
    OUT=$(printf 'local x = 5\nprint(x)\n' | timeout 60 "$GCSH" -n $n - 2>&1); RC=$?
    expect_eq "[$n] piped into -: one chunk (a local lives on)" "$RC:$OUT" "0:[0-$((n - 1))] 5"
    OUT=$(printf 'print("ran")\nlocal = 1\n' | timeout 60 "$GCSH" -n $n - 2>&1); RC=$?
    expect_eq "[$n] -: a syntax error, nothing ran: 125" "$RC:$OUT" "125:stdin:2: <name> expected near '='"
    OUT=$(printf 'if rank == 1 then error("x", 0) end\nprint("after")\n' |
          timeout 60 "$GCSH" -n $n - 2>&1); RC=$?
    expect_eq "[$n] -: an error: 1" "$RC" 1
    OUT=$(printf 'os.exit(3)\n' | timeout 60 "$GCSH" -n $n - 2>&1); RC=$?
    expect_eq "[$n] -: os.exit(3)" "$RC" 3
    OUT=$(printf 'local x = 5\nprint(x)\n' | timeout 60 "$GCSH" -n $n 2>&1); RC=$?
    expect_eq "[$n] piped without -: line by line (x is a new local)" "$RC:$OUT" "0:[0-$((n - 1))] nil"

    # ---- `gcsh -n N -` at a terminal reads until Ctrl-D, then runs it all
    start80 "t$n" -n $n -
    keys 'local x = 5' Enter
    keys 'print(x * 2)' Enter
    wait_for 'print(x * 2)' 10
    expect_not_contains "[$n] - at a terminal: nothing runs before Ctrl-D" "$(screen)" "EXIT="
    press C-d
    check_wait "[$n] - at a terminal: Ctrl-D runs the whole input" "[0-$((n - 1))] 10" 30
    check_wait "[$n] - at a terminal: exit 0" "EXIT=0" 15

    # ---- one Ctrl-C typed at the terminal ends a piped session (130): while
    # it waits for input, and while a line runs (the lines after it do not run)
    for when in idle running; do
        mkfifo "$TMP/in$n$when"
        exec 8<>"$TMP/in$n$when"   # held open: no end of input
        start80 "p$n$when" -n $n "<'$TMP/in$n$when'"
        printf '%s\n' 'print("ready")' >&8
        check_wait "[$n] piped at a terminal ($when): runs" "[0-$((n - 1))] ready" 30
        if [ $when = running ]; then
            printf '%s\n' 'print("running") gcsh.sleep(60)' 'print("after")' >&8
            check_wait "[$n] piped at a terminal: a line runs" "[0-$((n - 1))] running" 30
        fi
        press C-c
        check_wait "[$n] piped at a terminal ($when): one Ctrl-C ends it: 130" "EXIT=130" 20
        expect_not_contains "[$n] piped at a terminal ($when): the next line did not run" "$(screen)" "after"
        exec 8>&-
    done
    expect_no_procs "[$n] piped, Ctrl-C: no process left" "$TAG"

    # ---- a SIGINT from a program (timeout -s INT) interrupts the line, and
    # the session reads on (README "Signals from outside")
    bg_start $n
    bg_line 'print("running") gcsh.sleep(60)'
    bg_line 'print("after")'
    bg_wait_out running 60
    kill -INT "$BG"
    bg_wait_out after 30 && pass || fail "[$n] kill -INT: the next line did not run"
    bg_end
    expect_eq "[$n] kill -INT, then the end of input: 1 (the line failed)" "$RC" 1
done

# ---- the init file of an interactive session: ~/.gcshrc, or
# $XDG_CONFIG_HOME/gcsh/init.lua (~/.config/gcsh/init.lua) first; not with -E
printf 'greeting = "from gcshrc " .. size\n' >"$TMP/home/.gcshrc"
for n in 2 4; do
    start80 "rc$n" -n $n
    check_wait "[$n] init file: prompt" "gcsh[0-$((n - 1))]>" 30
    keys '=greeting' Enter
    check_wait "[$n] ~/.gcshrc ran on every rank" "[0-$((n - 1))] from gcshrc $n" 15
    keys '.quit' Enter
    check_wait "[$n] init file: .quit" "EXIT=0" 15
done
start80 rcE -n 2 -E
check_wait "-E: prompt" "gcsh[0-1]>" 30
keys '=greeting' Enter
check_wait "-E: no init file" "[0-1] nil" 15
keys '.quit' Enter
mkdir -p "$TMP/home/.config/gcsh"
printf 'greeting = "from init.lua"\n' >"$TMP/home/.config/gcsh/init.lua"
start80 rcx -n 2
check_wait "init.lua: prompt" "gcsh[0-1]>" 30
keys '=greeting' Enter
check_wait "~/.config/gcsh/init.lua comes first" "[0-1] from init.lua" 15
keys '.quit' Enter
OUT=$(printf '=greeting\n' | HOME=$TMP/home timeout 60 "$GCSH" -n 2 2>&1)
expect_eq "a piped session runs no init file" "$OUT" "[0-1] nil"
rm -rf "$TMP/home/.gcshrc" "$TMP/home/.config"

# ---- at the prompt: Ctrl-D at ">>" leaves no blank line, then or later;
# Ctrl-L clears the screen; `exit` and `quit` leave as .quit does
for n in 2 4; do
    P="gcsh[0-$((n - 1))]>"
    start80 "k$n" -n $n
    check_wait "[$n] prompt" "$P" 30
    keys 'for i = 1, 2 do' Enter
    check_wait "[$n] continuation" "$P>" 10
    press C-d
    keys 'print("after")' Enter
    check_wait "[$n] after Ctrl-D at >>" "[0-$((n - 1))] after" 15
    keys 'print("again")' Enter
    check_wait "[$n] a later line" "[0-$((n - 1))] again" 15
    expect_eq "[$n] Ctrl-D at >>: no blank line, then or later" "$(screen | grep -v '^gcsh ' | sed -n 1,6p)" \
        "$P for i = 1, 2 do
$P>
$P print(\"after\")
[0-$((n - 1))] after
$P print(\"again\")
[0-$((n - 1))] again"
    press C-l
    # (the visible screen: the scrollback keeps what was there)
    wait_until 10 eval '! tm capture-pane -p -t "$S" | grep -qF again' && pass ||
        fail "[$n] Ctrl-L did not clear the screen"
    keys "$([ $n = 2 ] && echo exit || echo quit)" Enter
    check_wait "[$n] exit/quit leaves" "EXIT=0" 15
done

# ---- no escape sequences for TERM=dumb or NO_COLOR (the progress line)
if command -v script >/dev/null; then
    for how in TERM=dumb NO_COLOR=1 TERM=xterm; do
        env $how timeout 60 script -qec "'$GCSH' -n 2 -e 'for i = 1, 20 do gcsh.progress(i, 20) gcsh.sleep(0.1) end'" \
            "$TMP/raw" </dev/null >/dev/null
        bars=$(grep -c '####' "$TMP/raw") esc=$(grep -c $'\033' "$TMP/raw")
        if [ $how = TERM=xterm ]; then
            expect_eq "$how: the progress line, with its escapes" "$((bars > 0)):$((esc > 0))" "1:1"
        else
            expect_eq "$how: the progress line, no escape" "$((bars > 0)):$esc" "1:0"
        fi
    done
else
    skip "script (util-linux) is not installed"
fi

# ---- io.read: a line cannot read stdin (the lines come from there): refused,
# one line, and the next line is not eaten; a script reads stdin as lua does
printf 'from a file\n' >"$TMP/data"
for n in 2 4; do
    all="0-$((n - 1))"
    OUT=$(printf '%s\n' 'x = io.read()' 'print("next")' 'for l in io.lines() do end' \
          'y = io.stdin:read("l")' 'print(io.open("'"$TMP/data"'"):read("l"))' |
          timeout 60 "$GCSH" -n $n 2>&1); RC=$?
    expect_eq "[$n] piped: io.read refused, the next lines run" "$OUT" "[$all] stdin:1: io.read: a line cannot read stdin (the lines come from there); use a file (io.open), or a script: gcsh -n N script.lua < data
[$all] next
[$all] stdin:1: io.lines: a line cannot read stdin (the lines come from there); use a file (io.open), or a script: gcsh -n N script.lua < data
[$all] stdin:1: io.stdin:read: a line cannot read stdin (the lines come from there); use a file (io.open), or a script: gcsh -n N script.lua < data
[$all] from a file"
    expect_eq "[$n] piped: a refused read is a failed line: 1" "$RC" 1
    printf 'print(io.read())\n' >"$TMP/reads.lua"
    OUT=$(printf 'hello\n' | timeout 60 "$GCSH" -n $n "$TMP/reads.lua" 2>&1)
    others=$([ $n = 2 ] && echo 1 || echo "1-$((n - 1))")
    expect_eq "[$n] a script: rank 0 reads stdin, the others get nil" "$OUT" "[0] hello
[$others] nil"
    # at the prompt: refused, and what is typed next runs as a line
    start80 "r$n" -n $n
    check_wait "[$n] prompt" "gcsh[$all]>" 30
    keys 'io.read()' Enter
    # (a bare expression is `return io.read()`, a tail call: no line to name)
    check_wait "[$n] io.read at the prompt: refused" "[$all] io.read: a line cannot read stdin" 15
    keys 'print("typed " .. rank)' Enter
    check_wait "[$n] the next typed line runs" "[1] typed 1" 15
    keys '.quit' Enter
    check_wait "[$n] quit" "EXIT=0" 15
    # a script at a terminal: stdin is not forwarded to rank 0 (gcsh -n): nil
    start80 "s$n" -n $n "$TMP/reads.lua"
    check_wait "[$n] a script at a terminal: io.read is nil on every rank" "[$all] nil" 30
done

finish
