-- gcsh.record: runs a recording (gcsh --record FILE, .record FILE) as a plain
-- script: gcsh -n N FILE.  Each line(N, ranks, source, expected) runs source
-- on the ranks it ran on, as the prompt ran it: tried as an expression first
-- (its values printed), an error printed with its traceback without ending
-- the script.  line.dot(N, ranks, ".check off") does what it can in a
-- script (.check: gcsh.check on every rank; the others only change the
-- prompt's state); line.chunk(N, ranks, name, source, expected) reruns a
-- script or -e with its arguments; line.finish(N) closes the file.  The
-- expectations are for gcsh --replay, which compares; this only reruns,
-- keeping the verdict as the session had it: a script or -e that fails
-- ends the job with its error's own status (1; 125 when a file it loads
-- does not compile; 128 for a usage error), as on the command line; a
-- typed line that fails fails the rank at line.finish (1, or 125 when a
-- file a line loaded did not compile), as a piped session's status says
-- a line failed; os.exit (repro.skip) ends the job with its status.
local M = {}

local failed_line -- the first typed line that failed on this rank, or nil

local function in_ranks(list, r)
  for part in list:gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    a = tonumber(a or part)
    b = tonumber(b or part)
    if a and b and r >= a and r <= b then return true end
  end
  return false
end

-- As the prompt: "=expr" is an expression; otherwise try "return " .. src.
local function compile(src)
  if src:sub(1, 1) == "=" then return load("return " .. src:sub(2), "=stdin") end
  local f = load("return " .. src, "=stdin")
  if f then return f end
  return load(src, "=stdin")
end

-- The traceback up to the line's own chunk (the frames of this runner are
-- not the session's).
local function handler(err)
  if type(err) ~= "string" then err = "(error object is a " .. type(err) .. " value)" end
  local tb = debug.traceback(err, 2)
  local cut = tb:find("\n\t[C]: in function 'xpcall'", 1, true)
  return cut and tb:sub(1, cut - 1) or tb
end

local function run_line(n, src, expected)
  if expected and expected.syntax then
    if rank == 0 then -- the prompt said it once, and the line failed
      print(expected.syntax)
      failed_line = failed_line or n
    end
    return
  end
  local f, err = compile(src)
  if not f then
    if rank == 0 then
      print(err)
      failed_line = failed_line or n
    end
    return
  end
  local res = table.pack(xpcall(f, handler))
  if not res[1] then
    failed_line = failed_line or n
    print(res[2])
  elseif res.n > 1 then
    print(table.unpack(res, 2, res.n))
  end
end

local function dot(_, ranks, text)
  if not in_ranks(ranks, rank) then return end
  local cmd, arg = text:match("^%.(%S+)%s*(.-)%s*$")
  if cmd == "check" and (arg == "on" or arg == "off") then gcsh.check(arg == "on") end
end

-- line.chunk(N, ranks, name, source, expected): a script or -e of the
-- recorded session, with its arguments (in ... and in arg, arg[0] the
-- script's name), as the command line ran it: an error is not caught, so
-- the job's status is the one the command line gave (rank/verdict.h).
local function chunk(_, ranks, name, src, expected)
  if not in_ranks(ranks, rank) then return end
  if expected and expected.syntax then
    if rank == 0 then print(expected.syntax) end
    os.exit(125) -- a script that does not compile cannot be tested
  end
  local f, err = load(src, name)
  if not f then
    if rank == 0 then print(err) end
    os.exit(125)
  end
  local args = expected and expected.args or {}
  arg = { [0] = name:match("^[@=]?(.*)$") }
  for i, a in ipairs(args) do arg[i] = a end
  f(table.unpack(args))
end

-- line.finish(N): a typed line that failed here fails the rank now.
local function finish()
  if failed_line then
    error(string.format("recorded line %d failed on rank %d", failed_line, rank), 0)
  end
end

-- math.random on every rank as the recording had it: seeded with (seed,
-- rank), and math.randomseed() without a seed gives (seed + k, rank) for
-- its k-th call, so a replay draws the same numbers.  With rand (a
-- recording made with --seed), t:rand() too, as gcsh.seed does.  (gcsh
-- --record and --replay send this to every rank; a plain rerun calls it
-- from script.)
local plain_randomseed = math.randomseed
function M.seed(seed, rand)
  local k = 0
  if rand then gcsh.seed(seed) end
  plain_randomseed(seed, rank)
  math.randomseed = function(...)
    if select("#", ...) > 0 then return plain_randomseed(...) end
    k = k + 1
    return plain_randomseed(seed + k, rank)
  end
end

-- local line = require("gcsh.record").script{ranks = N, backend = "host"}
function M.script(header)
  if size ~= header.ranks then
    if rank == 0 then
      print(string.format("this recording was made at %d ranks: run it with gcsh -n %d, or "
                          .. "gcsh --replay to compare", header.ranks, header.ranks))
    end
    os.exit(125)
  end
  if rank == 0 and header.backend ~= gcsh.backend then
    print(string.format("note: recorded on the %s backend, running on %s: output will differ "
                        .. "where it names the device", header.backend, gcsh.backend))
  end
  if header.seed then M.seed(header.seed, header.rand) end
  return setmetatable({ dot = dot, chunk = chunk, finish = finish }, {
    __call = function(_, n, ranks, src, expected)
      if in_ranks(ranks, rank) then run_line(n, src, expected) end
    end,
  })
end

return M
