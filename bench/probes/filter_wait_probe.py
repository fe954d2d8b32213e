"""Whether hmmsearch's filter threads work or wait: each filter step's wall time against the
calling thread's own CPU time, in one process on the GPU host.

    python3 bench/probes/filter_wait_probe.py [--models 2000] [--db proteome] [--homologs few]
        [--switch 0.005,0.0005] [--filter-threads 4]

For each switch interval (``sys.setswitchinterval``) and number of filter threads, one
in-process ``hmmsearch(..., device="gpu")`` over the models (after an untimed warm-up that
compiles), with the backend's calls (``msv_batch``, ``bias_batch``, ``viterbi_batch``,
``forward_exact_batch``), each model's host steps (``_ModelCascade.after_*``), the profile conversion
and the finishing calls wrapped in timers: summed wall seconds, summed thread CPU seconds
(``time.thread_time``), calls.  Wall far above CPU in a step run with the interpreter lock held
means the thread waited for the lock (or, in the backend's calls, for the GPU).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402

TOTALS = defaultdict(lambda: [0, 0.0, 0.0])     # step -> [calls, wall, cpu]
LOCK = threading.Lock()


def timed(owner, attr, label):
    fn = getattr(owner, attr)

    def wrapper(*a, **k):
        w, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            dw, dc = time.perf_counter() - w, time.thread_time() - c
            with LOCK:
                t = TOTALS[label]
                t[0] += 1
                t[1] += dw
                t[2] += dc
    setattr(owner, attr, wrapper)


def main():
    ap = argparse.ArgumentParser()
    matrix.add_cell_arguments(ap, homologs="few")
    ap.add_argument("--switch", default="0.005,0.0005", help="switch intervals to time (seconds)")
    ap.add_argument("--filter-threads", default="4", help="numbers of filter threads to time")
    args = ap.parse_args()
    hmms, db, _, _ = matrix.probe_cell(args)

    from gpu_search.hmmer import cascade, search
    from gpu_search.hmmer.gpu import GpuBackend
    from gpu_search.hmmer.profile import FilterProfile

    backend = GpuBackend(db)
    list(search.hmmsearch(hmms, db, device="gpu", cpus=args.cpus, backend=backend))   # warm-up
    for name in ("msv_batch", "bias_batch", "viterbi_batch", "forward_exact_batch"):
        timed(GpuBackend, name, "backend." + name)
    for name in ("msv_stage", "bias_stage", "viterbi_stage", "forward_stage"):
        timed(cascade, name, name + " (a batch)")
    timed(cascade, "bias_filter_hmms", "bias_filter_hmms (a batch)")
    timed(cascade.BiasScores, "of_batch", "BiasScores.of_batch (a batch)")
    timed(search, "run_cascade_batch", "run_cascade_batch (whole batch)")
    timed(FilterProfile, "from_hmm", "FilterProfile.from_hmm")
    timed(search.Finisher, "__call__", "Finisher.__call__")
    default = sys.getswitchinterval()
    print(f"== {args.models} models x {args.db}, {args.homologs} homologs, {args.cpus} cpus")
    for threads in [int(x) for x in args.filter_threads.split(",")]:
        for interval in [float(x) for x in args.switch.split(",")]:
            TOTALS.clear()
            sys.setswitchinterval(interval)
            t = time.perf_counter()
            results = list(search.hmmsearch(hmms, db, device="gpu", cpus=args.cpus, backend=backend,
                                            filter_threads=threads))
            wall = time.perf_counter() - t
            sys.setswitchinterval(default)
            hits = sum(len(r.hits) for r in results)
            print(f"-- {threads} filter threads, switch interval {interval * 1e3:g} ms: {wall:.2f} s, {hits} hits")
            print(f"   {'step':36s} {'calls':>6s} {'wall s':>8s} {'cpu s':>8s} {'wait s':>8s}")
            for label, (n, w, c) in sorted(TOTALS.items(), key=lambda kv: -kv[1][1]):
                print(f"   {label:36s} {n:6d} {w:8.2f} {c:8.2f} {w - c:8.2f}")


if __name__ == "__main__":
    main()
