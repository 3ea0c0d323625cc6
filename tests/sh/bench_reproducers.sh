#!/usr/bin/env bash
# The memory reproducers of docs/benchmarks.md ("Host memory per soak round
# on cuda") build as they say, warnings as errors, wherever the CUDA toolkit
# and NCCL's header are; graph_node_rss runs: with a GPU it prints its
# figure, without one it names the CUDA call that failed and exits 1.
cd "$(dirname "$0")/../.." || exit 1
. tests/sh/lib.sh

CUDA=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA/include/cuda_runtime.h" ] || [ ! -f "$CUDA/include/nccl.h" ] ||
    ! command -v mpicc >/dev/null; then
    skip "bench reproducers: no CUDA toolkit with nccl.h at $CUDA, or no mpicc"
    finish
fi
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT
FLAGS=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$CUDA/include")
LIBS=(-L"$CUDA/lib64" -lcudart)
builds() { # NAME COMPILER EXTRA-LIBS...
    local name=$1 cc=$2 out
    shift 2
    if out=$("$cc" "${FLAGS[@]}" "scripts/bench/$name.c" "${LIBS[@]}" "$@" -o "$DIR/$name" 2>&1); then
        pass
    else fail "scripts/bench/$name.c does not build"; context "$out"; fi
}
builds graph_node_rss gcc
builds nccl_graph_rss mpicc -lnccl
builds nccl_split_rss mpicc -lnccl
builds nccl_onerank_rss gcc -lnccl
# the split reproducer's window modes: gcsh's own device-communicator glue
# (kernels/cuda/ncclwin.cu, C++), linked in
if command -v "$CUDA/bin/nvcc" >/dev/null; then
    if out=$("$CUDA/bin/nvcc" -std=c++17 -Isrc -Ikernels -Werror all-warnings \
        -c kernels/cuda/ncclwin.cu -o "$DIR/ncclwin.o" 2>&1); then
        builds nccl_split_rss mpicc -DWITH_WINDOWS "$DIR/ncclwin.o" -lnccl -lstdc++
    else fail "kernels/cuda/ncclwin.cu does not build for the reproducer"; context "$out"; fi
else skip "bench reproducers: no nvcc for kernels/cuda/ncclwin.cu"; fi

[ -x "$DIR/graph_node_rss" ] || finish
OUT=$("$DIR/graph_node_rss" memset 20 5 2>&1); RC=$?
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    expect_match "graph_node_rss on a GPU: its figure" "$RC:$OUT" \
        "^0:graph_node_rss: memset: 20 graphs after 5: RSS [+-][0-9]+ KiB \([-0-9]+ bytes a graph\)$"
else
    expect_match "graph_node_rss without a GPU: the call that failed, status 1" "$RC:$OUT" \
        "^1:graph_node_rss: cuda[A-Za-z]+\(.*\): .+$"
fi
OUT=$("$DIR/graph_node_rss" nodes 2>&1); RC=$?
expect_eq "graph_node_rss: an unknown MODE is refused, naming the modes" "$RC:$OUT" \
    "2:graph_node_rss: MODE is one of memset kernel cluster syncdomain hostfn userobject useronce usernever userearly, not 'nodes'"
finish
