-- One-sided put, get and putv, with signals
-- A transfer moves a tensor into (put) or out of (get) a peer's slice
-- without the peer doing anything: one-sided.  On GPUs the copy engine or a
-- kernel does it, off the rank's critical path.  A signal attached to a put
-- tells the receiver when the data has landed.
lesson = require "gcsh.lesson"
c = comm.world()
n = 8
w = c:window(n, "i32")
s = c:signals(2)
right, left = (rank + 1) % size, (rank - 1) % size
w:tensor():fill(0)
c:barrier()

--- put, with a signal
-- w:put(peer, src, offset, {signal={s, slot}}) makes a transfer; :post()
-- starts it; once the data has landed, the peer's word slot goes up by 1.
-- The receiver waits for its word, then reads.  x:wait{cpu=true} waits
-- here until the transfer is done (a plain x:wait() only orders the rank's
-- GPU stream after it, and returns at once).  One command (do ... end), so
-- that the signal, not the shell's wait between lines, tells the receiver.
src = tensor.new(4, "i32"):fill(rank + 1)
x = w:put(right, src, 0, {signal = {s, 0}})
do
  x:post()
  x:wait{cpu = true}
  s:wait(0, 1)
end
lesson.expect(w:tensor():view(0, 4), left + 1,
              "my left neighbour's put landed before its signal")

--- get
-- w:get(peer, dst, offset) reads a peer's slice into a local tensor.  After
-- a barrier (every put is done), read back what I put to my right.
c:barrier()
back = tensor.new(4, "i32")
g = w:get(right, back, 0)
g:post()
g:wait{cpu = true}
lesson.expect(back, rank + 1,
              "get reads back what I put to my right")

--- putv: several pieces, one operation
-- w:putv(peer, {{src, offset}, ...}) sends a scatter list as one transfer,
-- with one signal at the end.
c:barrier()
tens = tensor.new(2, "i32"):fill(10 * (rank + 1))
twenties = tensor.new(2, "i32"):fill(20 * (rank + 1))
pieces = {{tens, 4}, {twenties, 6}}
v = w:putv(right, pieces, {signal = {s, 1}})
do
  v:post()
  v:wait{cpu = true}
  s:wait(1, 1)
end
lesson.expect(w:tensor():view(4, 4),
              function(i)
                return (i < 2 and 10 or 20) * (left + 1)
              end,
              "both pieces from my left neighbour arrived")

--- exercise: Pass it on
-- Write pass_right(w, s, t): put the tensor t (4 i32) into the right
-- neighbour's slice at offset 0, with a signal on slot 0 of s.  The check
-- resets the signals, calls it, waits (up to 2 s) for its own slot 0 and
-- looks at what arrived from the left:
--     check_pass(pass_right)
function check_pass(fn)
  s:reset()
  c:barrier()
  local t = tensor.new(4, "i32"):fill(7 * rank)
  lesson.call(fn, "pass_right", w, s, t)
  pcall(s.wait, s, {slot = 0, value = 1, timeout = 2})
  lesson.answer("my signal word 0, 2 s after your put,", s:read(0), 1,
                "the signal arrived")
  lesson.grade(w:tensor():view(0, 4), 7 * left,
               "the left neighbour's tensor arrived, signalled")
  c:barrier()
end

--- solution
function pass_right(win, sig, t)
  local put = win:put((rank + 1) % size, t, 0, {signal = {sig, 0}})
  put:post()
  put:wait{cpu = true}
  put:free()
end
check_pass(pass_right)
for _, h in ipairs({x, g, v}) do h:free() end
s:free()
w:free()
