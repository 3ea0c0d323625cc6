-- Runs once in every rank's Lua state after the C libraries are open:
-- the Lua parts of the shell that every rank has as globals.
show = require("gcsh.show").show
step = require("gcsh.step")
