-- Assertions shared by the Lua tests.  Each test file is a script run by
-- tests/run.sh as `gcsh -n N tests/lua/<name>.lua` at 1, 2 and 4 ranks; it
-- passes when every rank exits 0.  A failed check raises an error that names
-- the rank and what differed, so the run fails with that message.
local H = {}

local function fail(what, detail, level)
  error(string.format("check failed: %s: %s", what or "?", detail), (level or 2) + 1)
end

function H.eq(got, want, what)
  if got ~= want then
    fail(what, string.format("got %s, want %s", tostring(got), tostring(want)), 2)
  end
end

function H.near(got, want, tol, what)
  tol = tol or 1e-6
  if type(got) ~= "number" or math.abs(got - want) > tol * math.max(1, math.abs(want)) then
    fail(what, string.format("got %s, want %s (tol %g)", tostring(got), tostring(want), tol), 2)
  end
end

function H.truthy(v, what)
  if not v then fail(what, "expected a true value, got " .. tostring(v), 2) end
end

-- Calls fn and checks that it raises an error whose message contains `plain`
-- (a plain substring, not a pattern).  Returns the message.
function H.raises(fn, plain, what)
  local ok, err = pcall(fn)
  if ok then fail(what, "expected an error containing '" .. plain .. "', got none", 2) end
  err = tostring(err)
  if not err:find(plain, 1, true) then
    fail(what, "error '" .. err .. "' does not contain '" .. plain .. "'", 2)
  end
  return err
end

-- Element-wise comparison of a tensor (or table) against a Lua table.
function H.values(t, want, tol, what)
  local got = type(t) == "table" and t or t:totable()
  H.eq(#got, #want, (what or "values") .. " length")
  for i = 1, #want do
    if tol then H.near(got[i], want[i], tol, (what or "values") .. "[" .. (i - 1) .. "]")
    else H.eq(got[i], want[i], (what or "values") .. "[" .. (i - 1) .. "]") end
  end
end

-- The ranks this rank's windows, signals and transfers can reach: the whole
-- comm, or under GCSH_RANKS_PER_NODE (tests/sh/*.sh emulating several nodes)
-- the block of per_node consecutive ranks holding this one.  Returns a table:
-- me, n (comm size), first (lowest team rank), size, members (list of ranks),
-- next and prev (this rank's neighbours within the team, wrapping around).
function H.team(c)
  local me, n = c.rank, c.size
  local per_node = tonumber(os.getenv("GCSH_RANKS_PER_NODE") or "")
  local first = per_node and (me // per_node) * per_node or 0
  local size = per_node and math.min(per_node, n - first) or n
  local members = {}
  for r = first, first + size - 1 do members[#members + 1] = r end
  return {
    me = me, n = n, first = first, size = size, members = members,
    next = first + (me - first + 1) % size,
    prev = first + (me - first - 1) % size,
  }
end

-- The team of c's windows of kind opts.kind, as a window reports it (NCCL's
-- LSA team on GPUs, GCSH_RANKS_PER_NODE's blocks on the host): the ranks
-- a kernel all-reduce runs over (a one-element window, made and freed).
function H.window_team(c, opts)
  local probe = c:window(1, "f32", opts)
  local team = probe.team
  probe:free()
  return team
end

-- What a kernel test starts with: the world, the window kind that
-- tests/gpu/kernel_*.lua set (KERNEL_TEST_KIND; nil on the host), the
-- window options for it, and the windows' team (H.window_team).
function H.kernel_setup()
  local c = comm.world()
  local kind = rawget(_G, "KERNEL_TEST_KIND")
  local opts = kind and { kind = kind } or nil
  return c, kind, opts, H.window_team(c, opts)
end

return H
