#!/usr/bin/env bash
# The build's first contact (issue 39): parallel by default, one line per
# step (V=1: the commands), and `make run` without a GPU builds the host
# backend alone, while `make` and `make test` still compile the cuda backend
# where nvcc is (CI catches CUDA compile errors).
# tests/run.sh: slow (not in make check)
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v make >/dev/null || { skip "no make"; finish; exit; }
# make as a user types it: not as a child of a make (make test-asan) whose
# flags and job server would come along
make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@"; }

cores=$(nproc)
expect_eq "parallel by default: one job per core" \
    "$(make -p -n -q print-deps-flags 2>/dev/null | grep -oE '^MAKEFLAGS = [a-z]* -j[0-9]+' | grep -oE '[0-9]+$')" "$cores"
expect_eq "make -j1 is kept" \
    "$(make -j1 -p -n -q print-deps-flags 2>/dev/null | grep -oE '^MAKEFLAGS = [a-z]* -j[0-9]+' | grep -oE '[0-9]+$')" 1

# one short line per step; V=1 the whole command
OUT=$(make --no-print-directory BUILD="$TMP/b" CUDA=0 "$TMP/b/src/core/util.o" 2>&1)
expect_eq "one line per step" "$OUT" "  CC    src/core/util.c"
OUT=$(make --no-print-directory BUILD="$TMP/b" CUDA=0 V=1 -B "$TMP/b/src/core/util.o" 2>&1)
expect_match "V=1: the command" "$OUT" '^cc .* -c -o .*/b/src/core/util\.o src/core/util\.c$'

# make run: the host backend alone where no GPU is seen, unless asked
gpu=$(test -e /dev/nvidia0 && nvidia-smi -L >/dev/null 2>&1 && echo 1)
nvcc=$(make -p -n -q print-deps-flags 2>/dev/null | sed -n 's/^CUDA := //p' | head -n 1)
RUN=$(make -n run 2>/dev/null | grep -v install-deps)
if [ -z "$gpu" ] && [ "$nvcc" = 1 ]; then
    expect_contains "make run, no GPU: build-host, CUDA=0" "$RUN" "BUILD=build-host CUDA=0 all"
    expect_contains "make run, no GPU: runs that binary" "$RUN" "build-host/gcsh -n 2"
    expect_contains "make run, no GPU: says so" "$RUN" "make run: no GPU here"
    RUN=$(make -n run GPU=1 2>/dev/null | grep -v install-deps)
    expect_not_contains "make run GPU=1: the kernels too" "$RUN" "CUDA=0"
    RUN=$(make -n run CUDA=1 2>/dev/null | grep -v install-deps)
    expect_not_contains "make run CUDA=1: the kernels too" "$RUN" "CUDA=0"
    # make (and so make test, CI) compiles the cuda backend
    OUT=$(make -n -B --no-print-directory BUILD="$TMP/c" all 2>/dev/null)
    expect_contains "make: the kernels are compiled" "$OUT" "NVCC kernels/reduce.cu"
    expect_contains "make: the cuda backend is compiled" "$OUT" "CC src/cuda/cuda_backend.c"
    TEST=$(make -n test 2>/dev/null)
    expect_not_contains "make test: no CUDA=0" "$TEST" "CUDA=0"
else
    skip "make run's choice: this machine has a GPU or no nvcc"
fi

finish
