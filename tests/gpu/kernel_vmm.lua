-- The reduce-kernel tests of CI (tests/lua/kernel_*.lua) on GPUs, windows of
-- kind "vmm": every kernel, dtype, op, odd length and offset against the
-- CPU reference, a rank arriving late, and the bad-input errors.
KERNEL_TEST_KIND = "vmm"
for _, name in ipairs { "kernel_ops", "kernel_ll", "kernel_ll128", "kernel_plan", "kernel_out", "kernel_delay", "kernel_errors", "kernel_choose", "kernel_mismatch" } do
  dofile(assert(package.searchpath(name, package.path)))
end
