-- Checkpoints and exercise checks for the lessons in lua/tutorial/.
--
--   lesson = require "gcsh.lesson"
--   lesson.check(ok, what)              a checkpoint: "checkpoint: what" when
--                                       ok, else an error on that rank
--   lesson.expect(t, want, what)        every element of tensor t equals want
--                                       (a number, a 0-based function i -> v,
--                                       or a tensor); floats within 1e-3
--   lesson.grade(t, want, what)         the same for an exercise: "right:
--                                       what", or an error "not yet: what:
--                                       [3] is 5, want 6; ..." naming the
--                                       wrong elements (at most 6 of them)
--
-- Each rank checks its own data; identical lines fold into one, so a
-- passing checkpoint prints "[0-3] checkpoint: ..." once.
local M = {}

local SHOWN = 6
local FLOAT = { f64 = true, f32 = true, f16 = true, bf16 = true }

local function want_at(want, i)
  local kind = type(want)
  if kind == "number" then return want end
  if kind == "function" then return want(i) end
  return want[i] -- a tensor
end

local function same(a, b, float)
  if float then return math.abs(a - b) <= 1e-3 * math.max(1, math.abs(b)) end
  return a == b
end

local function format_value(v)
  if math.type(v) == "float" then return string.format("%.7g", v) end
  return tostring(v)
end

-- The wrong elements of t as "[3] is 5, want 6", and how many there are.
local function wrong_elements(t, want)
  local float, got = FLOAT[t.dtype], t:totable()
  local parts, count = {}, 0
  for i = 0, #t - 1 do
    local w = want_at(want, i)
    if not same(got[i + 1], w, float) then
      count = count + 1
      if #parts < SHOWN then
        parts[#parts + 1] = string.format("[%d] is %s, want %s", i, format_value(got[i + 1]), format_value(w))
      end
    end
  end
  if count > SHOWN then parts[#parts + 1] = string.format("... (%d wrong of %d)", count, #t) end
  return table.concat(parts, "; "), count
end

function M.check(ok, what)
  if not ok then error("checkpoint FAILED on rank " .. rank .. ": " .. what, 2) end
  print("checkpoint: " .. what)
end

function M.expect(t, want, what)
  local wrong, count = wrong_elements(t, want)
  if count > 0 then error("checkpoint FAILED on rank " .. rank .. ": " .. what .. ": " .. wrong, 2) end
  print("checkpoint: " .. what)
end

function M.grade(t, want, what)
  if type(t) ~= "userdata" or not t.dtype then
    error("not yet: " .. what .. ": your function should give a tensor, it gave " .. type(t), 2)
  end
  local wrong, count = wrong_elements(t, want)
  if count > 0 then error("not yet: " .. what .. " (rank " .. rank .. "): " .. wrong, 2) end
  print("right: " .. what)
end

return M
