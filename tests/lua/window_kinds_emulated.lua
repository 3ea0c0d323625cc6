-- Kinds nccl and vmm on the host backend (issue 37): emulations of the GPU
-- kinds that keep their rules (2 MiB granularity, their registration
-- stages in step.window, symmetric slices) and work as windows do: views,
-- kernels, signals, transfers.  The default kind stays host.
local H = require "harness"
if gcsh.backend ~= "host" then
  print("skipped: the host backend's emulations of the GPU kinds")
  return
end

-- the node's communicator: the window's team is all of it (under
-- GCSH_RANKS_PER_NODE too, where kernel collectives on a world window
-- are refused: window_kernel_team.lua)
local c = comm.world():split(gcsh.node)
local me, k = c.rank, c.size
local MiB2 = 2 * 1024 * 1024

do
  local d = c:window(4)
  H.eq(d.kind, "host", "the default kind is host")
  d:free()
end

local STAGES = {
  nccl = { "check", "allocate", "register", "devcomm", "peers" },
  vmm = { "check", "allocate", "export", "exchange", "map", "access", "table" },
}
local CALLS = {
  nccl = { "ncclMemAlloc (emulated)", "ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) (emulated)",
           "ncclDevCommCreate (emulated): LSA team of " .. k, "ncclGetLsaPointer (emulated)" },
  vmm = { "cuMemCreate (emulated)", "cuMemExportToShareableHandle (emulated)",
          "the fd exchange (SCM_RIGHTS) (emulated)", "cuMemMap (emulated)",
          "cuMemSetAccess (emulated)", "the peer pointer table (emulated)" },
}

for _, kind in ipairs { "nccl", "vmm" } do
  -- the kind's granularity: a small window takes 2 MiB per rank
  local w = c:window(100, "f32", { kind = kind })
  local i = w:info()
  H.eq(w.kind, kind, kind .. ": kind")
  H.eq(i.granularity, MiB2, kind .. ": 2 MiB granularity")
  H.eq(i.alloc_bytes, MiB2, kind .. ": 100 f32 take one granule")
  H.truthy(i.handle:find(kind .. " window (emulated)", 1, true), kind .. ": handle: " .. i.handle)
  H.eq(#w.team, k, kind .. ": the node's ranks")
  -- it works as a window: peers, a kernel, signals on it, a put
  w:tensor():fill(me + 1)
  c:barrier()
  H.eq(w:peer((me + 1) % k)[99], (me + 1) % k + 1, kind .. ": a peer's slice")
  local res, ran = kernel.allreduce(w, { algo = "twoshot" })
  H.eq(ran, "twoshot", kind .. ": twoshot ran")
  H.eq(res[0], k * (k + 1) // 2, kind .. ": the sum")
  local s = c:signals(2, { kind = kind })
  H.eq(s.kind, kind, kind .. ": signals of the kind")
  local x = w:put((me + 1) % k, tensor.new(1, "f32"):fill(-me), 50, { signal = { s, 0 } })
  x:post()
  x:wait()
  s:wait(0, 1)
  H.eq(w:tensor()[50], -((me - 1) % k), kind .. ": a put landed from the left")
  c:barrier()
  s:free()
  w:free()

  -- a window of one granule takes as many more as the kernels' areas need:
  -- the LL area (a header, two sets of a slot per rank, each 128 KiB of ll
  -- lines and 2185 ll128 lines of 128 bytes: src/core/kll.h) and the host's
  -- 128 bytes of sync words
  local w2 = c:window(MiB2 // 4, "f32", { kind = kind })
  local areas = 256 + 2 * math.min(k, 16) * (128 * 1024 + 2185 * 128) + 128
  H.eq(w2:info().alloc_bytes, MiB2 * ((MiB2 + areas + MiB2 - 1) // MiB2),
       kind .. ": past one granule (the kernels' areas)")
  w2:free()

  -- its stages, stepped: names and what each stands for
  local st = step.window(c, 8, "f32", { kind = kind })
  local names = {}
  for n = 1, #st.names do names[n] = st.names[n] end
  H.eq(table.concat(names, " "), table.concat(STAGES[kind], " "), kind .. ": stage names")
  H.eq(st.steps, #STAGES[kind], kind .. ": steps")
  local said = {}
  local real_print = print
  print = function(...) said[#said + 1] = table.concat({ ... }, "\t") end
  local ok, err = pcall(function() st:run() end)
  print = real_print
  H.truthy(ok, kind .. ": run: " .. tostring(err))
  local text = table.concat(said, "\n")
  for _, call in ipairs(CALLS[kind]) do
    H.truthy(text:find(call, 1, true), kind .. ": says " .. call .. ":\n" .. text)
  end
  H.truthy(text:find("rounded up to the 2 MiB granularity", 1, true), kind .. ": the check says the granularity")
  H.eq(st.window.kind, kind, kind .. ": the stepped window's kind")
  st:free()
end

-- nccl_dev needs NCCL's device API: refused on the emulation, naming it
local w = c:window(8, "f32", { kind = "nccl" })
H.raises(function() kernel.allreduce(w, { algo = "nccl_dev" }) end,
         "algo 'nccl_dev' needs NCCL's device API: the cuda backend and a window of kind 'nccl'; "
         .. "this is the host backend (window of kind 'nccl')", "nccl_dev on the emulation")
c:barrier()
w:free()
c:free()
