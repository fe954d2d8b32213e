"""Summarise a blastp run's timeline (``gpu-search blastp --timeline file.json``, or
``BlastSettings(timeline="file.json")``): who is busy when.

    python bench/probes/timeline.py file.json [--step 0.5]

Threads are grouped by name (blastp-gpu*: the GPU threads feeding the ungapped
stage; blastp-gapped: the threads launching the preliminary gapped kernel;
blastp_*: the CPU pool; blastp-lookup: tables built ahead).  For each time
step: how many threads of each group were busy on average, and in what.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("timeline")
    ap.add_argument("--step", type=float, default=0.5)
    args = ap.parse_args()
    events = json.load(open(args.timeline))
    end = max(e[3] for e in events)
    n = int(end / args.step) + 1
    busy = defaultdict(lambda: [0.0] * n)           # (group, phase) -> busy seconds per step
    threads = defaultdict(set)
    for name, phase, a, b in events:
        group = re.sub(r"[_-]?[\d.]+$", "", name)
        threads[group].add(name)
        k = int(a / args.step)
        while a < b:
            stop = min(b, (k + 1) * args.step)
            busy[(group, phase)][k] += stop - a
            a, k = stop, k + 1
    keys = sorted(busy)
    print(f"{len(events)} intervals, last ends at {end:.2f} s; threads: "
          + ", ".join(f"{g} x{len(t)}" for g, t in sorted(threads.items())))
    print("busy threads (average over each step) per group and phase:")
    print(f"{'t (s)':>6} " + " ".join(f"{g[:8]}:{p[:16]:16}"[:26].rjust(26) for g, p in keys))
    for k in range(n):
        print(f"{k * args.step:6.1f} " + " ".join(f"{busy[key][k] / args.step:26.2f}" for key in keys))
    for group, phase in keys:
        first = next(i for i, v in enumerate(busy[(group, phase)]) if v > 0)
        last = max(i for i, v in enumerate(busy[(group, phase)]) if v > 0)
        print(f"{group} {phase}: {sum(busy[(group, phase)]):.2f} s busy, from {first * args.step:.1f} "
              f"to {(last + 1) * args.step:.1f} s")


if __name__ == "__main__":
    main()
