"""A/B of two versions of our blastp on the GPU host: this checkout and an older one,
run alternately on the same 100 queries against the benchmark database.

    git archive REV gpu_search | tar -x -C OLD_DIR        # here, inside the working tree
    python3 bench/probes/blastp_ab.py --old OLD_DIR [--reps 5] [--env NAME=VALUE]   # on the device

Start-up changes move a run by a few tenths of a second while the same code varies by as much
from one run (or host) to the next: only runs alternated in one call compare.  Prints each
run's wall time and where it went (process_lifetime), then the medians.  ``--env`` adds a
third variant, this checkout with that environment variable (a switch being weighed).
BLAST+ is not run: ratios to BLAST+ come from bench/blastp_gpu_bench.py.
"""

from __future__ import annotations

import argparse
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
    ap.add_argument("--env", default="", help="NAME=VALUE: also this checkout with that variable")
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
    cmd = our_blastp(gsdb, os.cpu_count()) + ["-query", str(q)]
    here = str(Path(__file__).resolve().parent.parent)
    # (python -m imports the package of its working folder first)
    variants = [("new", here, {}), ("old", str(Path(args.old).resolve()), {})]
    if args.env:
        name, value = args.env.split("=", 1)
        variants.append((args.env, here, {name: value}))
    for _, folder, extra in variants:        # numba's cache and NVRTC's warm: one untimed run each
        subprocess.run(cmd, capture_output=True, cwd=folder, env=dict(os.environ, **extra))
    outs, walls = {}, {}
    for rep in range(args.reps):
        for name, folder, extra in variants:
            launched, t = time.time(), time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=folder,
                               env=dict(os.environ, GPU_SEARCH_TIMINGS="1", **extra))
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
