"""A/B of two versions of our blastp on the GPU host: this checkout and an older one,
run alternately on the same 100 queries against the benchmark database.

    git archive REV gpu_search | tar -x -C OLD_DIR        # here, inside the working tree
    python3 bench/probes/blastp_ab.py --old OLD_DIR [--reps 5] [--settings JSON]   # on the device

Start-up changes move a run by a few tenths of a second while the same code varies by as much
from one run (or host) to the next: only runs alternated in one call compare.  Prints each
run's wall time and where it went (process_lifetime), then the medians.  ``--settings`` adds a
third variant, this checkout with those ``BlastSettings`` fields (a switch being weighed), run
by bench/blastp_with_settings.py.  The older version must take ``--timings`` (as this one does).
BLAST+ is not run: ratios to BLAST+ come from bench/blastp_gpu_bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]          # bench/: the benchmarks these probes build on
sys.path[:0] = [str(BENCH.parent), str(BENCH)]
from blastp_bench import blast_programs, prepare_databases, query_sets, write_queries  # noqa: E402
from blastp_gpu_bench import our_blastp, process_lifetime  # noqa: E402
from hmmsearch_bench import pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="folder holding the older gpu_search package")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--settings", default="",
                    help='BlastSettings fields as JSON, e.g. \'{"gapped_batch": 1}\': also this checkout with them')
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--work", default="/tmp/gsblastbench")
    args = ap.parse_args()
    work = Path(args.work)
    t0 = time.perf_counter()
    _, _, gsdb = prepare_databases(args.copies, work, blast_programs()[1])
    print(f"database ready in {time.perf_counter() - t0:.0f} s", flush=True)
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    q = work / "ab.faa"
    write_queries(q, base, query_sets(base, ["100"])["100 queries"])
    query = ["-query", str(q)]
    here = str(BENCH.parent)
    # (python -m imports the package of its working folder first; blastp_with_settings.py this checkout's)
    variants = [("new", here, our_blastp(gsdb, os.cpu_count(), timings=True) + query),
                ("old", str(Path(args.old).resolve()), our_blastp(gsdb, os.cpu_count(), timings=True) + query)]
    if args.settings:
        variants.append((args.settings, here,
                         our_blastp(gsdb, os.cpu_count(), settings=json.loads(args.settings), timings=True) + query))
    for _, folder, cmd in variants:          # numba's cache and NVRTC's warm: one untimed run each
        subprocess.run(cmd, capture_output=True, cwd=folder)
    outs, walls = {}, {}
    for rep in range(args.reps):
        for name, folder, cmd in variants:
            launched, t = time.time(), time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=folder)
            walls.setdefault(name, []).append(time.perf_counter() - t)
            outs.setdefault(name, r.stdout)
            print(f"{name:12} {walls[name][-1]:.2f} s rc={r.returncode}  "
                  f"{process_lifetime(r.stderr, launched, time.time())}", flush=True)
            if rep == 0:
                print("   ", next((x for x in r.stderr.splitlines() if "timings" in x), r.stderr[-300:]))
    print("rows identical in every variant:", all(o == outs["old"] for o in outs.values()),
          len(outs["old"].splitlines()))
    print("medians: " + ", ".join(f"{n} {sorted(w)[len(w) // 2]:.2f} s" for n, w in walls.items()))


if __name__ == "__main__":
    main()
