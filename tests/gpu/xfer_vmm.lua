-- One-sided transfers on windows of kind "vmm" (tests/gpu/lib/xfer_suite.lua).
require("xfer_suite")("vmm")
