-- Runs once in every rank's Lua state after the C libraries are open:
-- the Lua parts of the shell that every rank has as globals.
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
