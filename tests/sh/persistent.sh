#!/usr/bin/env bash
# kernel.persistent can always be stopped (issue 22), on the host backend:
# Ctrl-C while its calls wait for a rank that does not come, .abort while a
# loop rings it, a rank seconds late, and the end of the session with it
# still running; no process and no thread left behind.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
tmux_setup

SETUP='c = comm.world(); w = c:window(64); p = kernel.persistent(w); w:tensor():fill(1); print("up")'

# ---- a rank seconds late: the others' rings wait for it, the result is right
gcsh_pipe 3 "$SETUP
if rank == 1 then gcsh.sleep(2) end
=p:allreduce():sum()
=p.calls, p.running"
expect_contains "late rank: the sum over 3 ranks" "$OUT" "[0-2] 192.0"
expect_contains "late rank: one call, still running" "$OUT" "[0-2] 1	true"
expect_eq "late rank: exit 0" "$RC" 0

# ---- Ctrl-C while rank 0's calls wait for rank 1 (.check off lets rank 0
# ring alone): the wait ends, the persistent stops on every rank with its
# communicator, and a fresh one works
bg_start 2
bg_line '.check off'
bg_line "$SETUP"
bg_wait_all up 2
bg_line 'print("ringing") if rank == 0 then for i = 1, 64 do p:allreduce() end print("rung") p:wait() else gcsh.sleep(60) end'
bg_wait_out "[0] rung"
kill -INT "$BG"
bg_wait_out "gcsh: interrupted"
bg_line '=p.running, p.calls'
bg_line '=p.stopped'
bg_line 'ok, e = pcall(p.allreduce, p) print(ok, e)'
bg_line 'c2 = comm.world(); w2 = c2:window(8); q = kernel.persistent(w2); w2:tensor():fill(2)'
bg_line '=q:allreduce():sum()'
bg_end
expect_contains "ctrl-c: the line is interrupted on both ranks" "$OUT" "gcsh: interrupted [0-1]"
expect_contains "ctrl-c: stopped on rank 0, its calls counted" "$OUT" "[0] false	64"
expect_contains "ctrl-c: stopped on rank 1 too, with nothing rung" "$OUT" "[1] false	0"
expect_contains "ctrl-c: rank 0 says why" "$OUT" "[0] interrupted while its calls were in flight"
expect_contains "ctrl-c: rank 1 says why" "$OUT" "[1] its communicator was aborted"
expect_contains "ctrl-c: a ring after it is refused" "$OUT" "is stopped:"
expect_contains "ctrl-c: a fresh one works" "$OUT" "[0-1] 32.0"
expect_eq "ctrl-c: a piped session with an interrupted line exits 1" "$RC" 1

# ---- Ctrl-C while rank 0's calls are in flight but rank 0 waits elsewhere
# (.check off: rank 1 never rings them): the command's end stops the
# resident with its calls in flight, which the other ranks' residents would
# wait in, so the communicator is aborted on every rank, and said so
bg_start 2
bg_line '.check off'
bg_line "$SETUP"
bg_wait_all up 2
bg_line 'if rank == 0 then for i = 1, 8 do p:allreduce() end print("rung") end gcsh.sleep(60)'
bg_expect_out "in flight: rank 0 rang" "[0] rung"
kill -INT "$BG"
bg_expect_out "in flight: the interrupt ends the command" "gcsh: interrupted"
bg_line '=p.stopped'
bg_line 'p:free() w:free() print("freed", c)'
bg_line 'c = comm.world() print("fresh " .. c:allreduce(tensor.new(1):fill(1))[0])'
bg_end
expect_contains "in flight: rank 0 says its calls were lost" "$OUT" \
    "[0] gcsh: persistent #1 stopped with 8 calls in flight:"
expect_contains "in flight: and that the communicator goes" "$OUT" \
    "[0] gcsh: its communicator is aborted everywhere; comm.world() makes a fresh one"
expect_contains "in flight: rank 1's resident stopped with it" "$OUT" "[1] its communicator was aborted"
expect_contains "in flight: aborted on every rank; each frees alone" "$OUT" "[0-1] freed	comm(aborted)"
expect_contains "in flight: a fresh world works" "$OUT" "[0-1] fresh 2.0"
expect_no_procs "ctrl-c: no process left" "$TAG"

# ---- .abort (typed at a terminal) while a loop rings it: the loop
# stops, and so does the resident on every rank
need_tmux
start p1 -n 2
check_wait "pty: prompt" "gcsh[0-1]>" 30
keys "$SETUP" Enter
check_wait "pty: started" "[0-1] up" 15
keys 'print("looping") for i = 1, 1e9 do p:allreduce() end' Enter
check_wait "pty: looping" "[0-1] looping" 15
keys '.abort' Enter
check_wait ".abort: everything torn down" "gcsh: every communicator is aborted; comm.world() makes a fresh one" 15
keys '=p.running' Enter
check_wait ".abort: stopped on every rank" "[0-1] false" 15
# why: its communicator was aborted, or (where the interrupt landed in a
# wait for its calls) it was interrupted with calls in flight
keys 'print("why:", (p.stopped:match("aborted") or p.stopped:match("in flight")))' Enter
check_wait ".abort: saying why" "] why:" 15
expect_match ".abort: the reason is the abort or the interrupt" "$(screen)" \
    '^\[[0-9,-]+\] why: +(aborted|in flight)$'
keys 'ok, e = pcall(p.allreduce, p) print("refused: " .. tostring(not ok and e:match("is stopped")))' Enter
check_wait ".abort: a ring after it is refused" "[0-1] refused: is stopped" 15
keys 'c = comm.world(); w2 = c:window(8); q = kernel.persistent(w2); w2:tensor():fill(3); print(q:allreduce():sum())' Enter
check_wait ".abort: a fresh one works" "[0-1] 48.0" 15
press C-d
check_wait ".abort: Ctrl-D ends the session" "EXIT=0" 15
expect_no_procs ".abort: no process left" "$TAG"

# ---- the end of the session with a persistent still running, calls rung
# just before: the session ends at once and cleanly
TAG=$(new_tag); TAGS+=("$TAG")
OUT=$(printf '%s\n' "$SETUP" 'for i = 1, 50 do p:allreduce() end' 'print("last")' |
      GCSH_TEST_TAG=$TAG timeout 60 "$GCSH" -n 4 2>&1); RC=$?
expect_contains "exit: the last line ran" "$OUT" "[0-3] last"
expect_eq "exit: status 0" "$RC" 0
expect_no_procs "exit: no process left" "$TAG"

# ---- no thread left: a rank's threads before, while running, after stop
gcsh_pipe 2 'function threads() for l in io.lines("/proc/self/status") do local n = l:match("^Threads:%s*(%d+)") if n then return tonumber(n) end end end
c = comm.world(); w = c:window(8); before = threads()
p = kernel.persistent(w); during = threads(); p:stop()
print(during - before, threads() - before)'
expect_contains "threads: one progress thread while it runs, none after" "$OUT" "[0-1] 1	0"

finish
