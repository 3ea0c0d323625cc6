-- Signal words are unsigned 64-bit end to end: a Lua integer carries the
-- bits (2^63..2^64-1 are the negative integers, math.ult's order), values
-- above 2^63-1 are accepted by set, add, wait and a put's signal, adds wrap
-- modulo 2^64, waits compare unsigned, and gcsh prints words unsigned
-- (show(s), a wait's timeout).
local H = require "harness"
local show = require "gcsh.show"

local c = comm.world()
local T = H.team(c)
local nxt = T.next
local MAX = math.maxinteger
local function u(v) return string.format("%u", v) end

local s = c:signals(6)
-- each rank writes its next's words; after the barrier its own are final
s:set(nxt, 0, MAX)
s:add(nxt, 0, 1)                      -- 2^63: past the signed range
s:add(nxt, 1, MAX)
s:add(nxt, 1, MAX)                    -- 2 * (2^63 - 1) = 2^64 - 2
s:set(nxt, 2, -1)                     -- 2^64 - 1
s:add(nxt, 3, -1)
s:add(nxt, 3, 2)                      -- wraps: 1
s:set(nxt, 4, 9223372036854775808)    -- a float literal, 2^63 exactly
c:barrier()
H.eq(s:read(0), math.mininteger, "the carrier of 2^63")
H.eq(u(s:read(0)), "9223372036854775808", "2^63 unsigned")
H.eq(u(s:read(1)), "18446744073709551614", "maxint added twice")
H.eq(s:read(1), -2, "its carrier")
H.eq(u(s:read(2)), "18446744073709551615", "-1 is 2^64 - 1")
H.eq(s:read(3), 1, "add wraps modulo 2^64")
H.eq(s:read(4), math.mininteger, "a float 2^63 is taken")

-- waits take the same values and compare unsigned
s:wait { slot = 0, value = s:read(0), cmp = "==", cpu = true, timeout = 30 }
s:wait(0, 9223372036854775808, "==")
s:wait(0, 1, ">=")                    -- 2^63 >= 1 unsigned (signed it is negative)
s:wait(0, MAX, ">")
s:wait(1, -1, "<")                    -- 2^64 - 2 < 2^64 - 1
s:wait(2, -2, ">")
H.truthy(math.ult(s:read(0), s:read(1)), "math.ult orders them as the words")

-- a timeout prints the words unsigned
H.raises(function() s:wait { slot = 0, value = -1, cmp = "==", cpu = true, timeout = 0.05 } end,
         "wait: timed out after 0.05 s: slot 0 is 9223372036854775808, waiting for == 18446744073709551615")

-- show(s) prints the words unsigned, never negative
local text = show.format(s)
H.truthy(text:find("9223372036854775808", 1, true), "show: 2^63\n" .. text)
H.truthy(text:find("18446744073709551614", 1, true), "show: 2^64 - 2\n" .. text)
H.truthy(not text:find("-", 1, true), "show: no negative word\n" .. text)
c:barrier()

-- a put's signal adds a u64 value too
local w = c:window(4, "f32")
local src = tensor.new(1, "f32"):fill(1)
w:put(nxt, src, 0, { signal = { s, 5, value = MAX } }):post():wait { cpu = true }
w:put(nxt, src, 0, { signal = { s, 5, 9223372036854775808.0 } }):post():wait { cpu = true }
s:wait { slot = 5, value = -1, cmp = "==", cpu = true, timeout = 30 }
H.eq(u(s:read(5)), "18446744073709551615", "put's signal: maxint + 2^63")

-- bad values name the range
local range = "an integer 0..18446744073709551615 (a u64 word; a negative integer is its two's complement, as math.ult reads it)"
H.raises(function() s:set(nxt, 0, 2^64) end, "set: value must be " .. range .. ", got 1.844674407371e+19")
H.raises(function() s:add(nxt, 0, 0.5) end, "add: value must be " .. range .. ", got 0.5")
H.raises(function() s:wait(0, "7") end, "wait: value must be " .. range .. ", got 7")
H.raises(function() s:wait { slot = 0, value = -2^63 - 2^11 } end, "wait: value must be")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 5, 2^64 } }) end, "signal value must be " .. range)
c:barrier()
w:free()
s:free()
