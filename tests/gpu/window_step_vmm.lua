-- step.window with kind "vmm" on GPUs (tests/gpu/lib/window_step_suite.lua).
require("window_step_suite")("vmm")
