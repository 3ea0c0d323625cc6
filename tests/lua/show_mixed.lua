-- show() where ranks hold different things: every rank takes the same path
-- (a tensor on one rank and a table on another show as text, not an error
-- in show.lua), and the title says what each rank holds (a dtype or length
-- that differs is named with its ranks, never rank 0's as everyone's).
local H = require "harness"
local S = require "gcsh.show"

local c = comm.world()
local me, n = c.rank, c.size
local rest = n == 2 and "1" or ("1-" .. (n - 1))

-- a tensor on rank 0, a table elsewhere
local text = S.format(me == 0 and tensor.new(3):fill(1) or { 1, 2, 3 })
if n == 1 then
  H.eq(text:match("^[^\n]*"), "tensor (3 f32): each rank's", "one rank: a tensor")
else
  H.eq(text:match("^[^\n]*"), "tensor on 0, table on " .. rest, "mixed kinds: each named with its ranks")
  H.truthy(text:find("\n   0  tensor(f32, 3, host) [1, 1, 1]", 1, true), "rank 0's row is its tensor")
  H.truthy(text:find("\n   1  {1, 2, 3}", 1, true), "rank 1's row is its table")
end

-- dtypes and lengths that differ are named with their ranks
local t = me == 0 and tensor.new(3):fill(1) or tensor.new(4, "i32"):fill(2)
text = S.format(t)
local want = n == 1 and "tensor (3 f32): each rank's"
  or ("tensor (3 f32 on 0, 4 i32 on " .. rest .. "): each rank's")
H.eq(text:match("^[^\n]*"), want, "the title names each rank's length and dtype")
H.eq(S.format(tensor.new(2, "f64"):fill(me)):match("^[^\n]*"), "tensor (2 f64): each rank's",
  "the same shape everywhere: said once")

-- scalars of different types
text = S.format(me == 0 and "a" or 1)
H.eq(text:match("^[^\n]*"), n == 1 and "string on 1 rank" or ("string on 0, number on " .. rest),
  "mixed scalar types")
H.eq(S.format(42):match("^[^\n]*"), "number on " .. n .. " rank" .. (n == 1 and "" or "s"),
  "one type: said once with the rank count")

-- the session goes on: a collective after the mixed shows
H.eq(c:allreduce(tensor.new(1):fill(1))[0], n, "the communicator is in step")
