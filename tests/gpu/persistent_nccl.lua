-- kernel.persistent on GPUs (tests/lua/persistent.lua), windows of kind
-- "nccl" (where NCCL offers symmetric memory): as persistent_vmm.lua.
KERNEL_TEST_KIND = "nccl"
if not require("common").kind_here(comm.world(), "nccl") then return end
dofile(assert(package.searchpath("persistent", package.path)))
