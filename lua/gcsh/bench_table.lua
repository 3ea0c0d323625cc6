-- gcsh.bench's printed tables: nccl-tests' columns, and the note on a
-- shared GPU that every table, CSV row and JSON file carries.
local M = {}

-- Ranks that share a GPU (--share-gpu) make slower figures than a GPU per
-- rank: every table, CSV row and JSON file says so.  nil when no GPU is
-- shared; else {gpu = "cuda:0 with ranks 0-3", mps = "yes"|"no"}.
local shared_cache
local function sharing()
  if shared_cache == nil then
    local info = gcsh.info()
    local gpu = info.gpu_shared
    shared_cache = false
    if gpu and gpu ~= "no" then
      shared_cache = { gpu = gpu, mps = (info.mps or ""):match("serves this rank: (%a+)") or "?" }
    end
  end
  return shared_cache or nil
end

-- The printed tables, one column per entry: {title, unit, width, row format,
-- row key}.  The header's first cell begins with nccl-tests' "# " within the
-- same width, so columns line up.
local function print_header(cols)
  local sh = sharing()
  if sh then
    print(string.format("# shared GPU: %s (MPS: %s): not a dedicated-GPU figure", sh.gpu, sh.mps))
  end
  for line = 1, 2 do
    local cells = {}
    for i, col in ipairs(cols) do
      cells[i] = string.format("%" .. (i == 1 and col[3] - 2 or col[3]) .. "s", col[line])
    end
    print((("# " .. table.concat(cells, "  ")):gsub("%s+$", "")))
  end
end

local function print_row(cols, r)
  local cells = {}
  for i, col in ipairs(cols) do cells[i] = string.format("%" .. col[3] .. col[4], r[col[5]]) end
  print(table.concat(cells, "  "))
end

local SIZE_COLUMNS = {
  { "size", "(B)", 12, "d", "size" }, { "count", "(elements)", 12, "d", "count" },
  { "type", "", 6, "s", "type" },
}
local RATE_COLUMNS = {
  { "time", "(us)", 9, ".2f", "time_us" }, { "algbw", "(GB/s)", 8, ".2f", "algbw" },
  { "busbw", "(GB/s)", 8, ".2f", "busbw" }, { "#wrong", "", 6, "d", "wrong" },
}
local ISSUE_COLUMN = { { "issue", "(us)", 9, ".2f", "issue_us" } }

local function columns(...)
  local cols = {}
  for _, part in ipairs { ... } do
    for _, col in ipairs(part) do cols[#cols + 1] = col end
  end
  return cols
end

M.sharing = sharing
M.print_header = print_header
M.print_row = print_row
M.columns = columns
M.SIZE_COLUMNS, M.RATE_COLUMNS, M.ISSUE_COLUMN = SIZE_COLUMNS, RATE_COLUMNS, ISSUE_COLUMN
return M
