#!/usr/bin/env python3
"""Writes mutations of a real recording for tests/sh/replay_fuzz.sh.

    replay_fuzz.py BASE.lua OUTDIR [SEED]

Each case is OUTDIR/mNN-KIND.lua: the base recording with one mutation that
keeps its header line (so gcsh --replay reads the file rather than refusing
it at once) and damages the data: truncation, a value of another type, a huge
or odd number, a metatable, a long string, a rank beyond the count, a loop, a
finalizer.  Deterministic for a seed.  Prints one case path a line.
"""
import os
import random
import re
import sys

base_path, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1
rng = random.Random(seed)
base = open(base_path, encoding="utf-8", errors="surrogateescape").read()
lines = base.split("\n")
# where the calls start: the line of `local line = require(...)`
body_at = next(i for i, l in enumerate(lines) if l.startswith("local line"))
header = "\n".join(lines[: body_at + 1]) + "\n"
body = "\n".join(lines[body_at + 1:])

ODD_VALUES = [
    "nil", "true", "false", "0", "-1", "1.5", "0/0", "1/0", "-1/0", "9e18", "-9e18",
    "9223372036854775807", "-9223372036854775808", "2^63", "1e308", "{}", "{{}}",
    "function() end", '""', '"\\0"', '"all"', '"0-4096"', '"-1"', '"1-0"', '"0,,1"',
    '"0-9223372036854775807"', '"' + "0," * 40000 + '0"', '"' + "x" * 100000 + '"',
    'setmetatable({}, {__index = function() error("boom") end})',
    'setmetatable({}, {__index = function() while true do end end})',
    'setmetatable({}, {__len = function() return 1e9 end})',
    'setmetatable({}, {__pairs = function() error("boom") end})',
    '{out = "[-9000000000000000000-0] 1\\n"}', '{out = "[0-1] 1\\n[2] x\\n"}',
    '{out = "no brackets\\n"}', '{wtime = {[0] = {1, "x"}}}', '{wtime = {[7] = {1}}}',
    '{wtime = {[0] = setmetatable({}, {__index = error})}}', '{args = {1, 2}}',
    '{args = {"a", nil, "b"}}', '{ended = {status = 1e9}}', '{ended = {lost = "0"}}',
    '{exit = -5}', '{exit = 2^31}', '{failed = 3}', '{varies = "yes"}', '{nokey = 1}',
    '{[1] = "x"}', '{syntax = {}}', '{exited = "0"}', '{exit = 1, exited = 3}',
    '{exit = 1, exited = "0-99"}', '{exit = 1, exited = "x"}',
]

cases = []


def add(kind, text):
    cases.append((kind, text))


# truncations anywhere in the body (and just before the closing line)
for _ in range(8):
    add("cut", header + body[: rng.randrange(0, max(1, len(body)))])
add("cut-before-finish", header + body[: body.rfind("line.finish")])
add("cut-mid-string", header + body[: body.find("[==[") + 6])

# a call's argument swapped for an odd value
calls = [m for m in re.finditer(r"^line(\.chunk|\.dot)?\((\d+), \"([^\"]*)\"", body, re.M)]
for i in range(22):
    m = rng.choice(calls)
    value = rng.choice(ODD_VALUES)
    which = rng.choice(["number", "ranks"])
    start, end = (m.start(2), m.end(2)) if which == "number" else (m.start(3) - 1, m.end(3) + 1)
    add("swap-" + which, header + body[:start] + value + body[end:])

# the expected table, or a field in it, replaced
for i in range(12):
    value = rng.choice(ODD_VALUES)
    at = body.find(", {")
    spots = [m.start() for m in re.finditer(r", \{", body)]
    at = rng.choice(spots) if spots else at
    close = body.find("})\n", at)
    if at < 0 or close < 0:
        continue
    add("expected", header + body[:at] + ", " + value + body[close + 1:])

# the header table
for value in ['setmetatable({ranks = 2}, {__index = function() error("x") end})',
              "{ranks = 2e9}", "{ranks = 0}", '{ranks = "2"}', "{seed = 1.5}", "{seed = {}}",
              "nil", "42", "{ranks = 2, extra = 1}"]:
    add("header", re.sub(r"\.script \{[^\n]*\}", lambda _: ".script(" + value + ")", header)
        + body)

# the header line's rank count
for n in ["0", "-3", "4097", "2000000000", "99999999999999999999"]:
    add("header-line", re.sub(r"format (\d+)\): \d+ ranks?", r"format \1): " + n + " ranks",
                              header, count=1) + body)

# whole bodies that are no recording
add("loop", header + "while true do end\n")
add("loop-pcall", header + "while true do pcall(function() while true do end end) end\n")
add("memory", header + "local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end\n")
add("finalizer", header + body + '\nsetmetatable({}, {__gc = function() line(1, "0-1", "x") end})\n')
add("finalizer-loop", header + body + "\nsetmetatable({}, {__gc = function() while true do end end})\n")
add("pcall-swallow", header + 'pcall(line, 1, "0-99", "x")\n' + body)
add("require", header + 'require("os")\n' + body)
add("load", header + 'load("\\27Lua")()\n' + body)
add("dofile", header + 'dofile("/dev/zero")\n' + body)
add("after-finish", header + body + '\nline(99, "0-1", "x = 1")\n')
add("two-headers", header + header.split("\n")[-2] + "\n" + body)
add("huge-line", header + 'line(1, "0-1", "' + "x" * 1000000 + '")\nline.finish(1)\n')

os.makedirs(out, exist_ok=True)
for i, (kind, text) in enumerate(cases):
    path = os.path.join(out, "m%02d-%s.lua" % (i, kind))
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    print(path)
