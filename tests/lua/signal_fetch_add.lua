-- s:fetch_add(peer, slot, v): an atomic add to a peer's word that returns
-- the word before it: every rank of the team adds to one word at once and
-- the old values it sees are all different; u64 words wrap.
local H = require "harness"

local c = comm.world()
local T = H.team(c)
local me = T.me
local s = c:signals(2)
local ROUNDS = 50

-- every member adds 1 to slot 0 of the team's first rank, ROUNDS times
local seen = {}
for i = 1, ROUNDS do seen[i] = s:fetch_add(T.first, 0, 1) end
for i = 2, ROUNDS do H.truthy(seen[i] > seen[i - 1], "my old values grow") end
c:barrier()
if me == T.first then H.eq(s:read(0), T.size * ROUNDS, "every add landed") end
-- no two adds saw the same value: every old value 0 .. size*ROUNDS-1 once
local all = c:agree(table.concat(seen, " "))
local count, hit = 0, {}
for _, r in ipairs(T.members) do
  for v in all[r + 1]:gmatch("%d+") do
    v = tonumber(v)
    H.truthy(not hit[v], "old value " .. v .. " seen twice")
    hit[v] = true
    count = count + 1
  end
end
H.eq(count, T.size * ROUNDS, "old values")
for v = 0, T.size * ROUNDS - 1 do H.truthy(hit[v], "old value " .. v .. " seen") end
c:barrier()

-- u64: past 2^63 and around 2^64
s:set(T.next, 1, math.maxinteger)
H.eq(s:fetch_add(T.next, 1, 1), math.maxinteger, "returns the word before")
H.eq(string.format("%u", s:fetch_add(T.next, 1, -1)), "9223372036854775808", "2^63, then -1 is 2^64-1 added")
H.eq(s:fetch_add(T.next, 1, 0), math.maxinteger, "2^63 + 2^64 - 1 wraps to 2^63 - 1")
H.raises(function() s:fetch_add(T.next, 2, 1) end, "fetch_add: slot 2 out of range (valid 0..1)")
H.raises(function() s:fetch_add(T.next, 1, 0.5) end, "fetch_add: value must be an integer 0..18446744073709551615")
c:barrier()
s:free()
