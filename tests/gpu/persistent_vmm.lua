-- kernel.persistent on GPUs (tests/lua/persistent.lua), windows of kind
-- "vmm": the resident kernel (kernels/persist.cu) against the CPU reference
-- for every dtype and op, 400 calls back to back (the ring's back-pressure),
-- stream order against direct kernels, communicator collectives and fills,
-- the handle's life and the bad-input errors.  After it no resident kernel
-- may be left: gpu-check.sh checks nvidia-smi after the job.
KERNEL_TEST_KIND = "vmm"
dofile(assert(package.searchpath("persistent", package.path)))
