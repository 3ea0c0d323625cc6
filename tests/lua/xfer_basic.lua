-- One-sided transfers: put, get and putv at odd sizes and offsets with both
-- engines and several dtypes, reposting, put-with-signal ordering (the data
-- is there once the peer's wait returns), and the handle's states.  Runs on
-- any backend; under GCSH_RANKS_PER_NODE the peers are the emulated node's.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me, nxt, prev = T.me, T.next, T.prev

local N = 1001
local esize = { i32 = 4, u8 = 1, f64 = 8, i8 = 1, f16 = 2 }

local function check_range(t, from, count, want, what)
  for i = from, from + count - 1 do H.eq(t[i], want(i - from), what .. "[" .. i .. "]") end
end

-- ---- put, get, putv: every engine and a few dtypes (values fit in i8/u8) ----
for _, engine in ipairs { "ce", "sm" } do
  for _, dt in ipairs { "i32", "u8", "f64", "i8", "f16" } do
    local tag = engine .. " " .. dt
    local w = c:window(N, dt)
    local mine = w:tensor()

    -- put 37 elements at offset 13 of the next rank's slice
    local src = tensor.new(37, dt):arange(me + 1)
    local x = w:put(nxt, src, 13, { engine = engine })
    H.eq(x.op, "put", "op")
    H.eq(x.peer, nxt, "peer")
    H.eq(x.engine, engine, "engine")
    H.eq(x.bytes, 37 * esize[dt], "bytes")
    H.eq(x.segments, 1, "segments")
    H.eq(x:post(), x, "post returns the handle")
    H.eq(x:test(), "done", tag .. ": test after post")
    x:wait()
    x:wait { cpu = true, timeout = 5 }
    c:barrier()
    H.eq(mine[12], 0, tag .. ": before the range")
    check_range(mine, 13, 37, function(i) return prev + 1 + i end, tag .. ": put")
    H.eq(mine[50], 0, tag .. ": after the range")
    c:barrier()

    -- the same handle again, after its source changed
    src:fill(7)
    x:post()
    H.eq(x.posts, 2, "posts")
    c:barrier()
    check_range(mine, 13, 37, function() return 7 end, tag .. ": repost")
    c:barrier()

    -- get 41 elements at offset 100 of the next rank's slice
    mine:view(100, 41):arange(me * 2)
    c:barrier()
    local dst = tensor.new(41, dt)
    local g = w:get(nxt, dst, 100, { engine = engine }):post():wait { cpu = true }
    H.eq(g:test(), "done", tag .. ": get done")
    check_range(dst, 0, 41, function(i) return nxt * 2 + i end, tag .. ": get")
    c:barrier()

    -- putv: odd lengths, adjacent and scattered destinations, a view as a source
    mine:fill(0)
    c:barrier()
    local a = tensor.new(5, dt):fill(1 + me)
    local b = tensor.new(1, dt):fill(11 + me)
    local big = tensor.new(17, dt):arange(20 + me)
    local v = w:putv(nxt, {
      { a, 201 },
      { b, 300, peer = nxt },
      { big, 206, window = w },
      { big:view(3, 9), 990 },
    }, { engine = engine })
    H.eq(v.segments, 4, "segments")
    v:post()
    c:barrier()
    check_range(mine, 201, 5, function() return 1 + prev end, tag .. ": putv a")
    H.eq(mine[300], 11 + prev, tag .. ": putv b")
    check_range(mine, 206, 17, function(i) return 20 + prev + i end, tag .. ": putv big")
    check_range(mine, 990, 9, function(i) return 23 + prev + i end, tag .. ": putv view")
    H.eq(mine[200] + mine[223] + mine[989] + mine[999 + 1], 0, tag .. ": nothing else written")
    c:barrier()
    w:free()
  end
end

-- ---- put with signal: data, then the peer's word; the waiter sees the data ----
local s = c:signals(4)
local D = 4099
local w = c:window(D, "i32")
local payload = tensor.new(D, "i32")
local parts = {}
for k = 0, 6 do parts[#parts + 1] = { payload:view(k * 500, 500), k * 500 } end
parts[#parts + 1] = { payload:view(3500, D - 3500), 3500 }
local handles = {
  w:put(nxt, payload, 0, { signal = { s, 0 } }),
  w:put(nxt, payload, 0, { engine = "sm", signal = { s, 0 } }),
  w:putv(nxt, parts, { signal = { s, 0 } }),
  w:putv(nxt, parts, { engine = "sm", signal = { s, 0 } }),
}
local round = 0
for _, x in ipairs(handles) do
  for _ = 1, 2 do
    round = round + 1
    payload:fill(me * 1000 + round)
    x:post()
    s:wait(0, round)
    H.eq(w:tensor():sum(), D * (prev * 1000 + round), "round " .. round .. ": data before the signal")
    H.eq(s:read(0), round, "one add per post")
    c:barrier() -- nobody overwrites a slice before its owner has checked it
  end
end
-- a value other than 1, and a zero-length put: the signal alone
local five = w:put(nxt, payload:view(0, 0), 0, { signal = { s, 1, 5 } })
five:post():post()
s:wait(1, 10, "==")
H.eq(s:read(1), 10, "value 5, posted twice")
H.eq(tostring(five), "xfer(put 0 bytes to rank " .. nxt .. ", 1 segment, engine ce, signal #" .. s.seq
     .. " slot 1 + 5, posts 2)", "tostring names the signal's set, slot and value")
local big = w:put(nxt, payload:view(0, 0), 0, { signal = { s, 1, -1 } })
H.truthy(tostring(big):find("slot 1 + 18446744073709551615,", 1, true), "a u64 value, unsigned: " .. tostring(big))
big:free()
c:barrier()

-- ---- states --------------------------------------------------------------------
local src = tensor.new(3, "i32"):fill(me)
local x = w:put(nxt, src, 7)
H.raises(function() x:test() end, "test: the transfer was never posted (x:post() first)")
H.raises(function() x:wait() end, "wait: the transfer was never posted")
x:post()
H.eq(x:test(), "done", "done after post")
H.truthy(tostring(x):find("xfer(put 12 bytes to rank " .. nxt .. ", 1 segment, engine ce, posts 1)", 1, true),
         "tostring: " .. tostring(x))
x:cancel()
local st, why = x:test()
H.eq(st, "error", "a cancelled handle")
H.eq(why, "the transfer was cancelled", "why")
H.raises(function() x:post() end, "post: the transfer was cancelled")
H.raises(function() x:wait { cpu = true } end, "wait: the transfer was cancelled")
x:cancel() -- idempotent
x:free()
H.eq(tostring(x), "xfer (cancelled)", "tostring after cancel")

-- a freed source makes the handle unusable; nothing is copied
local tmp = tensor.new(3, "i32"):fill(99)
local y = w:put(nxt, tmp, 20)
y:post()
tmp:free()
st, why = y:test()
H.eq(st, "error", "freed src")
H.eq(why, "its src was freed", "why (src)")
H.raises(function() y:post() end, "post: its src was freed")
local g = w:get(nxt, tensor.new(2, "i32"), 0)
local vv = w:putv(nxt, { { src, 0 }, { tensor.new(1, "i32"), 10 } })
c:barrier()
H.eq(w:tensor()[20], 99, "the post before the free landed")
c:barrier()

-- <close> releases a handle at the end of its scope
do
  local z <close> = w:put(nxt, src, 40)
  z:post()
end

-- freed signals and window: every handle that uses them reports it
local sx = w:put(nxt, src, 30, { signal = { s, 2 } })
sx:post()
s:wait(2, 1)
c:barrier()
s:free()
st, why = sx:test()
H.eq(why, "its signals were freed", "why (signals)")
H.raises(function() sx:post() end, "post: its signals were freed")
w:free() -- handles that are done do not hold the window back
st, why = g:test()
H.eq(st, "error", "freed window")
H.eq(why, "its window was freed", "why (window)")
H.raises(function() g:post() end, "post: its window was freed")
H.raises(function() vv:post() end, "post: its window was freed")
handles, x, y, g, vv, sx = nil, nil, nil, nil, nil, nil
collectgarbage()
collectgarbage()
print("xfer_basic ok")

-- ---- default engines: the copy engine for put/get, one kernel for putv ----
do
  local w = c:window(64, "f32")
  local src = tensor.new(4, "f32"):fill(1)
  H.eq(w:put(nxt, src).engine, "ce", "put defaults to the copy engine")
  H.eq(w:get(nxt, src).engine, "ce", "get defaults to the copy engine")
  H.eq(w:putv(nxt, { { src, 0 }, { src, 8 } }).engine, "sm", "putv defaults to one kernel")
  collectgarbage()
  c:barrier()
  w:free()
end
