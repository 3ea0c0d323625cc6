#!/usr/bin/env bash
# An aborted communicator is a clean state (issue 35): after Ctrl-C aborts
# an all-reduce loop (a communicator's, a persistent resident's), the windows and signals made on that communicator
# can still be read (w:tensor(), w:peer(), fields, s:read()) and freed, each
# rank alone, the communicator too; nothing about them is printed at exit,
# and the session ends with status 0.  The interrupt's advice (comm.world()
# makes a fresh one) works.  A terminal session in tmux, and the same piped
# (where the interrupted line makes the status 1).  Any backend: on a GPU
# machine it runs on cuda (the first kind that works there).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

LOOP='c = comm.world(); w = c:window(1024); w:tensor():fill(rank + 1); s = c:signals(2); s:add(rank, 0, 7 + rank); t = tensor.new(1 << 16):fill(1); print("up") for i = 1, 1e9 do c:allreduce(t) end'
NO_NOISE=("could not free" "abandoned by an interrupt" "Sanitizer" "gcsh: rank")

# ---- at a terminal
tmux_setup
need_tmux
start a1 -n 2
check_wait "prompt" "gcsh[0-1]>" 60
keys "$LOOP" Enter
check_wait "the loop runs" "[0-1] up" 60
# An interrupt aborts the communicator where it lands in a collective; one
# that lands in the check or between two calls leaves it whole (nothing was
# in flight), and the loop runs again until one lands inside (5 tries).
ABORTED="the communicator is aborted on every rank"
for try in 1 2 3 4 5; do
    press C-c
    wait_for "gcsh: interrupted [" 30 "$try" || break
    screen | grep -qF "$ABORTED" && break
    keys "print('again') for i = 1, 1e9 do c:allreduce(t) end" Enter
    wait_for "[0-1] again" 30 "$try"
done
check_wait "Ctrl-C interrupts it, aborting the communicator" "$ABORTED" 1
keys '=c:allreduce(t)' Enter
check_wait "the aborted communicator refuses collectives, saying what is left" \
    "comm.world() makes a fresh one; its windows and signals can still be read and freed)" 10
keys 'print(table.concat({"mine", w:tensor()[0], w:tensor()[1023], "peer", w:peer((rank + 1) % 2)[0], w.dtype, w.n, s:read(0)}, " "))' Enter
check_wait "rank 0 reads its slice, the peer's, the fields and its signal" \
    "[0] mine 1.0 1.0 peer 2.0 f32 1024 7" 10
check_wait "rank 1 too" "[1] mine 2.0 2.0 peer 1.0 f32 1024 8" 10
keys 'w:free() s:free() c:free() print("freed " .. tostring(w) .. " " .. tostring(c))' Enter
check_wait "the window, the signals and the communicator free alone on each rank" \
    "[0-1] freed window (freed) comm(freed)" 10
keys 'c = comm.world() print("fresh " .. c:allreduce(tensor.new(1):fill(1))[0])' Enter
check_wait "a fresh world works" "[0-1] fresh 2.0" 30
keys '.quit' Enter
check_wait ".quit ends the session with status 0" "EXIT=0" 30
for n in "${NO_NOISE[@]}"; do expect_not_contains "terminal: nothing about '$n'" "$(screen)" "$n"; done
expect_no_procs "terminal: no process left" "$TAG"

# ---- left unfreed, the aborted objects go quietly at exit (each rank
# alone: no barrier on a communicator that is gone)
start a2 -n 2
check_wait "unfreed: prompt" "gcsh[0-1]>" 60
keys "$LOOP" Enter
check_wait "unfreed: the loop runs" "[0-1] up" 60
press C-c
check_wait "unfreed: Ctrl-C interrupts it" "gcsh: interrupted [" 30
keys 'w = nil; s = nil; collectgarbage()' Enter
check_wait "unfreed: collected, they stay until exit" "[0-1] gcsh: signals #2 (2 slots, host) was garbage-collected" 10
keys '.quit' Enter
check_wait "unfreed: .quit ends the session with status 0" "EXIT=0" 30
for n in "${NO_NOISE[@]}"; do expect_not_contains "unfreed: nothing about '$n'" "$(screen)" "$n"; done

# ---- piped: the same lines, the interrupt from outside (SIGINT to gcsh -n)
bg_start 2
bg_line "$LOOP"
bg_expect_out "piped: the loop runs" "[0-1] up"
kill -INT "$BG"
bg_expect_out "piped: the interrupt ends it" "gcsh: interrupted"
bg_line 'print("read", w:tensor()[0], s:read(0))'
bg_line 'w:free() s:free() print("freed")'
# the aborted world, dropped for a fresh one, goes at once and quietly
bg_line 'c = comm.world(); collectgarbage(); collectgarbage(); s2 = c:split(rank % 2)'
bg_line 'print("fresh " .. c:allreduce(tensor.new(1):fill(1))[0])'
# a split dropped unfreed stays until the end of the session, said once
bg_line 's2 = nil; collectgarbage(); collectgarbage(); c:split(0):free()'
bg_line '.quit'
bg_end
expect_contains "piped: rank 0 reads" "$OUT" "[0] read	1.0	7"
expect_contains "piped: rank 1 reads" "$OUT" "[1] read	2.0	8"
expect_contains "piped: frees" "$OUT" "[0-1] freed"
expect_contains "piped: a fresh world" "$OUT" "[0-1] fresh 2.0"
NOTE='a comm was garbage-collected without :free(); it is freed at the end of the session'
expect_eq "piped: the dropped split is noted, once on each rank" "$(grep -c "$NOTE" <<<"$OUT")" 2
expect_eq "piped: the dropped aborted world was not (the note comes after the fresh world)" \
    "$(grep -n -e "$NOTE" -e 'fresh 2.0' <<<"$OUT" | head -n 1 | grep -c 'fresh')" 1
for n in "${NO_NOISE[@]}"; do expect_not_contains "piped: nothing about '$n'" "$OUT" "$n"; done
expect_eq "piped: the interrupted line makes the status 1" "$RC" 1

# ---- persistent all-reduces interrupted (the resident stops with its
# communicator, or runs on when the interrupt came between two calls):
# p:free() then w:free() work either way, and so does a fresh world.  An
# interrupt may land after one rank passed a call's check and before
# another did: the calls left in flight abort the communicator everywhere
# (else the next collective on it waited forever).  Rounds, for the chance
# to land there.
said() { [ "$(grep -cF -- "$1" "$TMP/out")" -ge "$2" ]; }
bg_start 2
for round in 1 2 3 4; do
    bg_line "c = comm.world(); w = c:window(1024); p = kernel.persistent(w); print('up $round') for i = 1, 1e9 do p:allreduce { n = 8 } end"
    bg_expect_out "persistent $round: the loop runs" "[0-1] up $round"
    kill -INT "$BG"
    wait_until 60 said "gcsh: interrupted" "$round" ||
        fail "persistent $round: the interrupt did not end the command"
    bg_line "p:free() w:free() print('freed $round')"
    bg_expect_out "persistent $round: the resident and its window free" "[0-1] freed $round"
done
bg_line 'c = comm.world() print("fresh " .. c:allreduce(tensor.new(1):fill(1))[0])'
bg_line '.quit'
bg_end
expect_contains "persistent: a fresh world" "$OUT" "[0-1] fresh 2.0"
for n in "${NO_NOISE[@]}"; do expect_not_contains "persistent: nothing about '$n'" "$OUT" "$n"; done

finish
