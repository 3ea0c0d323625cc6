-- help by other libraries' names (gcsh.help_names): PyTorch's symmetric
-- memory, NCCL's and NVSHMEM's names lead to the gcsh call and how it
-- differs; every gcsh name an entry points to is one help knows.
local H = require "harness"
local help = require "gcsh.help"

local function text(name) return help.text(name, 80) end
H.truthy(text("put_signal"):find("w:put(peer, src, dst_offset, {signal = {s, slot, value = v}})", 1, true),
         "put_signal: " .. text("put_signal"))
H.truthy(text("put_signal"):find("nvshmem_putmem_signal", 1, true), "put_signal names NVSHMEM's")
H.truthy(text("barrier"):find("c:barrier()", 1, true), "barrier")
H.truthy(text("barrier"):find("kernel.plan(w)", 1, true), "barrier: the kernels' own")
H.truthy(text("ncclGetLsaPointer"):find("w:peer(r)", 1, true), "ncclGetLsaPointer")
H.truthy(text("nvshmem_quiet"):find("c:quiet()", 1, true), "nvshmem_quiet")
H.truthy(text("nvshmem_quiet"):find("the CPU waits", 1, true), "nvshmem_quiet: the difference")
H.truthy(text("nvshmem_fence"):find("w:fence()", 1, true), "nvshmem_fence")
H.truthy(text("nvshmem_fence"):find("to every peer", 1, true),
         "nvshmem_fence: the difference")
H.truthy(text("all_to_all_vdev"):find("kernel.alltoallv(w, counts", 1, true), "all_to_all_vdev")
H.truthy(text("nvshmem_wait_until"):find("t:wait(i, v [, cmp=\"eq\"])", 1, true), "nvshmem_wait_until")
H.eq(text("nvshmem_ptr"):match("in gcsh:.*"), text("ncclGetLsaPointer"):match("in gcsh:.*"), "an alias")
H.raises(function() help.text("nvshmem_nonsense") end, "help: no topic or function named 'nvshmem_nonsense'")

-- every entry: a title naming the libraries, rows, and gcsh names help knows
for _, name in ipairs(help.NAMES.names()) do
  local e = help.NAMES.entry(name)
  H.truthy(e and e.from and #e.gcsh > 0 and #e.see > 0, name .. ": a whole entry")
  local t = text(name)
  H.truthy(t:find(name .. " (", 1, true) == 1, name .. ": its title")
  for _, see in ipairs(e.see) do
    local ok, err = pcall(help.text, see)
    H.truthy(ok, name .. " points to " .. see .. ", which help knows: " .. tostring(err))
    H.truthy(t:find(see, 1, true), name .. "'s text mentions " .. see)
  end
  -- nothing shadows a gcsh or Lua name
  H.truthy(not help.API[name] and not help.STD[name], name .. " is not a topic")
end
-- a gcsh name still answers as itself, not through the index
H.truthy(text("kernel.allreduce"):find("^kernel.allreduce: "), "gcsh names first")
