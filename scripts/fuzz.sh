#!/usr/bin/env bash
# A long fuzzing run of every binding (tests/lua/fuzz.lua) at 2 ranks on the
# host backend.  The seed is printed first: FUZZ_SEED=<seed> reproduces a run.
#   scripts/fuzz.sh [seconds=300] [seed=random]
# GCSH=build-asan/gcsh runs it under the sanitizers (make test-asan builds it).
set -u
cd "$(dirname "$0")/.." || exit 1
seconds=${1:-300}
seed=${2:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
gcsh=${GCSH:-build/gcsh}
export OMPI_MCA_rmaps_base_oversubscribe=1 GCSH_HISTORY=""
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "fuzz: seed $seed, $seconds s, $gcsh at 2 ranks"
FUZZ_SECONDS=$seconds FUZZ_SEED=$seed timeout $((seconds + 120)) "$gcsh" -n 2 tests/lua/fuzz.lua </dev/null
status=$?
[ $status = 0 ] || echo "fuzz: FAILED (exit $status); reproduce with: scripts/fuzz.sh $seconds $seed"
exit $status
