#!/usr/bin/env bash
# scripts/gpu-nodes.sh's GCSH_NODES_PARTS (no GPU needed): a part it does
# not know, or none at all, is an error before anything is launched (such
# a run would check nothing and end "0 passed, 0 failed").
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
nodes() { GCSH=$GCSH GCSH_NODES_DRY=1 GCSH_BENCH_OUT=$TMP timeout 60 bash scripts/gpu-nodes.sh 2>&1; }
TMP=$(mktemp -d)
OUT=$(GCSH_NODES_PARTS="3 4" nodes); RC=$?
expect_eq "an unknown part: exit 1" "$RC" 1
expect_contains "an unknown part: named, with the valid ones" "$OUT" \
    "gpu-nodes: GCSH_NODES_PARTS: unknown part '4' (valid: 1 1b 2 3)"
expect_not_contains "an unknown part: nothing launched" "$OUT" "gpu-nodes: dry run"
OUT=$(GCSH_NODES_PARTS="" nodes); RC=$?
expect_eq "no part: exit 1" "$RC" 1
expect_contains "no part: said" "$OUT" "gpu-nodes: GCSH_NODES_PARTS is empty (valid parts: 1 1b 2 3)"
expect_contains "the verdict line counts it" "$OUT" "0 passed, 1 failed"
OUT=$(GCSH_NODES_PARTS='*' nodes); RC=$?
expect_eq "a glob: exit 1" "$RC" 1
expect_contains "a glob: named as given, not expanded" "$OUT" "unknown part '*'"
# a part that runs nothing here: the sanitizer's without a tool, nccl-tests
# in a dry run: the run checked nothing and says so
OUT=$(GCSH_NODES_PARTS="1b 2" nodes); RC=$?
expect_eq "parts that ran nothing: exit 1" "$RC" 1
expect_contains "parts that ran nothing: said" "$OUT" \
    "FAIL  some part checked something (GCSH_NODES_PARTS='1b 2'): nothing ran"
rm -rf "$TMP"
finish
