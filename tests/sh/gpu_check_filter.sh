#!/usr/bin/env bash
# scripts/gpu-check.sh's test filter (no GPU needed): GCSH_GPU_TESTS is an
# extended regex on a test's name, its path; a filter that lets no test run
# is said and fails the run (a run that checked nothing is no pass), and
# GCSH_GPU_TESTS=none builds only, without a word.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
eval "$(sed -n '/^selected=0/p; /^wanted() {/,/^}/p; /^no_test_matched() {/,/^}/p' scripts/gpu-check.sh)"
NAMES=(test_cuda_backend tests/gpu/collectives.lua tests/gpu/faults.sh
       tests/lua/step_ring.lua:vmm sanitize:memcheck:ll_sanitize)
# ran FILTER: the names the filter lets run, then what no_test_matched says
ran() {
    GCSH_GPU_TESTS=$1
    selected=0
    local out=() n
    for n in "${NAMES[@]}"; do wanted "$n" && out+=("$n"); done
    echo "${out[*]}"
    no_test_matched
}

expect_eq "no filter: every test" "$(GCSH_GPU_TESTS='' ran '')" "${NAMES[*]}"
expect_eq "a name's part: that test" "$(ran collectives)" "tests/gpu/collectives.lua"
expect_eq "the path's start" "$(ran '^tests/gpu/')" "tests/gpu/collectives.lua tests/gpu/faults.sh"
expect_eq "an alternation" "$(ran 'gpu/(collectives|faults)')" \
    "tests/gpu/collectives.lua tests/gpu/faults.sh"
expect_eq "a kind's run" "$(ran 'step_ring.lua:vmm$')" "tests/lua/step_ring.lua:vmm"
OUT=$(ran '^collectives')
expect_contains "a filter that matches nothing: said" "$OUT" \
    "gpu-check: GCSH_GPU_TESTS='^collectives' matched no test that runs here: nothing was checked"
expect_contains "and how names look" "$OUT" "names are paths, e.g. tests/gpu/collectives.lua"
expect_eq "none: no test, no word" "$(ran none)" ""
# the run's verdict: gpu-check counts the message as a failure
expect_contains "gpu-check fails a run that matched nothing" \
    "$(grep -n 'no_test_matched && failed=' scripts/gpu-check.sh)" 'failed=$((failed + 1))'
finish
