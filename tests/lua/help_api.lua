-- lua/gcsh/help.lua against the bindings: every method of every gcsh type
-- (the metatables' __methods) and every function of the modules has a row,
-- every row names something that exists, and help(x) finds a value's topic.
-- Also the prompt's auto-print of tables (gcsh.pretty).
local H = require "harness"
local help = require "gcsh.help"
local pretty = require "gcsh.pretty"
local bench = require "gcsh.bench"
local lesson = require "gcsh.lesson"

-- The names a topic's rows mention: "t:fill(v)" -> methods.fill,
-- "kernel.reduce(...)" -> fields.reduce (for the topic kernel).
local function mentioned(topic)
  local methods, fields = {}, {}
  for _, row in ipairs(help.API[topic].rows) do
    for name in row[1]:gmatch("%a+:([%w_]+)[%({]") do methods[name] = true end
    for name in row[1]:gmatch("%f[%w_]" .. topic .. "%.([%w_]+)") do fields[name] = true end
  end
  return methods, fields
end

-- every type: metatable name = topic
local reg = debug.getregistry()
local types = 0
for name, mt in pairs(reg) do
  if type(name) == "string" and type(mt) == "table" and mt.__methods and mt.__name == name then
    types = types + 1
    H.truthy(help.API[name], "a help topic for the type " .. name)
    local methods = mentioned(name)
    for m in pairs(mt.__methods) do
      H.truthy(methods[m], string.format("help row for %s method %s", name, m))
    end
    for m in pairs(methods) do
      H.truthy(mt.__methods[m], string.format("help row %s:%s names a method that exists", name, m))
    end
  end
end
H.truthy(types >= 7, "the types were found (" .. types .. ")")

-- every module: its functions
local modules = { tensor = tensor, comm = comm, kernel = kernel, gcsh = gcsh, bench = bench,
                  repro = repro, step = step, lesson = lesson }
for topic, mod in pairs(modules) do
  local _, functions = mentioned(topic)
  for k, v in pairs(mod) do
    if type(v) == "function" then
      H.truthy(functions[k], string.format("help row for %s.%s", topic, k))
    end
  end
  for f in pairs(functions) do
    H.truthy(mod[f] ~= nil, string.format("help row %s.%s names something that exists", topic, f))
  end
end

-- a stepper's methods (Lua ones: its metatable's functions)
do
  local c = comm.world()
  local w = c:window(4 * c.size)
  local st = step.allreduce(w)
  local methods = mentioned("step")
  for name, v in pairs(getmetatable(st)) do
    if type(v) == "function" and name:sub(1, 2) ~= "__" then
      H.truthy(methods[name], "help row for the stepper's method " .. name)
    end
  end
  for m in pairs(methods) do H.truthy(st[m], "help row st:" .. m .. " names a method that exists") end
  H.truthy(help.text(st):find("^step: "), "help(a stepper)")
  st:free()
  w:free()
end

-- help(x) finds the topic of a value; text names its rows
H.truthy(help.text(tensor.new(1)):find("^tensor: "), "help(a tensor)")
H.truthy(help.text(comm):find("^comm: "), "help(comm)")
H.truthy(help.text(kernel):find("kernel.allreduce(w", 1, true), "help(kernel)")
H.truthy(help.text("gcsh"):find("gcsh.progress(done, total", 1, true), "help('gcsh')")
H.truthy(help.text():find("topic: bench comm devcomm gcsh graph kernel", 1, true), "help() lists the topics")
H.truthy(help.text(repro):find("^repro: "), "help(repro)")
H.raises(function() help.text("nope") end,
         "help: no topic or function named 'nope' (topics: bench comm", ".help of an unknown name")
H.truthy(help.text("string.format"):find("string.format(formatstring, ...)", 1, true), ".help a function")
for _, set in ipairs { help.API, help.STD } do
  for topic in pairs(set) do
    for line in help.text(topic, help.RANK_WIDTH):gmatch("[^\n]+") do
      H.truthy(#line <= help.RANK_WIDTH, "help " .. topic .. " fits: " .. line)
    end
  end
end

-- ---- help(x) answers for every value, never with an error
-- Every global, and every function of every library and module: a function
-- by its name and signature (its row names it), a table by its topic or
-- what is in it.
local checked = 0
-- keys: the names v has in its table (one function can have two: math.atan
-- is math.atan2 where Lua 5.2's names are kept); help names one of them
local function answers(name, v, keys)
  local ok, text = pcall(help.describe, v, help.RANK_WIDTH)
  H.truthy(ok and type(text) == "string", "help(" .. name .. "): " .. tostring(text))
  if ok and type(v) == "function" then
    local named = false
    for _, key in ipairs(keys) do
      named = named or text:find(key .. "(", 1, true) or text:find(key .. ":", 1, true)
    end
    H.truthy(named, "help(" .. name .. ") names it: " .. text)
  end
  checked = checked + 1
end
local function names_in(t, v)
  local keys = {}
  for k, x in pairs(t) do if x == v and type(k) == "string" then keys[#keys + 1] = k end end
  return keys
end
for gname, g in pairs(_G) do
  answers(gname, g, { gname })
  if type(g) == "table" and g ~= _G and g ~= package.loaded then
    for k, v in pairs(g) do
      if type(k) == "string" then answers(gname .. "." .. k, v, names_in(g, v)) end
    end
  end
end
H.truthy(checked > 150, "every global and library function was asked (" .. checked .. ")")
-- Lua's standard library: every function has a row, every row a function
for lib, t in pairs(help.STD) do
  local mod = lib == "_G" and _G or lib == "file" and getmetatable(io.stdout).__index or _G[lib]
  local prefix = (lib == "_G" and "") or (lib == "file" and "f:") or (lib .. ".")
  for _, row in ipairs(t.rows) do
    local outside = row[1]:gsub("%b()", " "):gsub("%b[]", " ")
    for name in outside:gmatch("[%w_.:]+") do
      H.truthy(mod[name:sub(#prefix + 1)] ~= nil, "the row " .. row[1] .. " names something that exists")
    end
  end
  for k, v in pairs(mod) do
    if type(v) == "function" then
      local text, named = help.describe(v), false
      for _, key in ipairs(names_in(mod, v)) do
        named = named or text:find("^" .. (prefix .. key):gsub("%.", "%%.") .. ":")
      end
      H.truthy(named, "help(" .. prefix .. k .. ") has its row: " .. text)
    end
  end
end
-- values by their type
H.eq(help.describe(42), "42: a number, an integer", "help(42)")
H.eq(help.describe(2.5), "2.5: a number, a float", "help(2.5)")
H.eq(help.describe(true), "true: a boolean", "help(true)")
H.eq(help.describe(nil), "nil: no value (help() lists the topics)", "help(nil)")
H.eq(help.describe({ 1, 2, x = 3 }), "a table: 2 items in its array part; keys x", "help(a table)")
H.truthy(help.describe("nope"):find('^"nope": a string of 4 bytes, not the name of a help topic or function'), "help('nope')")
H.truthy(help.describe(print):find("^print: Lua's basic functions"), "help(print)")
H.truthy(help.describe(gcsh.sleep):find("gcsh.sleep(s)", 1, true), "help(gcsh.sleep)")
H.truthy(help.describe(tensor.new(1).fill):find("^t:fill: "), "help(a method)")
H.truthy(help.describe(io.stdout.write):find("^f:write: "), "help(a file's method)")
local function my_function(a, b, ...) return a, b end
H.truthy(help.describe(my_function):find("^function%(a, b, ...%): a Lua function defined at "), "help(a Lua function)")
H.truthy(help.describe(coroutine.create(print)):find("^a coroutine, suspended"), "help(a coroutine)")

-- ---- gcsh.pretty: tables as the prompt prints them
H.eq(pretty.format({ 1, 2, 3 }), "{1, 2, 3}", "an array")
H.eq(pretty.format({ b = 1, a = "x", [2] = true, [1] = 0.5 }), '{0.5, true, a = "x", b = 1}', "keys sorted, array first")
H.eq(pretty.format({ a = { b = { c = { d = { e = 1 } } } } }), "{a = {b = {c = {d = {...}}}}}", "depth-limited")
H.eq(pretty.format({ a = { b = { c = 1 } } }, { depth = 2 }), "{a = {b = {...}}}", "depth option")
H.eq(pretty.format({}), "{}", "empty")
H.eq(pretty.format({ ["a b"] = 1, x = 2.0 }), '{["a b"] = 1, x = 2.0}', "keys that are not names; floats")
local cyc = {}
cyc.self = cyc
H.eq(pretty.format(cyc), "{self = {...} (a cycle)}", "a cycle")
local long = {}
for i = 1, 100 do long[i] = i end
local text = pretty.format(long)
H.truthy(text:find("... (60 more)", 1, true), "width-limited: entries beyond 40 are counted")
for line in text:gmatch("[^\n]+") do H.truthy(#line <= 72, "an array fills lines of 72: " .. line) end
local nested = pretty.format({ crossovers = kernel.crossovers, name = string.rep("x", 70) })
H.truthy(nested:find('^{\n  crossovers = {\n    {'), "nested tables indent by two: " .. nested)
H.truthy(nested:find('\n  name = "' .. string.rep("x", 70) .. '",\n}$'), "one entry per line when long")
H.truthy(pretty.format({ t = tensor.new(2):fill(1) }):find("t = tensor(f32, 2,", 1, true), "a tensor prints as tostring")
