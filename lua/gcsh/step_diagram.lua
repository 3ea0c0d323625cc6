-- The steppers' one diagram renderer: every rank's buffer as a row of chunk
-- cells, read from the data, and the moves of a step as arrows.
--
-- A cell's text comes from the values in the buffer, never from what the
-- stepper meant to do: each rank samples the first and last element of every
-- chunk of its own slice (and of its scratch buffer, for the algorithms that
-- use one) after each step, the samples travel to every rank, and this module
-- turns them into text (the samples and their wire format: step_sample.lua;
-- what a cell says: step_cells.lua; the race judge: step_judge.lua).  When
-- every rank r started with 2^r in every element and the op is a sum (or
-- the collective only copies), a value's bits name the ranks whose data it
-- holds: 11 (binary 1011) is "0-1,3".  Otherwise a cell shows its first
-- value.
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
local C = require("gcsh.step_cells")
local J = require("gcsh.step_judge")
local D = {}

local WIDTH = 76

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
    return (J.place_name(view, places[1], exec):gsub("^r%d+", "r*"))
  end
  if every_slot(places, L.k) then
    return (J.place_name(view, places[1], exec):gsub("s0$", "s*"))
  end
  local mask = same_place_ranks(places)
  if mask and #places >= 3 then -- "r1-3.c0", "r{0,2-3}.c1"
    local ranks = C.ranks_text(mask, L.k)
    if ranks:find(",") then ranks = "{" .. ranks .. "}" end
    return (J.place_name(view, places[1], exec):gsub("^r%d+", "r" .. ranks))
  end
  local names = {}
  for i, p in ipairs(places) do names[i] = J.place_name(view, p, exec) end
  return table.concat(names, " ")
end

-- "r1: sum(r0.c3, r1.c3) -> r1.c3", "r2: r1 -> r2"; a move that reads
-- another node's ranks (hier) ends in " (net)"; through a multicast
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
  return string.format("r%d: %s -> %s%s", m.rank, src, dst, m.network and " (net)" or "")
end

-- "  " and s padded to w columns (string.format's "%-Ns" takes no N over
-- 99: a cell a race filled with many ranks' data twice can be wider).
local function column(s, w)
  return "  " .. s .. string.rep(" ", w - #s)
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
      local t = C.cell_text(view, state[r][c]) .. (m.wrong and "!" or m.changed and "*" or "")
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
    for c = c0, c1 - 1 do head[#head + 1] = column(heads[c], col_w[c]) end
    lines[#lines + 1] = (table.concat(head):gsub("%s+$", ""))
    for _, r in ipairs(rows) do
      local parts = { column(L.rows[r].label, label_w) }
      for c = c0, c1 - 1 do parts[#parts + 1] = column(texts[r][c], col_w[c]) end
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
  local net = false
  for _, m in ipairs(group.moves) do
    words[#words + 1] = D.move_text(view, m)
    net = net or m.network
  end
  if #words == 0 then words[1] = group.note or "(no rank moves data in this step)" end
  for _, l in ipairs(pack_columns(words, "  ")) do lines[#lines + 1] = l end
  if net then
    lines[#lines + 1] = "  (net): crosses the network: member t of every node, by the"
    lines[#lines + 1] = "  communicator's all-reduce of chunk t (loads and stores stay in a node)"
  end
  local marks, notes = J.judge(view, hist, s, group.moves)
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
    for c = 1, #row.cells do out[row.label][c] = C.cell_text(view, state[r][c]) end
  end
  return out
end

return D
