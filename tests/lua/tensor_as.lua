-- t:as(dtype): the same bytes seen as another dtype, a view sharing t's
-- memory (writes go through both ways), on local tensors and window slices;
-- sizes and starts that do not divide are errors naming the bytes.
local H = require "harness"

local t = tensor.from({ 1, -2, 0.5 }, "f32")
local u = t:as("u32")
H.eq(u.dtype, "u32", "dtype")
H.eq(#u, 3, "length")
H.values(u, { 0x3f800000, 0xc0000000, 0x3f000000 }, nil, "f32 bits")
u[0] = 0x40000000 -- 2.0
H.eq(t[0], 2.0, "a write through the u32 view")
t[2] = -1
H.eq(u[2], 0xbf800000, "a write through the f32 tensor")
H.values(tensor.from({ 1.5 }, "bf16"):as("u8"), { 0xc0, 0x3f }, nil, "bf16 bits, little-endian bytes")
H.values(tensor.from({ 1.5 }, "f16"):as("u8"), { 0x00, 0x3e }, nil, "f16 bits")
local b = t:as("u8")
H.eq(#b, 12, "f32 as u8: four bytes an element")
H.values(b:view(4, 4):as("f32"), { -2.0 }, nil, "back to f32 from byte 4")
H.values(t:view(0, 2):as("f64"):as("f32"), { 2.0, -2.0 }, nil, "a round trip through f64")
H.raises(function() t:as("f64") end, "as: 3 f32 elements (12 bytes) are not a whole number of f64 elements (8 bytes each)")
H.raises(function() t:view(1, 2):as("f64") end, "as: the view starts at byte 4 of its memory, not a multiple of f64's 8 bytes")
H.raises(function() t:as("f33") end, "unknown dtype 'f33'")
H.raises(function() t:as() end, "bad argument #1 to 'as' (value expected)")

-- a window's slice: every rank writes its rank as i32, reads the bytes
local c = comm.world()
local w = c:window(4, "i32")
w:tensor():fill(rank + 256)
local bytes = w:tensor():as("u8")
H.eq(#bytes, 16, "a slice's bytes")
H.values(bytes:view(0, 4), { rank % 256, 1 + rank // 256, 0, 0 }, nil, "rank + 256, little-endian")
c:barrier()
local peer = w:peer((rank + 1) % size):as("u8")
H.eq(peer[1], 1, "a peer's slice through its view")
c:barrier()
w:free()
