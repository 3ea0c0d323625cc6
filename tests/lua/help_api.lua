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
H.truthy(help.text():find("topic: bench comm gcsh kernel", 1, true), "help() lists the topics")
H.truthy(help.text(repro):find("^repro: "), "help(repro)")
H.raises(function() help.text("nope") end, "help: no topic for 'nope' (topics: bench comm", "unknown topic")
H.raises(function() help.text(42) end, "help: no topic for number", "a value without a topic")
for topic in pairs(help.API) do
  for line in help.text(topic, help.RANK_WIDTH):gmatch("[^\n]+") do
    H.truthy(#line <= help.RANK_WIDTH, "help " .. topic .. " fits: " .. line)
  end
end

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
