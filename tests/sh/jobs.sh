#!/usr/bin/env bash
# The terminal as a shell user expects it, in a real terminal (tmux) under
# an interactive bash with job control: Ctrl-Z stops the whole job and
# gives the terminal back, fg brings the prompt back as it was, bg is
# refused at the prompt; pasted lines all run, in order, with and without
# bracketed paste; Ctrl-D at a continuation prompt drops the chunk only.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
need_tmux
tmux_setup

# start_shell NAME: an interactive bash (prompt "$ ") in an 80x40 pane, in
# a clean environment but for PATH, gcsh's test tag and the sanitizers'
# options (make test-asan).
start_shell() {
    S=$1
    TAG=$(new_tag); TAGS+=("$TAG")
    tm new-session -d -s "$S" -x 80 -y 40 \
        "cd '$PWD' && env -i PATH='$PATH' HOME='$TMP' TERM=screen GCSH_HISTORY= \
         GCSH_TEST_TAG='$TAG' ${OMPI_ALLOW_RUN_AS_ROOT:+OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1} \
         ${ASAN_OPTIONS:+ASAN_OPTIONS='$ASAN_OPTIONS'} ${UBSAN_OPTIONS:+UBSAN_OPTIONS='$UBSAN_OPTIONS'} \
         PS1='$ ' bash --norc --noprofile -i"
}
# last_line: the last line shown that is not empty.
last_line() { screen | grep -v '^$' | tail -n 1; }
# wait_last TEXT SECONDS: until the last line shown is TEXT.
last_is() { [ "$(last_line)" == "$1" ]; }
wait_last() { wait_until "$2" last_is "$1"; }
check_last() {
    if wait_last "$2" "$3"; then pass; else
        fail "$1: the last line is not '$2'"; screen | grep -v '^$' | tail -n 15 | sed 's/^/  | /'; fi
}
# states: the process states of the session's gcsh processes ("T" stopped).
states() {
    local p
    for p in $(tagged_pids "$TAG"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = gcsh ] && awk '{print $3}' "/proc/$p/stat"
    done | sort | uniq -c | awk '{printf "%s%s ", $1, $2}'
}
# wait_states WANT SECONDS: until states says WANT ("3T ").
states_are() { [ "$(states)" == "$1" ]; }
wait_states() { wait_until "$2" states_are "$1"; }

P='gcsh[0-1]> '
PT='gcsh[0-1]>'

# ---- Ctrl-Z at the prompt, fg
start_shell j1
check_wait "bash is up" '$' 10
keys "$GCSH -n 2" Enter
check_wait "gcsh's prompt" "$PT" 30
keys 'x = 4'
wait_for "${P}x = 4" 5
press C-z
check_wait "Ctrl-Z: bash says the job stopped" "Stopped" 10
check_last "Ctrl-Z: bash's prompt is back" '$' 10
# gcsh -n's launcher, rank 0 and rank 1: all stopped
if wait_states "3T " 10; then pass; else fail "Ctrl-Z: every gcsh process stopped: $(states)"; fi
keys 'echo "the shell answers"' Enter
check_wait "Ctrl-Z: the terminal is the shell's" "the shell answers" 5 2
keys 'fg' Enter
check_wait "fg: the prompt and the half line are back" "${P}x = 4" 10 2
if wait_states "3S " 10; then pass; else fail "fg: every gcsh process runs again: $(states)"; fi
keys '2; print("x is " .. x)' Enter
check_wait "fg: the line goes on where it was" "[0-1] x is 42" 10

# ---- Ctrl-Z while a command runs, fg: the command goes on
keys 'for i = 1, 6 do print("tick " .. i) gcsh.sleep(0.5) end' Enter
check_wait "a command runs" "[0-1] tick 1" 10
press C-z
check_wait "Ctrl-Z in a command: stopped" "Stopped" 10 2
check_last "Ctrl-Z in a command: bash's prompt" '$' 10
keys 'fg' Enter
check_wait "fg: the command ends" "[0-1] tick 6" 20
check_last "fg: then the prompt" "$PT" 10

# ---- bg at the prompt: refused (the prompt needs the terminal), then fg
press C-z
check_wait "Ctrl-Z again" "Stopped" 10 3
check_last "Ctrl-Z again: bash's prompt" '$' 10
keys 'bg' Enter
check_wait "bg: gcsh says why it stops again" "gcsh: the prompt needs the terminal: the job stops until fg" 10
if wait_states "3T " 10; then pass; else fail "bg: every gcsh process stopped again: $(states)"; fi
press Enter
wait_last '$' 10
keys 'jobs' Enter
check_wait "bg: jobs answers" '$ jobs' 5
wait_last '$' 10
expect_contains "bg: the job is stopped again" "$(screen | sed -n '/^\$ jobs$/,$p')" "Stopped"
keys 'fg' Enter
check_last "fg after bg: the prompt" "$PT" 10
keys 'print("after bg")' Enter
check_wait "fg after bg: the session works" "[0-1] after bg" 10

# ---- Ctrl-D at a continuation prompt drops the chunk, the session goes on
keys 'for i = 1, 2 do' Enter
check_wait "a continuation prompt" "gcsh[0-1]>>" 5
press C-d
check_last "Ctrl-D at >>: back to the prompt" "$PT" 10
keys 'print("still here " .. tostring(i))' Enter
check_wait "Ctrl-D at >>: the session goes on" "[0-1] still here nil" 10
expect_eq "Ctrl-D at >>: every process still there" "$(states)" "3S "

# ---- a 20-line paste, without bracketed paste: every line, in order
cat >"$TMP/paste.lua" <<'EOF'
print("line 1")
a = 10
print("line 3 " .. a)
for i = 1, 2 do
	print("loop " .. i)
end
=a * 2
b = {}
b.x = "in b"
print(b.x)
s = 0
for i = 1, 4 do s = s + i end
print("sum " .. s)
if rank == 0 then
  print("rank 0 only")
end
c = a + 1
print("c " .. c)
print("line 19")
print("line 20")
EOF
tm load-buffer "$TMP/paste.lua"
n=$(screen | grep -c "^${P//[/\\[}print(\"line 1\")")
tm paste-buffer -t "$S"   # no -p: the keys as typed, with carriage returns
check_wait "paste: the last line ran" "[0-1] line 20" 20
WANT='[0-1] line 1
[0-1] line 3 10
[0-1] loop 1
[0-1] loop 2
[0-1] 20
[0-1] in b
[0-1] sum 10
[0] rank 0 only
[0-1] c 11
[0-1] line 19
[0-1] line 20'
GOT=$(screen | sed -n '/print("line 1")$/,$p' | grep '^\[')
expect_eq "paste: every line's output, in order" "$GOT" "$WANT"
expect_eq "paste: each line after its prompt" \
    "$(screen | sed -n '/print("line 1")$/,$p' | grep -c '^gcsh\[0-1\]>>* ')" 20
check_last "paste: then the prompt" "$PT" 10

# ---- the same with bracketed paste (readline takes it as one line)
keys 'clear_screen_marker = 1' Enter
tm paste-buffer -p -t "$S"
wait_for 'print("line 20")' 10 2 # readline holds the whole paste
press Enter
check_wait "bracketed paste: the last line ran" "[0-1] line 20" 20 2
GOT=$(screen | sed -n '/clear_screen_marker = 1$/,$p' | grep '^\[')
expect_eq "bracketed paste: every line's output, in order" "$GOT" "$WANT"

# ---- leaving: Ctrl-D at an empty prompt
wait_last "$PT" 10
press C-d
check_last "Ctrl-D: bash's prompt" '$' 15
keys 'echo "status $?"' Enter
check_wait "Ctrl-D: exit 0" "status 0" 10

# ---- started in the background: a script leaves the terminal to the shell;
# a session's prompt waits for fg
printf 'gcsh.sleep(1)\nprint("script done " .. rank)\n' >"$TMP/bg.lua"
keys "$GCSH -n 2 $TMP/bg.lua &" Enter
keys 'echo "the shell keeps the terminal"' Enter
check_wait "a script in the background: the shell answers" "the shell keeps the terminal" 5 2
check_wait "a script in the background: it runs" "[1] script done 1" 20
keys 'wait; echo "script status $?"' Enter
check_wait "a script in the background: exit 0" "script status 0" 20
keys "$GCSH -n 2 &" Enter
check_wait "a session in the background: its prompt waits" "gcsh: the prompt needs the terminal: the job stops until fg" 30 2
if wait_states "3T " 10; then pass; else fail "a session in the background: stopped: $(states)"; fi
press Enter
keys 'fg' Enter
check_last "a session in the background: fg gives it the prompt" "$PT" 15
keys 'print("from the background")' Enter
check_wait "a session in the background: then it works" "[0-1] from the background" 10
press C-d
check_last "a session in the background: Ctrl-D" '$' 15
keys 'exit' Enter
expect_no_procs "no process left" "$TAG"

finish
