-- gcsh.graph on GPUs, windows of kind "nccl" (issue 21): the CI test
-- tests/lua/graph.lua (n replays against n direct calls, bit for bit, for
-- every capturable call and every kernel algorithm, also mixed with direct
-- calls; the refusals; frees of what a graph uses; the checks), where NCCL
-- offers symmetric memory.  scripts/gpu-check.sh runs it at 1 rank and at 2
-- and 4 ranks sharing a GPU; GCSH_GPU_TESTS=graph runs only the graph tests.
GRAPH_TEST_KIND = "nccl"
if not require("common").kind_here(comm.world(), "nccl") then return end
dofile(assert(package.searchpath("graph", package.path)))
