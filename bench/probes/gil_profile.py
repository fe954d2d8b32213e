"""Who holds the interpreter's lock during a blastp GPU run (py-spy ``--gil``), on the GPU host.

    python bench/probes/gil_profile.py [--copies 399] [--rate 1000] [--set 100]

The 100-query run of ``blastp_gpu_bench.py`` (same database, same queries, a
fresh process reading the .gsdb, its bytecode kept: ``our_env``), timed plain and then sampled by py-spy,
which records only the thread holding the GIL at each sample.  Prints, per
thread role (GPU threads feeding the ungapped kernel, gapped GPU threads, the
CPU pool, the lookup thread, the main thread, the process pool's helper
threads, ...), the share of the run it held the lock and the functions it held
it in (innermost frame, and innermost frame of gpu_search).  py-spy comes as
a wheel (bench/device_bundle.sh); it needs ptrace of its own child.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]          # bench/: the benchmarks these probes build on
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from blastp_bench import blast_programs, prepare_databases, query_sets, write_queries  # noqa: E402
from blastp_gpu_bench import our_blastp, our_env  # noqa: E402
from hmmsearch_bench import pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402

# a thread's role, from its name (threading's, as py-spy shows it), else from its stack
NAMED = [(r"MainThread", "main thread"), (r"blastp-gpu", "GPU threads (ungapped)"),
         (r"blastp-gapped", "gapped GPU threads"), (r"blastp-lookup", "lookup thread (ahead)"),
         (r"blastp_", "CPU pool"), (r"QueueFeederThread", "process pool: feeder"), (r"warm-up", "warm-up"),
         (r"filter_", "filter threads (hmmsearch)"), (r"finish_", "finishing threads (hmmsearch)"),
         (r"phmmer-build", "model builders (phmmer)")]
STACKS = [("_ExecutorManagerThread.run", "process pool: manager"), ("_warm_up", "warm-up")]


def role_of(name: str, stacks: str) -> str:
    for pattern, role in NAMED:
        if re.match(pattern, name):
            return role
    for key, role in STACKS:
        if key in stacks:
            return role
    return "other"


def summarise(raw: Path, wall: float, rate: int, top: int = 12) -> None:
    by_thread = defaultdict(Counter)      # thread id -> Counter of stacks
    thread_names = {}
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        thread, _, frames = stack.partition(";")      # "thread (id)" or "thread (id): name"
        tid, _, name = thread.partition(": ")
        if name:
            thread_names[tid] = name
        by_thread[tid][frames] += int(n)
    roles = defaultdict(lambda: [Counter(), Counter(), set()])    # role -> self, ours, threads
    for thread, stacks in by_thread.items():
        role = role_of(thread_names.get(thread, ""), " ".join(stacks))
        for frames, n in stacks.items():
            names = frames.split(";")
            roles[role][0][names[-1]] += n
            mine = [f for f in names if "gpu_search/" in f]
            roles[role][1][mine[-1] if mine else "(none of ours)"] += n
            roles[role][2].add(thread)
    total = sum(sum(r[0].values()) for r in roles.values())
    print(f"\nGIL held in {total} samples at {rate}/s = {total / rate:.2f} s of a {wall:.2f} s run")
    for role, (own, ours, threads) in sorted(roles.items(), key=lambda kv: -sum(kv[1][0].values())):
        n = sum(own.values())
        print(f"\n{role}: {n / rate:.2f} s held ({len(threads)} threads)")
        print("  innermost frame:")
        for f, k in own.most_common(top):
            print(f"    {k / rate:6.3f} s  {f}")
        print("  innermost gpu_search frame:")
        for f, k in ours.most_common(top):
            print(f"    {k / rate:6.3f} s  {f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--set", default="100")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--work", default="/tmp/gsblastbench")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy not found (pip install py-spy)")
    _, makeblastdb = blast_programs()
    work = Path(args.work)
    _, _, gsdb = prepare_databases(args.copies, work, makeblastdb)
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    idx = query_sets(base, [args.set])
    q = work / "gil-q.faa"
    write_queries(q, base, next(iter(idx.values())))
    env = our_env(work)
    ours = our_blastp(gsdb, args.threads, timings=True) + ["-query", str(q)]
    outputs = []
    for k in range(3):                      # the first warms the caches
        t = time.perf_counter()
        r = subprocess.run(ours, capture_output=True, text=True, env=env)
        outputs.append(r.stdout)
        print(f"plain run {k}: {time.perf_counter() - t:.2f} s; "
              + next((line for line in r.stderr.splitlines() if "timings" in line), r.stderr[-300:]), flush=True)
    out = Path(args.out or work)
    timeline = out / "timeline.json"          # who is busy when, in a plain run (bench/probes/timeline.py)
    r = subprocess.run(our_blastp(gsdb, args.threads, timings=True, timeline=timeline) + ["-query", str(q)],
                       capture_output=True, text=True, env=env)
    if timeline.exists():
        print(subprocess.run([sys.executable, str(Path(__file__).with_name("timeline.py")), str(timeline),
                              "--step", "0.25"], capture_output=True, text=True).stdout, flush=True)
    raw = out / "gil.txt"
    t = time.perf_counter()
    r = subprocess.run([spy, "record", "--gil", "--nonblocking", "--threads", "--rate", str(args.rate),
                        "--format", "raw", "-o", str(raw), "--"] + ours, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    print(f"sampled run: {wall:.2f} s, output identical to the plain run: {r.stdout == outputs[-1]}; "
          + next((line for line in r.stderr.splitlines() if "timings" in line), r.stderr[-600:]), flush=True)
    if raw.exists():
        summarise(raw, wall, args.rate)


if __name__ == "__main__":
    main()
