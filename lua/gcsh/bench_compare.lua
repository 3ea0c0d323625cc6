-- gcsh.bench against nccl-tests: an nccl-tests *_perf output read back
-- (bench.nccl_tests) and gcsh's rows compared with it (bench.compare).
local T = require("gcsh.bench_table")
local print_header, print_row = T.print_header, T.print_row

local M = {}

-- bench.nccl_tests(path): the rows of an nccl-tests *_perf output file, as
-- {size=, count=, type=, time_us=, algbw=, busbw=, wrong=, ip_time_us=,
-- ip_algbw=, ip_busbw=} (out-of-place, then in-place), in file order; the
-- list's field graph is the run's -G (its header's "graph: N"; 0: none).
function M.nccl_tests(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #1 to 'bench.nccl_tests' (file name expected, got %s)",
                        type(path)), 2)
  end
  local f, err = io.open(path, "r")
  if not f then error("bench.nccl_tests: " .. tostring(err), 2) end
  local rows = { graph = 0 }
  for line in f:lines() do
    local graph = line:match("^#.*graph: (%d+)")
    if graph then rows.graph = math.tointeger(tonumber(graph)) end
    local t = {}
    for word in line:gmatch("%S+") do t[#t + 1] = word end
    if #t >= 9 and math.tointeger(tonumber(t[1])) and not line:match("^%s*#") then
      rows[#rows + 1] = {
        size = math.tointeger(tonumber(t[1])), count = math.tointeger(tonumber(t[2])), type = t[3],
        time_us = tonumber(t[6]), algbw = tonumber(t[7]), busbw = tonumber(t[8]),
        wrong = tonumber(t[9]) or 0, ip_time_us = tonumber(t[10]), ip_algbw = tonumber(t[11]),
        ip_busbw = tonumber(t[12]),
      }
    end
  end
  f:close()
  return rows
end

-- bench.compare(rows, ref [, {label=, ref_label=, inplace=false, quiet=false}]):
-- per size present in both, gcsh's time per call against the reference's
-- (nccl-tests rows from bench.nccl_tests, out-of-place unless inplace), as
-- a ratio (above 1: gcsh is slower), with both busbw and gcsh's issue time.
-- Prints on rank 0 of the world; returns {size=, time_us=, ref_us=, ratio=,
-- busbw=, ref_busbw=, issue_us=} per size and the worst ratio.  The labels
-- say which side replayed graphs (rows with graph=, nccl-tests -G), and a
-- note says so when only one side did: that compares different things.
local COMPARE_COLUMNS = {
  { "size", "(B)", 12, "d", "size" }, { "gcsh", "(us)", 9, ".2f", "time_us" },
  { "ref", "(us)", 9, ".2f", "ref_us" }, { "ratio", "", 6, ".3f", "ratio" },
  { "busbw", "(GB/s)", 8, ".2f", "busbw" }, { "ref", "(GB/s)", 8, ".2f", "ref_busbw" },
  { "issue", "(us)", 8, ".2f", "issue_us" },
}

function M.compare(rows, ref, opts)
  gcsh.check_options(opts, "bench.compare", "inplace label quiet ref_label")
  opts = opts or {}
  local by_size = {}
  for _, r in ipairs(ref) do by_size[r.size] = r end
  local out, worst = {}, 0
  for _, r in ipairs(rows) do
    local q = by_size[r.size]
    if q then
      local ref_us = opts.inplace and q.ip_time_us or q.time_us
      local ref_bw = opts.inplace and q.ip_busbw or q.busbw
      local row = { size = r.size, time_us = r.time_us, ref_us = ref_us, ratio = r.time_us / ref_us,
                    busbw = r.busbw, ref_busbw = ref_bw, issue_us = r.issue_us or 0 }
      out[#out + 1] = row
      worst = math.max(worst, row.ratio)
    end
  end
  local mine = rows[1] and rows[1].graph
  local theirs = (ref.graph or 0) > 0 and ref.graph or nil
  if rank == 0 and not opts.quiet then
    print(string.format("# %s against %s (time per call; ratio above 1: gcsh slower)",
                        opts.label or ("gcsh" .. (mine and " graph x" .. mine or "")),
                        opts.ref_label or ("nccl-tests" .. (theirs and " -G " .. theirs or ""))))
    if (mine == nil) ~= (theirs == nil) then
      print(string.format("# note: only %s replays CUDA graphs", mine and "gcsh" or "nccl-tests"))
    end
    print_header(COMPARE_COLUMNS)
    for _, row in ipairs(out) do print_row(COMPARE_COLUMNS, row) end
    print(string.format("# worst ratio: %.3f over %d sizes", worst, #out))
  end
  return out, worst
end

return M
