-- Windows: memory every rank can reach
-- A window is a buffer registered on every rank of a communicator, so that
-- each rank can load and store the others' parts ("slices") directly: the
-- symmetric memory behind NCCL's fast kernels.  On GPUs, c:window makes it
-- with NCCL (kind "nccl") or with CUDA virtual memory (kind "vmm"); on
-- CPUs, it is an MPI-3 shared memory segment (kind "host").
lesson = require "gcsh.lesson"
c = comm.world()

--- Make a window
-- c:window(n [, dtype [, {kind=}]]) is collective: every rank calls it with
-- the same arguments (gcsh checks that first) and gets a slice of n
-- elements.
w = c:window(8, "i32")
print(w)
print(w.kind .. " window, " .. w.n .. " " .. w.dtype .. " per rank")

--- What registration made
-- w:info() tells what the registration did: the slice's bytes, the
-- allocation (rounded up to the kind's granularity, with room for the
-- kernels' sync words), the addresses of every slice, the team.
info = w:info()
print("bytes " .. info.bytes .. ", allocated " .. info.alloc_bytes
      .. ", granularity " .. info.granularity)
lesson.check(info.alloc_bytes >= info.bytes
             and info.alloc_bytes % info.granularity == 0,
             "the allocation covers the slice, in whole granules")

--- My slice, and show
-- w:tensor() is my slice as a tensor.  show(w) prints every rank's slice in
-- one table on rank 0 (it is collective: every rank takes part).  A * would
-- mark a value that differs from its column's most common one; here every
-- rank's value differs, so no value is the most common.
w:tensor():fill(rank * 100)
c:barrier()
show(w)

--- Registration, stage by stage
-- step.window(c, n) does the registration one stage per step and prints
-- what really happened on every rank: the check that every rank asks for
-- the same window, the allocation, each peer's mapping.  (Builds without it
-- say so.)  The addresses are each process's own: every rank maps the same
-- memory at a place of its own choosing, so the numbers differ from rank to
-- rank; within each rank's mapping the slices sit one after another.
if step.window then
  reg = step.window(c, 8, "i32")
  reg:run()
  lesson.check(reg.window ~= nil and reg.window.n == 8,
               "registration ended in a usable window")
  reg.window:free()
else
  print("no step.window in this build: c:window did it all at once")
end

--- Free it
-- w:free() is collective too: a barrier, so no rank still reads a slice,
-- then the deregistration.
w:free()
lesson.check(not pcall(w.tensor, w), "a freed window refuses use")
