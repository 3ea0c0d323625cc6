-- tensor: every bad input gives a Lua error that names the argument and the
-- bound, and leaves the tensors as they were.
local H = require "harness"

local r = rank
local MAXN = 1 << 40

local t = tensor.new(8):arange(r)
local before = t:checksum()

-- indices ---------------------------------------------------------------------
H.raises(function() return t[8] end, "index 8 out of range for tensor of length 8 (valid 0..7)", "read past end")
H.raises(function() return t[-1] end, "index -1 out of range for tensor of length 8 (valid 0..7)", "read negative")
H.raises(function() t[8] = 1 end, "index 8 out of range for tensor of length 8 (valid 0..7)", "write past end")
H.raises(function() t[-(1 << 62)] = 1 end, "index -4611686018427387904 out of range", "write far negative")
H.raises(function() return tensor.new(0)[0] end,
  "index 0 out of range for tensor of length 0 (it is empty)", "empty tensor")
H.raises(function() return t[1.5] end, "tensor index must be an integer, got 1.5", "fractional index")
H.raises(function() return t[true] end, "tensor index must be an integer, got true", "boolean index")
H.eq(t[2.0], r + 2.0, "integral float index is fine")
local v = t:view(4, 2)
H.raises(function() return v[2] end, "index 2 out of range for tensor of length 2 (valid 0..1)", "view bound")

-- tensor.new --------------------------------------------------------------------
H.raises(function() tensor.new(-1) end,
  "bad argument #1 to 'new' (length must be 0.." .. MAXN .. ", got -1)", "negative length")
H.raises(function() tensor.new(MAXN + 1) end,
  "bad argument #1 to 'new' (length must be 0.." .. MAXN .. ", got " .. (MAXN + 1) .. ")", "absurd length")
H.raises(function() tensor.new(math.maxinteger) end, "length must be 0..", "maxinteger length")
H.raises(function() tensor.new(2.5) end, "bad argument #1 to 'new' (number has no integer representation)",
  "fractional length")
H.raises(function() tensor.new("x") end, "bad argument #1 to 'new' (number expected, got string)", "string length")
H.raises(function() tensor.new() end, "bad argument #1 to 'new' (number expected, got no value)", "no length")
H.raises(function() tensor.new(4, "f33") end,
  "bad argument #2 to 'new' (unknown dtype 'f33' (valid: f64 f32 f16 bf16 i64 i32 u32 u8 i8))", "unknown dtype")
H.raises(function() tensor.new(4, {}) end, "bad argument #2 to 'new' (string expected, got table)", "dtype type")
-- the largest allowed length is refused by the allocator, cleanly (4 TiB)
H.raises(function() tensor.new(MAXN) end, "out of host memory: cannot allocate 4398046511104 bytes",
  "allocation failure")

-- tensor.from -------------------------------------------------------------------
H.raises(function() tensor.from("x") end, "bad argument #1 to 'from' (table expected, got string)", "from string")
H.raises(function() tensor.from({1, 300}, "u8") end,
  "bad argument #1 to 'from' (item [2]: value 300 out of range for u8 (0..255))", "from out of range")
H.raises(function() tensor.from({1, "2"}) end,
  "bad argument #1 to 'from' (item [2]: number expected, got string)", "from string item")
H.raises(function() tensor.from({0.5}, "i8") end, "item [1]: value 0.5 is not an integer (i8 holds integers)",
  "from fractional")
H.raises(function() tensor.from({1}, "int") end, "unknown dtype 'int'", "from unknown dtype")

-- values for integer dtypes -------------------------------------------------------
local cases = {
  {"u8", 300, "value 300 out of range for u8 (0..255)"},
  {"u8", -1, "value -1 out of range for u8 (0..255)"},
  {"u8", 300.0, "value 300 out of range for u8 (0..255)"},
  {"i8", -1e10, "value -10000000000 out of range for i8 (-128..127)"},
  {"i8", 128, "value 128 out of range for i8 (-128..127)"},
  {"i8", -129, "value -129 out of range for i8 (-128..127)"},
  {"i32", 1 << 31, "value 2147483648 out of range for i32 (-2147483648..2147483647)"},
  {"u32", 1 << 32, "value 4294967296 out of range for u32 (0..4294967295)"},
  {"u32", -1, "value -1 out of range for u32 (0..4294967295)"},
  {"i64", 2.0 ^ 63, "out of range for i64 (-9223372036854775808..9223372036854775807)"},
  {"i64", -2.0 ^ 64, "out of range for i64"},
  {"i32", 1.5, "value 1.5 is not an integer (i32 holds integers)"},
  {"u8", 1 / 0, "value inf is not an integer (u8 holds integers)"},
  {"i64", 0 / 0, "is not an integer (i64 holds integers)"},
}
for _, c in ipairs(cases) do
  local dt, val, msg = c[1], c[2], c[3]
  local u = tensor.new(4, dt):fill(r)
  local e = H.raises(function() u:fill(val) end, msg, "fill " .. dt .. " " .. val)
  H.truthy(e:find("bad argument #1 to 'fill' (value ", 1, true), "fill names its argument: " .. e)
  e = H.raises(function() u[1] = val end, msg, "write " .. dt .. " " .. val)
  H.truthy(e:find("bad value for tensor element 1 (value ", 1, true), "write names the element: " .. e)
  H.values(u, {r, r, r, r}, nil, "unchanged after refused " .. dt .. " " .. val)
end
-- float dtypes take any number; overflow is IEEE (inf), not an error
H.eq(tensor.new(1, "f16"):fill(1e9)[0], math.huge, "f16 overflow is inf")

-- non-numbers ---------------------------------------------------------------------
H.raises(function() t:fill("3") end, "bad argument #1 to 'fill' (number expected, got string)", "fill string")
H.raises(function() t:fill() end, "bad argument #1 to 'fill' (number expected, got no value)", "fill nothing")
H.raises(function() t:fill({}) end, "bad argument #1 to 'fill' (number expected, got table)", "fill table")
H.raises(function() t[0] = "1" end, "bad value for tensor element 0 (number expected, got string)", "write string")
H.raises(function() t[0] = nil end, "bad value for tensor element 0 (number expected, got nil)", "write nil")
H.raises(function() t.n = 3 end, "cannot set field 'n' of a tensor", "set field")
H.raises(function() t.fill = 3 end, "cannot set field 'fill' of a tensor", "set method")

-- arange --------------------------------------------------------------------------
H.raises(function() tensor.new(300, "u8"):arange() end,
  "bad argument #2 to 'arange' (element 299: value 299 out of range for u8 (0..255))", "arange past u8 max")
H.raises(function() tensor.new(3, "u8"):arange(-1) end,
  "bad argument #1 to 'arange' (value -1 out of range for u8 (0..255))", "arange start below u8")
H.raises(function() tensor.new(3, "i8"):arange(0, -100) end,
  "bad argument #2 to 'arange' (element 2: value -200 out of range for i8 (-128..127))", "arange down past i8")
H.raises(function() tensor.new(3, "i64"):arange(math.maxinteger) end,
  "bad argument #2 to 'arange' (element 2 overflows 64 bits)", "arange i64 overflow")
H.raises(function() tensor.new(3, "i32"):arange(0.5) end,
  "bad argument #1 to 'arange' (value 0.5 is not an integer (i32 holds integers))", "arange fractional start")
H.raises(function() tensor.new(3, "i32"):arange(0, 0.5) end,
  "bad argument #2 to 'arange' (value 0.5 is not an integer (i32 holds integers))", "arange fractional step")
H.raises(function() t:arange("a") end, "bad argument #1 to 'arange' (number expected, got string)", "arange string")
H.values(tensor.new(0, "u8"):arange(255, 1000), {}, nil, "empty arange checks only the start")
H.values(tensor.new(3, "u8"):arange(255.0, -100.0), {255, 155, 55}, nil, "integral float steps may be negative")
H.raises(function() tensor.new(2, "u8"):arange(0, 2.0 ^ 63) end,
  "bad argument #2 to 'arange' (value 9.2233720368548e+18 out of range for u8 (0..255))", "step beyond int64")

-- rand ------------------------------------------------------------------------------
H.raises(function() t:rand(1.5) end, "bad argument #1 to 'rand' (number has no integer representation)", "rand seed")
H.raises(function() t:rand("x") end, "bad argument #1 to 'rand' (number expected, got string)", "rand seed type")

-- view ------------------------------------------------------------------------------
H.raises(function() t:view(6, 4) end, "bad argument #2 to 'view' (offset 6 + n 4 = 10 exceeds length 8)", "view past end")
H.raises(function() t:view(-1, 2) end, "bad argument #1 to 'view' (offset must be 0..8, got -1)", "view negative offset")
H.raises(function() t:view(9) end, "bad argument #1 to 'view' (offset must be 0..8, got 9)", "view offset past end")
H.raises(function() t:view(0, -1) end, "bad argument #2 to 'view' (n must be >= 0, got -1)", "view negative n")
H.raises(function() t:view(1, math.maxinteger) end,
  "bad argument #2 to 'view' (offset 1 + n 9223372036854775807 exceeds length 8)", "view n overflow")
H.raises(function() v:view(1, 2) end, "bad argument #2 to 'view' (offset 1 + n 2 = 3 exceeds length 2)",
  "view of view is bounded by the view")
H.raises(function() t:view() end, "bad argument #1 to 'view' (number expected, got no value)", "view no offset")

-- copy and comparisons --------------------------------------------------------------
H.raises(function() t:copy(tensor.new(8, "i32")) end, "copy: dtype mismatch: destination f32, source i32", "copy dtype")
H.raises(function() t:copy(tensor.new(4)) end, "copy: length mismatch: destination 8, source 4", "copy length")
H.raises(function() t:copy(nil) end, "bad argument #1 to 'copy' (tensor expected, got nil)", "copy nil")
H.raises(function() t:copy({}) end, "bad argument #1 to 'copy' (tensor expected, got table)", "copy table")
H.raises(function() t.copy({}, t) end, "bad argument #1 to 'copy' (tensor expected, got table)", "copy bad self")
H.raises(function() t:equal(tensor.new(4)) end, "equal: length mismatch: 8 vs 4", "equal length")
H.raises(function() t:allclose(tensor.new(9)) end, "allclose: length mismatch: 8 vs 9", "allclose length")
H.raises(function() t:maxdiff(tensor.new(0)) end, "maxdiff: length mismatch: 8 vs 0", "maxdiff length")
H.raises(function() t:allclose(t, -1) end, "bad argument #2 to 'allclose' (rtol must be >= 0, got -1", "rtol")
H.raises(function() t:allclose(t, 0, -1) end, "bad argument #3 to 'allclose' (atol must be >= 0, got -1", "atol")
H.raises(function() t:equal(5) end, "bad argument #1 to 'equal' (tensor expected, got number)", "equal number")

-- nothing above touched t
H.eq(t:checksum(), before, "refused operations left the tensor unchanged")
H.values(t, {r, r + 1, r + 2, r + 3, r + 4, r + 5, r + 6, r + 7}, nil, "values unchanged")
