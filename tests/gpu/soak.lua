-- The soak on GPUs (tests/lua/soak.lua): communicators, windows of kinds
-- nccl and vmm (where they work), signals, graphs, residents and transfers
-- made and freed in rounds; RSS, fds, threads, /dev/shm and device memory
-- flat after the warm-up.  scripts/gpu-check.sh runs the short form (100
-- rounds); the long form:
--   GCSH_SOAK_ROUNDS=1000 GCSH_TEST_TIMEOUT=3600 GCSH_GPU_TESTS=soak scripts/gpu-check.sh
-- What grows there, and whose it is (a graph of NCCL's kernel keeps ~200
-- bytes in the driver): docs/benchmarks.md, "Host memory per soak round".
dofile(assert(package.searchpath("soak", package.path)))
