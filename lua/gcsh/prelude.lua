-- Runs once in every rank's Lua state after the C libraries are open:
-- the Lua parts of the shell that every rank has as globals.
show = require("gcsh.show").show
-- step.window (the stepped registration); the other steppers join this table.
step = step or {}
step.window = require("gcsh.step_window")
