-- Lesson 21 (the node boundary) walked through the shell at N ranks, PER
-- ranks a node (GCSH_RANKS_PER_NODE=PER; PER = N is one node), and what its
-- text claims about the output checked against the output, node by node
-- (lua5.4 tests/sh/lesson_nodes.lua GCSH N PER; tests/sh/lesson_nodes.sh
-- runs it).  tests/sh/lesson_claims.lua walks it on one node with every
-- other lesson; this one adds the nodes.
-- Prints "pass NAME" or "fail NAME" and detail lines "  | ...".
local GCSH, N, PER = arg[1], tonumber(arg[2]), tonumber(arg[3])
local NODES = N // PER
local NUM = 21
local WINDOW_BYTES = 32 -- the lesson's window: 8 i32

local function result(ok, name, detail)
  print((ok and "pass " or "fail ") .. name)
  if not ok and detail then
    for line in (tostring(detail) .. "\n"):gmatch("(.-)\n") do print("  | " .. line) end
  end
end

-- "0-2,5": a list of ranks as the shell folds them ("0-1" for two)
local function ranges(list)
  table.sort(list)
  local parts, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    parts[#parts + 1] = j == i and tostring(list[i]) or (list[i] .. "-" .. list[j])
    i = j + 1
  end
  return table.concat(parts, ",")
end

local function ranks_where(pred)
  local list = {}
  for r = 0, N - 1 do if pred(r) then list[#list + 1] = r end end
  return list
end
local ALL = ranges(ranks_where(function() return true end))
local function node_of(r) return r // PER end
local function node_ranks(j) return ranks_where(function(r) return node_of(r) == j end) end

-- ---- the session ------------------------------------------------------------------

local WRONG = NODES > 1 and "check_member(function(r) return r end)"
              or "check_member(function(r) return 0 end)"
local function wrong_member(r) return NODES > 1 and r or 0 end

local input = { ".lesson " .. NUM }
for i = 1, 5 do input[#input + 1] = ".next" end
input[#input + 1] = 'print("=== wrong")'
input[#input + 1] = WRONG
input[#input + 1] = 'print("=== after")'
input[#input + 1] = ".next"
local inf, outf = os.tmpname(), os.tmpname()
local f = assert(io.open(inf, "w"))
f:write(table.concat(input, "\n") .. "\n")
f:close()
os.execute(string.format("GCSH_RANKS_PER_NODE=%d timeout 300 %q -n %d <%q >%q 2>&1", PER, GCSH, N, inf, outf))
local text = assert(io.open(outf)):read("a")
os.remove(inf)
os.remove(outf)

local function has(t, plain) return t:find(plain, 1, true) ~= nil end
-- wrapped lines joined: a continuation (indented 2 or more after its
-- prefix) joins the line above with a space
local function flat(t) return (t:gsub("\n%[[%d,%-]+%]   +", " ")) end
local function shows(t, ranks, line) return has(flat(t), "\n[" .. ranks .. "] " .. line .. "\n") end

-- part i: its header line to the next header; 0: the introduction
local function part(i)
  local head = i == 0 and "Lesson " .. NUM .. ": " or "\n[" .. NUM .. "." .. i .. "] "
  local s = text:find(head, 1, true)
  if not s then return "" end
  local rest = text:sub(s)
  local stop = rest:find("\n%[" .. NUM .. "%.%d+%] ", 2)
  return "\n" .. (stop and rest:sub(1, stop) or rest)
end
local function between(a, b)
  local s, e = text:find("] === " .. a .. "\n", 1, true)
  if not s then return "" end
  local stop = text:find("%[[%d,%-]+%] === " .. b, e)
  return text:sub(e, stop and stop - 1 or -1)
end

local name = string.format("lesson %d at %d ranks, %d a node", NUM, N, PER)
local function claim(what, ok, detail) result(ok, name .. ": " .. what, detail or text:sub(-1500)) end

-- ---- what every part claims --------------------------------------------------------

claim("opens and every part runs", has(text, "Lesson 21: ") and has(text, "[21.6] solution")
      and not has(text, "stack traceback") and not has(text, "stopped at that error")
      and not text:find("%] checkpoint FAILED"), text)
-- (the shell's own notes on a slow machine, "gcsh: 10.0 s: ... still
-- running", name pids and paths: not the lesson's lines)
local wide
for line in text:gmatch("[^\n]+") do if #line > 80 and not line:find("^gcsh: ") then wide = line end end
claim("every line fits 80 columns", not wide, wide)
local split
for line in text:gmatch("[^\n]+") do
  local ranks = line:match("^%[([%d,%-]+)%] checkpoint: ") or line:match("^%[([%d,%-]+)%] right: ")
  if ranks and ranks ~= ALL then split = line end
end
claim("every checkpoint folds into one line over every rank", not split, split)

local ok = true
for j = 0, NODES - 1 do
  local ranks = node_ranks(j)
  local listed = {}
  for i, r in ipairs(ranks) do listed[i] = tostring(r) end
  ok = ok and shows(part(0), NODES == 1 and ALL or ranges(ranks), string.format(
         "%d ranks, %d %s: I am on node %d, with ranks %s", N, NODES, NODES == 1 and "node" or "nodes",
         j, table.concat(listed, ",")))
end
claim("the introduction: each node's ranks, under their own prefix", ok, part(0))

ok = true
for j = 0, NODES - 1 do
  local others = {}
  for _, r in ipairs(ranks_where(function(r) return node_of(r) ~= j end)) do others[#others + 1] = tostring(r) end
  ok = ok and shows(part(1), NODES == 1 and ALL or ranges(node_ranks(j)),
                    "only by network: " .. (#others > 0 and table.concat(others, ",") or "none"))
end
for r = 0, N - 1 do
  local far = (r + PER) % N
  if NODES > 1 then
    ok = ok and shows(part(1), tostring(r), string.format(
           "w:peer(%d) refused: rank %d is on node %d; loads and stores reach only node %d's ranks %s:",
           far, far, node_of(far), node_of(r), ranges(node_ranks(node_of(r)))):gsub(":$", "")
           .. ": use w:put/w:get (s:set/s:add for signals), which reach it over the network (tcp)")
  end
end
ok = ok and shows(part(1), ALL, "checkpoint: w:peer reaches my node's ranks and no other")
claim("part 1: the network's ranks, and w:peer refused across nodes naming both", ok, part(1))

ok = shows(part(2), ALL, "checkpoint: team algorithms run only where the team is everyone")
if NODES == 1 then
  ok = ok and shows(part(2), ALL, "twoshot ran: the team is the whole communicator")
else
  for j = 0, NODES - 1 do
    ok = ok and has(flat(part(2)), string.format("\n[%s] allreduce: algo 'twoshot' runs over the window's "
                    .. "team, ranks %s (node %d) of the communicator's 0-%d, so it would reduce this node only",
                    ranges(node_ranks(j)), ranges(node_ranks(j)), j, N - 1))
  end
end
claim("part 2: two-shot refused across nodes, naming each node's team; run on one", ok, part(2))

local chunk_bytes = WINDOW_BYTES // PER
ok = shows(part(3), ALL, "reduce-scatter: inside each node each node: member t reduces chunk t by "
           .. "loads and stores")
     and shows(part(3), ALL, "all-reduce: " .. (NODES > 1
           and "crosses the network member t of every node: the communicator's all-reduce"
           or "inside each node one node: nothing crosses the network"))
     and shows(part(3), ALL, "all-gather: inside each node each node: member t stores chunk t by "
           .. "loads and stores")
     and shows(part(3), ALL, string.format("network moves: %d; of my %d B, %d B cross",
                                           NODES > 1 and N or 0, WINDOW_BYTES, NODES > 1 and chunk_bytes or 0))
     and shows(part(3), ALL, "checkpoint: each rank's chunk crosses once, only between nodes")
claim("part 3: the phases, the moves that cross and the bytes", ok, part(3))

local p4 = flat(part(4))
local stepper = p4:match("(step 1 of 3.*)$") or "" -- the stepper's lines, after the prose
ok = has(p4, ": step 2 of 3 (all-reduce across nodes)")
     and shows(part(4), ALL, "checkpoint: hier's result equals c:allreduce's on every rank")
if NODES > 1 then
  for r = 0, N - 1 do
    local t = r % PER
    local partners = ranks_where(function(q) return q % PER == t end)
    local src
    if NODES == 2 then src = string.format("r%d.c%d, r%d.c%d", partners[1], t, partners[2], t)
    else src = "r{" .. ranges(partners) .. "}.c" .. t end
    ok = ok and has(p4, string.format("r%d: sum(%s) -> r%d.c%d (net)", r, src, r, t))
  end
  -- after step 2, member 0 of node 0 holds every rank's data in chunk 0
  local step2 = part(4):match("step 2 of 3.-(\n.-)step 3 of 3") or ""
  ok = ok and has(step2, "\n[0]   r0  0-" .. (N - 1) .. "*  0\n")
  ok = ok and not has(stepper:match("^(.-)step 2 of 3") or "", "(net)")
else
  ok = ok and has(p4, "one node: no other node holds chunk t; nothing crosses the network")
       and not has(stepper, "(net)")
end
claim("part 4: the stepper's step across nodes, (net) on exactly its moves", ok, part(4))

-- a wrong answer: each rank's own line, folded where identical; the right
-- ranks name where the wrong ones are
local fb = flat(between("wrong", "after"))
local bad = ranks_where(function(r) return wrong_member(r) ~= r % PER end)
ok = #bad > 0 and not has(fb, "traceback")
for r = 0, N - 1 do
  if wrong_member(r) ~= r % PER then
    ok = ok and has(fb, string.format("[%d] not yet: member(%d) is %d (a number), want %d (a number)\n",
                                      r, r, wrong_member(r), r % PER))
  else
    ok = ok and has(fb, string.format("[%d] not yet: member(%d) is right here, wrong on rank%s %s\n",
                                      r, r, #bad > 1 and "s" or "", ranges(bad)))
  end
end
for line in fb:gmatch("[^\n]+") do ok = ok and line:match("^%[[%d,%-]+%] not yet: ") ~= nil end
claim("a wrong answer: each rank's own line, the right ranks name the wrong ones", ok, fb)

claim("the solution is right", shows(part(6), ALL, "right: member(r) is rank r's place in its node"), part(6))
