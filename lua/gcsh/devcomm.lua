-- step.devcomm(w [, {barriers=1}]): the host backend's emulation of NCCL's
-- device communicator over a window of kind nccl (emulated on the host),
-- whose pieces algo "nccl_dev" uses inside one kernel on a GPU
-- (kernels/cuda/nccl_dev.cu), here one call at a time from the prompt:
--
--   d = step.devcomm(w)      collective: ncclDevCommCreate (LSA team, barriers)
--   d.lsa_rank d.lsa_size d.barriers d.window
--   d:lsa_pointer(peer [, offset [, n]])  ncclGetLsaPointer: peer's slice (a view)
--   d:arrive(b) d:wait(b)    an ncclLsaBarrierSession on barrier b, in two halves
--   d:sync(b)                both (what a kernel's session.sync does)
--   d:state()                my barrier counts and the words every member left
--   d:free()                 collective
--
-- An LSA barrier is NCCL's: a word per member in every member's barrier
-- memory; arriving stores my count into my word of every member's, waiting
-- polls mine until every member's word reached my count.  Here the words
-- are a signals set of the window's kind (slot b * lsa_size + member), so
-- a wait is a signal wait: Ctrl-C ends it, and a hang report says which slot
-- it waits on and the value it holds ("slot 3 is now 0":
-- barrier 3 // lsa_size, member 3 % lsa_size).
local M = {}

local Devcomm = {}
Devcomm.__index = Devcomm
Devcomm.__name = "devcomm"

-- The level of the first caller outside this file (errors point there).
local function caller_level()
  local level = 3
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 0 end
    if not info.source:find("gcsh/devcomm", 1, true) then return level - 1 end
    level = level + 1
  end
end

local function fail(fname, fmt, ...)
  error(fname .. ": " .. string.format(fmt, ...), caller_level())
end

local function check_int(fname, what, v, lo, hi)
  if math.type(v) ~= "integer" or v < lo or v > hi then
    fail(fname, "%s must be an integer %d..%d, got %s", what, lo, hi, tostring(v))
  end
  return v
end

local function open(d, fname)
  if not d.signals then fail(fname, "this device communicator was freed") end
  return d
end

function M.new(w, opts)
  local fname = "step.devcomm"
  if type(w) ~= "userdata" or (getmetatable(w) or {}).__name ~= "window" then
    fail(fname, "a window expected, got %s", type(w))
  end
  gcsh.check_options(opts, fname, "barriers", caller_level())
  opts = opts or {}
  if gcsh.backend ~= "host" then
    fail(fname, "the host backend's emulation; on cuda, algo 'nccl_dev' runs NCCL's own "
         .. "device communicator inside a kernel (kernels/cuda/nccl_dev.cu)")
  end
  if w.kind ~= "nccl" then
    fail(fname, "a device communicator belongs to a window of kind nccl, got kind '%s' "
         .. "(c:window(n, dtype, {kind = \"nccl\"}))", w.kind)
  end
  local nb = check_int(fname, "barriers", opts.barriers or 1, 1, 64)
  local team = w.team
  local d = setmetatable({
    window = w, team = team, lsa_size = #team, barriers = nb, counts = {},
  }, Devcomm)
  for i, r in ipairs(team) do if r == w.rank then d.lsa_rank = i - 1 end end
  for b = 0, nb - 1 do d.counts[b] = 0 end
  d.signals = w.comm:signals(nb * #team, { kind = w.kind })
  return d
end

-- peer's slice from element offset, n elements (the rest of it): the
-- pointer ncclGetLsaPointer(win, offset, peer) gives a kernel
function Devcomm:lsa_pointer(peer, offset, n)
  local fname = "lsa_pointer"
  open(self, fname)
  check_int(fname, "peer (an LSA rank)", peer, 0, self.lsa_size - 1)
  offset = check_int(fname, "offset", offset or 0, 0, self.window.n - 1)
  n = check_int(fname, "n", n or (self.window.n - offset), 1, self.window.n - offset)
  return self.window:peer(self.team[peer + 1]):view(offset, n)
end

local function barrier_index(self, fname, b)
  open(self, fname)
  return check_int(fname, "b (a barrier)", b or 0, 0, self.barriers - 1)
end

function Devcomm:arrive(b)
  b = barrier_index(self, "arrive", b)
  self.counts[b] = self.counts[b] + 1
  for p = 0, self.lsa_size - 1 do
    self.signals:set(self.team[p + 1], b * self.lsa_size + self.lsa_rank, self.counts[b])
  end
end

function Devcomm:wait(b)
  b = barrier_index(self, "wait", b)
  for p = 0, self.lsa_size - 1 do
    self.signals:wait(b * self.lsa_size + p, self.counts[b])
  end
end

function Devcomm:sync(b)
  b = barrier_index(self, "sync", b)
  self:arrive(b)
  self:wait(b)
end

-- {count = {[b] = my arrivals}, words = {[b] = {[lsa rank] = its word here}}}
function Devcomm:state()
  open(self, "state")
  local st = { count = {}, words = {} }
  for b = 0, self.barriers - 1 do
    st.count[b] = self.counts[b]
    st.words[b] = {}
    for p = 0, self.lsa_size - 1 do st.words[b][p] = self.signals:read(b * self.lsa_size + p) end
  end
  return st
end

function Devcomm:free()
  if self.signals then
    self.signals:free()
    self.signals = nil
  end
end
Devcomm.__close = Devcomm.free

function Devcomm:__tostring()
  if not self.signals then return "devcomm (freed)" end
  return string.format("devcomm(emulated, window #%d, LSA rank %d of %d, %d barrier%s)",
                       self.window.seq, self.lsa_rank, self.lsa_size, self.barriers,
                       self.barriers == 1 and "" or "s")
end

return M
