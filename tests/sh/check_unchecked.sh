#!/usr/bin/env bash
# A rank that skips its checks (gcsh.check(false)) while the others check:
# the checked ranks never wait forever for it (collcheck_coord.h).  Its call
# stands for its fingerprint: equal calls run; different ones fail every
# checked rank with a message that names the rank that skipped its check,
# and that rank is stopped in the operation (or refused when it comes
# later), in lines within 80 columns; the next command works.  At 2 and 4
# ranks, the last rank unchecked; the sleeps only vary who comes first (the
# outcome is the same either way, and nothing waits for them).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# wide NAME OUTPUT: no line of OUTPUT is wider than 80 columns
wide() {
    local over
    over=$(awk 'length($0) > 80' <<<"$2")
    if [ -z "$over" ]; then pass; else fail "$1: lines over 80 columns"; context "$over"; fi
}

for N in 2 4; do
    L=$((N - 1))
    CHECKED="0-$((L - 1))"
    [ $N = 2 ] && CHECKED=0
    MISMATCH="if rank == $L then gcsh.check(false) end c:allreduce(t, rank == $L and 'max' or 'sum')"
    for who in "none" "checked" "unchecked"; do
        case $who in
            none) LATE="" ;;
            checked) LATE="if rank ~= $L then gcsh.sleep(0.3) end " ;;
            unchecked) LATE="if rank == $L then gcsh.sleep(0.3) end " ;;
        esac
        at="$N ranks, late: $who"
        gcsh_pipe $N "c = comm.world() t = tensor.new(4):fill(1)
$LATE$MISMATCH
print('alive')
c = comm.world() print(c:allreduce(tensor.new(2):fill(1))[0])"
        expect_eq "$at: a mismatch: the failed line's status, no hang" "$RC" 1
        expect_contains "$at: the checked ranks name the rank that skipped" "$OUT" \
            "[$CHECKED] stdin:1: allreduce #1: [$L] skipped the check (gcsh.check(false)):"
        expect_contains "$at: ... with every call" "$OUT" \
            "[$CHECKED] the calls: [$CHECKED] f32 x4 sum, [$L] f32 x4 max"
        expect_contains "$at: ... and what becomes of it" "$OUT" \
            "[$CHECKED] [$L] does not wait there: the checked ranks do not join it"
        expect_match "$at: the unchecked rank is stopped, or refused" "$OUT" \
            "^\[$L\] stdin:1: allreduce #1: (stopped|not run): rank 0's check failed, this rank's was off$"
        expect_contains "$at: ... and told why" "$OUT" "[$L] (gcsh.check(false)): nobody joins it"
        expect_all_ranks "$at: the next command works" "$OUT" "alive" $N
        expect_all_ranks "$at: a fresh world works" "$OUT" "$N.0" $N
        wide "$at" "$OUT"
    done

    # equal calls run: the checked ranks join the one that skipped
    for who in "checked" "unchecked"; do
        [ $who = checked ] && LATE="if rank ~= $L then gcsh.sleep(0.3) end " ||
            LATE="if rank == $L then gcsh.sleep(0.3) end "
        gcsh_pipe $N "c = comm.world() t = tensor.new(4):fill(1)
${LATE}if rank == $L then gcsh.check(false) end print(c:allreduce(t)[0])
if rank == $L then gcsh.check(false) end print('loop', c:loop('allreduce', 5, t) >= 0)
print('counted', c:allreduce(tensor.new(1):fill(1))[0])"
        expect_eq "$N ranks, late: $who: equal calls: exit 0" "$RC" 0
        expect_all_ranks "$N ranks, late: $who: equal calls run" "$OUT" "$N.0" $N
        expect_all_ranks "$N ranks, late: $who: c:loop, checked once" "$OUT" "loop	true" $N
        expect_all_ranks "$N ranks, late: $who: the ranks stay in step" "$OUT" "counted	$N.0" $N
    done

    # a check that fails by its own timeout while the unchecked rank is not
    # there yet: that rank, coming later, does not wait there (it comes
    # once rank 0 marked a file after its check failed)
    MARK="$TMP/failed.$N"
    gcsh_pipe $N "gcsh.timeout(0.5) c = comm.world() t = tensor.new(4):fill(1)
if rank == $L then
  gcsh.check(false)
  while not io.open('$MARK') do gcsh.sleep(0.05) end
  c:allreduce(t)
else
  local ok, e = pcall(c.allreduce, c, t)
  if rank == 0 then io.open('$MARK', 'w'):close() end
  error(e, 0)
end
print('alive')"
    expect_eq "$N ranks: a timeout, then the unchecked rank: exit 1" "$RC" 1
    expect_match "$N ranks: the checked ranks' timeout" "$OUT" \
        "^\[$CHECKED\] (stdin:[0-9]+: )?allreduce #1: \[$CHECKED\] waited [0-9.]+ s for \[$L\]"
    expect_match "$N ranks: the unchecked rank is stopped or refused" "$OUT" \
        "^\[$L\] stdin:[0-9]+: allreduce #1: (stopped|not run): rank 0's check failed, this rank's was off$"
    expect_all_ranks "$N ranks: after the timeout, the next command works" "$OUT" "alive" $N
    rm -f "$MARK"

    # every rank unchecked (.check off, bench's loops) is as before
    gcsh_pipe $N ".check off
c = comm.world() print(c:allreduce(tensor.new(4):fill(1))[0])"
    expect_eq "$N ranks: .check off on every rank: exit 0" "$RC" 0
    expect_all_ranks "$N ranks: .check off on every rank: the sum" "$OUT" "$N.0" $N
done

# a send/recv pair with the sender unchecked: the receiver names it
gcsh_pipe 2 "c = comm.world()
if rank == 1 then gcsh.check(false) c:send(tensor.new(4), 0) else c:recv(tensor.new(5), 1) end
print('alive')"
expect_contains "2 ranks: a recv that meets an unchecked send" "$OUT" \
    "[0] stdin:1: send/recv: [1] skipped the check (gcsh.check(false)):"
expect_contains "2 ranks: ... with both calls" "$OUT" \
    "[0] the calls: [0] recv from 1 f32 x5, [1] send to 0 f32 x4"
expect_all_ranks "2 ranks: after the send/recv, the next command works" "$OUT" "alive" 2
wide "2 ranks: send/recv" "$OUT"

# a send issued unchecked in one command (MPI buffers it), received checked
# in the next, from a graph's replay or a direct call: rank 0's checker
# heard rank 1's counts at the end of the command that sent
gcsh_pipe 2 "c = comm.world() t = tensor.new(8, 'f32')
if rank == 1 then gcsh.check(false) c:send(t:fill(3), 0) end
if rank == 0 then c:recv(t, 1) print('direct', t[7]) end
if rank == 1 then gcsh.check(false) g = gcsh.graph(function() c:send(t, 0) end) end
if rank == 1 then t:fill(4) g:replay(2) end
if rank == 0 then for i = 1, 2 do c:recv(t, 1) end print('replayed', t[7]) end"
expect_eq "2 ranks: sent in one command, received in the next: exit 0" "$RC" 0
expect_contains "2 ranks: ... the direct send" "$OUT" "[0] direct	3.0"
expect_contains "2 ranks: ... the graph's" "$OUT" "[0] replayed	4.0"
finish
