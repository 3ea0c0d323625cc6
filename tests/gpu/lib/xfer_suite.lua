-- One-sided transfers on windows of one cuda kind (nccl or vmm), both
-- engines: put, get and putv at odd sizes and offsets (bytes, halves, words,
-- chunks and their tails), a putv of thousands of segments (one kernel),
-- put-with-signal ordering with no barrier between data, signal and reader,
-- reposts, and the states only a GPU shows: a post queued behind a
-- stream-ordered signal wait is "pending", cannot be cancelled, stalls a CPU
-- wait with a timeout, and holds back the window's free on every rank until
-- it is done.  One node: the team is every rank.
local H = require "harness"

return function(K)
  if not require("common").kind_here(comm.world(), K) then return end
  local c = comm.world()
  local me, n = c.rank, c.size
  local nxt, prev = (me + 1) % n, (me - 1) % n
  local opts = { kind = K }

  local function same(got, want, what)
    H.truthy(got:equal(want), what .. ": maxdiff " .. tostring(got:maxdiff(want)))
  end

  for _, engine in ipairs { "ce", "sm" } do
    -- odd sizes and offsets, several element sizes
    for _, dt in ipairs { "u8", "f16", "i32", "i64" } do
      local tag = K .. " " .. engine .. " " .. dt
      local N = 200003
      local w = c:window(N, dt, opts)
      local mine = w:tensor()
      for _, case in ipairs { { 1, 0 }, { 3, 5 }, { 37, 13 }, { 4097, 333 }, { 70001, 99999 } } do
        local len, off = case[1], case[2]
        local src = tensor.new(len, dt):rand(me * 1000 + len) -- counter-based: any rank can make it
        w:put(nxt, src, off, { engine = engine }):post():wait { cpu = true, timeout = 30 }
        c:barrier()
        local want = tensor.new(len, dt):rand(prev * 1000 + len)
        same(mine:view(off, len), want, tag .. " put " .. len .. " at " .. off)
        -- get it back from where it landed (the next rank's copy of mine)
        local back = tensor.new(len, dt)
        w:get(nxt, back, off, { engine = engine }):post():wait()
        same(back, src, tag .. " get " .. len .. " at " .. off)
        c:barrier()
      end
      w:free()
    end

    -- a large put that is not a whole number of chunks
    local M = (64 << 20) // 4 + 3
    local big = c:window(M + 5, "i32", opts)
    local src = tensor.new(M, "i32"):rand(me + 1)
    local x = big:put(nxt, src, 5, { engine = engine })
    x:post():wait { cpu = true, timeout = 60 }
    c:barrier()
    local want = tensor.new(M, "i32"):rand(prev + 1)
    same(big:tensor():view(5, M), want, K .. " " .. engine .. " 64 MiB + 3 put")
    H.eq(big:tensor()[4], 0, "the element before the range")
    c:barrier()
    big:free()

    -- putv of 4096 segments of 3 elements (one kernel with sm), scattered
    local S = 4096
    local w3 = c:window(S * 5, "i32", opts)
    local srcs, list = tensor.new(S * 3, "i32"):arange(me * 100000), {}
    for i = 0, S - 1 do list[#list + 1] = { srcs:view(i * 3, 3), (S - 1 - i) * 5 + 1 } end
    local v = w3:putv(nxt, list, { engine = engine })
    H.eq(v.segments, S, "segments")
    v:post():wait { cpu = true, timeout = 30 }
    c:barrier()
    local got = tensor.new(S * 5, "i32"):copy(w3:tensor())
    for _, i in ipairs { 0, 1, 17, 2048, S - 1 } do
      local base = (S - 1 - i) * 5
      H.eq(got[base], 0, "gap before segment " .. i)
      for k = 0, 2 do H.eq(got[base + 1 + k], prev * 100000 + i * 3 + k, "segment " .. i .. "[" .. k .. "]") end
      H.eq(got[base + 4], 0, "gap after segment " .. i)
    end
    H.eq(w3:tensor():sum(), tensor.new(S * 3, "i32"):arange(prev * 100000):sum(), "putv total")
    c:barrier()
    w3:free()

    -- put with signal: data, then the peer's word, no barrier in between
    local s = c:signals(2, opts)
    local D = (4 << 20) + 7
    local d = c:window(D, "i32", opts)
    local payload = tensor.new(D, "i32")
    local parts = {}
    for k = 0, 6 do parts[#parts + 1] = { payload:view(k * (D // 7), D // 7), k * (D // 7) } end
    parts[#parts + 1] = { payload:view(7 * (D // 7), D - 7 * (D // 7)), 7 * (D // 7) }
    local handles = {
      d:put(nxt, payload, 0, { engine = engine, signal = { s, 0 } }),
      d:putv(nxt, parts, { engine = engine, signal = { s, 0 } }),
    }
    local round = 0
    for _, h in ipairs(handles) do
      for _ = 1, 3 do
        round = round + 1
        payload:fill(me * 1000 + round)
        h:post()
        s:wait(0, round) -- stream-ordered: the reads below queue behind it
        H.eq(d:tensor()[0], prev * 1000 + round, "round " .. round .. " first element")
        H.eq(d:tensor()[D - 1], prev * 1000 + round, "round " .. round .. " last element")
        H.eq(d:tensor():view(D // 2, 4099):sum(), 4099 * (prev * 1000 + round), "round " .. round .. " middle")
        -- "read": the writer may overwrite my slice in the next round only then
        s:add(prev, 1, 1)
        s:wait(1, round)
      end
    end
    H.eq(s:read(0), round, "one add per post")
    c:barrier()
    s:free()
    d:free()
  end

  -- states only a GPU shows: a post queued behind a stream-ordered wait
  -- (the host backend's s:wait blocks the CPU instead)
  if n >= 2 and gcsh.backend == "cuda" then
    local gate = c:signals(1, opts)
    local done = c:signals(1, opts)
    local w = c:window(1 << 20, "f32", opts)
    local src = tensor.new(1 << 20, "f32"):fill(me + 1)
    local x
    if me == 0 then
      gate:wait(0, 1) -- rank 0's stream waits here until rank 1 sets the word
      x = w:put(1, src, 0, { engine = "sm", signal = { done, 0 } })
      x:post()
      H.eq(x:test(), "pending", "a post behind a held stream")
      H.raises(function() x:cancel() end, "cancel: the transfer is in flight")
      H.raises(function() x:wait { cpu = true, timeout = 0.2 } end, "wait: transfer stalled")
      H.eq(x:test(), "pending", "still pending after the stalled wait")
      x:wait() -- stream-ordered: returns at once
    end
    H.raises(function() w:free() end, "cannot free: a transfer using it is still in flight on rank(s) 0")
    H.raises(function() done:free() end, "cannot free: a transfer using it is still in flight on rank(s) 0")
    if me == 1 then gate:set(0, 0, 1) end
    if me == 0 then
      x:wait { cpu = true, timeout = 60 }
      H.eq(x:test(), "done", "done once the gate opened")
      x:cancel()
    end
    c:barrier()
    if me == 1 then
      done:wait { slot = 0, value = 1, cpu = true, timeout = 60 }
      H.eq(w:tensor()[(1 << 20) - 1], 1, "the gated put landed")
    end
    c:barrier()
    w:free()
    done:free()
    gate:free()
  end
end
