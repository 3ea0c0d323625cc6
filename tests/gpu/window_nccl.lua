-- Windows and signals of kind "nccl" on GPUs (tests/gpu/lib/window_suite.lua).
require("window_suite")("nccl")
