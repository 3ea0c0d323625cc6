-- The steppers' one diagram renderer: every rank's buffer as a row of chunk
-- cells, read from the data, and the moves of a step as arrows.
--
-- A cell's text comes from the values in the buffer, never from what the
-- stepper meant to do: each rank samples the first and last element of every
-- chunk of its own slice (and of its scratch buffer, for the algorithms that
-- use one) after each step, the samples travel to every rank, and this module
-- turns them into text.  When every rank r started with 2^r in every element
-- and the op is a sum (or the collective only copies), a value's bits name
-- the ranks whose data it holds: 11 (binary 1011) is "0-1,3".  Otherwise a
-- cell shows its first value.
--
-- Marks: * the cell changed in this step; ! the cell is wrong: it does not
-- hold what this step's moves make of what their sources held after the
-- step before (a read that came before the peer's write, or after its next
-- one).  A note under the grid names the read and the step it raced with.
--
-- Lines stay within WIDTH columns (rank 0's "[0] " prefix makes 80); wide
-- grids fold into several column groups.
local D = {}

local WIDTH = 76

-- Highest rank count whose 2^r sums a dtype holds exactly.
local BITS = { i32 = 31, u32 = 32, i64 = 63, f32 = 24, f64 = 53, f16 = 11, bf16 = 8, u8 = 8, i8 = 7 }
local INTEGER = { i32 = true, u32 = true, i64 = true, u8 = true, i8 = true }
-- Relative tolerance when judging float cells (the kernels round per step).
local RTOL = { f64 = 1e-12, f32 = 1e-5, f16 = 1e-2, bf16 = 2e-2 }

-- ---- layout ------------------------------------------------------------------

-- Whether every move of the plan moves the whole region (one-shot,
-- broadcast): then a rank's buffer is one cell, not k chunks.
local function whole_region(plan)
  for _, step in ipairs(plan.steps) do
    for _, m in ipairs(step.moves or {}) do
      if m.count ~= plan.n then return false end
    end
  end
  return true
end

-- The rows (every rank's slice, then every rank's scratch buffer when the
-- plan uses one) and the cells of a row, for a plan over k ranks.
function D.layout(plan, k, uses_tmp)
  local L = { k = k, rows = {}, cells = {}, offset = plan.offset, n = plan.n }
  if whole_region(plan) or not plan.chunks then
    L.cells[1] = { first = plan.offset, count = plan.n, label = "" }
  else
    for i, ch in ipairs(plan.chunks) do
      L.cells[i] = { first = ch.first, count = ch.count, label = "c" .. (i - 1) }
    end
  end
  for r = 0, k - 1 do L.rows[#L.rows + 1] = { rank = r, tmp = false, label = "r" .. r } end
  if uses_tmp then
    for r = 0, k - 1 do L.rows[#L.rows + 1] = { rank = r, tmp = true, label = "r" .. r .. " tmp" } end
  end
  L.row_of = {}
  for i, row in ipairs(L.rows) do L.row_of[(row.tmp and "t" or "s") .. row.rank] = i end
  return L
end

-- The index in a row's tensor of a cell's first element (tmp holds the
-- region from 0; a slice at its absolute place).
local function cell_start(L, row, cell)
  return row.tmp and cell.first - L.offset or cell.first
end

-- ---- samples -----------------------------------------------------------------

-- This rank's samples: first and last element of every cell of its rows,
-- in row then cell order (false for an empty cell).
function D.sample(L, me, slice, tmp)
  local out = {}
  for _, row in ipairs(L.rows) do
    if row.rank == me then
      local t = row.tmp and tmp or slice
      for _, cell in ipairs(L.cells) do
        if cell.count == 0 then
          out[#out + 1] = false; out[#out + 1] = false
        else
          local i = cell_start(L, row, cell)
          out[#out + 1] = t[i]; out[#out + 1] = t[i + cell.count - 1]
        end
      end
    end
  end
  return out
end

local function pack_number(v)
  if v == false then return "-" end
  if math.type(v) == "integer" then return string.format("%d", v) end
  return string.format("%.17g", v)
end

local function unpack_number(s)
  if s == "-" then return false end
  local v = tonumber(s)
  if v then return v end
  if s:find("nan") then return 0 / 0 end
  return s:sub(1, 1) == "-" and -math.huge or math.huge
end

function D.pack(samples)
  local parts = {}
  for i, v in ipairs(samples) do parts[i] = pack_number(v) end
  return table.concat(parts, " ")
end

function D.unpack(text)
  local out = {}
  for word in text:gmatch("%S+") do out[#out + 1] = unpack_number(word) end
  return out
end

-- One state of every buffer, from every rank's samples (by[r + 1]):
-- state[row][cell] = {first value, last value}, or false for an empty cell.
function D.state(L, by)
  local state, pos = {}, {}
  for i, row in ipairs(L.rows) do
    local s = by[row.rank + 1]
    local p = pos[row.rank] or 1
    state[i] = {}
    for c = 1, #L.cells do
      local a, b = s[p], s[p + 1]
      state[i][c] = a ~= false and a ~= nil and { a, b } or false
      p = p + 2
    end
    pos[row.rank] = p
  end
  return state
end

-- ---- reading values --------------------------------------------------------------

-- Whether the cells can be read as contributor sets: every rank r's slice
-- held 2^r everywhere at the start, and the op sums (or there is none).
function D.bits_mode(L, start, op, dtype)
  if (op and op ~= "sum") or L.k > (BITS[dtype] or 0) then return false end
  for i, row in ipairs(L.rows) do
    if not row.tmp then
      for c = 1, #L.cells do
        local v = start[i][c]
        if v and (v[1] ~= 2 ^ row.rank or v[2] ~= 2 ^ row.rank) then return false end
      end
    end
  end
  return true
end

-- "0-2,5" for the set bits of mask.
local function ranks_text(mask, k)
  local parts, r = {}, 0
  while r < k do
    if mask >> r & 1 == 1 then
      local s = r
      while r + 1 < k and mask >> (r + 1) & 1 == 1 do r = r + 1 end
      parts[#parts + 1] = s == r and tostring(s) or (s .. (r == s + 1 and "," or "-") .. r)
    end
    r = r + 1
  end
  return table.concat(parts, ",")
end

-- The contributor set a value names, as a mask, or nil when it names none
-- (not an integer, negative, or bits of ranks that do not exist).
local function mask_of(v, k)
  local m = math.tointeger(v)
  if not m or m < 0 or m >= (1 << k) then return nil end
  return m
end

local function value_text(v, dtype)
  if v ~= v then return "nan" end
  if INTEGER[dtype] or (math.tointeger(v) and math.abs(v) < 1e6) then
    return string.format("%d", math.tointeger(v) or v)
  end
  return string.format("%.4g", v)
end

-- The text of one value: ranks in bits mode (when it names some), else the
-- value itself.
function D.text(view, v)
  if view.bits then
    local m = mask_of(v, view.k)
    if m then return m == 0 and "-" or ranks_text(m, view.k) end
  end
  return value_text(v, view.dtype)
end

local function cell_text(view, cell)
  if not cell then return "" end
  local t = D.text(view, cell[1])
  if not D.same(view, cell[1], cell[2]) then t = t .. "~" end
  return t
end

-- ---- judging ---------------------------------------------------------------------

local function wrap(v, dtype)
  local i = math.tointeger(v)
  if not i then return v end
  if dtype == "i32" then i = i & 0xffffffff; return i >= 0x80000000 and i - 0x100000000 or i end
  if dtype == "u32" then return i & 0xffffffff end
  return i
end

-- op over values, as the kernels compute it (integers wrap).
function D.combine(op, values, dtype)
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

function D.same(view, a, b)
  if a == b then return true end
  if a ~= a and b ~= b then return true end
  if type(a) ~= "number" or type(b) ~= "number" then return false end
  local rtol = RTOL[view.dtype]
  if not rtol then return false end
  return math.abs(a - b) <= rtol * math.max(math.abs(a), math.abs(b)) + rtol
end

-- The (row, cell) a place of a move names; exec is the rank doing the move
-- (its tmp).  nil when the place is outside every cell.
local function locate(L, loc, exec)
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
    if v and base and not D.same(view, v[1], base[1]) then return t end
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
  return D.combine(view.op or "sum", values, view.dtype)
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
-- at its own time).
local function explain(view, hist, s, m, srcs, got)
  for _, src in ipairs(srcs) do if not src.row then return nil end end
  local last = #hist
  for t = 0, last do
    if t ~= s - 1 then
      for j = 1, #srcs do
        local versions = {}
        for i = 1, #srcs do versions[i] = i == j and t or s - 1 end
        local v = combined(view, hist, m, srcs, versions)
        if v ~= nil and D.same(view, v, got) then return stale_read(view, hist, s, m, srcs, { j }, t) end
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
        if not own and a and b and not D.same(view, a[1], b[1]) then stale[#stale + 1] = j end
      end
      local v = #stale > 0 and combined(view, hist, m, srcs, versions)
      if v and D.same(view, v, got) then return stale_read(view, hist, s, m, srcs, stale, t) end
    end
  end
  return nil
end

-- "r1.c3", "r0.tmp.c1", "r2" (a whole-region cell).
local function cell_name(L, r, c)
  local row = L.rows[r]
  local base = "r" .. row.rank .. (row.tmp and ".tmp" or "")
  return L.cells[c].label ~= "" and (base .. "." .. L.cells[c].label) or base
end

local function place_name(view, loc, exec)
  local row, c = locate(view.layout, loc, exec)
  if row then return cell_name(view.layout, row, c) end
  return loc.peer == "tmp" and ("r" .. exec .. ".tmp") or ("r" .. tostring(loc.peer))
end

-- What step s did to every cell: marks[row][cell] = {changed=, wrong=,
-- expected=} and notes (one line per wrong written cell).
function D.judge(view, hist, s, moves)
  local L = view.layout
  local prev, cur = hist[s - 1], hist[s]
  local expected, writer = {}, {}
  for r = 1, #L.rows do expected[r], writer[r] = {}, {} end
  for _, m in ipairs(moves) do
    local srcs, values = {}, {}
    for i, loc in ipairs(m.src) do
      local row, c = locate(L, loc, m.rank)
      srcs[i] = { row = row, cell = c, name = place_name(view, loc, m.rank) }
      local v = row and prev[row][c]
      values[i] = v and v[1]
    end
    local want = nil
    if #values == #m.src and values[1] ~= nil then
      want = m.op == "copy" and values[1] or D.combine(view.op or "sum", values, view.dtype)
    end
    for _, loc in ipairs(m.dst) do
      local row, c = locate(L, loc, m.rank)
      if row then expected[row][c] = want; writer[row][c] = { move = m, srcs = srcs } end
    end
  end
  local marks, notes = {}, {}
  for r, row in ipairs(L.rows) do
    marks[r] = {}
    for c = 1, #L.cells do
      local before, now = prev[r][c], cur[r][c]
      local mark = { changed = false, wrong = false }
      if now then
        mark.changed = not (before and D.same(view, before[1], now[1]) and D.same(view, before[2], now[2]))
        local want = expected[r][c]
        if want == nil and not writer[r][c] then want = before and before[1] end
        if want ~= nil and not D.same(view, now[1], want) then
          mark.wrong, mark.expected = true, want
          local twice = view.bits and not mask_of(now[1], view.k)
                        and " (no set of ranks: some rank's data was added twice)" or ""
          local what = string.format("! step %d: %s holds %s%s, expected %s", s, cell_name(L, r, c),
                                     D.text(view, now[1]), twice, D.text(view, want))
          local w = writer[r][c]
          local why = w and explain(view, hist, s, w.move, w.srcs, now[1])
                      or (not w and "no move of this step writes it") or nil
          notes[#notes + 1] = why and (what .. ": " .. why) or what
        end
      end
      marks[r][c] = mark
    end
  end
  return marks, notes
end

-- ---- text ----------------------------------------------------------------------------

-- Lines of words packed into WIDTH columns, each word padded to the widest.
local function pack_columns(words, indent)
  local width = 0
  for _, w in ipairs(words) do width = math.max(width, #w) end
  local per = math.max(1, (WIDTH - #indent + 3) // (width + 3))
  local lines = {}
  for i = 1, #words, per do
    local parts = {}
    for j = i, math.min(#words, i + per - 1) do
      parts[#parts + 1] = j < math.min(#words, i + per - 1) and string.format("%-" .. width .. "s", words[j]) or words[j]
    end
    lines[#lines + 1] = indent .. table.concat(parts, "   ")
  end
  return lines
end

local function places_text(view, places, exec)
  local L = view.layout
  if #places == L.k and #places > 1 then
    local all, seen = true, {}
    for _, p in ipairs(places) do
      if type(p.peer) ~= "number" or p.first ~= places[1].first then all = false end
      seen[p.peer] = true
    end
    for r = 0, L.k - 1 do all = all and seen[r] or false end
    if all then
      local name = place_name(view, places[1], exec)
      return (name:gsub("^r%d+", "r*"))
    end
  end
  local names = {}
  for i, p in ipairs(places) do names[i] = place_name(view, p, exec) end
  return table.concat(names, " ")
end

-- "r1: sum(r0.c3, r1.c3) -> r1.c3", "r2: r1 -> r2".
function D.move_text(view, m)
  local src
  if m.op == "copy" then
    src = places_text(view, m.src, m.rank)
  else
    local names = {}
    if #m.src == view.layout.k and places_text(view, m.src, m.rank):find("^r%*") then
      names[1] = places_text(view, m.src, m.rank)
    else
      for i, p in ipairs(m.src) do names[i] = place_name(view, p, m.rank) end
    end
    src = (view.op or "sum") .. "(" .. table.concat(names, ", ") .. ")"
  end
  local dst = places_text(view, m.dst, m.rank)
  if view.multicast and m.op == "reduce" and dst:find("^r%*") then
    -- one load-reduce and one store through the multicast address
    return string.format("r%d: ld_reduce %s, st -> %s", m.rank, src, dst)
  end
  return string.format("r%d: %s -> %s", m.rank, src, dst)
end

-- The grid of one state, with marks; folds columns past WIDTH.
function D.grid(view, state, marks)
  local L = view.layout
  local label_w = 0
  for _, row in ipairs(L.rows) do label_w = math.max(label_w, #row.label) end
  local texts, col_w = {}, {}
  local heads = {}
  for c, cell in ipairs(L.cells) do
    heads[c] = cell.label ~= "" and cell.label or string.format("[%d,%d)", cell.first, cell.first + cell.count)
    col_w[c] = #heads[c]
  end
  for r = 1, #L.rows do
    texts[r] = {}
    for c = 1, #L.cells do
      local m = marks and marks[r][c] or {}
      local t = cell_text(view, state[r][c]) .. (m.wrong and "!" or m.changed and "*" or "")
      texts[r][c] = t
      col_w[c] = math.max(col_w[c], #t)
    end
  end
  local lines, c0 = {}, 1
  while c0 <= #L.cells do
    local used, c1 = 2 + label_w, c0
    while c1 <= #L.cells and (c1 == c0 or used + 2 + col_w[c1] <= WIDTH) do
      used = used + 2 + col_w[c1]; c1 = c1 + 1
    end
    local head = { string.rep(" ", 2 + label_w) }
    for c = c0, c1 - 1 do head[#head + 1] = string.format("  %-" .. col_w[c] .. "s", heads[c]) end
    lines[#lines + 1] = (table.concat(head):gsub("%s+$", ""))
    for r, row in ipairs(L.rows) do
      local parts = { string.format("  %-" .. label_w .. "s", row.label) }
      for c = c0, c1 - 1 do parts[#parts + 1] = string.format("  %-" .. col_w[c] .. "s", texts[r][c]) end
      lines[#lines + 1] = (table.concat(parts):gsub("%s+$", ""))
    end
    c0 = c1
  end
  return lines
end

-- What the cells and marks mean (one or two lines).
-- marks: nil (a state), "changed" or "wrong" (some cell is).
function D.legend(view, marks)
  local whole = view.layout.cells[1].label == ""
  local lines = { view.bits
    and string.format("  cells: the ranks whose data %s holds (from its values: r put 2^r)",
                      whole and "a buffer" or "a chunk")
    or string.format("  cells: the first value of each %s", whole and "buffer" or "chunk") }
  if marks == "changed" then lines[2] = "  * changed in this step" end
  if marks == "wrong" then lines[2] = "  * changed in this step   ! wrong: a read came too early or too late" end
  return lines
end

-- The lines of step s: a title, the moves, the grid, notes on wrong cells.
function D.step_lines(view, hist, s, group)
  local lines = { string.format("%s: step %d of %d%s", view.title, s, view.steps,
                                group.phase and (" (" .. group.phase .. ")") or "") }
  local words = {}
  for _, m in ipairs(group.moves) do words[#words + 1] = D.move_text(view, m) end
  if #words == 0 then words[1] = "(no rank moves data in this step)" end
  for _, l in ipairs(pack_columns(words, "  ")) do lines[#lines + 1] = l end
  local marks, notes = D.judge(view, hist, s, group.moves)
  for _, l in ipairs(D.grid(view, hist[s], marks)) do lines[#lines + 1] = l end
  for _, n in ipairs(notes) do lines[#lines + 1] = "  " .. n end
  return lines, marks, notes
end

-- The lines of the state after step s (no moves, no marks).
function D.state_lines(view, hist, s)
  local lines = { string.format("%s: after step %d of %d", view.title, s, view.steps) }
  local L = view.layout
  if L.cells[1].label ~= "" then
    local words = {}
    for _, cell in ipairs(L.cells) do
      words[#words + 1] = string.format("%s=[%d,%d)", cell.label, cell.first, cell.first + cell.count)
    end
    local packed = pack_columns(words, "  chunks: ")
    for i = 2, #packed do packed[i] = packed[i]:gsub("^  chunks: ", "          ") end
    for _, l in ipairs(packed) do lines[#lines + 1] = l end
  end
  for _, l in ipairs(D.grid(view, hist[s], nil)) do lines[#lines + 1] = l end
  for _, l in ipairs(D.legend(view, nil)) do lines[#lines + 1] = l end
  return lines
end

-- Lines longer than WIDTH broken at spaces; a continuation is indented two
-- more than its line.
function D.fit(lines)
  local out = {}
  for _, line in ipairs(lines) do
    local indent = line:match("^%s*") .. "  "
    while #line > WIDTH do
      local cut = line:sub(1, WIDTH + 1):match("^.*()%s")
      if not cut or cut <= #indent then break end
      out[#out + 1] = line:sub(1, cut - 1)
      line = indent .. line:sub(cut + 1)
    end
    out[#out + 1] = line
  end
  return out
end

-- The cells of a state as text: cells[row_label][cell index] (tests compare
-- them with the data they read themselves).
function D.cell_texts(view, state)
  local out = {}
  for r, row in ipairs(view.layout.rows) do
    out[row.label] = {}
    for c = 1, #view.layout.cells do out[row.label][c] = cell_text(view, state[r][c]) end
  end
  return out
end

return D
