#!/usr/bin/env bash
# Faults (issue 6): every one ends in a clear message and a working next
# command, or, for lost ranks and device faults, in every process exiting
# with a distinct status.  Host backend, at 2 and 4 ranks; the terminal parts
# (Ctrl-C, .abort) through a real pseudo-terminal (tmux, as term.sh).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
tmux_setup
T=$'\t'

# ---- mismatched collectives: caught before MPI runs, same error everywhere
for n in 2 4; do
    last=$((n - 1))
    gcsh_pipe $n "c = comm.world()
c:allreduce(tensor.new(rank == 1 and 5 or 4))
c:allreduce(tensor.new(4, rank == $last and 'f64' or 'f32'))
c:allreduce(tensor.new(4), rank == 0 and 'max' or 'sum')
c:broadcast(tensor.new(4), rank == 0 and 1 or 0)
=c:allreduce(tensor.new(2):fill(1))[0]" 2>&1
    others=$([ $n = 2 ] && echo "0" || echo "0,2-3")
    rest=$([ $n = 2 ] && echo "0" || echo "0-2")
    tail_=$([ $n = 2 ] && echo "1" || echo "1-3")
    expect_contains "$n ranks: count mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: allreduce #1: [$others] f32 x4 sum, [1] f32 x5 sum"
    expect_contains "$n ranks: dtype mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: allreduce #1: [$rest] f32 x4 sum, [$last] f64 x4 sum"
    expect_contains "$n ranks: op mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: allreduce #1: [0] f32 x4 max, [$tail_] f32 x4 sum"
    expect_contains "$n ranks: root mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: broadcast #1: [0] f32 x4 root 1, [$tail_] f32 x4 root 0"
    expect_contains "$n ranks: the next collective works (numbers stayed in step)" "$OUT" "[0-$last] $n.0"
    expect_eq "$n ranks: exit status" "$RC" 1
done

# ---- mismatched kernel collectives (issue 5's kernels are checked too):
# caught before any launch, and the window's barriers stay in step
for n in 2 4; do
    last=$((n - 1))
    others=$([ $n = 2 ] && echo "0" || echo "0,2-3")
    waiters=$([ $n = 2 ] && echo "0" || echo "0-2")
    gcsh_pipe $n "c = comm.world() w = c:window(64) w:tensor():fill(rank + 1)
kernel.allreduce(w, {n = rank == 1 and 9 or 8, algo = 'oneshot'})
kernel.allreduce(w, {algo = rank == 1 and 'twoshot' or 'oneshot'})
kernel.reduce_to(rank == 1 and 1 or 0, w)
kernel.allgather(w, {offset = rank == 1 and 4 or 0, n = 4 * $n})
if rank ~= $last then kernel.broadcast(0, w) end
=kernel.allreduce(w, {n = 2})[0]" 2>&1
    expect_contains "$n ranks: kernel count mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: kernel.allreduce #2: [$others] f32 x8 sum window 1 offset 0 oneshot, [1] f32 x9 sum window 1 offset 0 oneshot"
    expect_contains "$n ranks: kernel algorithm mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: kernel.allreduce #2: [$others] f32 x64 sum window 1 offset 0 oneshot, [1] f32 x64 sum window 1 offset 0 twoshot"
    expect_contains "$n ranks: kernel root mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: kernel.reduce_to #2: [$others] f32 x64 sum root 0 window 1 offset 0 direct, [1] f32 x64 sum root 1 window 1 offset 0 direct"
    expect_contains "$n ranks: kernel offset mismatch" "$OUT" "[0-$last] stdin:1: collective mismatch: kernel.allgather #2: [$others] f32 x$((4 * n)) window 1 offset 0 direct, [1] f32 x$((4 * n)) window 1 offset 4 direct"
    expect_contains "$n ranks: a rank that skips a kernel collective is named" "$OUT" "stdin:1: kernel.broadcast #2: [$waiters] waited 0.0 s for [$last]: [$last] finished the command"
    expect_contains "$n ranks: the next kernel collective is right" "$OUT" "[0-$last] $((n * (n + 1) / 2)).0"
done

# ---- a rank that skips a collective: named at once, with where it is
gcsh_pipe 4 'c = comm.world()
if rank ~= 2 then c:barrier() end
c:barrier() print("next")'
expect_contains "skipped collective" "$OUT" "[0-1,3] stdin:1: barrier #1: [0-1,3] waited 0.0 s for [2]: [2] finished the command"
expect_contains "skipped collective: next command" "$OUT" "[0-3] next"

# ---- mixed calls and a rank still running Lua, past the timeout
gcsh_pipe 2 '.timeout 1
c = comm.world()
if rank == 1 then local t = os.clock() while os.clock() - t < 3 do end end c:barrier()
if rank == 1 then gcsh.sleep(2.5) else c:allreduce(tensor.new(3)) end
c:barrier() print("next")'
expect_match "late rank: hang report" "$OUT" '^gcsh: 1\.[0-9] s: done \[\], still running \[0-1\]; Ctrl-C interrupts$'
expect_match "late rank: report names the waiting rank" "$OUT" '^gcsh:   \[0\] in barrier #1 \(waiting for the others, 1\.[0-9] s\)$'
expect_contains "late rank: report names the line" "$OUT" "gcsh:   [1] running line 1 of the chunk"
expect_match "late rank: check timed out, naming the line" "$OUT" '^\[0\] stdin:1: barrier #1: \[0\] waited 1\.[0-9] s for \[1\]: \[1\] running line 1 of the chunk$'
expect_match "rank in a C wait: named" "$OUT" '^\[0\] stdin:1: allreduce #1: \[0\] waited 1\.[0-9] s for \[1\]: \[1\] in gcsh\.sleep\(2\.5\) for 1\.[0-9] s$'
expect_contains "late rank: next command" "$OUT" "[0-1] next"

# ---- a rank that arrives late but within the timeout: no false alarm
gcsh_pipe 4 '.timeout 3
c = comm.world()
if rank == 3 then gcsh.sleep(1) end
=c:allreduce(tensor.new(1):fill(1))[0]'
expect_eq "late within the timeout" "$OUT" "timeout 3 s
[0-3] 4.0"
expect_eq "late within the timeout: exit 0" "$RC" 0

# ---- send/recv are checked in pairs
gcsh_pipe 2 'c = comm.world()
if rank == 0 then c:send(tensor.new(3), 1) else c:recv(tensor.new(4), 0) end
if rank == 0 then c:send(tensor.new(2), 1) else c:send(tensor.new(2), 0) end
if rank == 0 then c:send(tensor.new(2):fill(7), 1) else print(c:recv(tensor.new(2), 0)[1]) end'
expect_all_ranks "send/recv count mismatch, every rank" "$OUT" "stdin:1: send/recv mismatch: [0] send to 1 f32 x3, [1] recv from 0 f32 x4" 2
expect_contains "send/send deadlock" "$OUT" "[0-1] stdin:1: send/recv mismatch: [0] send to 1 f32 x2, [1] send to 0 f32 x2"
expect_contains "a matched pair works" "$OUT" "[1] 7.0"

# ---- .check off: nothing is exchanged (and a mismatch reaches MPI)
gcsh_pipe 2 '.check off
c = comm.world() c:barrier()
print(gcsh.check())
.check on
print(gcsh.check())'
expect_eq ".check off" "$OUT" "check off
[0-1] false
check on
[0-1] true"

# ---- an aborted communicator, a fresh world; and a one-rank OOM
gcsh_pipe 2 'c = comm.world()
c2 = c:split(0)
gcsh.debug.inject("fatal_typo")
if rank == 1 then gcsh.debug.inject("oom") end t = tensor.new(4) c:allreduce(t)
=c:allreduce(tensor.new(1):fill(1))[0]' 2>&1
OUT_OOM=$OUT
# (the inject facility is refused without GCSH_TEST_FAULTS=1)
expect_contains "inject needs GCSH_TEST_FAULTS" "$OUT_OOM" "gcsh.debug.inject is a test facility"
OUT=$(printf '%s\n' 'c = comm.world()' \
    'if rank == 1 then gcsh.debug.inject("oom") end t = tensor.new(4) c:allreduce(t)' \
    '=c:allreduce(tensor.new(1):fill(1))[0]' |
    GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n 2 2>&1)
expect_contains "OOM on one rank: its error" "$OUT" "[1] stdin:1: out of host memory: cannot allocate 16 bytes (injected by gcsh.debug.inject)"
expect_contains "OOM on one rank: the others' error names it" "$OUT" "[0] stdin:1: allreduce #1: [0] waited 0.0 s for [1]: [1] ended the command with an error"
expect_contains "OOM on one rank: the next command works" "$OUT" "[0-1] 2.0"

# ---- an asynchronous error: reported by the command that issued the work
# (the end-of-command wait; on cuda, what the command left on the stream)
OUT=$(printf '%s\n' 'c = comm.world()' \
    'c:allreduce(tensor.new(4):fill(1)) if rank == 1 then gcsh.debug.inject("async") end print("issued")' \
    '=c:allreduce(tensor.new(1):fill(1))[0]' |
    GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_eq "async error: the command's own output first, then its error, on the rank that had it" "$OUT" "[0-1] issued
[1] injected asynchronous error (gcsh.debug.inject, standing in for an error of work still on a GPU stream)
[0-1] 2.0"
expect_eq "async error: a piped session with a failed line exits 1" "$RC" 1

# ---- a line whose results cannot be printed failed (as lua.c words it): the
# session's status says so, on the rank whose print failed
OUT=$(printf '%s\n' 'setmetatable({}, {__tostring = function() if rank == 1 then error("no text") end return "t" end})' \
    'print("next")' | timeout 60 "$GCSH" -n 2 2>&1); RC=$?
expect_contains "print error: rank 1's, in lua.c's words" "$OUT" "[1] error calling 'print' (stdin:1: no text)"
expect_contains "print error: rank 0 printed" "$OUT" "[0] t"
expect_contains "print error: the next line runs" "$OUT" "[0-1] next"
expect_eq "print error: a piped session with that line exits 1" "$RC" 1

# ---- an unrecoverable (device) fault: every rank exits 70, nothing left
TAG=$(new_tag); TAGS+=("$TAG")
OUT=$(printf '%s\n' 'c = comm.world() c:barrier()' 'if rank == 1 then gcsh.debug.inject("fatal") end c:barrier()' 'print("never")' |
    GCSH_TEST_TAG=$TAG GCSH_TEST_FAULTS=1 timeout 60 "$GCSH" -n 4 2>&1); RC=$?
expect_contains "fatal fault: the message" "$OUT" "gcsh: rank 1: unrecoverable fault at stdin:1: injected fatal fault (gcsh.debug.inject, standing in for a sticky device error) (last operation: barrier #1); this process cannot recover: every rank exits with status 70"
expect_contains "fatal fault: every rank exits" "$OUT" "gcsh: a device fault cannot be recovered from; every rank exits with status 70"
expect_not_contains "fatal fault: nothing runs after" "$OUT" "never"
expect_eq "fatal fault: exit status 70" "$RC" 70
expect_no_procs "fatal fault: no process left" "$TAG"

# ---- kill -9 of a rank during a command: rank 0 says so, everyone exits
# (the kill once the command runs: it prints "up"; the input open until the end)
kill_in_command() { # RANK
    piped_wait_all up
    kill -9 "$(rank_pid "$TAG" "$1")"
    job_gone 30
}
for n in 2 4; do
    victim=$((n - 1))
    piped_while $n 'c = comm.world() c:barrier()
print("up") if rank == 0 then c:barrier() else gcsh.sleep(20) end' kill_in_command $victim
    expect_contains "kill -9 at $n ranks: rank 0 names it" "$OUT" "gcsh: rank $victim is gone (its connection to rank 0 closed)"
    expect_contains "kill -9 at $n ranks: session ends" "$OUT" "gcsh: the session cannot go on without it; every rank exits with status 69"
    expect_eq "kill -9 at $n ranks: the job exits with the status said" "$RC" 69
    expect_no_procs "kill -9 at $n ranks: no process left" "$TAG"
done

# ---- output: a few hundred MB at 2 ranks; capped, rank 0 stays small
OUT=$(printf '%s\n' 'local line = string.rep("x", 1023) .. "\n" for i = 1, 200 * 1024 do io.write(line) end' \
    'if rank == 0 then local s = io.open("/proc/self/status"):read("a") print("hwm", s:match("VmHWM:%s*(%d+)")) end' \
    'print("next")' | timeout 120 "$GCSH" -n 2 2>&1 | grep -v 'xxxxxxxx'); RC=$?
expect_all_ranks "output cap: the note, every rank" "$OUT" "gcsh: output capped at 67108864 bytes; 142606336 bytes dropped" 2
expect_contains "output cap: next command" "$OUT" "[0-1] next"
HWM=$(sed -n 's/^\[0\] hwm\t//p' <<<"$OUT")
if [ -n "$HWM" ] && [ "$HWM" -lt 400000 ]; then pass; else fail "output cap: rank 0's peak memory ${HWM:-?} kB (want < 400 MB)"; fi

# ---- a real terminal: Ctrl-C out of a runaway loop, .abort of a blocked barrier
if ! command -v tmux >/dev/null; then
    skip "tmux is not installed (Ctrl-C and .abort tests)"
    finish
    exit
fi
start f1 -n 2
check_wait "pty: prompt" "gcsh[0-1]>" 30
keys '.timeout 1' Enter
keys 'c = comm.world() c:barrier()' Enter
keys 'if rank == 1 then while true do end else c:barrier() end' Enter
check_wait "pty: hang report names the loop's line" "gcsh:   [1] running line 1 of the chunk" 10
expect_contains "pty: hang report says how to get out" "$(screen)" "still running [0-1]; Ctrl-C interrupts, .abort aborts"
expect_contains "pty: hang report names the waiting rank" "$(screen)" "gcsh:   [0] in barrier #2 (waiting for the others,"
check_wait "pty: the check gives up on rank 0" "for [1]: [1] running line 1 of the chunk" 10
expect_match "pty: the check's message" "$(screen)" '^\[0\] stdin:1: barrier #2: \[0\] waited 1\.[0-9] s for \[1\]: \[1\] running line 1 of the chunk$'
press C-c
check_wait "pty: Ctrl-C stops the loop" "gcsh: interrupted [1]" 10
keys '.timeout 0' Enter
keys '=c:allreduce(tensor.new(1):fill(1))[0]' Enter
check_wait "pty: after Ctrl-C the comm works (nothing was abandoned)" "[0-1] 2.0" 10

keys '.check off' Enter
keys 'print("blocking") if rank == 0 then c:barrier() else gcsh.sleep(60) end' Enter
check_wait "pty: the barrier blocks" "[0-1] blocking" 15
keys '.abort' Enter
check_wait "pty: .abort" "gcsh: aborting [0-1]" 10
check_wait "pty: .abort: the blocked barrier's error" "[0] stdin:1: interrupted in barrier #3:" 10
check_wait "pty: .abort: its second line" "[0] the communicator is aborted on every rank; comm.world() makes a fresh one" 10
check_wait "pty: .abort: everything torn down" "gcsh: every communicator is aborted; comm.world() makes a fresh one" 10
keys '.check on' Enter
keys 'c:barrier()' Enter
check_wait "pty: an aborted comm refuses use" "[0-1] stdin:1: attempt to use an aborted communicator" 10
keys 'c = comm.world() print(c:allreduce(tensor.new(1):fill(1))[0])' Enter
check_wait "pty: a fresh world works" "[0-1] 2.0" 10 2
keys '.abort' Enter
check_wait "pty: .abort at the prompt" "gcsh: .abort: no command is running" 10
press C-d
check_wait "pty: Ctrl-D" "EXIT=0" 15
expect_no_procs "pty: no process left" "$TAG"

# ---- Ctrl-C while rank 0 waits in a collective's check (the default
# .timeout reports without a limit, so the check keeps waiting): the
# error names the collective and fits 80 columns with its prefixes
start f2 -n 2
check_wait "pty2: prompt" "gcsh[0-1]>" 30
keys 'c = comm.world() if rank == 1 then gcsh.sleep(60) else c:barrier() end' Enter
check_wait "pty2: rank 0 waits in the check" "[0] in barrier #1 (waiting for the others," 25
press C-c
check_wait "pty2: Ctrl-C ends the check's wait" "interrupted while waiting for the others at barrier #1" 10
LINE=$(screen | grep -F "interrupted while waiting for the others at barrier #1")
expect_match "pty2: the error's line" "$LINE" '^\[0\] (stdin:1: )?interrupted while waiting for the others at barrier #1$'
expect_eq "pty2: within 80 columns" "$(awk 'length > 80' <<<"$LINE" | wc -l)" 0
keys '=c:allreduce(tensor.new(1):fill(1))[0]' Enter
check_wait "pty2: the communicator after it" "[0-1] 2.0" 10
press C-d
check_wait "pty2: Ctrl-D" "EXIT=" 15
expect_no_procs "pty2: no process left" "$TAG"

finish
