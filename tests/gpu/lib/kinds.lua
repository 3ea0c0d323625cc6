-- Prints "kinds: K1 K2" (rank 0): the window kinds that work here, for the
-- shell scripts (scripts/gpu-check.sh, tests/gpu/faults.sh) to loop over;
-- common.kinds checks each refusal and the default kind.
local kinds = require("common").kinds(comm.world())
if rank == 0 then print("kinds: " .. table.concat(kinds, " ")) end
