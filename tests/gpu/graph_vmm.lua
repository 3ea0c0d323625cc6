-- gcsh.graph on GPUs, windows of kind "vmm" (issue 21): the CI test
-- tests/lua/graph.lua on CUDA VMM windows (see graph_nccl.lua).
GRAPH_TEST_KIND = "vmm"
dofile(assert(package.searchpath("graph", package.path)))
