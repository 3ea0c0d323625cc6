#!/usr/bin/env bash
# .info on GPUs, run by scripts/gpu-check.sh:
#   bash tests/gpu/info.sh path/to/gcsh NP
# One table: versions and capabilities once, a row per rank with its GPU's
# PCI bus and NUMA node, and the link matrix between the ranks' GPUs; the
# capabilities gcsh uses, NVLS off and why; --version names every library.
cd "$(dirname "$0")/../.." || exit 1
GCSH=${1:-build-gpu/gcsh}
NP=${2:-2}
. tests/sh/lib.sh
LAST=$((NP - 1))

gcsh_pipe "$NP" '.info' --backend cuda
echo "$OUT"
expect_eq ".info: exit 0" "$RC" 0
expect_match ".info: versions once" "$(head -n 1 <<<"$OUT")" '^gcsh 0\.1\.0, Lua 5\.4\.[0-9]+, .*, NCCL [0-9]+\.[0-9]+\.[0-9]+, CUDA [0-9]+\.[0-9]+, driver [0-9]+\.[0-9]+$'
expect_match ".info: the GPU model once" "$OUT" "^backend cuda: $NP ranks on 1 node, GPU .*, [0-9.]+ GiB, sm [0-9]+\.[0-9]+$"
expect_match ".info: capabilities" "$OUT" '^P2P (yes|no), VMM (yes|no), CUMEM handles fd (yes|no), fabric (yes|no), NCCL symmetric (yes|no)'
expect_match ".info: NVLS off and why" "$OUT" '^NVLS off: .*NCCL_NVLS_ENABLE=0'
expect_contains ".info: the rank table" "$OUT" "rank  host"
for r in $(seq 0 "$LAST"); do
    # the NUMA column is left out when no rank knows its node (a VM says -1)
    expect_match ".info: rank $r's row: its GPU, PCI bus, NUMA node" "$OUT" \
        "^ +$r  [^ ]+ +$r  cuda:$r  [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]( +(-|[0-9]+))?$"
done
expect_contains ".info: the link matrix" "$OUT" "GPU links (NV: NVLink, P2P: PCIe, -: no peer access, =: same GPU, net: other)"
expect_match ".info: rank 0's links" "$OUT" "^ +0 +\.( +(NV|P2P|-)){$LAST}$"
expect_match ".info: rank $LAST's links" "$OUT" "^ +$LAST( +(NV|P2P|-)){$LAST} +\.$"
expect_eq ".info: 80 columns" "$(awk 'length > 80' <<<"$OUT")" ""
expect_not_contains ".info: no rank reported a problem" "$OUT" "gcsh: .info:"

OUT=$(timeout 60 "$GCSH" --version 2>&1)
echo "$OUT"
expect_match "--version: NCCL" "$OUT" '^  NCCL:         [0-9]+\.[0-9]+\.[0-9]+$'
expect_match "--version: CUDA runtime" "$OUT" '^  CUDA runtime: [0-9]+\.[0-9]+$'
expect_match "--version: CUDA driver" "$OUT" '^  CUDA driver:  [0-9]+\.[0-9]+$'

finish
