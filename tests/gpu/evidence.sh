#!/usr/bin/env bash
# An aborted communicator's window on GPUs is read-only evidence, as on the
# host (tests/sh/abort_evidence.sh; issue 37): the hang report of ranks
# 0..N-2 in a two-shot that rank N-1 never joins names the barrier, rank
# N-1 and its word now (the kernel's stall record); Ctrl-C then aborts the
# communicator on every rank; then every rank still reads a window of kind vmm (w:peer, and
# kernel.reduce_peers into a tensor of its own: loads alone), a write into
# it is refused, it is freed, and a fresh world works.  A window of kind
# nccl (where NCCL offers one) cannot be read at all: ncclCommAbort took
# NCCL's LSA mappings, and the refusal says so (as the host's emulation).  Run by
# scripts/gpu-check.sh and scripts/gpu-parity.sh:
#   bash tests/gpu/evidence.sh path/to/gcsh NP [BACKEND]
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
BACKEND=${3:-cuda}
. tests/sh/lib.sh
TMP=$(mktemp -d)
TAGS=()
trap tags_cleanup EXIT
export GCSH_STATE_DIR=$TMP/state # the interrupt's flight file goes there
mkdir -m 0700 "$GCSH_STATE_DIR"
if [ "$NP" -lt 2 ]; then
    skip "tests/gpu/evidence.sh needs 2 ranks (NP=$NP): one never joins the others' two-shot"
    finish; exit
fi
L=$((NP - 1))
SUM=$((NP * (NP + 1) / 2))

bg_start "$NP" --backend "$BACKEND"
bg_line 'c = comm.world(); w = c:window(8, "f32", {kind = "vmm"}); w:tensor():fill(rank + 1)'
bg_line 'ok, n = pcall(c.window, c, 8, "f32", {kind = "nccl"}); print("nccl window", ok); c:barrier()'
bg_line '.check off'
bg_line '.timeout 1'
bg_line "if rank == $L then gcsh.sleep(60) else kernel.allreduce(w, {algo = 'twoshot'}) end"
# the interrupt once every rank is in it (the hang report says so)
bg_wait_out "still running [0-$L]" 60 || fail "no hang report within 60 s"
kill -INT "$BG"
bg_wait_out "gcsh: interrupted" 60 || fail "no interrupt within 60 s"
bg_line '.timeout 0'
bg_line '.check on'
bg_line 'print(c)'
bg_line 'o = kernel.reduce_peers(tensor.new(8), w); print("peers", o[0], o[7], w:peer(0)[7])'
bg_line 'kernel.reduce_peers(w:tensor(), w)'
bg_line 'if ok then print(pcall(kernel.reduce_peers, tensor.new(8), n)) print(pcall(function() return n:tensor()[0] end)) n:free() end'
bg_line 'w:free(); c:free(); c = comm.world()'
bg_line '=c:allreduce(tensor.new(1):fill(1))[0]'
bg_line '.quit'
bg_end
echo "$OUT"
# the hang report names what the kernel waits for (its stall record, kwait.cuh)
# (a report line longer than 80 columns goes on under "gcsh:     ")
expect_match "the hang report: the barrier, the rank waited for, its word now" "$(unwrapped "$OUT")" \
    "^gcsh:   \[0(-$((L - 1)))?\] in the GPU work of kernel.allreduce #4 for [0-9.]+ s: waits at barrier #[0-9]+ for \[$L\]'s word \(now [0-9]+\)$"
expect_contains "the communicator is aborted on every rank" "$OUT" "[0-$L] comm(aborted)"
expect_contains "reduce_peers and w:peer read every slice" "$OUT" "[0-$L] peers	$SUM.0	$SUM.0	1.0"
expect_contains "a write into the window is refused" "$OUT" \
    "[0-$L] stdin:1: window #1 is read-only evidence: its communicator was aborted"
expect_contains "a fresh world works" "$OUT" "[0-$L] $NP.0"
GONE="window #2 cannot be read: its communicator was aborted, and kind nccl's slices are NCCL's LSA mappings, which the abort unmapped (kind vmm's stay readable); :free() frees it"
if grep -qF "[0-$L] nccl window	true" <<<"$OUT"; then
    want=$(grep -F "[0-$L] false	" <<<"$OUT" | grep -cF "$GONE")
    expect_eq "kind nccl: reduce_peers and a read refused, saying why" "$want" 2
else
    echo "SKIP-NOTE kind nccl: no window of kind nccl here (NCCL offers no symmetric memory)"
fi
expect_no_procs "no process left" "$TAG"
finish
