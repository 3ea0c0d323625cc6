-- NVLink multicast stays off on the GPU machines (scripts/gpu-check.sh
-- exports NCCL_NVLS_ENABLE=0 and never sets GCSH_MULTICAST): w:multicast()
-- must refuse NVLS, say why, and emulate it correctly, for both kinds.
for _, kind in ipairs(require("common").kinds(comm.world())) do
  KERNEL_TEST_KIND = kind
  dofile(assert(package.searchpath("mcast_emulated", package.path)))
end
