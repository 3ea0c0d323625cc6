#!/usr/bin/env bash
# A real terminal: gcsh in a tmux pane (its own tmux server), driven with
# send-keys and read back with capture-pane.  Waits poll every 0.1 s.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
need_tmux
tmux_setup   # a tmux server of our own, gone with $TMP

# prompts PROMPT: how many lines are PROMPT, alone or followed by a blank and
# what was typed there (count before a command, then wait for one more).
prompts() {
    screen | awk -v p="$1" 'index($0, p) == 1 && (length($0) == length(p) || substr($0, length(p) + 1, 1) == " ")' | wc -l
}
# wait_prompts PROMPT COUNT SECONDS
wait_prompts() {
    local i
    for ((i = 0; i <= $3 * 10; i++)); do
        [ "$(prompts "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
# wait_idle PROMPT SECONDS: until the last line shown is an empty PROMPT.
wait_idle() {
    local i
    for ((i = 0; i <= $2 * 10; i++)); do
        [ "$(screen | grep -v '^$' | tail -n 1)" == "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
# line_after TEXT: the screen line right after the first line holding TEXT.
line_after() { screen | grep -A1 -F -- "$1" | sed -n 2p; }

P='gcsh[0-1]> '
PT='gcsh[0-1]>'  # the prompt as capture shows it on an empty line (trailing blanks cut)

# ---- session 1: gcsh -n 2
HIST="$TMP/history"
start s1 -n 2
check_wait "prompt" "$PT" 30
expect_match "banner: 2 ranks and the backend" "$(screen)" \
    '^gcsh 0\.1\.0 \(Lua 5\.4\.[0-9]+\) on 2 ranks, backend host \(.*\); \.help for help$'

keys '1+1' Enter
check_wait "an expression" "[0-1] 2" 10
expect_eq "expression output follows its line" "$(line_after "${P}1+1")" "[0-1] 2"

# completion: globals, fields after '.', methods after ':', dot-commands
keys 'string.fo' Tab
check_wait "completion of string.fo" "${P}string.format" 5
keys '("%d-%s", 7, "x")' Enter
check_wait "completed line runs" "[0-1] 7-x" 10
keys '=type(gcsh.sl' Tab
check_wait "completion of gcsh.sl" "${P}=type(gcsh.sleep" 5
keys ')' Enter
check_wait "completed gcsh.sleep" "[0-1] function" 10
n=$(prompts "$PT")
keys 's = "abc"' Enter
wait_prompts "$PT" $((n + 1)) 10   # it ran (and printed nothing)
keys '=s:up' Tab
check_wait "completion of a method after ':'" "${P}=s:upper" 5
keys '()' Enter
check_wait "completed method runs" "[0-1] ABC" 10
keys '.ti' Tab
check_wait "completion of .ti" "${P}.time" 5
press Tab Tab
check_wait "Tab Tab lists .time .timeout" ".time     .timeout" 5
press C-u Enter

# continuation prompt
keys 'for i = 1, 2 do' Enter
check_wait "continuation prompt" "gcsh[0-1]>>" 5
keys 'print(i * 10)' Enter
check_wait "continuation prompt again" "gcsh[0-1]>> print(i * 10)" 5
keys 'end' Enter
check_wait "continued chunk runs" "[0-1] 20" 10
expect_eq "continued chunk output" "$(line_after "gcsh[0-1]>> end")" "[0-1] 10"

# .ranks changes the prompt
keys '.ranks 1' Enter
check_wait ".ranks 1: prompt" "gcsh[1]>" 5
keys '=rank' Enter
check_wait ".ranks 1: only rank 1 runs" "[1] 1" 10
expect_eq ".ranks 1: output" "$(line_after "gcsh[1]> =rank")" "[1] 1"
n=$(prompts "$PT")
keys '.ranks all' Enter
if wait_prompts "$PT" $((n + 1)) 5; then pass; else fail ".ranks all: prompt back to $PT"; fi

# Ctrl-C interrupts a command on every rank; the next command works
keys '.timeout 0.5' Enter
check_wait ".timeout" "timeout 0.5 s" 5
keys 'print("looping") while true do end' Enter
check_wait "a loop runs on both ranks" "[0-1] looping" 10
press C-c
check_wait "Ctrl-C: interrupted" "gcsh: interrupted [0-1]" 10
expect_contains "Ctrl-C: interrupting" "$(screen)" "gcsh: interrupting [0-1]"
expect_contains "Ctrl-C: each rank's error" "$(screen)" "[0-1] interrupted!"
expect_not_contains "Ctrl-C: one line, no traceback" "$(screen)" "stack traceback"
keys '.timeout 0' Enter
keys 'print("after " .. rank)' Enter
check_wait "the command after Ctrl-C" "[1] after 1" 10
keys 'print("sleeping") gcsh.sleep(60)' Enter
wait_for "[0-1] sleeping" 10   # it runs: Ctrl-C now is not Ctrl-C at the prompt
press C-c
check_wait "Ctrl-C ends gcsh.sleep" "gcsh: interrupted [0-1]" 10 2

# Ctrl-C at the prompt clears a half-typed line (and a half-typed chunk)
keys 'print("half' 
wait_for "${P}print(\"half" 5
press C-c
keys 'print("whole")' Enter
check_wait "Ctrl-C at the prompt" "[0-1] whole" 10
expect_not_contains "Ctrl-C at the prompt: the half line is gone" "$(screen)" "halfprint"
n=$(prompts 'gcsh[0-1]>>')
keys 'if true then' Enter
wait_prompts 'gcsh[0-1]>>' $((n + 1)) 5
press C-c
keys 'print("fresh")' Enter
check_wait "Ctrl-C in a continuation" "[0-1] fresh" 10
expect_eq "Ctrl-C in a continuation: a fresh prompt" "$(line_after "[0-1] fresh" | cut -c1-10)" "gcsh[0-1]>"

# Ctrl-D ends every process, exit 0
keys 'print("last line")' Enter
check_wait "last line" "[0-1] last line" 10
wait_idle "$PT" 10
press C-d
check_wait "Ctrl-D: exit 0" "EXIT=0" 15
expect_no_procs "Ctrl-D: no gcsh or mpirun left" "$TAG"

# history: whole chunks, written as they are run
H=$(cat "$HIST" 2>/dev/null)
expect_contains "history: a line" "$H" "1+1"
expect_contains "history: a completed line" "$H" 'string.format("%d-%s", 7, "x")'
expect_contains "history: dot-commands" "$H" ".ranks 1"
expect_eq "history: last line" "$(tail -n 1 <<<"$H")" 'print("last line")'
expect_contains "history: a chunk of several lines, whole" "$(sed 's/^#[0-9]*$/#/' <<<"$H")" "#
for i = 1, 2 do
print(i * 10)
end
#"
expect_not_contains "history: no half line" "$H" 'print("half'

# ---- session 2: Up recalls the last line of session 1
start s2 -n 2
check_wait "second session: prompt" "$PT" 30
press Up
check_wait "Up recalls the last line" "${P}print(\"last line\")" 5
press Enter
check_wait "recalled line runs" "[0-1] last line" 10
# the progress line: gcsh.progress reports, then cleared; a long wait for a rank
keys 'for i = 1, 30 do gcsh.progress(i - 1, 30, "demo") gcsh.sleep(0.1) end print("after progress")' Enter
check_wait "progress: a line on the terminal" "demo [" 10
expect_match "progress: done/total and elapsed" "$(screen)" '^demo \[#*\.*\] [0-9]+/30  [0-9]+\.[0-9] s$'
check_wait "progress: the command ends" "[0-1] after progress" 15
wait_idle "$PT" 10
expect_not_contains "progress: cleared when done" "$(screen)" "demo ["
keys 'if rank == 1 then gcsh.sleep(3) end' Enter
check_wait "progress: a long wait names the ranks still running" "waiting for [1]: 1 of 2 ranks done" 10
wait_idle "$PT" 10
expect_not_contains "progress: the wait line is cleared" "$(screen)" "waiting for"
keys 'if rank == 1 then' Enter
keys 'print("multi " .. rank)' Enter
keys 'end' Enter
check_wait "second session: a chunk of several lines" "[1] multi 1" 10
wait_idle "$PT" 10

press C-d
check_wait "second session: exit 0" "EXIT=0" 15
expect_no_procs "second session: no process left" "$TAG"

# ---- a single rank, without mpirun (same history: Up brings back the whole chunk)
start s3
check_wait "1 rank: prompt" "gcsh[0]>" 30
expect_match "1 rank: banner" "$(screen)" '^gcsh 0\.1\.0 \(Lua 5\.4\.[0-9]+\) on 1 rank, backend host'
CMDS=$(for p in $(tagged_pids "$TAG"); do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)
expect_eq "1 rank: one gcsh process" "$(grep -c "^$GCSH " <<<"$CMDS")" 1
expect_not_contains "1 rank: no mpirun" "$CMDS" mpirun
press Up
check_wait "1 rank: Up recalls a chunk of several lines" "gcsh[0]> if rank == 1 then" 5
n=$(prompts 'gcsh[0]>')
press Enter
wait_prompts 'gcsh[0]>' $((n + 1)) 10
keys '=rank == 0' Enter
check_wait "1 rank: the recalled chunk ran" "gcsh[0]> =rank == 0" 10
expect_eq "1 rank: the recalled chunk, whole (it prints nothing at rank 0)" \
    "$(screen | grep -A3 -F 'gcsh[0]> if rank == 1 then')" 'gcsh[0]> if rank == 1 then
print("multi " .. rank)
end
gcsh[0]> =rank == 0'
keys '=rank .. "/" .. size' Enter
check_wait "1 rank: values" "0/1" 10
expect_eq "1 rank: values, no prefix" "$(line_after 'gcsh[0]> =rank .. "/" .. size')" "0/1"
keys 'for i = 1, 2 do' Enter
check_wait "1 rank: continuation" "gcsh[0]>>" 5
keys 'end' Enter
keys 'print("looping") while true do end' Enter
wait_for "looping" 10 2   # the line typed, then its output
press C-c
check_wait "1 rank: Ctrl-C" "gcsh: interrupted [0]" 10
keys 'print("one")' Enter
check_wait "1 rank: after Ctrl-C" "one" 10 2
expect_eq "1 rank: output has no prefix" "$(line_after 'gcsh[0]> print("one")')" "one"
wait_idle 'gcsh[0]>' 10
press C-d
check_wait "1 rank: exit 0" "EXIT=0" 15
expect_no_procs "1 rank: no process left" "$TAG"

finish
