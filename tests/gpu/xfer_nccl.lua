-- One-sided transfers on windows of kind "nccl" (tests/gpu/lib/xfer_suite.lua).
require("xfer_suite")("nccl")
