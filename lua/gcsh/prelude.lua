-- Runs once in every rank's Lua state after the C libraries are open:
-- the Lua parts of the shell that every rank has as globals.
show = require("gcsh.show").show
help = require("gcsh.help").help
-- The prompt's auto-print shows tables through this (src/worker.c).
debug.getregistry()["gcsh.autoprint"] = require("gcsh.pretty").format
