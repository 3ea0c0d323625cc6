#!/usr/bin/env bash
# An aborted communicator's window on GPUs is read-only evidence, as on the
# host (tests/sh/abort_evidence.sh; issue 37): with .check off one rank's
# bad algo abandons a two-shot the others entered (it comes 2 s after them:
# one that hears of the failure before entering does not run it, and
# nothing is aborted), which aborts the communicator on every rank; then every rank still reads the window
# (w:peer, kernel.reduce_peers into a tensor of its own: loads alone), a
# write into it is refused, it is freed, and a fresh world works.  Run by
# scripts/gpu-check.sh and scripts/gpu-parity.sh:
#   bash tests/gpu/evidence.sh path/to/gcsh NP [BACKEND]
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
BACKEND=${3:-cuda}
. tests/sh/lib.sh
STATE=$(mktemp -d)
export GCSH_STATE_DIR=$STATE
trap 'rm -rf "$STATE"' EXIT
if [ "$NP" -lt 2 ]; then
    skip "tests/gpu/evidence.sh needs 2 ranks (NP=$NP): rank 1 fails a collective the others run"
    finish; exit
fi
L=$((NP - 1))
SUM=$((NP * (NP + 1) / 2))

gcsh_pipe "$NP" 'c = comm.world(); w = c:window(8); w:tensor():fill(rank + 1); c:barrier()
.check off
if rank == 1 then gcsh.sleep(2) end kernel.allreduce(w, {algo = rank == 1 and "bogus" or "twoshot"})
.check on
print(c)
o = kernel.reduce_peers(tensor.new(8), w); print("peers", o[0], o[7], w:peer(0)[7])
kernel.reduce_peers(w:tensor(), w)
w:free(); c:free(); c = comm.world()
=c:allreduce(tensor.new(1):fill(1))[0]' --backend "$BACKEND"
echo "$OUT"
expect_contains "rank 1's own error" "$OUT" "[1] stdin:1: allreduce: unknown algo 'bogus'"
expect_contains "the communicator is aborted on every rank" "$OUT" "[0-$L] comm(aborted)"
expect_contains "reduce_peers and w:peer read every slice" "$OUT" "[0-$L] peers	$SUM.0	$SUM.0	1.0"
expect_contains "a write into the window is refused" "$OUT" \
    "[0-$L] stdin:1: window #1 is read-only evidence: its communicator was aborted"
expect_contains "a fresh world works" "$OUT" "[0-$L] $NP.0"
finish
