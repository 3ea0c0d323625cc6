-- Runs once in every rank's Lua state after the C libraries are open:
-- the Lua parts of the shell that every rank has as globals.

-- A line (typed or piped) cannot read stdin: it is where the lines come
-- from (rank 0's terminal or pipe; the other ranks have none), so io.read
-- would eat the next commands or get nil.  Refused, saying what works;
-- scripts and -e read stdin as lua does (rank 0 what gcsh's stdin holds,
-- the other ranks nothing).  The worker sets the flag per chunk.
do
  local reg, stdin = debug.getregistry(), io.stdin
  local function refuse(what)
    error(what .. ": a line cannot read stdin (the lines come from there); use a file "
      .. "(io.open), or a script: gcsh -n N script.lua < data", 3)
  end
  local function from_stdin() return reg["gcsh.typed_line"] and io.input() == stdin end
  local read, lines = io.read, io.lines
  io.read = function(...)
    if from_stdin() then refuse("io.read") end
    return read(...)
  end
  io.lines = function(name, ...)
    if name == nil and from_stdin() then refuse("io.lines") end
    return lines(name, ...)
  end
  local methods = getmetatable(stdin).__index
  local fread, flines = methods.read, methods.lines
  methods.read = function(f, ...)
    if f == stdin and reg["gcsh.typed_line"] then refuse("io.stdin:read") end
    return fread(f, ...)
  end
  methods.lines = function(f, ...)
    if f == stdin and reg["gcsh.typed_line"] then refuse("io.stdin:lines") end
    return flines(f, ...)
  end
end

show = require("gcsh.show").show
help = require("gcsh.help").help
-- The prompt's auto-print shows tables through this (src/rank/worker.c).
debug.getregistry()["gcsh.autoprint"] = require("gcsh.pretty").format
repro = require("gcsh.repro")
-- Clocks make a command's output vary between runs: a replay (gcsh
-- --replay) records it without comparing it.  os.time(t) and os.date(fmt, t)
-- of a given time do not read the clock.
do
  local clock, time, date = os.clock, os.time, os.date
  os.clock = function() gcsh.varies(); return clock() end
  os.time = function(t) if t == nil then gcsh.varies() end return time(t) end
  os.date = function(fmt, t) if t == nil then gcsh.varies() end return date(fmt, t) end
end
step = require("gcsh.step")
-- The globals every fresh rank has, so that repro.sweep's out= tells the
-- user's own globals apart (lua/gcsh/repro_script.lua).
do
  local names = {}
  for k in pairs(_G) do names[k] = true end
  debug.getregistry()["gcsh.builtins"] = names
end
