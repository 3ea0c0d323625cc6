#!/usr/bin/env bash
# After an abort a window is read-only evidence (issue 37): Ctrl-C during a
# two-shot that one rank never joins aborts the communicator; then every
# rank, the one that was in s:wait included (it hears of the abort from the
# others), still reads the window (its views, a peer's, show, w:info(),
# w:sync_state(), s:read(), kernel.reduce_peers into a tensor of its own:
# loads alone, no barrier, no communicator; a window of kind nccl not even
# that: NCCL's mappings go with the abort), while whatever would write it
# or needs the communicator (tensor writes, reduce_peers into a slice, a
# collective into it on a fresh world, a kernel collective, a transfer, a
# signal) is refused saying the communicator was
# aborted and the window is read-only evidence; w:free() works, and the
# exit is quiet whether it was freed or not.  At 2 and 4 ranks, host
# backend (a GPU's barriers wait on the device, where Ctrl-C ends them too:
# tests/gpu).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT

RO="is read-only evidence: its communicator was aborted"
NO_NOISE=("could not free" "garbage-collected" "attempt to use" "Sanitizer")

# stuck N [KIND]: a session at N ranks whose communicator Ctrl-C aborted
# while ranks 0..N-2 waited in a two-shot and rank N-1 in s:wait (on a
# window and signals of KIND, default the backend's)
stuck() {
    local n=$1 last=$(($1 - 1)) opts=""
    [ -n "${2:-}" ] && opts=", {kind = '$2'}"
    bg_start "$n"
    bg_line "c = comm.world(); w = c:window(8, 'f32'$opts); w:tensor():arange(10 * rank); s = c:signals(2$opts); s:set(rank, 0, 40 + rank); t = w:tensor()"
    bg_line "gcsh.check(false) if rank == $last then s:wait(1, 5) else kernel.allreduce(w, {algo = 'twoshot'}) end"
    bg_line '.timeout 1'
    # the interrupt once every rank waits (a hang report says so)
    bg_wait_out "gcsh:   [$last] in signal wait" 60
    kill -INT "$BG"
    bg_wait_out "gcsh: interrupted" 60
}

for N in 2 4; do
    L=$((N - 1))
    stuck "$N"
    # reads: my slice, a peer's, show, info, sync state, the signals
    bg_line 'print("read", t[1], w:peer(0)[2], w:info().n, s:read(0), w:sync_state().ll_calls)'
    bg_line 'show(w)'
    bg_line 'show(s)'
    # kernel.reduce_peers only loads the slices, on this rank alone: allowed
    bg_line 'o = kernel.reduce_peers(tensor.new(8), w); m = kernel.reduce_peers(tensor.new(2), w, {op = "max", offset = 1}); print("peers", o[0], o[1], m[0], m[1])'
    # writes of the window's memory, and what needs the communicator
    bg_line 't[0] = 1'
    bg_line 'w:peer(0):view(1, 2):fill(5)'
    bg_line 'w:tensor():copy(tensor.new(8))'
    bg_line 'kernel.reduce(w:peer(1), {tensor.new(8)})'
    bg_line 'kernel.reduce_peers(w:peer(0), w)'
    bg_line 'c2 = comm.world(); c2:allreduce(w:tensor())'
    bg_line 'kernel.allreduce(w)'
    bg_line 'w:put(0, tensor.new(1))'
    bg_line 's:set(0, 1, 1)'
    # a send from it reads only, and a fresh tensor is no evidence
    bg_line 'print("after", t[0], w:peer(0)[1], c2:allreduce(tensor.new(1):fill(1))[0])'
    bg_line 'w:free(); s:free(); c:free(); print("freed", tostring(w))'
    bg_line '.quit'
    bg_end
    for ((r = 0; r < N; r++)); do
        expect_contains "$N ranks: rank $r reads its slice, a peer's, info, sync state, signals" \
            "$OUT" "[$r] read	$((10 * r + 1)).0	2.0	8	$((40 + r))	0"
    done
    expect_contains "$N ranks: show(w) shows every slice" "$OUT" "[0]    $L   $((10 * L))   $((10 * L + 1))"
    expect_contains "$N ranks: show(s) shows the words" "$OUT" "[0]    $L   $((40 + L))    0"
    # every slice untouched (10 r + i): the sum over the ranks, the max
    expect_contains "$N ranks: reduce_peers reads every slice, on every rank" "$OUT" \
        "[0-$L] peers	$((10 * N * L / 2)).0	$((10 * N * L / 2 + N)).0	$((10 * L + 1)).0	$((10 * L + 2)).0"
    want=$(grep -c "^\[0-$L\] stdin:1: window #1 $RO$" <<<"$OUT")
    expect_eq "$N ranks: 8 refusals name the window, on every rank" "$want" 8
    expect_all_ranks "$N ranks: the signal is refused too" "$OUT" "stdin:1: signals #2 $RO" "$N"
    expect_all_ranks_match "$N ranks: nothing was written" "$OUT" \
        "after	[0-9]+\.0	1\.0	$N\.0" "$N"
    expect_all_ranks "$N ranks: w:free() works on every rank" "$OUT" "freed	window (freed)" "$N"
    for n in "${NO_NOISE[@]}"; do expect_not_contains "$N ranks: nothing about '$n'" "$OUT" "$n"; done
    expect_eq "$N ranks: piped, the interrupted line makes the status 1" "$RC" 1

    # ---- left unfreed: released at exit on each rank alone, quietly
    stuck "$N"
    bg_line 'print("left", t[1])'
    bg_line '.quit'
    bg_end
    expect_all_ranks_match "$N ranks, unfreed: read" "$OUT" "left	[0-9]+\.0" "$N"
    for n in "${NO_NOISE[@]}"; do expect_not_contains "$N ranks, unfreed: nothing about '$n'" "$OUT" "$n"; done
    expect_no_procs "$N ranks, unfreed: no process left" "$TAG"

    # ---- kind nccl: NCCL's LSA mappings go with the abort (ncclCommAbort),
    # so its emulation, as strict as the GPU, refuses every read; its
    # fields stay, and it is freed
    stuck "$N" nccl
    bg_line 'print("fields", w.kind, w.n, s.n)'
    bg_line 'print(t[1])'
    bg_line 'print(t)'
    bg_line 'w:peer(0)'
    bg_line 'show(w)'
    bg_line 'kernel.reduce_peers(tensor.new(8), w)'
    bg_line 'w:sync_state()'
    bg_line 's:read(0)'
    bg_line 'w:free(); s:free(); c:free(); print("freed", tostring(w))'
    bg_line '.quit'
    bg_end
    expect_contains "$N ranks, kind nccl: its fields stay" "$OUT" "[0-$L] fields	nccl	8	2"
    GONE="its communicator was aborted, and kind nccl's slices are NCCL's LSA mappings, which the abort unmapped (kind vmm's stay readable); :free() frees it"
    # (print(t) and show(w) raise in a tostring and a tail call: no line)
    want=$(grep -F "[0-$L] " <<<"$OUT" | grep -cF "window #1 cannot be read: $GONE")
    expect_eq "$N ranks, kind nccl: 6 reads of the window refused, on every rank" "$want" 6
    expect_contains "$N ranks, kind nccl: the signals' read refused" "$OUT" \
        "[0-$L] stdin:1: signals #2 cannot be read: $GONE"
    expect_all_ranks "$N ranks, kind nccl: w:free() works" "$OUT" "freed	window (freed)" "$N"
    for n in "${NO_NOISE[@]}"; do expect_not_contains "$N ranks, kind nccl: nothing about '$n'" "$OUT" "$n"; done
done
finish
