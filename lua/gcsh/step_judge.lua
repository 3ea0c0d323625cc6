-- The steppers' race judge: what each cell should hold after a step's
-- moves, made from what their sources held, and a note for every cell that
-- does not (a read that came before the peer's write, or after its next
-- one).  Reads cells through step_cells.lua; the renderer
-- (step_diagram.lua) marks and prints what it finds.
local C = require("gcsh.step_cells")
local J = {}

local INTEGER = C.INTEGER

local function wrap(v, dtype)
  local i = math.tointeger(v)
  if not i then return v end
  if dtype == "i32" then i = i & 0xffffffff; return i >= 0x80000000 and i - 0x100000000 or i end
  if dtype == "u32" then return i & 0xffffffff end
  return i
end

-- op over values, as the kernels compute it (integers wrap).
function J.combine(op, values, dtype)
  local acc = values[1]
  for i = 2, #values do
    local v = values[i]
    if op == "sum" then acc = acc + v
    elseif op == "prod" then acc = acc * v
    elseif op == "min" then acc = math.min(acc, v)
    elseif op == "max" then acc = math.max(acc, v)
    else error("step: unknown op " .. tostring(op), 0) end
    if INTEGER[dtype] then acc = wrap(acc, dtype) end
  end
  return acc
end


-- The (row, cell) a place of a move names; exec is the rank doing the move
-- (its tmp).  nil when the place is outside every cell.
local function locate(L, loc, exec)
  if loc.slot ~= nil then -- a slot of a rank's ll area
    local row = L.row_of["l" .. tostring(loc.peer)]
    return row, row and loc.slot + 1 or nil
  end
  local row = L.row_of[(loc.peer == "tmp" and "t" .. exec) or ("s" .. tostring(loc.peer))]
  if not row then return nil end
  local at = L.rows[row].tmp and loc.first + L.offset or loc.first
  for c, cell in ipairs(L.cells) do
    if cell.count > 0 and at >= cell.first and at < cell.first + cell.count then return row, c end
  end
  return nil
end

-- The first step after `from` (up to `to`) at whose end the cell's value
-- differs from its value after step `from`.
local function change_step(view, hist, row, c, from, to)
  local base = hist[from][row][c]
  for t = from + 1, to do
    local v = hist[t] and hist[t][row][c]
    if v and base and not C.same(view, v[1], base[1]) then return t end
  end
  return nil
end

-- op over the sources, each as it was after the step versions[j] names.
local function combined(view, hist, m, srcs, versions)
  local values = {}
  for j, src in ipairs(srcs) do
    local v = src.row and hist[versions[j]][src.row][src.cell]
    if not v then return nil end
    values[j] = v[1]
  end
  if m.op == "copy" then return values[1] end
  return J.combine(view.op or "sum", values, view.dtype)
end

-- "r2 read r1.c0 too early, before step 1 wrote it": the sources read at
-- step s as they were after step t (not s - 1).
local function stale_read(view, hist, s, m, srcs, stale, t)
  local names, w = {}, nil
  for _, j in ipairs(stale) do
    local src = srcs[j]
    names[#names + 1] = src.name
    local step
    if t < s - 1 then step = change_step(view, hist, src.row, src.cell, t, s - 1)
    else step = change_step(view, hist, src.row, src.cell, s - 1, t) end
    if step then w = w and math.min(w, step) or step end
  end
  local them = #names == 1 and "it" or "them"
  if t < s - 1 then
    return string.format("r%d read %s too early, before step %d wrote %s", m.rank,
                         table.concat(names, ", "), w or s - 1, them)
  end
  return string.format("r%d read %s too late, after step %d overwrote %s", m.rank,
                       table.concat(names, ", "), w or t, them)
end

-- Why a written cell holds `got`: the sources that, read as they were
-- after another step, give it.  Tried: each source alone; then every
-- source of another rank at once (the executing rank reads its own slice
-- at its own time).  Returns the note and the step each source was read
-- after (versions[j]).
local function explain(view, hist, s, m, srcs, got)
  for _, src in ipairs(srcs) do if not src.row then return nil end end
  local last = #hist
  for t = 0, last do
    if t ~= s - 1 then
      for j = 1, #srcs do
        local versions = {}
        for i = 1, #srcs do versions[i] = i == j and t or s - 1 end
        local v = combined(view, hist, m, srcs, versions)
        if v ~= nil and C.same(view, v, got) then
          return stale_read(view, hist, s, m, srcs, { j }, t), versions
        end
      end
    end
  end
  for t = 0, last do
    if t ~= s - 1 then
      local versions, stale = {}, {}
      for j, src in ipairs(srcs) do
        local own = view.layout.rows[src.row].rank == m.rank
        versions[j] = own and s - 1 or t
        local a, b = hist[t][src.row][src.cell], hist[s - 1][src.row][src.cell]
        if not own and a and b and not C.same(view, a[1], b[1]) then stale[#stale + 1] = j end
      end
      local v = #stale > 0 and combined(view, hist, m, srcs, versions)
      if v and C.same(view, v, got) then return stale_read(view, hist, s, m, srcs, stale, t), versions end
    end
  end
  return nil
end

-- "r1.c3", "r0.tmp.c1", "r2" (a whole-region cell), "r1.ll.s0".
local function cell_name(L, r, c)
  local row = L.rows[r]
  local base = "r" .. row.rank .. (row.tmp and ".tmp" or row.ll and ".ll" or "")
  return row.cells[c].label ~= "" and (base .. "." .. row.cells[c].label) or base
end

local function place_name(view, loc, exec)
  local row, c = locate(view.layout, loc, exec)
  if row then return cell_name(view.layout, row, c) end
  return loc.peer == "tmp" and ("r" .. exec .. ".tmp") or ("r" .. tostring(loc.peer))
end

-- Whether two states of a cell hold the same (values and flags).
local function same_cell(view, a, b)
  if not (a and b and C.same(view, a[1], b[1]) and C.same(view, a[2], b[2])) then return false end
  if not a.flags then return true end
  return b.flags and a.flags[1] == b.flags[1] and a.flags[2] == b.flags[2]
end

-- What each move of step s should have written: expected[row][cell] =
-- {value=, set=} (value nil: unknown) and writer[row][cell] = {move=,
-- srcs=}.
local function expectations(view, prev, moves)
  local L = view.layout
  local expected, writer = {}, {}
  for r = 1, #L.rows do expected[r], writer[r] = {}, {} end
  for _, m in ipairs(moves) do
    local srcs, values, sets, known = {}, {}, {}, true
    for i, loc in ipairs(m.src) do
      local row, c = locate(L, loc, m.rank)
      srcs[i] = { row = row, cell = c, name = place_name(view, loc, m.rank) }
      local v = row and prev[row][c]
      values[i], sets[i] = v and v[1], v and v.set
      known = known and values[i] ~= nil
    end
    local want = { set = C.move_set(m, sets, #m.src) }
    if known then
      want.value = m.op == "copy" and values[1] or J.combine(view.op or "sum", values, view.dtype)
    end
    for _, loc in ipairs(m.dst) do
      local row, c = locate(L, loc, m.rank)
      if row then expected[row][c] = want; writer[row][c] = { move = m, srcs = srcs } end
    end
  end
  return expected, writer
end

-- The note on a wrong cell, and the set it holds (from the reads that
-- explain it, when some do).
local function wrong_note(view, hist, s, r, c, want, w)
  local L, now = view.layout, hist[s][r][c]
  local why, versions = nil, nil
  if w then why, versions = explain(view, hist, s, w.move, w.srcs, now[1])
  else why = "no move of this step writes it" end
  if versions then
    local sets = {}
    for j, src in ipairs(w.srcs) do
      -- a read after a later step: that state's sets are not made yet
      local cell = hist[versions[j]][src.row][src.cell]
      sets[j] = cell.set or C.decode(view, cell[1])
    end
    now.set = C.move_set(w.move, sets, #w.srcs)
  else
    now.set = C.decode(view, now[1])
  end
  local twice = ""
  if now.set and C.repeated(now.set, view.k) ~= "" then
    twice = " (" .. C.repeated(now.set, view.k) .. ")"
  elseif view.bits and not now.set then
    twice = " (no set of ranks: some rank's data was added more than once)"
  end
  local expect = want.set and C.set_text(want.set, view.k) or C.text(view, want.value)
  local what = string.format("! step %d: %s holds %s%s, expected %s", s, cell_name(L, r, c),
                             C.holds_text(view, now), twice, expect)
  return why and (what .. ": " .. why) or what
end

-- What step s did to every cell: marks[row][cell] = {changed=, wrong=,
-- expected=} and notes (one line per wrong written cell).  Sets each
-- cell's set (what it holds, in bits mode) in hist[s].
function J.judge(view, hist, s, moves)
  local L = view.layout
  local prev, cur = hist[s - 1], hist[s]
  local expected, writer = expectations(view, prev, moves)
  local marks, notes = {}, {}
  for r, row in ipairs(L.rows) do
    marks[r] = {}
    for c = 1, #row.cells do
      local before, now = prev[r][c], cur[r][c]
      local mark = { changed = false, wrong = false }
      if now then
        mark.changed = not same_cell(view, before, now)
        local w = writer[r][c]
        local want = w and expected[r][c] or { value = before and before[1], set = before and before.set }
        if want.value ~= nil and not C.same(view, now[1], want.value) then
          mark.wrong, mark.expected = true, want.value
          notes[#notes + 1] = wrong_note(view, hist, s, r, c, want, w)
        else
          now.set = want.value ~= nil and want.set or C.decode(view, now[1])
        end
      end
      marks[r][c] = mark
    end
  end
  return marks, notes
end

J.place_name = place_name

return J
