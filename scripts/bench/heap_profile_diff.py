#!/usr/bin/env python3
"""Diff the first and last live-heap profiles in an AddressSanitizer log
(scripts/bench/asan_heap_profile.c writes them): the allocation contexts
whose count of live blocks grew most, with their stacks.  A context that
grows by one block a round across a run of identical rounds is what the
process keeps; contexts that move by a few are the rounds' work in flight
when a profile was taken.

Usage: heap_profile_diff.py LOG [LOG...] [--top N] [--frames N]
(a LOG may be gzipped)"""
import argparse
import gzip
import re

HEADER = re.compile(r"(\d+) byte\(s\) \(\d+%\) in (\d+) allocation")
FRAME = re.compile(r"\s+#(\d+) 0x[0-9a-f]+ (?:in )?(.*)")


def profiles(path):
    """Each profile as {stack: (bytes, blocks)}; a stack is its frames past
    the allocator's own (#0), without build ids, joined by newlines."""
    opener = gzip.open if path.endswith(".gz") else open
    found, current, context = [], None, None
    with opener(path, "rt", errors="replace") as log:
        for line in log:
            if line.startswith("Live Heap Allocations"):
                current = {}
                found.append(current)
                continue
            header = HEADER.match(line)
            if header and current is not None:
                context = [int(header.group(1)), int(header.group(2)), []]
                continue
            frame = FRAME.match(line)
            if frame and context is not None:
                if frame.group(1) != "0":
                    context[2].append(re.sub(r"\s*\(BuildId.*", "", frame.group(2)).strip())
                continue
            if not line.strip() and context is not None:
                key = "\n".join(context[2])
                size, blocks = current.get(key, (0, 0))
                current[key] = (size + context[0], blocks + context[1])
                context = None
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--frames", type=int, default=8)
    args = ap.parse_args()
    for path in args.logs:
        found = profiles(path)
        if len(found) < 2:
            print(f"{path}: {len(found)} profile(s): two are needed")
            continue
        first, last = found[0], found[-1]
        grown = []
        for key in set(first) | set(last):
            size0, blocks0 = first.get(key, (0, 0))
            size1, blocks1 = last.get(key, (0, 0))
            if blocks1 != blocks0:
                grown.append((blocks1 - blocks0, size1 - size0, key))
        grown.sort(key=lambda g: -g[0])
        print(f"== {path}: {len(found)} profiles; first against last")
        for blocks, size, key in grown[: args.top]:
            print(f"{blocks:+d} blocks, {size:+d} bytes")
            for frame in key.split("\n")[: args.frames]:
                print("    " + frame)


if __name__ == "__main__":
    main()
