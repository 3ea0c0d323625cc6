-- A cost model fitted to this machine
-- NCCL chooses an algorithm from a model (lesson 15): a call of n bytes
-- costs a latency plus n divided by a bandwidth, with numbers set for
-- each algorithm.  This lesson makes such a model from this machine's own
-- measurements: it times one-shot and ll (lesson 14), fits a line
-- time = latency + n x (time per byte) to each by least squares, and
-- compares the size where the lines cross with the sizes where ll was
-- measured the faster.
lesson = require "gcsh.lesson"
bench = require "gcsh.bench"
c = comm.world()

--- Measured here
-- bench.allreduce times both in place, from 8 B by factors of 4 up to
-- 32 KiB (ll takes at most kernel.ll_max_bytes).  The times are every
-- rank's average, so every rank fits the same numbers.
rows = bench.allreduce{algos = {"oneshot", "ll"}, min = 8,
                       max = kernel.ll_max_bytes // 2, factor = 4,
                       iters = 20, warmup = 3, quiet = true}
points = { oneshot = {}, ll = {} }
for _, r in ipairs(rows) do
  table.insert(points[r.algo], { r.size, r.time_us })
end
if rank == 0 then
  print("    size (B)  oneshot (us)  ll (us)")
  for i, p in ipairs(points.oneshot) do
    print(string.format("%12d %13.2f %8.2f", p[1], p[2],
                        points.ll[i][2]))
  end
end
print("measured on " .. lesson.measured_on())
lesson.check(#points.oneshot == #points.ll and #points.ll >= 5,
             "both timed at the same sizes")

--- The fit
-- Least squares: the line through the points' mean whose slope is
-- cov(n, t) / var(n).  Its intercept is the latency, its slope the time
-- per byte (1 / bandwidth).  A slope of 0 or less says the time did not
-- grow with the size here: the latency is all there is to model.
function fit(pts)
  local sn, st = 0, 0
  for _, p in ipairs(pts) do sn, st = sn + p[1], st + p[2] end
  local mn, mt = sn / #pts, st / #pts
  local cov, var = 0, 0
  for _, p in ipairs(pts) do
    cov = cov + (p[1] - mn) * (p[2] - mt)
    var = var + (p[1] - mn) ^ 2
  end
  local slope = cov / var
  return mt - slope * mn, slope
end
model = {}
for _, algo in ipairs({ "oneshot", "ll" }) do
  local lat, per_byte = fit(points[algo])
  model[algo] = { lat, per_byte }
  print(string.format("%-7s %8.2f us + n x %.6f us/B", algo, lat,
                      per_byte))
end
function through_mean(pts, m)
  local sn, st = 0, 0
  for _, p in ipairs(pts) do sn, st = sn + p[1], st + p[2] end
  local want = st / #pts
  local at = m[1] + m[2] * sn / #pts
  return math.abs(at - want) <= 1e-6 * math.max(1, want)
end
lesson.check(through_mean(points.oneshot, model.oneshot)
             and through_mean(points.ll, model.ll),
             "each line passes through its points' mean")

--- Where the lines cross
-- Two lines cross once: at n = (lat_a - lat_b) / (slope_b - slope_a).
-- The model says on which side ll is the faster; the measurement says
-- where it was, at the sizes timed.  A fit describes this machine only as
-- well as its points lie on a line: with more ranks than cores the times
-- are the scheduler's as much as the algorithms', and a slope of 0 or
-- less leaves no crossover to trust.
da = model.oneshot[1] - model.ll[1]
db = model.ll[2] - model.oneshot[2]
if model.oneshot[2] <= 0 or model.ll[2] <= 0 then
  said = "the model: a slope of 0 or less, no crossover to trust "
         .. "here"
elseif da > 0 and db > 0 then
  said = string.format("the model: ll is faster below %.0f B",
                       da / db)
elseif da > 0 then
  said = "the model: ll is faster at every size"
elseif db < 0 then
  said = string.format("the model: ll is faster above %.0f B",
                       da / db)
else
  said = "the model: one-shot is faster at every size"
end
print(said)
faster = {}
for i, p in ipairs(points.ll) do
  if p[2] < points.oneshot[i][2] then faster[#faster + 1] = p[1] end
end
print("measured: ll was the faster at: " .. (#faster > 0
      and table.concat(faster, ", ") .. " B" or "no size"))

--- exercise: Fit a line
-- Write my_fit(points): points is a list of {n, t}; return the latency
-- and the time per byte of the least-squares line t = lat + n x per_byte.
-- The check gives points on a known line (5 us + n x 0.01 us/B):
--     check_fit(my_fit)
function check_fit(fn)
  local pts = { { 8, 5.08 }, { 64, 5.64 }, { 512, 10.12 }, { 4096, 45.96 } }
  local lat, per_byte = lesson.call(fn, "my_fit", pts)
  if type(lat) == "number" and math.abs(lat - 5) < 1e-6 then lat = 5 end
  if type(per_byte) == "number" and math.abs(per_byte - 0.01) < 1e-9 then
    per_byte = 0.01
  end
  if lat ~= 5 then
    return lesson.answer("my_fit's latency", lat, 5, "")
  end
  lesson.answer("my_fit's time per byte", per_byte, 0.01,
                "5 us + n x 0.01 us/B")
end

--- solution
function my_fit(pts)
  return fit(pts)
end
check_fit(my_fit)
