-- step.window with kind "nccl" on GPUs (tests/gpu/lib/window_step_suite.lua).
require("window_step_suite")("nccl")
