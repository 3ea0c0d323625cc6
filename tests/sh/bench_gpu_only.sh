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

# scripts/gpu-four.sh: its parts are checked before anything runs
OUT=$(GCSH_FOUR_PARTS="check sok" timeout 30 bash scripts/gpu-four.sh 2>&1); RC=$?
expect_eq "gpu-four, an unknown part: exit 2" "$RC" 2
expect_contains "gpu-four, an unknown part: named" "$OUT" \
    "gpu-four: unknown part 'sok' (check soak multi graph shared nodes)"
OUT=$(GCSH_FOUR_PARTS=" " timeout 30 bash scripts/gpu-four.sh 2>&1); RC=$?
expect_eq "gpu-four, no part: exit 2" "$RC" 2
expect_contains "gpu-four, no part: said" "$OUT" "GCSH_FOUR_PARTS is empty"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    OUT=$(GCSH_FOUR_PARTS=multi timeout 30 bash scripts/gpu-four.sh 2>&1); RC=$?
    expect_eq "gpu-four without 4 GPUs: exit 2" "$RC" 2
    expect_match "gpu-four without 4 GPUs: said" "$OUT" "^gpu-four: needs 4 GPUs, found [0-3]$"
fi
finish
