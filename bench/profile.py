#!/usr/bin/env python3
"""Prints a profile that `chakraflow link|convert|run --profile FILE` wrote, as text.

Each stage span (the command, the rank graph's stages and their pieces), in the order they
began: its start and end in ms from the command's start, its length, the thread that ran it,
and how much work its batches did on the workers meanwhile (busy: the batches' time over the
span's; 1.0 is one thread busy throughout, 16.0 every thread of 16). What keeps the other
threads idle is where the span's busy figure is low.

Usage: bench/profile.py FILE [--min-ms 0.5]   (docs/performance.md, "Profiles of a command")
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--min-ms", type=float, default=0.5,
                        help="leave out stage spans shorter than this (default 0.5)")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
