-- The instructor's page (lua/tutorial/INSTRUCTOR.md) against the shell:
-- every mistake it lists is typed at 4 ranks, after the lesson and part it
-- names, and every line it says the shell answers must come back, in
-- order, for that mistake (lua5.4 tests/sh/instructor.lua GCSH).  Also:
-- the page covers every lesson, three mistakes each.
-- Prints "pass NAME" or "fail NAME" and detail lines "  | ...".
local GCSH = arg[1]
local lib = dofile("tests/sh/lesson_lib.lua")
local result = lib.result

-- The page: lessons {num=, part=, mistakes={{code=, said={lines}}}}.
local lessons, cur, mistake = {}, nil, nil
for line in io.lines("lua/tutorial/INSTRUCTOR.md") do
  local num = line:match("^## (%d+)%. ")
  local part = line:match("^Mistakes %(after `%.lesson %d+` and `%.part (%d+)`%):")
  local code = line:match("^%d+%. `(.*)`$")
  local said = line:match("^       (%[.*)$")
  if num then cur = { num = tonumber(num), mistakes = {} }; lessons[#lessons + 1] = cur
  elseif part and cur then cur.part = tonumber(part)
  elseif code and cur then mistake = { code = code, said = {} }; table.insert(cur.mistakes, mistake)
  elseif said and mistake then table.insert(mistake.said, said) end
end

local files = 0
for name in io.popen("ls lua/tutorial"):lines() do
  if name:match("^%d%d%-.*%.lua$") then files = files + 1 end
end
result(#lessons == files, "the page covers every lesson (" .. #lessons .. " of " .. files .. ")")

local input, n = {}, 0
for _, l in ipairs(lessons) do
  result(l.part ~= nil and #l.mistakes == 3, "lesson " .. l.num .. ": a part and three mistakes")
  input[#input + 1] = ".lesson " .. l.num
  input[#input + 1] = ".part " .. (l.part or 1)
  for _, m in ipairs(l.mistakes) do
    n = n + 1
    m.n = n
    input[#input + 1] = lib.marker("m " .. n)
    input[#input + 1] = m.code
  end
end
input[#input + 1] = lib.marker("m end")

local text = lib.session(GCSH, 4, input, 300)

-- what mistake i answered (the markers around it: "=== m i")
local function after(i) return lib.between(text, "m " .. i) end

for _, l in ipairs(lessons) do
  for k, m in ipairs(l.mistakes) do
    -- each line the page shows, in order (the traceback lines under an
    -- error are left out of the page); a collective's number (#11)
    -- depends on what ran before it: any number will do
    local function calls(t) return (t:gsub("#%d+", "#N")) end
    local got, at, ok = calls(after(m.n)), 1, #m.said > 0
    for _, line in ipairs(m.said) do
      local s, e = got:find(calls(line) .. "\n", at, true)
      ok = ok and s ~= nil
      at = e or at
    end
    local want = table.concat(m.said, "\n")
    result(ok,
           string.format("lesson %d mistake %d: the shell says what the page says", l.num, k),
           "want:\n" .. want .. "\ngot:\n" .. got)
  end
end
