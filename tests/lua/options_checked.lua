-- Every options table of the Lua surface is checked by one helper (bind/opts.c,
-- gcsh.check_options): an unknown key is an error naming it and the valid
-- keys, never silently dropped; and the signal option of w:put takes the
-- value positionally or as value=.
local H = require "harness"
local bench = require "gcsh.bench"
local repro = require "gcsh.repro"
local pretty = require "gcsh.pretty"
local winstage = require "gcsh.winstage"

local c = comm.world()
local T = H.team(c)
local nxt = T.next

-- the helper itself, as Lua modules use it
gcsh.check_options(nil, "f", "a b")
gcsh.check_options({ a = 1, b = 2 }, "f", "a b")
H.raises(function() gcsh.check_options({ a = 1, zz = 2, c = 3 }, "f", "a b") end,
         "f: unknown option 'c' (valid: a b)", "the first unknown key in sorted order")
H.raises(function() gcsh.check_options({ 1 }, "f", "a b") end, "f: unknown option '1' (valid: a b)",
         "a positional entry is not an option")
H.raises(function() gcsh.check_options(5, "f", "a b") end,
         "f: options must be a table (valid keys: a b), got number", "not a table")
local function caller() gcsh.check_options({ x = 1 }, "g", "y") end
local err = H.raises(function() caller() end, "g: unknown option 'x' (valid: y)")
H.truthy(err:find("options_checked.lua:%d+: g:"), "level 2 points at caller's caller: " .. err)

-- each call of the surface that takes options: {call, the error's text}
local w = c:window(64, "f32")
local s = c:signals(4)
local src = tensor.new(4, "f32"):fill(1)
local out = tensor.new(64, "f32")
local cases = {
  { function() c:window(4, "f32", { kinds = "host" }) end, "unknown option 'kinds' (valid: kind)" },
  { function() c:signals(4, { kinds = "host" }) end, "unknown option 'kinds' (valid: kind)" },
  { function() winstage.new(c, 4, "f32", { kinds = "host" }) end, "unknown option 'kinds' (valid: kind)" },
  { function() w:put(nxt, src, 0, { engines = "ce" }) end, "unknown option 'engines' (valid: engine signal)" },
  { function() w:get(nxt, src, 0, { engines = "ce" }) end, "unknown option 'engines' (valid: engine)" },
  { function() w:putv(nxt, { { src, 0 } }, { engines = "ce" }) end, "unknown option 'engines' (valid: engine signal)" },
  { function() w:putv(nxt, { { src, 0, offset = 4 } }) end,
    "descriptor 1: unknown key 'offset' (valid: {src, dst_offset [, peer=] [, window=]})" },
  { function() w:put(nxt, src, 0):wait { cpus = true } end, "unknown option 'cpus' (valid: cpu timeout)" },
  { function() s:wait { slot = 0, value = 0, cmps = ">=" } end,
    "wait: unknown option 'cmps' (valid: slot value cmp cpu timeout)" },
  { function() kernel.allreduce(w, { algos = "ring" }) end, "allreduce: unknown option 'algos'" },
  { function() kernel.reduce_scatter(w, { algos = "ring" }) end, "reduce_scatter: unknown option 'algos'" },
  { function() kernel.allgather(w, { ops = "sum" }) end, "allgather: unknown option 'ops'" },
  { function() kernel.reduce_to(0, w, { root = 0 }) end, "reduce_to: unknown option 'root'" },
  { function() kernel.broadcast(0, w, { ops = "sum" }) end, "broadcast: unknown option 'ops'" },
  { function() kernel.reduce_peers(out, w, { outs = out }) end, "reduce_peers: unknown option 'outs' (valid: op offset n)" },
  { function() kernel.plan(w, { colls = "allreduce" }) end, "plan: unknown option 'colls' (valid: coll algo n offset root out)" },
  { function() kernel.persistent(w, { sm = 1 }) end, "persistent: unknown option 'sm' (valid: algo max_bytes sms)" },
  { function() w:multicast():ld_reduce(out, { ops = "sum" }) end, "ld_reduce: unknown option 'ops'" },
  { function() step.allreduce(w, { ops = "sum" }) end, "step.allreduce: unknown option 'ops' (valid: algo op n offset skip delay)" },
  { function() step.allreduce(w, { delay = { rank = 0, ms = 1, steps = 1 } }) end,
    "step.allreduce: delay: unknown option 'steps' (valid: rank ms step)" },
  { function() step.allreduce(w):run { quit = true } end, "run: unknown option 'quit' (valid: quiet)" },
  { function() step.allreduce(w):next(1, { quit = true }) end, "next: unknown option 'quit' (valid: quiet)" },
  { function() step.window(c, 4, "f32", { kinds = "host" }) end, "unknown option 'kinds' (valid: kind)" },
  { function() bench.collective { sizes = 4 } end, "bench.collective: unknown option 'sizes'" },
  { function() bench.allreduce { algo = "ring" } end, "bench.allreduce: unknown option 'algo'" },
  { function() bench.allreduce_targets({ { algo = "oneshot", size = 8 } }, { quite = true }) end,
    "bench.allreduce_targets: unknown option 'quite' (valid: comm quiet)" },
  { function() bench.compare({}, {}, { labels = "x" }) end,
    "bench.compare: unknown option 'labels' (valid: inplace label quiet ref_label)" },
  { function() bench.overhead { size = 4 } end,
    "bench.overhead: unknown option 'size' (valid: comm dtype iters quiet reps sizes warmup)" },
  { function() repro.need { rank = 1 } end, "repro.need: unknown option 'rank' (valid: ranks gpu)" },
  { function() repro.sweep { candidate = print, reference = print, n = { 1 }, dtypes = { "f32" } } end,
    "sweep: unknown option 'dtypes'" },
  { function() repro.differ(src, src, { rtols = 1 }) end, "repro.differ: unknown option 'rtols' (valid: rtol atol)" },
  { function() repro.check({}, print, print, { tol = 1 }) end, "repro.check: unknown option 'tol' (valid: rtol atol)" },
  { function() pretty.format({}, { widths = 1 }) end, "pretty.format: unknown option 'widths' (valid: depth width items)" },
}
for i, case in ipairs(cases) do H.raises(case[1], case[2], "case " .. i) end

-- the signal option: {s, slot [, value]} or {s, slot, value = v}
local peer_of = T.prev -- who puts into my slice
s:reset()
c:barrier()
w:put(nxt, src, 0, { signal = { s, 1, value = 5 } }):post():wait { cpu = true }
w:put(nxt, src, 0, { signal = { s, 1, value = 5 } }):post():wait { cpu = true }
w:put(nxt, src, 0, { signal = { s, 2, 7 } }):post():wait { cpu = true }
w:put(nxt, src, 0, { signal = { s, 3 } }):post():wait { cpu = true }
s:wait { slot = 1, value = 10, cmp = "==", cpu = true, timeout = 30 }
s:wait { slot = 2, value = 7, cmp = "==", cpu = true, timeout = 30 }
s:wait { slot = 3, value = 1, cmp = "==", cpu = true, timeout = 30 }
H.eq(s:read(1), 10, "value = 5 added twice (from rank " .. peer_of .. ")")
H.eq(s:read(2), 7, "positional value")
H.eq(s:read(3), 1, "no value: 1")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 1, bogus = 5 } }) end,
         "signal: unknown key 'bogus' (valid: {s, slot [, value]} or {s, slot, value = v})")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 1, 3, value = 3 } }) end,
         "signal value given twice")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 1, 2, 3 } }) end, "signal: unknown key '4'")
H.raises(function() w:put(nxt, src, 0, { signal = { s, 1, value = 1.5 } }) end, "signal value must be an integer 0..18446744073709551615")
c:barrier()
s:free()
w:free()
