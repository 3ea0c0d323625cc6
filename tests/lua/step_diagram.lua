-- The steppers' diagrams show what the buffers hold: with rank r's region
-- filled with 2^r, after every step each cell the diagram prints names the
-- ranks whose bits the data holds (read here from the window itself, apart
-- from the stepper), cells that changed carry *, nothing is marked wrong,
-- and every line fits 76 columns (80 with rank 0's "[0] ").
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank

-- "0-2,5" (or "0,2") -> the mask of those ranks; "-" (no rank) -> 0.
local function parse_ranks(text)
  if text == "-" then return 0 end
  local mask = 0
  for part in text:gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    a, b = tonumber(a or part), tonumber(b or part)
    H.truthy(a and b, "cell text '" .. text .. "' names ranks")
    for r = a, b do mask = mask | (1 << r) end
  end
  return mask
end

-- The first value of each chunk of every rank's slice, read by every rank
-- from its own slice and gathered: values[r + 1][chunk].
local function read_cells(w, offset, n, chunks)
  local mine = {}
  local t = w:tensor()
  for i = 1, chunks do
    local q, rem = n // chunks, n % chunks
    local first = offset + (i - 1) * q + math.min(i - 1, rem)
    local count = q + (i - 1 < rem and 1 or 0)
    mine[i] = count > 0 and tostring(math.tointeger(t[first])) or ""
  end
  local out = {}
  for r, s in ipairs(c:agree(table.concat(mine, " "))) do
    out[r] = {}
    for i = 1, chunks do out[r][i] = "" end
    local i = 0
    for word in (s .. " "):gmatch("(%S*) ") do i = i + 1; out[r][i] = word end
  end
  return out
end

-- The grid rows of the last step in st.text: marks[row label][cell] = the
-- cell's text as printed (with its mark).
local function printed_rows(text)
  local rows, last_title = {}, 0
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  for i, line in ipairs(lines) do if line:find(": step %d+ of %d+") then last_title = i end end
  for i = last_title + 1, #lines do
    local label, rest = lines[i]:match("^  (r%d+)  +(%S.*)$")
    if label then
      rows[label] = {}
      for cell in rest:gmatch("%S+") do rows[label][#rows[label] + 1] = cell end
    end
  end
  return rows
end

local function check_step(what, st, w, offset, n, chunks, before)
  local values = read_cells(w, offset, n, chunks)
  local rows = printed_rows(st.text)
  for r = 0, k - 1 do
    local label = "r" .. r
    for i = 1, chunks do
      local v = values[r + 1][i]
      if v ~= "" then
        local cell = st.cells[label][i]
        H.eq(parse_ranks(cell), tonumber(v), string.format("%s: %s cell %d names the data's ranks", what, label, i))
        local printed = rows[label] and rows[label][i]
        H.truthy(printed, string.format("%s: %s cell %d is printed", what, label, i))
        local mark = printed:sub(-1)
        H.truthy(mark ~= "!", string.format("%s: %s cell %d is not marked wrong", what, label, i))
        local changed = before[r + 1][i] ~= v
        H.eq(mark == "*", changed, string.format("%s: %s cell %d marked * when it changed", what, label, i))
      end
    end
  end
  for line in (st.text .. "\n"):gmatch("([^\n]*)\n") do
    H.truthy(#line <= 76, what .. ": line fits 76 columns: '" .. line .. "'")
  end
  return values
end

local CASES = {
  { "allreduce", "ring" }, { "allreduce", "twoshot" }, { "allreduce", "multicast" },
  { "allreduce", "oneshot" }, { "reduce_scatter", "ring" }, { "reduce_scatter", "direct" },
  { "allgather", "ring" }, { "allgather", "direct" },
  { "broadcast", "tree" }, { "broadcast", "ring" }, { "broadcast", "direct" },
}

for _, dtype in ipairs({ "i32", "f32" }) do
  local w = c:window(11, dtype)
  for _, region in ipairs({ { offset = 0, n = 11 }, { offset = 2, n = 2 * k + 1 } }) do
    for _, case in ipairs(CASES) do
      local coll, algo = case[1], case[2]
      local what = string.format("%s %s %s %d+%d at %d ranks", coll, algo, dtype, region.offset, region.n, k)
      w:tensor():fill(1 << me)
      local opts = { algo = algo, n = region.n, offset = region.offset }
      local st = coll == "broadcast" and step.broadcast(w, k - 1, opts) or step[coll](w, opts)
      -- one-shot and broadcast move whole regions: one cell per buffer
      local chunks = (algo == "oneshot" or coll == "broadcast") and 1 or k
      local before = read_cells(w, region.offset, region.n, chunks)
      for r = 0, k - 1 do
        for i = 1, chunks do
          if before[r + 1][i] ~= "" then
            H.eq(parse_ranks(st.cells["r" .. r][i]), 1 << r, what .. ": start cell names its rank")
          end
        end
      end
      -- one step per call, then (after a reset) two per call
      for s = 1, st.steps do
        st:next()
        before = check_step(what .. " step " .. s, st, w, region.offset, region.n, chunks, before)
      end
      st:reset()
      if st.steps >= 2 then
        st:next(2)
        H.truthy(st.text:find(": step 1 of", 1, true) and st.text:find(": step 2 of", 1, true),
                 what .. ": next(2) prints both steps")
      end
      H.eq(st:run({ quiet = true }), true, what .. ": run")
      H.truthy(st.text:find("equals the reference", 1, true), what .. ": the result line")
      st:show()
      H.truthy(st.text:find("after step " .. st.steps .. " of " .. st.steps, 1, true), what .. ": show")
      st:free()
    end
  end
  w:free()
end

-- Data other than 2^r: cells show values (the first of each chunk).
local w = c:window(4 * k, "i32")
w:tensor():fill(10 + me)
local st = step.allreduce(w, { algo = "twoshot" })
st:next()
local want = tostring(k * 10 + k * (k - 1) // 2)
H.eq(st.cells.r0[1], want, "values mode: the sum's value")
H.truthy(st.text:find("the first value of each", 1, true), "values mode: the legend says so")
st:free()
w:free()

print("step_diagram: ok")
