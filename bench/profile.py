#!/usr/bin/env python3
"""Prints a profile that `chakraflow link|convert|run --profile FILE` wrote, as text.

Each stage span (the command, the rank graph's stages and their pieces), in the order they
began: its start and end in ms from the command's start, its length, the thread that ran it,
and how much work its batches did on the workers meanwhile (busy: the batches' time over the
span's; 1.0 is one thread busy throughout, 16.0 every thread of 16). What keeps the other
threads idle is where the span's busy figure is low.

--busy adds how long the command ran with 0, 1, 2, ... threads busy (a thread is busy while any
stage span or batch of it is open), and, for the time only one thread was busy, the innermost
span it was in: the serial pieces that hold the other threads.

Usage: bench/profile.py FILE [--min-ms 0.5] [--busy]   (docs/performance.md, "Profiles of a
command")
"""
import argparse
import collections
import json
import sys


def merged(intervals):
    """The union of (begin, end) intervals, as sorted disjoint intervals."""
    out = []
    for begin, end in sorted(intervals):
        if out and begin <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([begin, end])
    return out


def print_busy(events, command, names):
    """Time at each count of busy threads within the command's span; the single-thread time by
    the innermost span open on that thread."""
    begin, end = command["ts"], command["ts"] + command["dur"]
    by_thread = collections.defaultdict(list)
    for e in events:
        if e is not command:
            by_thread[e["tid"]].append(e)
    edges = []  # (time, +1 / -1, thread)
    for tid, evs in by_thread.items():
        for lo, hi in merged((max(begin, e["ts"]), min(end, e["ts"] + e["dur"])) for e in evs):
            if hi > lo:
                edges += [(lo, 1, tid), (hi, -1, tid)]
    edges.sort(key=lambda x: (x[0], x[1]))
    at_count = collections.Counter()
    alone = collections.Counter()
    active = set()
    last = begin
    for t, step, tid in edges + [(end, 0, None)]:
        if t > last:
            at_count[len(active)] += t - last
            if len(active) == 1:
                (only,) = active
                mid = (last + t) / 2
                inner = [e for e in by_thread[only] if e["ts"] <= mid <= e["ts"] + e["dur"]]
                name = min(inner, key=lambda e: e["dur"])["name"] if inner else "?"
                alone[(name, names.get(only, only))] += t - last
            last = t
        if step > 0:
            active.add(tid)
        elif step < 0:
            active.discard(tid)
    print("threads busy: " + ", ".join(
        f"{k}: {at_count[k] / 1000:.1f} ms" for k in sorted(at_count)))
    print("one thread busy, by the innermost span open on it:")
    for (name, thread), us in alone.most_common():
        if us >= 50:
            print(f"{us / 1000:9.1f} ms  {thread:<10} {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--min-ms", type=float, default=0.5,
                        help="leave out stage spans shorter than this (default 0.5)")
    parser.add_argument("--busy", action="store_true",
                        help="also the time at each count of busy threads, and the single-thread "
                             "time by span")
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    stages = [e for e in events if e.get("cat") == "stage"]
    work = [e for e in events if e.get("cat") in ("batch", "in order")]
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M"}
    about = doc.get("otherData", {})
    print(f"{about.get('command', '?')}  (threads {about.get('threads', '?')}, "
          f"exit {about.get('exit_code', '?')})")
    print(f"{'start ms':>9} {'end ms':>9} {'ms':>8} {'busy':>5}  {'thread':<10} stage")
    for s in sorted(stages, key=lambda e: (e["ts"], -e["dur"])):
        dur = s["dur"] / 1000.0
        if dur < args.min_ms:
            continue
        begin, end = s["ts"], s["ts"] + s["dur"]
        # The batches of this stage (named after it, for its rank) within its time, on any thread.
        rank = s.get("args", {}).get("rank")
        busy = 0.0
        for w in work:
            if w["name"] != s["name"] or w.get("args", {}).get("rank") != rank:
                continue
            lo, hi = max(begin, w["ts"]), min(end, w["ts"] + w["dur"])
            if hi > lo:
                busy += hi - lo
        busy_text = f"{busy / s['dur']:.1f}" if busy > 0 and s["dur"] > 0 else ""
        part = s.get("args", {}).get("part")
        label = s["name"] + (f" [{part}]" if part is not None else "")
        if rank is not None:
            label += f" (rank {rank})"
        print(f"{begin / 1000:9.1f} {end / 1000:9.1f} {dur:8.1f} {busy_text:>5}  "
              f"{names.get(s['tid'], s['tid']):<10} {label}")
    if args.busy and stages:
        command = min(stages, key=lambda e: (e["ts"], -e["dur"]))
        print_busy(stages + work, command, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
