#!/usr/bin/env bash
# Reproducers, record/replay and traces on GPUs (issue 16), run by
# scripts/gpu-check.sh:   bash tests/gpu/repro.sh path/to/gcsh NP
# Every lua/examples script exits 0 plain and 1 with --bug on the cuda
# backend, without a device fault; a recorded cuda session replays with
# exit 0; a trace has GPU spans from CUDA events on every rank.
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for f in lua/examples/*.lua; do
  OUT=$(timeout 300 "$GCSH" -n "$NP" --backend cuda "$f" 2>&1 </dev/null); RC=$?
  if [ "$NP" = 1 ] && [ "$RC" = 125 ]; then
    # a reproducer of a bug between ranks cannot test at 1 rank: it says so
    # and exits 125, which git bisect run takes as "cannot test"
    expect_contains "$f at 1 rank: says what it needs" "$OUT" "cannot run here: needs at least 2 ranks, has 1"
    OUT=$(timeout 300 "$GCSH" -n 1 --backend cuda "$f" --bug 2>&1 </dev/null); RC=$?
    expect_eq "$f --bug at 1 rank: exit 125" "$RC" 125
    continue
  fi
  expect_eq "$f on cuda: exit 0" "$RC" 0
  OUT=$(timeout 300 "$GCSH" -n "$NP" --backend cuda "$f" --bug 2>&1 </dev/null); RC=$?
  expect_eq "$f --bug on cuda: exit 1" "$RC" 1
  expect_not_contains "$f --bug on cuda: no device fault" "$OUT" "unrecoverable fault"
done

# record a cuda session, replay it
F=$TMP/rec.lua
gcsh_pipe "$NP" 'c = comm.world()
t = tensor.new(1 << 20):rand()
=c:allreduce(t):checksum()
w = c:window(4096)
w:tensor():fill(rank + 1)
=kernel.allreduce(w, {algo = "twoshot"})
=w:peer((rank + 1) % size)[7]
w:free()' --backend cuda --record "$F"
expect_eq "record on cuda: exit 0" "$RC" 0
expect_contains "record on cuda: the header" "$(head -n 3 "$F")" "$NP rank$([ "$NP" = 1 ] || echo s), backend cuda"
OUT=$(timeout 300 "$GCSH" --replay "$F" 2>&1 </dev/null); RC=$?
expect_eq "replay on cuda: exit 0" "$RC" 0
expect_contains "replay on cuda: matches" "$OUT" "lines of $F match"

# a trace with the GPU's side of each call
F=$TMP/t.json
gcsh_pipe "$NP" 'c = comm.world()
t = tensor.new(1 << 22):fill(rank)
c:allreduce(t, "sum", nil, {algo = "comm"}) -- the library, shared GPUs too
w = c:window(1 << 20)
out = kernel.allreduce(w, {algo = "oneshot"})
w:free()' --backend cuda --trace "$F"
expect_eq "trace on cuda: exit 0" "$RC" 0
C=$(python3 tests/sh/trace_check.py "$F" "$NP" gpu:comm.allreduce gpu:kern.allreduce.oneshot comm.allreduce 2>&1); RC=$?
expect_eq "trace on cuda: loads and checks out" "$RC" 0
printf '%s\n' "$C" | grep '^FAIL' | sed 's/^/  | /'
expect_contains "trace on cuda: GPU spans of the all-reduce on every rank" "$C" "gpu span comm.allreduce: ranks $(seq -s ' ' 0 $((NP - 1)))"
expect_contains "trace on cuda: GPU spans of the kernel" "$C" "gpu span kern.allreduce.oneshot: ranks $(seq -s ' ' 0 $((NP - 1)))"
finish
