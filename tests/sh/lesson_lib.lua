-- What the checkers that drive a session through the shell share
-- (tests/sh/lesson_claims.lua, lesson_feedback.lua, instructor.lua; run by
-- lua5.4 from the top of the tree, as tests/sh/lib.sh's lua_checks does):
-- their "pass"/"fail" lines, one session's run, its output cut at the
-- marker lines the session printed.
local M = {}

-- "pass NAME" or "fail NAME", and a failure's detail lines "  | ...", which
-- lua_checks counts and prints.
function M.result(ok, name, detail)
  print((ok and "pass " or "fail ") .. name)
  if not ok and detail then
    for line in (tostring(detail) .. "\n"):gmatch("(.-)\n") do print("  | " .. line) end
  end
end

-- "0,2-3": the shell's fold of a rank list (gcsh_format_ranks, repro.ranges,
-- which lua5.4 alone cannot load: it needs gcsh's C modules).
function M.ranges(list)
  table.sort(list)
  local parts, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    if j == i then parts[#parts + 1] = tostring(list[i])
    else parts[#parts + 1] = list[i] .. "-" .. list[j] end
    i = j + 1
  end
  return table.concat(parts, ",")
end

-- A line that prints the marker "=== text" on every rank.
function M.marker(text) return string.format('print("=== %s")', text) end

-- Everything gcsh at n ranks prints for the lines (a list), piped in; at
-- most `limit` seconds.
function M.session(gcsh, n, lines, limit)
  local input, output = os.tmpname(), os.tmpname()
  local f = assert(io.open(input, "w"))
  f:write(table.concat(lines, "\n") .. "\n")
  f:close()
  os.execute(string.format("timeout %d %q -n %d <%q >%q 2>&1", limit, gcsh, n, input, output))
  local text = assert(io.open(output)):read("a")
  os.remove(input)
  os.remove(output)
  return text
end

-- The text of the session's output between the marker line "=== a" (as a
-- rank range prints it) and the next marker line ("" without it).
function M.between(text, a)
  local pat = "%[[%d,%-]+%] === " .. a:gsub("%p", "%%%0") .. "\n"
  local s, e = text:find(pat)
  if not s then return "" end
  local rest = text:sub(e + 1)
  local stop = rest:find("%[[%d,%-]+%] === ")
  return stop and rest:sub(1, stop - 1) or rest
end

return M
