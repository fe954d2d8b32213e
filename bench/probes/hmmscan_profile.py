"""Where a GPU hmmscan run spends its time, in one process: reading the models and queries,
the GPU's start, the filter batches (summed over the filter threads), the finishing of the
pairs (summed over the finishing threads), and the per-query merge and output, for
``bench/hmmscan_bench.py``'s cells.

    python3 bench/probes/hmmscan_profile.py --cells 2000:shuffled,2000:proteome [--cpus 16]
        [--filter-threads 2,4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmscan_bench as bench  # noqa: E402
import hmmsearch_matrix as matrix  # noqa: E402


ORIGINAL = {}       # the functions timed, before they are wrapped


class Summed:
    """Wall seconds summed over every call of a wrapped function, whatever the thread."""

    def __init__(self):
        self.seconds, self.calls, self.lock = 0.0, 0, threading.Lock()

    def wrap(self, fn):
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                with self.lock:
                    self.seconds += time.perf_counter() - t
                    self.calls += 1
        return timed


def profile_cell(cell: str, args, filter_threads: int) -> dict:
    n, kind = cell.split(":")
    hmm, _ = matrix.build_models(int(n), args)
    bench.press(hmm)
    queries_path, _, _ = bench.write_queries(kind, args.work)
    t0 = time.perf_counter()
    from gpu_search import device as dev
    from gpu_search.hmmer import hmmscan as scan
    from gpu_search.hmmer import report
    from gpu_search.hmmer.options import SearchOptions

    laps = {"imports": time.perf_counter() - t0}

    def lap(name, since):
        laps[name] = time.perf_counter() - since
        return time.perf_counter()

    t = time.perf_counter()
    dev.start_cuda("gpu", None, forks=False)
    queries = scan.read_queries(queries_path)
    t = lap("read queries", t)
    db = scan.open_hmmdb(hmm, threads=args.cpus)
    t = lap("open models", t)
    dev.wait_cuda()
    from gpu_search.hmmer.search import make_backend

    backend = make_backend(args.device, queries)
    t = lap("GPU start and upload", t)
    cascade, finishing, profiles = Summed(), Summed(), Summed()
    if not ORIGINAL:
        ORIGINAL.update(cascade=scan.run_cascade_batch, finish=scan.ScanFinisher.__call__,
                        profile=scan.FilterProfile.from_optimized)
    scan.run_cascade_batch = cascade.wrap(ORIGINAL["cascade"])
    scan.ScanFinisher.__call__ = finishing.wrap(ORIGINAL["finish"])
    scan.FilterProfile.from_optimized = staticmethod(profiles.wrap(ORIGINAL["profile"]))
    results = scan.hmmscan(queries, db, SearchOptions(), device=args.device, cpus=args.cpus, backend=backend,
                           filter_threads=filter_threads)
    first = next(results)
    t = lap("filters and finishing (to the first query's result)", t)
    out = io.StringIO()
    rest = [first, *results]
    t = lap("merging the other queries' pairs", t)
    for r in rest:
        report.write_scan_query(out, r, SearchOptions())
    lap("report (main output)", t)
    laps["in all"] = time.perf_counter() - t0
    laps["(filter batches, summed over threads)"] = cascade.seconds
    laps["(filter profiles, summed)"] = profiles.seconds
    laps[f"(finishing, summed over threads: {finishing.calls:,} pairs)"] = finishing.seconds
    return laps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="2000:shuffled,2000:proteome")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--filter-threads", default="2", help="comma-separated: each cell run with each")
    ap.add_argument("--device", default="gpu", help="reference: a smoke run without a GPU")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each (the first may compile kernels)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    args = ap.parse_args()
    args.base_seqs, args.max_m = 0, matrix.M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    for cell in args.cells.split(","):
        for _ in range(args.repeats):
            for filter_threads in map(int, args.filter_threads.split(",")):
                laps = profile_cell(cell, args, filter_threads)
                print(f"== {cell} ({args.cpus} threads, {filter_threads} filter threads)")
                for name, seconds in laps.items():
                    print(f"   {name:60s} {seconds:8.2f} s")


if __name__ == "__main__":
    main()
