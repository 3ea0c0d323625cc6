-- Windows and signals of kind "vmm" on GPUs (tests/gpu/lib/window_suite.lua).
require("window_suite")("vmm")
