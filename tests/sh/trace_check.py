#!/usr/bin/env python3
"""Checks a gcsh trace file with a real JSON parser (tests/sh/trace.sh).

    trace_check.py FILE RANKS [SPAN...]

Loads FILE with json, then checks: one process per rank 0..RANKS-1 (named
"rank R (host, device)"); timestamps that never go back within a process;
every flow arrow has one start, one finish and steps between, on distinct
ranks, in time order, each inside a slice of its rank's gcsh-calls track;
every signal flow (from a set, add or put to the wait it released) starts
no later than it finishes, each end inside a slice; every "check X" slice
lies inside a slice "X" (a collective holds its check; a dump may catch a
check that failed inside its collective still running: "X (unfinished)").  Prints what the
shell test compares: the processes, each flow ("flow NAME: ranks ..."),
each signal flow ("signal NAME: rank A -> rank B"), and for each SPAN name
asked for, the args of its first slice on rank 0; "gpu:NAME" asks for a
slice NAME on every rank's GPU track (CUDA events), longer than zero.
Exits 1 with "FAIL ..." lines when a check fails."""
import json
import sys


def main():
    path, ranks, want = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    fails = []
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    if sorted(names) != list(range(ranks)):
        fails.append("processes %s, want ranks 0..%d" % (sorted(names), ranks - 1))
    for pid in sorted(names):
        print("process %d: %s" % (pid, names[pid]))
    slices = [e for e in events if e["ph"] == "X"]
    last = {}
    for e in slices:
        if e["ts"] < last.get(e["pid"], float("-inf")):
            fails.append("rank %d: %s at %s goes back in time" % (e["pid"], e["name"], e["ts"]))
        last[e["pid"]] = e["ts"]
    flows = {}
    for e in events:
        if e["ph"] in "stf" and e.get("cat") == "collective":
            flows.setdefault(e["id"], []).append(e)
    for fid, chain in sorted(flows.items()):
        phases = "".join(e["ph"] for e in chain)
        pids = [e["pid"] for e in chain]
        ok = (phases[0] == "s" and phases[-1] == "f" and set(phases[1:-1]) <= {"t"}
              and len(set(pids)) == len(pids) and len(pids) >= 2
              and all(a["ts"] <= b["ts"] for a, b in zip(chain, chain[1:])))
        if not ok:
            fails.append("flow %s (%s): phases %s on ranks %s" % (fid, chain[0]["name"], phases, pids))
        for e in chain:
            inside = [s for s in slices if s["pid"] == e["pid"] and s["tid"] == e["tid"]
                      and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
            if not inside:
                fails.append("flow %s: its point on rank %d is in no slice" % (fid, e["pid"]))
        print("flow %s: ranks %s" % (chain[0]["name"], " ".join(map(str, sorted(pids)))))
    signals = {}
    for e in events:
        if e["ph"] in "sf" and e.get("cat") == "signal":
            signals.setdefault(e["id"], {})[e["ph"]] = e
    for fid, pair in sorted(signals.items()):
        if set(pair) != {"s", "f"} or pair["s"]["ts"] > pair["f"]["ts"]:
            fails.append("signal flow %s: %s" % (fid, pair))
            continue
        for e in pair.values():
            if not [s for s in slices if s["pid"] == e["pid"] and s["tid"] == e["tid"]
                    and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]:
                fails.append("signal flow %s: its point on rank %d is in no slice" % (fid, e["pid"]))
        print("signal %s: rank %d -> rank %d" % (pair["s"]["name"], pair["s"]["pid"], pair["f"]["pid"]))
    for c in slices:
        if c["name"].startswith("check ") and not c["name"].endswith("(unfinished)"):
            outer = c["name"][6:]
            if not [s for s in slices if s["pid"] == c["pid"] and s["tid"] == c["tid"]
                    and s["name"] in (outer, outer + " (unfinished)") and s["ts"] <= c["ts"]
                    and c["ts"] + c["dur"] <= s["ts"] + s["dur"] + 1e-3]:
                fails.append("%s on rank %d lies in no slice %r" % (c["name"], c["pid"], outer))
    for name in want:
        if name.startswith("gpu:"):
            on = sorted({s["pid"] for s in slices if s["tid"] == 3 and s["name"] == name[4:]
                         and s["dur"] > 0})
            if on != list(range(ranks)):
                fails.append("GPU slices %r on ranks %s, want every rank" % (name[4:], on))
            print("gpu span %s: ranks %s" % (name[4:], " ".join(map(str, on))))
            continue
        first = next((s for s in slices if s["pid"] == 0 and s["name"] == name), None)
        if first is None:
            fails.append("no slice named %r on rank 0" % name)
        else:
            print("span %s: %s" % (name, json.dumps(first["args"], sort_keys=True)))
    note = doc.get("otherData", {}).get("note")
    if note:
        print("note: %s" % note)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
