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

# the GPU each rank should have: rank r of the machine takes GPU r, or
# r mod the visible count when ranks share GPUs (GCSH_SHARE_GPU, gpu-check's
# shared runs)
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then NGPU=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi
SHARED=$([ -n "${GCSH_SHARE_GPU:-}" ] && [ "${GCSH_SHARE_GPU}" != 0 ] && [ "$NP" -gt "$NGPU" ] && echo 1)
dev_of() { if [ -n "$SHARED" ]; then echo $(($1 % NGPU)); else echo "$1"; fi; }
RANKS=$([ "$NP" = 1 ] && echo rank || echo ranks)

# comm.world() first: NCCL says then whether it offers symmetric memory
gcsh_pipe "$NP" 'c = comm.world()
.info' --backend cuda
echo "$OUT"
expect_eq ".info: exit 0" "$RC" 0
expect_match ".info: versions once" "$(head -n 1 <<<"$OUT")" '^gcsh 0\.1\.0, Lua 5\.4\.[0-9]+, .*, NCCL [0-9]+\.[0-9]+\.[0-9]+, CUDA [0-9]+\.[0-9]+, driver [0-9]+\.[0-9]+$'
expect_match ".info: the GPU model once" "$OUT" "^backend cuda: $NP $RANKS on 1 node, GPU .*, [0-9.]+ GiB, sm [0-9]+\.[0-9]+$"
FLAT=$(tr '\n' ' ' <<<"$OUT" | tr -s ' ')
for cap in 'P2P (yes|no)' 'VMM (yes|no)' 'CUMEM handles fd (yes|no)' 'fabric (yes|no)' \
           'NCCL symmetric (yes \(NCCL, for comm\.world\(\)\)|no: NCCL offers no symmetric memory to)'; do
    expect_match ".info: capability ${cap%% (*}" "$FLAT" "$cap"
done
if [ -n "$SHARED" ] || [ "$NP" = 1 ]; then
    expect_match ".info: no NCCL symmetric memory here, and why" "$FLAT" \
        "NCCL symmetric no: NCCL offers no symmetric memory to (a one-rank communicator|ranks that share a GPU)"
fi
expect_match ".info: NVLS off and why" "$OUT" '^NVLS off: .*NCCL_NVLS_ENABLE=0'
if [ -n "$SHARED" ]; then
    expect_match ".info: who shares the GPU" "$FLAT" "GPU shared: (\[[0-9,-]+\] )?cuda:0 with ranks 0"
    if [ "$GCSH_SHARE_GPU" = nomps ]; then
        expect_contains ".info: MPS off" "$FLAT" "MPS: off (--share-gpu=nomps)"
    else
        expect_match ".info: MPS serves the ranks" "$FLAT" \
            "MPS: (private MPS daemon started by gcsh|a running MPS server).* serves this rank: yes"
    fi
    expect_match ".info: NCCL hosts" "$FLAT" "NCCL hosts: (each rank its own NCCL host|one NCCL host per round)"
    expect_contains ".info: collectives on the kernels, a copy at one rank" "$FLAT" \
        "collectives: kernels (--share-gpu); a stream copy at one rank"
else
    expect_contains ".info: no GPU shared" "$FLAT" "GPU shared: no"
    expect_contains ".info: collectives on NCCL, a copy at one rank" "$FLAT" \
        "collectives: NCCL (no GPU shared); a stream copy at one rank"
fi
expect_contains ".info: the rank table" "$OUT" "rank  host"
for r in $(seq 0 "$LAST"); do
    # host, pid, local rank, device, PCI bus; the NUMA column is left out
    # when no rank knows its node (a VM says -1)
    expect_match ".info: rank $r's row: its GPU, PCI bus, NUMA node" "$OUT" \
        "^ +$r  [^ ]+ +[0-9]+ +$r  cuda:$(dev_of "$r")  [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]( +(-|[0-9]+))?$"
done
if [ "$NP" -gt 1 ]; then
    expect_contains ".info: the link matrix" "$OUT" "GPU links (NV: NVLink, P2P: PCIe, -: no peer access, =: same GPU, net: other)"
    expect_match ".info: rank 0's links" "$OUT" "^ +0 +\.( +(NV|P2P|-|=)){$LAST}$"
    expect_match ".info: rank $LAST's links" "$OUT" "^ +$LAST( +(NV|P2P|-|=)){$LAST} +\.$"
    [ -n "$SHARED" ] && [ "$NGPU" = 1 ] && expect_match ".info: ranks on one GPU: =" "$OUT" "^ +0 +\.( +=){$LAST}$"
else
    expect_not_contains ".info: no link matrix at 1 rank" "$OUT" "GPU links"
fi
expect_eq ".info: 80 columns" "$(awk 'length > 80' <<<"$OUT")" ""
expect_not_contains ".info: no rank reported a problem" "$OUT" "gcsh: .info:"

OUT=$(timeout 60 "$GCSH" --version 2>&1)
echo "$OUT"
expect_match "--version: NCCL" "$OUT" '^  NCCL:         [0-9]+\.[0-9]+\.[0-9]+$'
expect_match "--version: CUDA runtime" "$OUT" '^  CUDA runtime: [0-9]+\.[0-9]+$'
expect_match "--version: CUDA driver" "$OUT" '^  CUDA driver:  [0-9]+\.[0-9]+$'

finish
