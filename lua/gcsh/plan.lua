-- gcsh.plan: kernel.plan's answer as text, a line per member's move (its
-- __tostring, so `=kernel.plan(w)` and print show it; the fields stay a
-- plain table's).  At 4 ranks:
--
--   allreduce twoshot: 64 f32 from element 0, team 0-3, chunks of 16
--    #  phase           by  op       n  reads     writes
--    1  barrier
--    2  reduce-scatter   0  reduce  16  w[0-3]@0  w[0-3]@0
--                        1  reduce  16  w[0-3]@16 w[0-3]@16
--   ...
--   (w[m]@i: member m's slice at element i; s[m]@i: its scratch area;
--    tmp, out: the member's own buffer; by: the member that moves)
local M = {}

-- "0-3", "3,0", "0-1,3": members in the order the move takes them
local function members_text(list)
  local parts, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    parts[#parts + 1] = j > i + 1 and (list[i] .. "-" .. list[j])
      or j == i + 1 and (list[i] .. "," .. list[j]) or tostring(list[i])
    i = j + 1
  end
  return table.concat(parts, ",")
end

-- A move's places: runs of one kind at one element joined, in order.
local function places_text(places)
  local out, run = {}, nil
  local function flush()
    if run then out[#out + 1] = run.prefix .. "[" .. members_text(run.members) .. "]@" .. run.first end
    run = nil
  end
  for _, p in ipairs(places) do
    if type(p.peer) == "string" then -- "tmp" or "out": the member's own buffer
      flush()
      out[#out + 1] = p.peer .. "@" .. p.first
    else
      local prefix = p.scratch and "s" or "w"
      if not (run and run.prefix == prefix and run.first == p.first) then
        flush()
        run = { prefix = prefix, first = p.first, members = {} }
      end
      run.members[#run.members + 1] = p.peer
    end
  end
  flush()
  return #out > 0 and table.concat(out, " ") or "-"
end

local function chunks_text(chunks)
  local counts, same = {}, true
  for i, ch in ipairs(chunks) do
    counts[i] = tostring(ch.count)
    same = same and ch.count == chunks[1].count
  end
  if same and #chunks > 0 then return "chunks of " .. counts[1] end
  return "chunks " .. table.concat(counts, ",")
end

local HEADER = { "#", "phase", "by", "op", "n", "reads", "writes" }
local RIGHT = { true, false, true, false, true, false, false }

local function rows_of(p)
  local rows = {}
  for i, st in ipairs(p.steps) do
    if st.kind == "barrier" then
      rows[#rows + 1] = { tostring(i), "barrier", "", "", "", "", "" }
    elseif #st.moves == 0 then
      rows[#rows + 1] = { tostring(i), st.phase, "-", "none", "", "", "" }
    else
      for k, mv in ipairs(st.moves) do
        rows[#rows + 1] = { k == 1 and tostring(i) or "", k == 1 and st.phase or "",
          tostring(mv.rank), mv.op, tostring(mv.count), places_text(mv.src), places_text(mv.dst) }
      end
    end
  end
  return rows
end

function M.format(p)
  local rows = rows_of(p)
  local width = {}
  for c, h in ipairs(HEADER) do
    width[c] = #h
    for _, r in ipairs(rows) do width[c] = math.max(width[c], #r[c]) end
  end
  local function line(cells)
    local out = {}
    for c, v in ipairs(cells) do
      local pad = string.rep(" ", width[c] - #v)
      out[c] = RIGHT[c] and pad .. v or v .. pad
    end
    return (table.concat(out, "  "):gsub("%s+$", ""))
  end
  local text = {
    string.format("%s %s: %d %s from element %d, team %s, %s", p.coll, p.algo, p.n, p.dtype,
      p.offset, members_text(p.team), chunks_text(p.chunks)),
    line(HEADER),
  }
  for _, r in ipairs(rows) do text[#text + 1] = line(r) end
  text[#text + 1] = "(w[m]@i: member m's slice at element i; s[m]@i: its scratch area;"
  text[#text + 1] = " tmp, out: the member's own buffer; by: the member that moves)"
  return table.concat(text, "\n")
end

M.metatable = { __name = "plan", __tostring = M.format }

return M
