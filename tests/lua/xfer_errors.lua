-- One-sided transfers: every bad input is a Lua error at creation (or at
-- post, for what can change after), raised before any byte is copied.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me, n, first, team_size, nxt = T.me, T.n, T.first, T.size, T.next

local w = c:window(64, "f32")
local mine = w:tensor()
local src = tensor.new(8, "f32"):fill(5)
local untouched = function(what)
  c:barrier()
  H.eq(mine:sum(), 0, what .. ": nothing was copied")
  c:barrier()
end

-- peers
H.raises(function() w:put(n, src) end,
         string.format("bad argument #1 to 'put' (peer %d out of range (the comm has ranks 0..%d))", n, n - 1))
H.raises(function() w:get(-1, src) end, "bad argument #1 to 'get' (peer -1 out of range")
H.raises(function() w:putv("x", { { src, 0 } }) end, "bad argument #1 to 'putv' (number expected, got string)")
if team_size < n then
  -- a rank on another node: over the network, its ranges checked the same way
  local outside = (first + team_size) % n
  H.raises(function() w:put(outside, src, 60) end, "dst_offset")
  H.eq(w:put(outside, src).path, "tcp", "a put to another node goes over the network")
end

-- ranges
H.raises(function() w:put(nxt, src, 57) end,
         "bad argument #3 to 'put' (dst_offset 57 + 8 elements runs past the window's 64 elements)")
H.raises(function() w:put(nxt, tensor.new(65, "f32")) end,
         "dst_offset 0 + 65 elements runs past the window's 64 elements")
H.raises(function() w:get(nxt, src, 60) end,
         "bad argument #3 to 'get' (src_offset 60 + 8 elements runs past the window's 64 elements)")
H.raises(function() w:put(nxt, src, -1) end, "bad argument #3 to 'put' (dst_offset must be an integer >= 0, got -1)")
H.raises(function() w:put(nxt, src, 1.5) end, "dst_offset must be an integer >= 0, got 1.5")
H.raises(function() w:putv(nxt, { { src, 0 }, { src, 60 } }) end,
         "bad argument #2 to 'putv' (descriptor 2's dst_offset 60 + 8 elements runs past the window's 64 elements)")

-- tensors and dtypes
H.raises(function() w:put(nxt, tensor.new(8, "f64")) end,
         "bad argument #2 to 'put' (src is f64 but the window is f32 (dtypes must match))")
H.raises(function() w:get(nxt, tensor.new(8, "i32")) end, "dst is i32 but the window is f32")
H.raises(function() w:put(nxt, { 1, 2 }) end, "bad argument #2 to 'put' (src: tensor expected, got table)")
H.raises(function() w:putv(nxt, { { tensor.new(2, "u8"), 0 } }) end,
         "descriptor 1's src is u8 but the window is f32")
H.raises(function() w:putv(nxt, { { 3, 0 } }) end, "descriptor 1's src: tensor expected, got number")
local freed = tensor.new(4, "f32")
freed:free()
H.raises(function() w:put(nxt, freed) end, "attempt to use a freed tensor")

-- putv descriptor lists
H.raises(function() w:putv(nxt, {}) end, "bad argument #2 to 'putv' (empty descriptor list")
H.raises(function() w:putv(nxt) end, "bad argument #2 to 'putv' (table expected, got no value)")
H.raises(function() w:putv(nxt, { src }) end, "descriptor 1 must be {src, dst_offset}, got tensor")
H.raises(function() w:putv(nxt, { { src } }) end, "descriptor 1 has no dst_offset")
H.raises(function() w:putv(nxt, { { src, 0 }, { src, 4 } }) end,
         "destinations overlap: descriptor 2 (offset 4, 8 elements) and descriptor 1 (offset 0, 8 elements)")
H.raises(function() w:putv(nxt, { { src, 30 }, { src:view(0, 2), 10 }, { src:view(0, 1), 37 } }) end,
         "destinations overlap: descriptor 3 (offset 37, 1 elements) and descriptor 1 (offset 30, 8 elements)")
if n > 1 then
  H.raises(function() w:putv(nxt, { { src, 0 }, { src, 8, peer = (nxt + 1) % n } }) end,
           string.format("descriptor 2 targets peer %d but this putv goes to rank %d (one putv per peer)",
                         (nxt + 1) % n, nxt))
end
local other = c:window(64, "f32")
H.raises(function() w:putv(nxt, { { src, 0 }, { src, 8, window = other } }) end,
         "descriptor 2 names another window (one putv per window)")

-- a source that overlaps the destination (my own slice, to myself)
-- (both sides named by where they are in the slice)
H.raises(function() w:put(me, mine:view(0, 8), 4) end,
         "the source (elements 0..7 of rank " .. me .. "'s slice) overlaps the destination (elements 4..11)")
H.raises(function() w:get(me, mine:view(10, 8), 12) end,
         "the source (elements 12..19 of rank " .. me .. "'s slice) overlaps the destination (elements 10..17)")
H.raises(function() w:putv(me, { { mine:view(40, 4), 0 }, { src, 38 } }) end,
         "the source of descriptor 1 (elements 40..43 of rank " .. me .. "'s slice) overlaps the destination "
         .. "of descriptor 2 (elements 38..45)")

-- options
H.raises(function() w:put(nxt, src, 0, { engine = "dma" }) end,
         "bad argument #4 to 'put' (unknown engine 'dma' (valid: ce sm))")
H.raises(function() w:put(nxt, src, 0, { engine = 1 }) end, "engine must be a string, got number")
H.raises(function() w:put(nxt, src, 0, "sm") end, "bad argument #4 to 'put' (options must be a table (valid keys: engine signal), got string)")
H.raises(function() w:put(nxt, src, 0, { engin = "sm" }) end, "unknown option 'engin' (valid: engine signal)")
H.raises(function() w:get(nxt, src, 0, { signal = {} }) end, "unknown option 'signal' (valid: engine)")
H.raises(function() w:putv(nxt, { { src, 0 } }, 5) end, "bad argument #3 to 'putv' (options must be a table (valid keys: engine signal), got number)")
local s = c:signals(2)
H.raises(function() w:put(nxt, src, 0, { signal = s }) end, "signal must be a table {s, slot [, value]}, got signals")
H.raises(function() w:put(nxt, src, 0, { signal = { w, 0 } }) end, "signal[1] must be signals, got window")
H.raises(function() w:put(nxt, src, 0, { signal = { s } }) end, "signal needs {s, slot [, value]}: no slot")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 2 } }) end, "signal slot must be an integer 0..1, got 2")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 0, "1" } }) end, "signal value must be an integer 0..18446744073709551615")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 0, 0.5 } }) end, "signal value must be an integer")
local sub = c:split(0, me)
local s2 = sub:signals(1)
H.raises(function() w:put(nxt, src, 0, { signal = { s2, 0 } }) end,
         "the signals are on another communicator than the window")

-- waits
local x = w:put(nxt, src, 0)
x:post()
H.raises(function() x:wait { timeout = 1 } end, "wait: timeout needs cpu=true")
H.raises(function() x:wait { cpu = true, timeout = -2 } end, "wait: timeout must be a number of seconds >= 0, got -2")
H.raises(function() x:wait { cpus = true } end, "unknown option 'cpus' (valid: cpu timeout)")
H.raises(function() x:wait(3) end, "bad argument #1 to 'wait' (options must be a table (valid keys: cpu timeout), got number)")
x:cancel()
H.raises(function() x.post(w) end, "xfer expected, got window")

-- nothing above copied a byte (only the one post, to offset 0..7)
c:barrier()
H.eq(mine:view(8, 56):sum(), 0, "no byte past the one post")
c:barrier()
mine:fill(0)
untouched("after the errors")

-- freed window
s2:free()
sub:free()
s:free()
other:free()
w:free()
H.raises(function() w:put(nxt, src) end, "attempt to use a freed window")
print("xfer_errors ok")
