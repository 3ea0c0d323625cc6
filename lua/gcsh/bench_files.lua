-- gcsh.bench's results for other tools: csv= and json=, checked before
-- anything is timed and written whole at the end.
local sharing = require("gcsh.bench_table").sharing

local M = {}

local function json_module()
  local ok, json = pcall(require, "dkjson")
  return ok and json or nil
end

-- Checks o.csv and o.json on the communicator's rank 0 before anything is
-- timed, so that a refused path or a missing JSON module fails at once, and
-- on every rank alike (rank 0's verdict goes round with c:agree).  The
-- files are written whole at the end (gcsh.write_file: beside the target,
-- then renamed), so a failed bench leaves an earlier file as it was.
local function open_outputs(o, who)
  local files, problem = {}, ""
  if o.comm.rank == 0 then
    if o.json and not json_module() then
      problem = "json= needs the dkjson module (Debian package lua-dkjson; "
                .. "scripts/install-deps.sh installs it)"
    end
    for _, kind in ipairs { "csv", "json" } do
      if o[kind] and problem == "" then
        local ok, err = gcsh.check_file(o[kind])
        if ok then files[kind] = o[kind] else problem = kind .. "=: " .. err end
      end
    end
  end
  problem = o.comm:agree(problem)[1]
  if problem ~= "" then error(who .. ": " .. problem, 3) end
  files.who = who
  return files
end

local function write_checked(files, path, text)
  local ok, err = gcsh.write_file(path, text)
  if not ok then error(files.who .. ": " .. err, 0) end
end

-- A CSV cell: a number as the JSON file writes it (dkjson writes Lua's
-- tostring, 14 significant digits), so both files hold the same values.
local function csv_cell(v)
  if type(v) == "number" then return (tostring(v):gsub(",", ".")) end
  return tostring(v)
end

-- Writes rows (fields: the names, in column order) to the files
-- open_outputs checked: CSV with a header line; JSON {bench=, ranks=,
-- backend=, rows=[...]} with each row's fields in the same order.  Every
-- row ends with gpu_shared (sharing()).  A failed write is an error.
local function write_outputs(files, names, rows, bench_name, ranks)
  local sh = sharing()
  local shared = sh and (sh.gpu .. " MPS " .. sh.mps):gsub(",", ";") or "no"
  names = { table.unpack(names) }
  names[#names + 1] = "gpu_shared"
  for _, r in ipairs(rows) do r.gpu_shared = shared end
  if files.csv then
    local lines = { table.concat(names, ",") }
    for _, r in ipairs(rows) do
      local cells = {}
      for i, name in ipairs(names) do cells[i] = csv_cell(r[name]) end
      lines[#lines + 1] = table.concat(cells, ",")
    end
    write_checked(files, files.csv, table.concat(lines, "\n") .. "\n")
  end
  if files.json then
    local order = { "bench", "ranks", "backend", "rows" }
    for _, name in ipairs(names) do order[#order + 1] = name end
    local clean = {}
    for i, r in ipairs(rows) do
      clean[i] = {}
      for _, name in ipairs(names) do clean[i][name] = r[name] end
    end
    write_checked(files, files.json,
                  json_module().encode({ bench = bench_name, ranks = ranks,
                                         backend = gcsh.backend, rows = clean },
                                       { indent = true, keyorder = order }) .. "\n")
  end
end

M.open_outputs = open_outputs
M.write_outputs = write_outputs
return M
