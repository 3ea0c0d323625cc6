-- The README's transcripts, for tests/sh/readme.sh (run with lua5.4).
--
--   lua5.4 readme.lua extract README.md DIR   one set of files per transcript
--   lua5.4 readme.lua compare EXPECTED GOT    exit 0 when GOT matches
--   lua5.4 readme.lua fit WIDTH GOT           exit 0 when every line of GOT
--                                             fits WIDTH columns
--
-- A transcript is a fenced block with lines that start with a prompt,
-- `gcsh[0-1]> ` (or the continuation `gcsh[0-1]>> `).  Lines before its
-- first prompt ($ make run, the banner) are not part of it; a block fenced
-- as ```no-test is skipped (for transcripts CI cannot run, such as GPU ones);
-- one fenced as ```fitN (```fit80) must also print no line wider than N
-- columns (tabs to the next multiple of 8, a UTF-8 character one column).
-- Its rank count comes from the first prompt (gcsh[0-3] -> 4).  What follows
-- a prompt is input; every other line is expected output, where
--   ^C        alone on a line: the session gets SIGINT here (the piped session
--             shows an empty line there, where a terminal shows ^C);
--   …         (U+2026) stands for any text within a line (times, addresses);
--             alone on a line, for any number of lines.
-- A transcript that shows no progress report ("gcsh: 10.0 s: done [], still
-- running [0-1]; ...", the lines under it and its flight recorder line) is
-- compared without the ones a slow machine printed: a busy CI machine can
-- take more than --timeout's 10 s for a command the README shows at once.
-- extract writes DIR/N.ranks, DIR/N.line (the README line of the block),
-- DIR/N.in.K (the input up to the K-th ^C, then the rest) and
-- DIR/N.expected (N = 1, 2, ...), DIR/N.fit (the width) for a ```fitN
-- block, and prints N's count.
local ELLIPSIS = "\226\128\166"

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function ranks_of(prompt)
  local top = 0
  for a, b in prompt:gmatch("(%d+)%-?(%d*)") do
    top = math.max(top, tonumber(a), tonumber(b ~= "" and b or a))
  end
  return top + 1
end

local function extract(readme, dir)
  local blocks, block, lineno = {}, nil, 0
  for line in io.lines(readme) do
    lineno = lineno + 1
    local fence = line:match("^```(.*)$")
    if fence and not block then
      block = { line = lineno, skip = fence:match("^no%-test") ~= nil,
                fit = tonumber(fence:match("^fit(%d+)")), lines = {} }
    elseif fence and block then
      blocks[#blocks + 1] = block
      block = nil
    elseif block then
      block.lines[#block.lines + 1] = line
    end
  end
  local n = 0
  for _, b in ipairs(blocks) do
    local first
    for i, line in ipairs(b.lines) do
      if line:match("^gcsh%[[^%]]*%]>") then first = i; break end
    end
    if first and not b.skip then
      n = n + 1
      local segments, input, expected = {}, {}, {}
      for i = first, #b.lines do
        local line = b.lines[i]
        local text = line:match("^gcsh%[[^%]]*%]>>? ?(.*)$")
        if text then
          input[#input + 1] = text
        elseif line == "^C" then
          segments[#segments + 1] = { input = input, before = #expected }
          input = {}
          expected[#expected + 1] = ""
        else
          expected[#expected + 1] = line
        end
      end
      segments[#segments + 1] = { input = input }
      write(dir .. "/" .. n .. ".ranks", ranks_of(b.lines[first]:match("^gcsh%[([^%]]*)%]")) .. "\n")
      write(dir .. "/" .. n .. ".line", b.line .. "\n")
      if b.fit then write(dir .. "/" .. n .. ".fit", b.fit .. "\n") end
      for k, s in ipairs(segments) do
        write(dir .. "/" .. n .. ".in." .. k, #s.input > 0 and table.concat(s.input, "\n") .. "\n" or "")
        -- how many output lines come before this segment's ^C
        if s.before then write(dir .. "/" .. n .. ".before." .. k, s.before .. "\n") end
      end
      write(dir .. "/" .. n .. ".expected", #expected > 0 and table.concat(expected, "\n") .. "\n" or "")
    end
  end
  print(n)
end

local function lines_of(path)
  local t = {}
  for line in io.lines(path) do t[#t + 1] = line end
  return t
end

-- A Lua pattern for an expected line: literal text, … as ".-".
local function pattern_of(line)
  local parts = {}
  for piece in (line .. ELLIPSIS):gmatch("(.-)" .. ELLIPSIS) do
    parts[#parts + 1] = piece:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
  end
  return "^" .. table.concat(parts, ".-") .. "$"
end

-- Whether got[j..] matches want[i..] (a line "…" matches any number of lines).
local function match(want, i, got, j, memo)
  local key = i * 100000 + j
  if memo[key] ~= nil then return memo[key] end
  local ok
  if i > #want then
    ok = j > #got
  elseif want[i] == ELLIPSIS then
    ok = match(want, i + 1, got, j, memo) or (j <= #got and match(want, i, got, j + 1, memo))
  else
    ok = j <= #got and got[j]:match(pattern_of(want[i])) ~= nil and match(want, i + 1, got, j + 1, memo)
  end
  memo[key] = ok
  return ok
end

-- got without its progress reports (see the top), unless want shows one.
local function without_progress(want, got)
  for _, line in ipairs(want) do
    if line:find("still running", 1, true) then return got end
  end
  local kept, in_report = {}, false
  for _, line in ipairs(got) do
    if line:match("^gcsh: [%d.]+ s: done %[.-%], still running ") then
      in_report = true
    elseif not (in_report and (line:match("^gcsh:   ") or line:match("^gcsh: flight recorder[ :(]"))) then
      in_report = false
      kept[#kept + 1] = line
    end
  end
  return kept
end

local function compare(expected, got)
  local want = lines_of(expected)
  local have = without_progress(want, lines_of(got))
  if match(want, 1, have, 1, {}) then os.exit(0) end
  -- say where they part: the first line that differs, with either side
  local i = 1
  while i <= #want and i <= #have and want[i] ~= ELLIPSIS and have[i]:match(pattern_of(want[i])) do
    i = i + 1
  end
  print(string.format("  first difference at output line %d:", i))
  print("  want: " .. (want[i] or "(end of output)"))
  print("  got:  " .. (have[i] or "(end of output)"))
  os.exit(1)
end

-- The columns a terminal gives line: tabs to the next multiple of 8, every
-- other UTF-8 character one.
local function columns(line)
  local col = 0
  for ch in line:gmatch(utf8.charpattern) do
    col = ch == "\t" and col + 8 - col % 8 or col + 1
  end
  return col
end

-- Every line of got within width columns; says which are not.
local function fit(width, got)
  local wide = 0
  for i, line in ipairs(lines_of(got)) do
    local cols = columns(line)
    if cols > width then
      print(string.format("  output line %d is %d columns (at most %d): %s", i, cols, width, line))
      wide = wide + 1
    end
  end
  os.exit(wide == 0 and 0 or 1)
end

if arg[1] == "extract" then extract(arg[2], arg[3])
elseif arg[1] == "compare" then compare(arg[2], arg[3])
elseif arg[1] == "fit" then fit(assert(tonumber(arg[2]), "fit: WIDTH must be a number"), arg[3])
else io.stderr:write("usage: readme.lua extract README DIR | compare EXPECTED GOT | fit WIDTH GOT\n"); os.exit(2) end
