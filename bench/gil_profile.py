"""Who holds the interpreter's lock during a blastp GPU run (py-spy ``--gil``), on the GPU host.

    python bench/gil_profile.py [--copies 399] [--rate 1000] [--set 100]

The 100-query run of ``blastp_gpu_bench.py`` (same database, same queries, a
fresh process reading the .gsdb), timed plain and then sampled by py-spy,
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
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blastp_bench import blast_programs, prepare_databases, query_sets, write_queries  # noqa: E402
from hmmsearch_bench import pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402

# a thread's role, from the functions on its stack (first match wins)
ROLES = [("produce", "GPU threads (ungapped)"), ("prelim_batches", "gapped GPU threads"),
         ("_warm_up", "warm-up"), ("prepare (", "lookup thread (ahead)"),
         ("prelim_piece", "CPU pool"), ("reap_piece", "CPU pool"), ("traceback_task", "CPU pool"),
         ("_feed", "process pool: feeder"), ("_ExecutorManagerThread", "process pool: manager"),
         ("process_result_item", "process pool: manager"), ("wait_result_broken_or_wakeup", "process pool: manager"),
         ("blastp (gpu_search/cli.py", "main thread")]


def role_of(stack: str) -> str:
    for key, role in ROLES:
        if key in stack:
            return role
    return "other"


def summarise(raw: Path, wall: float, rate: int, top: int = 12) -> None:
    by_thread = defaultdict(Counter)      # thread -> Counter of stacks
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        thread, _, frames = stack.partition(";")
        by_thread[thread][frames] += int(n)
    roles = defaultdict(lambda: [Counter(), Counter(), set()])    # role -> self, ours, threads
    for thread, stacks in by_thread.items():
        # a thread's role: from all its stacks together (a sample may be deep in a library)
        role = role_of(" ".join(stacks))
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
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent), GPU_SEARCH_TIMINGS="1")
    ours = [sys.executable, "-m", "gpu_search", "blastp", "-db", str(gsdb), "-outfmt", "6",
            "-num_threads", str(args.threads), "--device", "gpu", "-q", "-query", str(q)]
    outputs = []
    for k in range(3):                      # the first warms the caches
        t = time.perf_counter()
        r = subprocess.run(ours, capture_output=True, text=True, env=env)
        outputs.append(r.stdout)
        print(f"plain run {k}: {time.perf_counter() - t:.2f} s; "
              + next((line for line in r.stderr.splitlines() if "timings" in line), r.stderr[-300:]), flush=True)
    out = Path(args.out or work)
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
