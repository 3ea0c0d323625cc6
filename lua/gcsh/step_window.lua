-- step.window(c, n [, dtype [, {kind=}]]): a window's registration, one
-- stage per st:next(), on every rank of c, printing what each rank really
-- did; st.window is the usable window after the last step.
--
-- The stages are the registration itself (src/bind/l_winstage.c, src/bind/winbuild.h):
-- c:window() runs the same ones back to back.  Step 1 is the check (every
-- rank asks for the same window); then the backend's stages:
--   host  segment (MPI_Comm_split by node, MPI_Win_allocate_shared),
--         peers (MPI_Win_shared_query of every member)
--   nccl  allocate, register, devcomm, peers
--   vmm   allocate, export, exchange, map, access, table
--
--   st:next([k])  k steps (default 1), printed once for all ranks (every
--                 rank prints the same text, which the shell folds): what
--                 every rank did alike is one line, what differs is a line
--                 per group of ranks ("rank 1: ...")
--   st:run([{quiet=true}])  the steps left, then a test of the window:
--                 every rank writes its rank into its slice and reads each
--                 team member's back; true when every rank read what was
--                 written
--   st:reset()    frees what is registered (the window too) and starts again
--   st:show()     the steps, done and to do
--   st.step st.steps st.algo ("register-<kind>") st.window (nil before the
--   last step) st.kind st.n st.dtype st.seq st.names st.text (the lines
--   last printed)
--
-- Collective: every rank of c makes the same calls.  A step that fails on
-- any rank, or in which any rank saw Ctrl-C, is undone on every rank, and
-- the stepper is back at step 0.
local winstage = require("gcsh.winstage")

local St = {}

-- Text after the shell's "[0-3] " stays within 80 columns.
local WIDTH = 72

-- Calls a C method; its error is raised again at the stepper's caller.
local function call(f, ...)
  local res = table.pack(pcall(f, ...))
  if not res[1] then error(res[2], 3) end
  return table.unpack(res, 2, res.n)
end

-- {0, 1, 2, 5} -> "0-2,5"
local ranks_text = require("gcsh.repro").ranges

local function lines_of(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  if lines[#lines] == "" then lines[#lines] = nil end
  return lines
end

-- Line i of every rank's report: once when all ranks have it alike, else
-- once per group of ranks with the same text, "rank 1: ..." / "ranks 0,2: ...".
local function fold(reports)
  local per, most = {}, 0
  for r = 1, #reports do
    per[r] = lines_of(reports[r])
    most = math.max(most, #per[r])
  end
  local out = {}
  for i = 1, most do
    local groups, order = {}, {}
    for r = 1, #per do
      local line = per[r][i]
      if line then
        if not groups[line] then
          groups[line] = {}
          order[#order + 1] = line
        end
        table.insert(groups[line], r - 1)
      end
    end
    if #order == 1 and #groups[order[1]] == #per then
      out[#out + 1] = order[1]
    else
      for _, line in ipairs(order) do
        local g = groups[line]
        out[#out + 1] = (#g == 1 and "rank " or "ranks ") .. ranks_text(g) .. ": " .. line
      end
    end
  end
  return out
end

-- Adds text to lines, indented, wrapped at WIDTH on spaces.
local function add_wrapped(lines, indent, text)
  local more = indent .. "    "
  local lead = indent
  while #lead + #text > WIDTH do
    local cut = text:sub(1, WIDTH - #lead):match("^.*() ")
    if not cut or cut <= 1 then break end
    lines[#lines + 1] = lead .. text:sub(1, cut - 1)
    text = text:sub(cut + 1)
    lead = more
  end
  lines[#lines + 1] = lead .. text
end

local function add_step(lines, st, step, name, reports)
  lines[#lines + 1] = string.format("step %d/%d %s", step, st.steps, name)
  for _, line in ipairs(fold(reports)) do add_wrapped(lines, "  ", line) end
end

-- Every rank prints the same lines (what every rank did, folded), so the
-- shell folds them into one block, and what comes after them (run's
-- result, an error) folds too; st.text keeps them.
local function say(st, lines, quiet)
  local text = table.concat(lines, "\n")
  rawset(st, "text", text)
  if #lines > 0 and not quiet then print(text) end
end

local function describe(st)
  local w = st.seq and string.format("window #%d", st.seq) or "a window"
  return string.format("%s: %s (%d %s)", st.algo, w, st.n, st.dtype)
end

local function ready_line(st)
  return string.format("st.window is ready: window #%d, registered on every rank", st.seq)
end

local function check_int(fname, what, v)
  if math.tointeger(v) == nil or math.tointeger(v) < 1 then
    error(string.format("%s: %s must be an integer >= 1, got %s", fname, what, tostring(v)), 3)
  end
  return math.tointeger(v)
end

-- st:next([k]): k steps (default 1), printed together.
function St:next(k)
  k = k == nil and 1 or check_int("next", "k (steps)", k)
  local s, lines = self._s, {}
  if s.step == s.steps then
    say(self, { string.format("all %d steps are done (st:reset() starts again)", s.steps) })
    return
  end
  for _ = 1, k do
    if s.step == s.steps then break end
    local ok, step, name, reports = pcall(s.next, s)
    if not ok then
      say(self, lines) -- the steps that ran, then the failure
      error(step, 2)
    end
    add_step(lines, self, step, name, reports)
  end
  if s.step == s.steps then lines[#lines + 1] = "  " .. ready_line(self) end
  say(self, lines)
end

-- Every rank writes its rank into its whole slice; after a barrier each
-- reads every team member's slice and compares it with what that member
-- wrote.  The slices are zeroed again (a new window reads zeros); the ranks
-- tell each other which slices they found wrong (c:agree).
local function test_window(st, w, lines)
  local c = w.comm
  w:tensor():fill(c.rank)
  c:barrier()
  local wrong, ref = {}, tensor.new(w.n, w.dtype)
  for _, r in ipairs(w.team) do
    if not w:peer(r):equal(ref:fill(r)) then wrong[#wrong + 1] = tostring(r) end
  end
  c:barrier()
  w:tensor():fill(0)
  c:barrier()
  local all, reports, ok = c:agree(table.concat(wrong, ",")), {}, true
  for r = 1, #all do
    ok = ok and all[r] == ""
    reports[r] = all[r] == "" and "read every slice right"
                 or "read wrong values in the slice of rank(s) " .. all[r]
  end
  if ok then
    lines[#lines + 1] = string.format("window #%d works: each rank wrote its rank into its slice and",
                                      w.seq)
    lines[#lines + 1] = string.format("  read the %d slices of its team back", #w.team)
  else
    lines[#lines + 1] = string.format("window #%d does not work:", w.seq)
    for _, line in ipairs(fold(reports)) do add_wrapped(lines, "  ", line) end
  end
  return ok
end

-- st:run([{quiet=true}]): every step left, then the test of the window.
function St:run(opts)
  gcsh.check_options(opts, "run", "quiet")
  local quiet = opts and opts.quiet
  local s, lines, done = self._s, {}, {}
  local ok, err = pcall(s.run, s, done)
  for _, d in ipairs(done) do add_step(lines, self, d.step, d.name, d.reports) end
  if not ok then
    say(self, lines, quiet)
    error(err, 2)
  end
  local w = s.window
  if not pcall(function() return w.n end) then
    error("step.window: st.window was freed; st:reset() starts again", 2)
  end
  local works = test_window(self, w, lines)
  say(self, lines, quiet)
  return works
end

function St:reset()
  local s = self._s
  local had, step = s.step > 0, s.step
  local what = had and s.seq and string.format("window #%d", s.seq) or nil
  call(s.reset, s)
  say(self, had and { string.format("reset: %s released on every rank (it was at step %d of %d)",
                                    what, step, s.steps) } or {})
end

function St:show()
  local s = self._s
  local lines = { string.format("%s, step %d of %d", describe(self), s.step, s.steps) }
  for i, name in ipairs(s.names) do
    local state = i <= s.step and "done" or (i == s.step + 1 and "next" or "")
    lines[#lines + 1] = (string.format("  %d %-9s %s", i, name, state):gsub("%s+$", ""))
  end
  if s.step == s.steps then lines[#lines + 1] = "  " .. ready_line(self) end
  say(self, lines)
end

St.free = St.reset

local meta = {
  __index = function(st, key)
    if St[key] then return St[key] end
    if key == "algo" then return "register-" .. st._s.kind end
    return st._s[key]
  end,
  __tostring = function(st) return "step.window(" .. describe(st) .. ", step " .. st._s.step
    .. " of " .. st._s.steps .. ")" end,
  __close = function(st) st:reset() end,
  __name = "stepper",
}

return function(c, n, dtype, opts)
  return setmetatable({ _s = call(winstage.new, c, n, dtype, opts) }, meta)
end
