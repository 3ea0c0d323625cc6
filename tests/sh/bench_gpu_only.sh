#!/usr/bin/env bash
# scripts/bench-gpu.sh's GCSH_BENCH_ONLY (no GPU needed): a value it does
# not know is refused at once, naming the valid ones (it used to run part
# of the default set, or nothing).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
OUT=$(GCSH_BENCH_ONLY=window timeout 30 bash scripts/bench-gpu.sh 2>&1); RC=$?
expect_eq "an unknown part: exit 2" "$RC" 2
expect_contains "an unknown part: named, with the valid ones" "$OUT" \
    "bench-gpu: GCSH_BENCH_ONLY=window: unknown (valid: windows xfer allreduce nccl-tests graph multi shared; unset: every part)"
finish
