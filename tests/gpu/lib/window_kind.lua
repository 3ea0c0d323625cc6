-- `gcsh -l window_kind`: c:window and c:signals called without a kind make
-- windows of the kind in GCSH_TEST_KIND ("nccl", "vmm"), so scripts that
-- leave the kind to the backend (the lessons, tests/lua/step_*.lua) run on
-- each kind in scripts/gpu-check.sh without being edited.  The comm type's
-- methods are the upvalue of its __index (src/bind/l_comm.c).
local kind = os.getenv("GCSH_TEST_KIND")
if not kind or kind == "" then return false end
local index = debug.getregistry().comm.__index
local _, methods = debug.getupvalue(index, 1)
assert(type(methods) == "table" and methods.window and methods.signals,
       "window_kind: the comm methods are not where src/bind/l_comm.c puts them")
local window, signals = methods.window, methods.signals
methods.window = function(c, n, dtype, opts) return window(c, n, dtype, opts or { kind = kind }) end
methods.signals = function(c, n, opts) return signals(c, n, opts or { kind = kind }) end
return kind
