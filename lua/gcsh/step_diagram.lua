-- The steppers' one diagram renderer: every rank's buffer as a row of chunk
-- cells, read from the data, and the moves of a step as arrows.
--
-- A cell's text comes from the values in the buffer, never from what the
-- stepper meant to do: each rank samples the first and last element of every
-- chunk of its own slice (and of its scratch buffer, for the algorithms that
-- use one) after each step, the samples travel to every rank, and this module
-- turns them into text (the samples and their wire format: step_sample.lua).  When every rank r started with 2^r in every element
-- and the op is a sum (or the collective only copies), a value's bits name
-- the ranks whose data it holds: 11 (binary 1011) is "0-1,3".  Otherwise a
-- cell shows its first value.
--
-- A cell whose data holds some rank's bits twice (a race: a rank added
-- data it already had) reads as the ranks it holds with the extra ones
-- after a +: "0-3+1" is every rank once and rank 1 once more.  The bits
-- alone cannot tell 2 + 2 from 4, so the diagram follows the moves: a
-- cell's set is what the move that wrote it made of its sources' sets.
--
-- Rows: every rank's slice; its scratch buffer ("r0 tmp": one-shot's sum,
-- multicast's ld_reduce result); for the ll algorithm its ll area ("r0
-- ll"), one cell per slot, each with the flags it holds ("f1": every
-- element carries flag 1, "f0": none arrived).
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

-- Highest rank count whose 2^r sums a dtype holds exactly (bits), and the
-- relative tolerance when judging float cells (the kernels round per step):
-- the dtype facts, C's one list (src/core/dtype.c).
local BITS, RTOL = {}, {}
for name, d in pairs(require("gcsh.dtypes")) do BITS[name], RTOL[name] = d.bits, d.rtol end
local INTEGER = { i32 = true, u32 = true, i64 = true, u8 = true, i8 = true }

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

-- The rows and the cells of each row, for a plan over k ranks.  opts.tmp:
-- every rank's scratch buffer gets a row (the plan's chunks); opts.ll:
-- every rank's ll area gets a row of k slot cells.
function D.layout(plan, k, opts)
  local L = { k = k, rows = {}, cells = {}, offset = plan.offset, n = plan.n }
  if whole_region(plan) or not plan.chunks then
    L.cells[1] = { first = plan.offset, count = plan.n, label = "" }
  else
    for i, ch in ipairs(plan.chunks) do
      L.cells[i] = { first = ch.first, count = ch.count, label = "c" .. (i - 1) }
    end
  end
  local function add_rows(kind, suffix, cells)
    for r = 0, k - 1 do
      L.rows[#L.rows + 1] = { rank = r, kind = kind, tmp = kind == "tmp", ll = kind == "ll",
                              label = "r" .. r .. suffix, cells = cells }
    end
  end
  add_rows("slice", "", L.cells)
  if opts.tmp then add_rows("tmp", " tmp", L.cells) end
  if opts.ll then
    L.ll_cells = {}
    for s = 0, k - 1 do L.ll_cells[s + 1] = { slot = s, count = plan.n, label = "s" .. s } end
    add_rows("ll", " ll", L.ll_cells)
  end
  L.row_of = {}
  for i, row in ipairs(L.rows) do L.row_of[row.kind:sub(1, 1) .. row.rank] = i end
  return L
end

-- ---- reading values --------------------------------------------------------------

-- Whether the cells can be read as contributor sets: every rank r's slice
-- held 2^r everywhere at the start, and the op sums (or there is none).
function D.bits_mode(L, start, op, dtype)
  if (op and op ~= "sum") or L.k > (BITS[dtype] or 0) then return false end
  for i, row in ipairs(L.rows) do
    if row.kind == "slice" then
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

-- ---- sets of ranks, with repeats ---------------------------------------------------
--
-- A cell's contributors as counts by rank ({[0] = 1, [1] = 2}: rank 0's data
-- once, rank 1's twice), for bits mode.

local function set_of_mask(mask, k)
  local set = {}
  for r = 0, k - 1 do if mask >> r & 1 == 1 then set[r] = 1 end end
  return set
end

-- The set a value names when read as bits, or nil.
local function decode(view, v)
  if not view.bits then return nil end
  local m = mask_of(v, view.k)
  return m and set_of_mask(m, view.k) or nil
end

-- What a move makes of its sources' sets: a copy keeps the set, a sum adds
-- them up; nil when some source's set is unknown.
local function move_set(m, sets, n)
  for i = 1, n do if not sets[i] then return nil end end
  if m.op == "copy" then return sets[1] end
  local out = {}
  for i = 1, n do for r, count in pairs(sets[i]) do out[r] = (out[r] or 0) + count end end
  return out
end

-- The ranks a set holds more than once, as "1" or "1, 2".
local function repeated(set, k)
  local twice = {}
  for r = 0, k - 1 do if (set[r] or 0) > 1 then twice[#twice + 1] = tostring(r) end end
  return table.concat(twice, ", ")
end

-- "0-2,5", or "0-3+1" (rank 1 once more), "-" for none.
local function set_text(set, k)
  local mask, extra = 0, {}
  for r = 0, k - 1 do
    local count = set[r] or 0
    if count > 0 then mask = mask | (1 << r) end
    for _ = 2, count do extra[#extra + 1] = tostring(r) end
  end
  local t = mask == 0 and "-" or ranks_text(mask, k)
  if #extra > 0 then t = t .. "+" .. table.concat(extra, "+") end
  return t
end

-- What a cell holds, as text: its set when known, else its first value.
local function holds_text(view, cell)
  if cell.set then return set_text(cell.set, view.k) end
  return D.text(view, cell[1])
end

local function flags_text(view, flags)
  local lo, hi = value_text(flags[1], view.dtype), value_text(flags[2], view.dtype)
  return lo == hi and "f" .. lo or "f" .. lo .. "-" .. hi
end

local function cell_text(view, cell)
  if not cell then return "" end
  local t = holds_text(view, cell)
  if not D.same(view, cell[1], cell[2]) then t = t .. "~" end
  if cell.flags then t = t .. " " .. flags_text(view, cell.flags) end
  return t
end

-- The sets of a state read afresh (st:show): a cell that holds what it held
-- in `known` (the state after the same step) keeps its set; the others
-- read as their bits.
function D.carry_sets(view, known, state)
  for r, row in ipairs(state) do
    for c, cell in ipairs(row) do
      local k = known and known[r][c]
      if cell then
        cell.set = k and k.set and D.same(view, k[1], cell[1]) and k.set or decode(view, cell[1])
      end
    end
  end
end

-- The sets of a first state: every cell's bits.
function D.start_sets(view, state)
  for _, row in ipairs(state) do
    for _, cell in ipairs(row) do if cell then cell.set = decode(view, cell[1]) end end
  end
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
        if v ~= nil and D.same(view, v, got) then
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
        if not own and a and b and not D.same(view, a[1], b[1]) then stale[#stale + 1] = j end
      end
      local v = #stale > 0 and combined(view, hist, m, srcs, versions)
      if v and D.same(view, v, got) then return stale_read(view, hist, s, m, srcs, stale, t), versions end
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
  if not (a and b and D.same(view, a[1], b[1]) and D.same(view, a[2], b[2])) then return false end
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
    local want = { set = move_set(m, sets, #m.src) }
    if known then
      want.value = m.op == "copy" and values[1] or D.combine(view.op or "sum", values, view.dtype)
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
      sets[j] = cell.set or decode(view, cell[1])
    end
    now.set = move_set(w.move, sets, #w.srcs)
  else
    now.set = decode(view, now[1])
  end
  local twice = ""
  if now.set and repeated(now.set, view.k) ~= "" then
    local who = repeated(now.set, view.k)
    twice = string.format(" (rank%s %s's data twice)", who:find(",") and "s" or "", who)
  elseif view.bits and not now.set then
    twice = " (no set of ranks: some rank's data was added twice)"
  end
  local expect = want.set and set_text(want.set, view.k) or D.text(view, want.value)
  local what = string.format("! step %d: %s holds %s%s, expected %s", s, cell_name(L, r, c),
                             holds_text(view, now), twice, expect)
  return why and (what .. ": " .. why) or what
end

-- What step s did to every cell: marks[row][cell] = {changed=, wrong=,
-- expected=} and notes (one line per wrong written cell).  Sets each
-- cell's set (what it holds, in bits mode) in hist[s].
function D.judge(view, hist, s, moves)
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
        if want.value ~= nil and not D.same(view, now[1], want.value) then
          mark.wrong, mark.expected = true, want.value
          notes[#notes + 1] = wrong_note(view, hist, s, r, c, want, w)
        else
          now.set = want.value ~= nil and want.set or decode(view, now[1])
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

-- Whether places are one place (first, or slot) of every rank's buffer.
local function every_rank(places, k)
  if #places ~= k or k < 3 then return false end -- two are clearer by name
  local seen = {}
  for _, p in ipairs(places) do
    if type(p.peer) ~= "number" or p.first ~= places[1].first or p.slot ~= places[1].slot then
      return false
    end
    seen[p.peer] = true
  end
  for r = 0, k - 1 do if not seen[r] then return false end end
  return true
end

-- Whether places are every slot of one rank's ll area.
local function every_slot(places, k)
  if #places ~= k or k < 2 then return false end
  for i, p in ipairs(places) do
    if p.slot ~= i - 1 or p.peer ~= places[1].peer then return false end
  end
  return true
end

-- The ranks of places that are one place of several ranks' buffers, as a
-- mask; nil when they are not.
local function same_place_ranks(places)
  local mask = 0
  for _, p in ipairs(places) do
    if type(p.peer) ~= "number" or p.first ~= places[1].first or p.slot ~= places[1].slot
       or mask >> p.peer & 1 == 1 then
      return nil
    end
    mask = mask | (1 << p.peer)
  end
  return mask
end

-- "r*.c0" (every rank's c0), "r0.ll.s*" (every slot of r0), "r1-3.c0", or
-- the names.
local function places_text(view, places, exec)
  local L = view.layout
  if every_rank(places, L.k) then
    return (place_name(view, places[1], exec):gsub("^r%d+", "r*"))
  end
  if every_slot(places, L.k) then
    return (place_name(view, places[1], exec):gsub("s0$", "s*"))
  end
  local mask = same_place_ranks(places)
  if mask and #places >= 3 then -- "r1-3.c0", "r{0,2-3}.c1"
    local ranks = ranks_text(mask, L.k)
    if ranks:find(",") then ranks = "{" .. ranks .. "}" end
    return (place_name(view, places[1], exec):gsub("^r%d+", "r" .. ranks))
  end
  local names = {}
  for i, p in ipairs(places) do names[i] = place_name(view, p, exec) end
  return table.concat(names, " ")
end

-- "r1: sum(r0.c3, r1.c3) -> r1.c3", "r2: r1 -> r2"; through a multicast
-- address "r0: ld_reduce sum(r*.c0) -> r0.tmp.c0", "r0: st r0.tmp.c0 ->
-- r*.c0"; ll: "r0: r0 + flag -> r*.ll.s0", "r0: sum(r0.ll.s*) -> r0".
function D.move_text(view, m)
  local src = places_text(view, m.src, m.rank)
  if m.op ~= "copy" then
    if not src:find("*", 1, true) then src = src:gsub(" ", ", ") end
    src = (view.op or "sum") .. "(" .. src .. ")"
  end
  local dst = places_text(view, m.dst, m.rank)
  if m.via == "multicast" then
    return string.format("r%d: %s %s -> %s", m.rank, m.op == "copy" and "st" or "ld_reduce", src, dst)
  end
  if m.via == "ll" and m.op == "copy" then src = src .. " + flag" end
  return string.format("r%d: %s -> %s", m.rank, src, dst)
end

-- The grid of the rows `rows` (indices into L.rows) that share `cells`,
-- with marks; folds columns past WIDTH.
local function grid_section(view, state, marks, cells, rows, label_w)
  local L = view.layout
  local texts, col_w, heads = {}, {}, {}
  for c, cell in ipairs(cells) do
    heads[c] = cell.label ~= "" and cell.label or string.format("[%d,%d)", cell.first, cell.first + cell.count)
    col_w[c] = #heads[c]
  end
  for _, r in ipairs(rows) do
    texts[r] = {}
    for c = 1, #cells do
      local m = marks and marks[r][c] or {}
      local t = cell_text(view, state[r][c]) .. (m.wrong and "!" or m.changed and "*" or "")
      texts[r][c] = t
      col_w[c] = math.max(col_w[c], #t)
    end
  end
  local lines, c0 = {}, 1
  while c0 <= #cells do
    local used, c1 = 2 + label_w, c0
    while c1 <= #cells and (c1 == c0 or used + 2 + col_w[c1] <= WIDTH) do
      used = used + 2 + col_w[c1]; c1 = c1 + 1
    end
    local head = { string.rep(" ", 2 + label_w) }
    for c = c0, c1 - 1 do head[#head + 1] = string.format("  %-" .. col_w[c] .. "s", heads[c]) end
    lines[#lines + 1] = (table.concat(head):gsub("%s+$", ""))
    for _, r in ipairs(rows) do
      local parts = { string.format("  %-" .. label_w .. "s", L.rows[r].label) }
      for c = c0, c1 - 1 do parts[#parts + 1] = string.format("  %-" .. col_w[c] .. "s", texts[r][c]) end
      lines[#lines + 1] = (table.concat(parts):gsub("%s+$", ""))
    end
    c0 = c1
  end
  return lines
end

-- The grid of one state, with marks: a section per set of cells (the
-- buffers' chunks, then the ll areas' slots).
function D.grid(view, state, marks)
  local L = view.layout
  local label_w, sections, order = 0, {}, {}
  for r, row in ipairs(L.rows) do
    label_w = math.max(label_w, #row.label)
    if not sections[row.cells] then
      sections[row.cells] = {}
      order[#order + 1] = row.cells
    end
    table.insert(sections[row.cells], r)
  end
  local lines = {}
  for _, cells in ipairs(order) do
    for _, l in ipairs(grid_section(view, state, marks, cells, sections[cells], label_w)) do
      lines[#lines + 1] = l
    end
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
  if view.layout.ll_cells then
    lines[#lines + 1] = "  ll sS: what rank S stored in this rank's slot S; fF: the flags it holds"
  end
  if marks == "changed" then lines[#lines + 1] = "  * changed in this step" end
  if marks == "wrong" then lines[#lines + 1] = "  * changed in this step   ! wrong: a read came too early or too late" end
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
    for c = 1, #row.cells do out[row.label][c] = cell_text(view, state[r][c]) end
  end
  return out
end

return D
