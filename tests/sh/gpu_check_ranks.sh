#!/usr/bin/env bash
# scripts/gpu-check.sh's rank settings (no GPU needed): GCSH_GPU_RANKS is a
# list of configurations (N, or Ns sharing GPUs) and GCSH_GPU_SANITIZE_RANKS
# one rank count; anything else is refused before the build, naming the
# value (a run that quietly checked less is no pass).
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
eval "$(sed -n '/^check_rank_settings() {/,/^}/p' scripts/gpu-check.sh)"
verdict() { # RANKS SANITIZE_RANKS: "ok" or the reason
    local why
    why=$(GCSH_GPU_RANKS=$1 GCSH_GPU_SANITIZE_RANKS=$2 check_rank_settings) && echo ok || echo "$why"
}
expect_eq "unset: the defaults" "$(unset GCSH_GPU_RANKS GCSH_GPU_SANITIZE_RANKS; check_rank_settings && echo ok)" ok
expect_eq "configurations and one sanitizer count" "$(verdict '2 4 4s' 4)" ok
expect_eq "one shared configuration" "$(verdict 2s '')" ok
expect_eq "two sanitizer counts: refused" "$(verdict '2' '2 4')" \
    "GCSH_GPU_SANITIZE_RANKS: '2 4' is not one rank count (e.g. 4)"
expect_eq "a shared sanitizer count: refused" "$(verdict '' 4s)" \
    "GCSH_GPU_SANITIZE_RANKS: '4s' is not one rank count (e.g. 4)"
expect_eq "a word among the configurations: refused" "$(verdict '2 four' '')" \
    "GCSH_GPU_RANKS: 'four' is not a configuration (N ranks with a GPU each, or Ns sharing GPUs, e.g. \"2 4s\")"
expect_eq "zero ranks: refused" "$(verdict '0' '')" \
    "GCSH_GPU_RANKS: '0' is not a configuration (N ranks with a GPU each, or Ns sharing GPUs, e.g. \"2 4s\")"
expect_eq "blank: refused" "$(verdict '  ' '')" \
    "GCSH_GPU_RANKS is blank: it would run no configuration (e.g. \"2 4s\")"
# and gpu-check dies with it before building
expect_contains "gpu-check stops on it" "$(grep -n 'why=$(check_rank_settings) || die' scripts/gpu-check.sh)" 'die "$why"'
finish
