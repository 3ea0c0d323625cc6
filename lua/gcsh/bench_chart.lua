-- gcsh.bench's chart (bench.chart, bench.allreduce's chart=): one bar per
-- algorithm per size, in an 80-column terminal.
local M = {}

local function human(bytes)
  local units = { "B", "KiB", "MiB", "GiB" }
  local u = 1
  while bytes >= 1024 and u < #units and bytes % 1024 == 0 do bytes, u = bytes // 1024, u + 1 end
  return string.format("%d %s", bytes, units[u])
end

-- A chart's number: three significant digits, whole numbers from 1000 on
-- (0.00406, 12.3, 325, 1234), so small sizes do not all read 0.00.
local function chart_number(v)
  return string.format(v >= 1000 and "%.0f" or "%.3g", v)
end

-- One bar per algorithm per size, named by what ran (a row's label, as
-- bench.allreduce gives it; else its algo).  Sizes differ by orders of
-- magnitude, so each size has its own scale: 50 columns for its best busbw
-- (or its slowest time), the others in proportion, each with its value.
function M.chart(rows, metric)
  metric = metric or "busbw"
  local field = metric == "time" and "time_us" or "busbw"
  local WIDTH, sizes, by_size = 50, {}, {}
  for _, r in ipairs(rows) do
    if not by_size[r.size] then by_size[r.size] = {}; sizes[#sizes + 1] = r.size end
    table.insert(by_size[r.size], r)
  end
  print(string.format("# %s per algorithm (%s); at each size, bars relative to the %s there",
                      metric == "time" and "time (us)" or "busbw (GB/s)",
                      rows[1] and rows[1].type or "", metric == "time" and "slowest" or "best"))
  for _, size in ipairs(sizes) do
    local group, max = by_size[size], 0
    for _, r in ipairs(group) do max = math.max(max, r[field]) end
    print(human(size))
    for _, r in ipairs(group) do
      local v = r[field]
      local bar = max > 0 and math.floor(v / max * WIDTH + 0.5) or 0
      print(string.format("  %-10s %s %s", r.label or r.algo, string.rep("#", math.max(bar, v > 0 and 1 or 0)),
                          chart_number(v)))
    end
  end
end

return M
