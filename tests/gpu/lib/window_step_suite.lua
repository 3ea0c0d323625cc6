-- step.window on GPUs, for one kind (nccl or vmm): every step's heading and
-- the lines that say what the CUDA/NCCL calls did, the usable window after
-- the last step and st:run()'s test of it, a reset after each step (the
-- undo of every stage on every rank, then a window that works), and, with
-- GCSH_TEST_FAULTS=1 (scripts/gpu-check.sh sets it), a failure injected into
-- each stage on rank 1: undone everywhere, the next window works.  One node:
-- the team is every rank.
local H = require "harness"

local STAGES = {
  nccl = { "check", "allocate", "register", "devcomm", "peers" },
  vmm = { "check", "allocate", "export", "exchange", "map", "access", "table" },
}

-- What each step must say (plain substrings of its lines), n ranks.
local function expected(K, n)
  if K == "nccl" then
    return {
      { "every rank asks for window #", "kind nccl" },
      { "ncclMemAlloc: ", "my slice: 0x" },
      { string.format("ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) on %d ranks", n),
        "my ncclWindow_t: 0x" },
      { string.format("ncclDevCommCreate: a device communicator, LSA team of %d", n), "my LSA rank: " },
      { string.format("ncclGetLsaPointer x %d in a kernel: the peer pointer table", n),
        "(NCCL's LSA team)", "my slice zeroed; the table's device copy: 0x" },
    }
  end
  return {
    { "every rank asks for window #", "kind vmm" },
    { "team: the comm's ranks on node ", "cuMemCreate: ", "POSIX-fd exportable", "my handle: 0x" },
    { "cuMemExportToShareableHandle: my POSIX fd ", "listening: @gcsh-vmm-" },
    { string.format("SCM_RIGHTS: sent fd"), string.format("to %d peers", n - 1), "received fds:" },
    { string.format("cuMemImportFromShareableHandle x %d", n - 1), "cuMemAddressReserve: ",
      "member i at base + i x ", "my base: 0x" },
    { string.format("cuMemSetAccess: read/write on all %d slices", n), "for my GPU: cuda:" },
    { "the peer pointer table: ", "my slice zeroed; the table's device copy: 0x" },
  }
end

local function printed(fn)
  local lines, real = {}, print
  print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    for line in (table.concat(parts, "\t", 1, parts.n) .. "\n"):gmatch("(.-)\n") do
      lines[#lines + 1] = line
    end
  end
  local ok, err = pcall(fn)
  print = real
  if not ok then error(err, 0) end
  return lines
end

local function lines_of(text)
  local lines = {}
  for line in ((text or "") .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  return lines
end

local function has(lines, plain, what)
  for _, line in ipairs(lines) do
    if line:find(plain, 1, true) then return line end
  end
  error("check failed: " .. what .. ": no line holds '" .. plain .. "' in:\n" ..
        table.concat(lines, "\n"), 2)
end

return function(K)
  if not require("common").kind_here(comm.world(), K) then return end
  local c = comm.world()
  local me, n = c.rank, c.size
  local nxt = (me + 1) % n
  local names, want = STAGES[K], expected(K, n)

  -- every step, printed
  local st = step.window(c, 1000, "f32", { kind = K })
  H.eq(st.steps, #names, "steps")
  H.values(st.names, names, nil, "names")
  H.eq(st.algo, "register-" .. K, "algo")
  for i = 1, #names do
    printed(function() st:next() end)
    local out = lines_of(st.text) -- on every rank; rank 0 printed it
    H.eq(out[1], string.format("step %d/%d %s", i, #names, names[i]), "heading of step " .. i)
    for _, plain in ipairs(want[i]) do has(out, plain, K .. " step " .. names[i]) end
    H.eq(st.step, i, "st.step after step " .. i)
    H.eq(st.window == nil, i < #names, "st.window only after the last step")
    if me == 0 then print(st.text) end -- the log shows a real transcript
  end

  -- the window works: written by its owner, read through the peer table
  local w = st.window
  H.eq(w.kind, K, "w.kind")
  H.eq(w:tensor():sum(), 0, "a new window reads zeros")
  w:tensor():fill(me + 1)
  c:barrier()
  H.eq(w:peer(nxt)[999], nxt + 1, "a peer's last element")
  H.eq(w:peer(nxt):sum(), 1000 * (nxt + 1), "a kernel over a peer's slice")
  c:barrier()
  local ok
  printed(function() ok = st:run() end)
  H.eq(ok, true, "run's test of the stepped window")
  printed(function() st:reset() end)
  H.raises(function() return w.n end, "attempt to use a freed window", "reset frees the window")

  -- stopped after each step: undone on every rank, then a window works
  for k = 1, #names - 1 do
    local part = step.window(c, 4096, "i32", { kind = K })
    printed(function() for _ = 1, k do part:next() end end)
    H.eq(part.step, k, "stopped at step " .. k)
    printed(function() part:reset() end)
    H.eq(part.step, 0, "reset after step " .. k)
    local after = c:window(16, "f32", { kind = K })
    after:tensor():fill(me)
    c:barrier()
    H.eq(after:peer(nxt)[15], nxt, "a window after a reset at step " .. k)
    c:barrier()
    after:free()
  end

  -- a stage failing on rank 1 alone: the same error everywhere, nothing left
  if os.getenv("GCSH_TEST_FAULTS") == "1" and n > 1 then
    for i = 2, #names do
      if me == 1 then gcsh.debug.inject("stage:" .. names[i]) end
      local failing = step.window(c, 64, "f32", { kind = K })
      local err = H.raises(function() printed(function() failing:run() end) end,
                           string.format("stage '%s' failed on rank 1: injected failure", names[i]),
                           "injected into " .. names[i])
      H.truthy(err:find("nothing stays registered", 1, true), err)
      H.eq(failing.step, 0, "back at step 0 after " .. names[i])
      local again = step.window(c, 64, "f32", { kind = K })
      printed(function() ok = again:run() again:reset() end)
      H.eq(ok, true, "a stepped window after a failed " .. names[i])
    end
  end
  print("window_step " .. K .. " ok")
end
