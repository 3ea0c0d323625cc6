-- The chain broadcast in pieces (step.broadcast(w, root, {algo="ring",
-- pieces=P})): N-1 + P-1 steps, each rank i places down the chain copying
-- piece s - i at step s (the pipeline), the grid's columns the pieces, the
-- result equal to c:broadcast; bad pieces= refused at the caller's line.
local H = require("harness")

local c = comm.world()
local k, me = c.size, c.rank
local n = 6
local w = c:window(n, "i32")

for _, root in ipairs({ 0, k - 1 }) do
  for _, pieces in ipairs({ 1, 2, 3, n }) do
    local what = string.format("root %d, %d pieces at %d ranks", root, pieces, k)
    w:tensor():fill(1 << me)
    local st = step.broadcast(w, root, { algo = "ring", pieces = pieces })
    local want_steps = k == 1 and 0 or (k - 1) + (pieces - 1)
    H.eq(st.steps, want_steps, what .. ": N-1 + P-1 steps")
    -- my position down the chain, and the piece bounds (balanced, as kernel.plan's)
    local pos = (me - root) % k
    for s = 1, st.steps do
      st:next(1, { quiet = true })
      H.truthy(st.text:find(string.format("in %d pieces on %d ranks: step %d of %d", pieces, k, s, st.steps),
                            1, true), what .. ": the title at step " .. s)
      for p = 0, pieces - 1 do
        local first = n * p // pieces
        local count = n * (p + 1) // pieces - first
        -- piece p has reached me once step pos + p is done (the root holds it from the start)
        local has = pos == 0 or s >= pos + p
        local want = has and (1 << root) or (1 << me)
        for i = first, first + count - 1 do
          H.eq(w:tensor()[i], want, string.format("%s: step %d, piece %d, element %d", what, s, p, i))
        end
      end
    end
    H.eq(st:run({ quiet = true }), true, what .. ": equals c:broadcast")
    st:free()
  end
end

-- the grid's columns are the pieces
w:tensor():fill(1 << me)
local st = step.broadcast(w, 0, { algo = "ring", pieces = 3 })
st:show()
if k > 1 then H.truthy(st.text:find("c0  c1  c2", 1, true), "three columns: " .. st.text) end
st:free()

local function refused(fn, plain, what)
  local err = H.raises(fn, plain, what)
  H.truthy(err:find("step_chain.lua:%d+:"), what .. ": the error points at the caller: " .. err)
end
refused(function() step.broadcast(w, 0, { algo = "tree", pieces = 2 }) end,
        "step.broadcast: pieces= pipelines the chain: it takes algo 'ring', got 'tree'", "pieces on the tree")
refused(function() step.broadcast(w, 0, { algo = "ring", pieces = 0 }) end,
        "step.broadcast: pieces must be 1..6, got 0", "no pieces")
refused(function() step.broadcast(w, 0, { algo = "ring", pieces = 7 }) end,
        "step.broadcast: pieces must be 1..6, got 7", "more pieces than elements")
refused(function() step.allreduce(w, { pieces = 2 }) end,
        "step.allreduce: unknown option 'pieces'", "pieces on an all-reduce")
w:free()
