"""Where the finishing of an hmmsearch with GPU finishing spends its CPU time, on the GPU host.

    python bench/probes/finish_split.py [--models 2000] [--db proteome] [--homologs many]
    python bench/probes/finish_split.py --ab [--backlog-seconds 0.5,2] [--workers 1,3] [--forward-max-cells 1e9]
                                        [--batch-pairs 1e9] [--modes auto] [--repeat 3]
    python bench/probes/finish_split.py --modes auto --switch-intervals 0.005,0.0001 --repeat 3

Runs the search in-process (inputs built by ``bench/hmmsearch_matrix.py``, cached under
--work) with the GPU finishing on, and records which survivors the GPU left to pyhmmer and
why: pairs of more than ``GpuFinishing.MAX_GPU_CELLS`` DP cells ("long"), and the others
(unsure scores, regions whose sampled domains overflowed: "not simple").  Then finishes
each kind again with our CPU finisher on every core, timed apart, and times the building of
the GPU's records (the makers) on one thread.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    matrix.add_cell_arguments(ap, homologs="many")
    ap.add_argument("--ab", action="store_true",
                    help="the timeline with the GPU finishing on, off and auto (search.BACKLOG_SECONDS); no more")
    ap.add_argument("--backlog-seconds", type=lambda v: [float(x) for x in v.split(",")], default=[],
                    help="with --ab: auto again with each of these search.BACKLOG_SECONDS")
    ap.add_argument("--switch-intervals", type=lambda v: [float(x) for x in v.split(",")], default=[],
                    help="the timeline again with each of these sys.setswitchinterval seconds")
    ap.add_argument("--max-gpu-cells", type=lambda v: [int(float(x)) for x in v.split(",")], default=[],
                    help="with --ab: auto again with each of these GpuFinishing.MAX_GPU_CELLS (pairs of more "
                         "cells are left to the CPU)")
    ap.add_argument("--batch-pairs", type=lambda v: [int(float(x)) for x in v.split(",")], default=[],
                    help="with --ab: auto again with each of these search.GPU_BATCH_PAIRS (a batch with as "
                         "many survivors goes to the GPU whatever the backlog)")
    ap.add_argument("--forward-max-cells", type=lambda v: [int(float(x)) for x in v.split(",")], default=[],
                    help="with --ab: auto again with each of these cascade.FORWARD_MAX_CELLS (longer pairs' "
                         "Forward test left to pyhmmer)")
    ap.add_argument("--windows", type=lambda v: [int(x) for x in v.split(",")], default=[],
                    help="the timeline again with each of these search.WINDOW_MODELS (models in flight)")
    ap.add_argument("--gather-pairs", type=lambda v: [int(float(x)) for x in v.split(",")], default=[],
                    help="the timeline again with each of these GpuFinishing.GATHER_PAIRS (most pairs a call)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="every run this many times, the settings alternated, then each setting's "
                         "walls and median (runs on one host differ by about 10%%)")
    ap.add_argument("--modes", default="on,off,auto",
                    help="with --ab: the GPU finishing modes timed first (default on,off,auto); without it, "
                         "one mode: the mode of every run (else on)")
    ap.add_argument("--workers", type=lambda v: [int(x) for x in v.split(",")], default=[],
                    help="with --ab: on and auto again with each of these GpuFinishing.WORKERS (calls at once)")
    args = ap.parse_args()
    from gpu_search.hmmer import cascade, gpufinish, search
    from gpu_search.hmmer.gpu import domaindef
    from gpu_search.hmmer.gpu import GpuBackend

    hmms, db, _, _ = matrix.probe_cell(args)
    backend = GpuBackend(db)
    list(search.hmmsearch(hmms[:64], db, device="gpu", cpus=args.cpus, backend=backend))   # (kernels loaded)

    recorded = []            # (hmm, prof, survivors, left, maker)
    original = gpufinish.GpuFinishing.finish
    gpu_seconds = []

    def finish(self, hmms_, profs, survivors, untested=None):
        t = time.perf_counter()
        out = original(self, hmms_, profs, survivors, untested)
        gpu_seconds.append(time.perf_counter() - t)
        for h, p, s, (make, left) in zip(hmms_, profs, survivors, out):
            recorded.append((h, p, np.asarray(s), left, make))
        return out

    gpufinish.GpuFinishing.finish = finish
    # a timeline: (kind, start, end) of each filter batch, GPU finishing call, CPU piece, maker
    spans = []

    def timed(kind, fn):
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spans.append((kind, t0, time.perf_counter()))
        return wrapped

    cascade_batch, finisher_call, maker = search.run_cascade_batch, search.Finisher.__call__, \
        gpufinish.GpuFinishing._hits_maker
    search.run_cascade_batch = timed("filter batch", cascade_batch)
    search.Finisher.__call__ = timed("cpu piece", finisher_call)
    gpufinish.GpuFinishing._hits_maker = lambda *a, **k: timed("records", maker(*a, **k))
    gpufinish.GpuFinishing.finish = timed("gpu finishing", finish)
    # each finishing kernel's GPU time (an event pair a launch, on the worker's stream)
    launches = []
    launch = domaindef.CupyKernels.launch

    def timed_launch(self, name, *a):
        start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record()
        launch(self, name, *a)
        stop.record()
        launches.append((name, start, stop))

    domaindef.CupyKernels.launch = timed_launch
    # the lengths of the regions each region_traces launch walks, and their largest model M
    traced, model_m = [], []
    ensembles = domaindef._trace_ensembles

    def recorded_ensembles(kernels, reg, reg_pair, models, seqs, profs, Ms, *a, **k):
        if len(reg):
            traced.append((reg[:, 1] - reg[:, 0] + 1).astype(np.int64))
            model_m.append(int(Ms[models[reg_pair]].max()))
        return ensembles(kernels, reg, reg_pair, models, seqs, profs, Ms, *a, **k)

    domaindef._trace_ensembles = recorded_ensembles
    # the batches the matrices' budget cuts a call's regions and envelopes into
    n_batches = []
    batches = domaindef._batches

    def counted_batches(sizes, budget):
        for idx in batches(sizes, budget):
            n_batches.append(len(idx))
            yield idx

    domaindef._batches = counted_batches
    # without --ab: the GPU finishing on every batch, or in the one mode --modes names
    alone = args.modes if "," not in args.modes else "on"
    runs = [(on, None) for on in (args.modes.split(",") if args.ab else (alone,))]
    runs += [("auto", ("forward", x)) for x in args.forward_max_cells] if args.ab else []
    runs += [("auto", x) for x in args.backlog_seconds] if args.ab else [(alone, ("switch", x))
                                                                          for x in args.switch_intervals]
    runs += [(alone if not args.ab else "auto", ("window", x)) for x in args.windows]
    runs += [(alone if not args.ab else "auto", ("gather", x)) for x in args.gather_pairs]
    runs += [("auto", ("cells", x)) for x in args.max_gpu_cells] if args.ab else []
    runs += [("auto", ("pairs", x)) for x in args.batch_pairs] if args.ab else []
    runs += [(on, ("workers", x)) for x in args.workers for on in ("on", "auto")] if args.ab else []
    runs *= max(1, args.repeat)
    default_interval = sys.getswitchinterval()
    walls = {}                  # setting -> wall seconds of each of its runs
    max_cells, workers = gpufinish.GpuFinishing.MAX_GPU_CELLS, gpufinish.GpuFinishing.WORKERS
    gather = gpufinish.GpuFinishing.GATHER_PAIRS
    forward_cells, backlog_seconds = cascade.FORWARD_MAX_CELLS, search.BACKLOG_SECONDS
    batch_pairs, window = search.GPU_BATCH_PAIRS, search.WINDOW_MODELS
    first_digest, mismatches = None, 0
    for on, interval in runs:
        sys.setswitchinterval(default_interval)
        gpufinish.GpuFinishing.WORKERS = workers
        gpufinish.GpuFinishing.MAX_GPU_CELLS = max_cells
        cascade.FORWARD_MAX_CELLS = forward_cells
        search.BACKLOG_SECONDS = backlog_seconds
        search.GPU_BATCH_PAIRS, search.WINDOW_MODELS = batch_pairs, window
        gpufinish.GpuFinishing.GATHER_PAIRS = gather
        if isinstance(interval, tuple) and interval[0] == "gather":
            print(f"GATHER_PAIRS {interval[1]:,}")
            gpufinish.GpuFinishing.GATHER_PAIRS = interval[1]
        elif isinstance(interval, tuple) and interval[0] == "window":
            print(f"WINDOW_MODELS {interval[1]}")
            search.WINDOW_MODELS = interval[1]
        elif isinstance(interval, tuple) and interval[0] == "pairs":
            print(f"GPU_BATCH_PAIRS {interval[1]:,}")
            search.GPU_BATCH_PAIRS = interval[1]
        elif isinstance(interval, tuple) and interval[0] == "switch":
            print(f"switch interval {interval[1] * 1e3:g} ms")
            sys.setswitchinterval(interval[1])
        elif isinstance(interval, tuple) and interval[0] == "forward":
            print(f"FORWARD_MAX_CELLS {interval[1]:,}")
            cascade.FORWARD_MAX_CELLS = interval[1]
        elif isinstance(interval, tuple) and interval[0] == "workers":
            print(f"WORKERS {interval[1]}")
            gpufinish.GpuFinishing.WORKERS = interval[1]
        elif isinstance(interval, tuple):
            print(f"MAX_GPU_CELLS {interval[1]:,} (BACKLOG_SECONDS {search.BACKLOG_SECONDS:g})")
            gpufinish.GpuFinishing.MAX_GPU_CELLS = interval[1]
        elif interval is not None and on == "auto":
            print(f"BACKLOG_SECONDS {interval:g}")
            search.BACKLOG_SECONDS = interval
        spans.clear()
        recorded.clear()            # (what follows is the last run's)
        gpu_seconds.clear()
        for k in backend.kernel_seconds:
            backend.kernel_seconds[k] = 0.0
        launches.clear()
        traced.clear()
        model_m.clear()
        results, wall = timeline(search, hmms, db, args, backend, spans, on)
        walls.setdefault((on, interval), []).append(wall)
        # every run's hits against the first run's (with --modes off first: pyhmmer's finishing)
        digest = [[(h.name, h.score, h.evalue, h.included, h.reported, len(h.domains)) for h in r.hits]
                  + [(r.stats.n_past_vit, r.stats.n_past_fwd)] for r in results]
        first_digest = digest if first_digest is None else first_digest
        differ = sum(a != b for a, b in zip(digest, first_digest)) + abs(len(digest) - len(first_digest))
        print(f"  hits and counts {'the first run' + chr(39) + 's' if not differ else f'DIFFER in {differ} models'}")
        mismatches += differ
        kernel_gpu, walks = {}, []
        for name, start, stop in launches:
            stop.synchronize()
            seconds = backend_cp().cuda.get_elapsed_time(start, stop) / 1e3
            kernel_gpu[name] = kernel_gpu.get(name, 0.0) + seconds
            if name == "region_traces":
                walks.append(seconds)
        if walks and traced:
            each = np.array(walks)
            longest = np.array([x.max() for x in traced])
            every = np.concatenate(traced)
            print(f"  region_traces: {len(each)} launches, {each.sum():.2f} s; regions {len(every)}, length "
                  "50/90/99/100%: " + "/".join(f"{np.percentile(every, q):.0f}" for q in (50, 90, 99, 100)))
            if len(each) == len(longest):       # (one batch a call: each launch with its longest region)
                for at in np.argsort(-each)[:5]:
                    print(f"    {each[at] * 1e3:7.1f} ms  {len(traced[at]):5d} regions, longest {longest[at]}, "
                          f"largest M {model_m[at]}")
        if kernel_gpu:
            print("  finishing kernels, GPU seconds (summed over the workers' streams): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in sorted(kernel_gpu.items(), key=lambda kv: -kv[1])))
        print(f"  models finished on the GPU {len(recorded)}, pairs {sum(len(x[2]) for x in recorded)}")
        cp = backend_cp()
        pool = cp.get_default_memory_pool()
        print(f"  matrix batches {len(n_batches)} (regions and envelopes); after the run: CuPy's pool "
              f"{pool.total_bytes() / 1e9:.1f} GB, {pool.free_bytes() / 1e9:.1f} GB of it free, the driver's free "
              f"{cp.cuda.Device(0).mem_info[0] / 1e9:.1f} GB")
        n_batches.clear()
    search.run_cascade_batch, search.Finisher.__call__ = cascade_batch, finisher_call
    sys.setswitchinterval(default_interval)
    gpufinish.GpuFinishing.MAX_GPU_CELLS, gpufinish.GpuFinishing.WORKERS = max_cells, workers
    cascade.FORWARD_MAX_CELLS, search.BACKLOG_SECONDS = forward_cells, backlog_seconds
    search.GPU_BATCH_PAIRS, search.WINDOW_MODELS = batch_pairs, window
    gpufinish.GpuFinishing.GATHER_PAIRS = gather
    if args.repeat > 1:
        print("walls of each setting (s), median:")
        for (on, interval), seconds in walls.items():
            print(f"  {on:4s} {'' if interval is None else interval!s:22s} "
                  + " ".join(f"{x:.2f}" for x in seconds) + f"  median {float(np.median(seconds)):.2f}")
    domaindef._trace_ensembles = ensembles
    domaindef._batches = batches
    domaindef.CupyKernels.launch = launch
    gpufinish.GpuFinishing._hits_maker = maker
    gpufinish.GpuFinishing.finish = original
    if mismatches:
        print(f"HITS DIFFER between runs in {mismatches} models")
    if args.ab:
        return 1 if mismatches else 0
    finish_cpu = sum((r.seconds or {}).get("finish", 0.0) for r in results)
    n_surv = sum(len(s) for _, _, s, _, _ in recorded)
    n_left = sum(len(x) for _, _, _, x, _ in recorded)
    print(f"{args.models} models x {args.db}, {args.homologs} homologs: {wall:.2f} s, "
          f"{sum(len(r.hits) for r in results)} hits; GPU finishing calls {len(gpu_seconds)}, "
          f"{sum(gpu_seconds):.2f} s; CPU finishing summed {finish_cpu:.1f} s")
    print(f"pairs through F3 {n_surv}, left to the CPU {n_left}")

    long_sets, other_sets = [], []
    for h, p, s, left, _ in recorded:
        is_long = db.lengths[left].astype(np.int64) * p.M > gpufinish.GpuFinishing.MAX_GPU_CELLS
        long_sets.append((h, left[is_long]))
        other_sets.append((h, left[~is_long]))
    from pyhmmer.plan7 import Background

    finisher = search.Finisher(db, hmms[0].alphabet, Background(hmms[0].alphabet), {"Z": float(db.n_seqs)})
    for name, sets in (("long", long_sets), ("not simple", other_sets)):
        jobs = [(h, piece) for h, s in sets if len(s)
                for piece in search._chunks_by_cells(s, db.lengths, h.M)]
        n_pairs = sum(len(s) for _, s in sets)
        cells = sum(float(db.lengths[s].sum()) * h.M for h, s in sets)
        t = time.perf_counter()
        with ThreadPoolExecutor(args.cpus) as pool:
            summed = sum(sec for _, sec in pool.map(lambda j: finisher(*j), jobs))
        print(f"  {name}: {n_pairs} pairs, {cells / 1e9:.2f} G cells; {args.cpus} threads "
              f"{time.perf_counter() - t:.2f} s wall, {summed:.1f} thread-s")
    makers = [m for *_, m in recorded if m is not None]
    t = time.perf_counter()
    for m in makers:
        m()
    print(f"  records of the GPU's pairs ({len(makers)} models), one thread: {time.perf_counter() - t:.2f} s")
    simple_cells = sum(float(db.lengths[np.setdiff1d(s, left)].sum()) * p.M for _, p, s, left, _ in recorded)
    print(f"  the GPU's pairs: {n_surv - n_left}, {simple_cells / 1e9:.2f} G cells")


def backend_cp():
    import cupy

    return cupy


def timeline(search, hmms, db, args, backend, spans, on):
    """One timed search, its timeline printed; (results, wall seconds)."""
    t = time.perf_counter()
    yielded = []
    results = []
    for r in search.hmmsearch(hmms, db, device="gpu", cpus=args.cpus, backend=backend,
                              gpu_finishing={"on": True, "off": False, "auto": "auto"}[on]):
        results.append(r)
        yielded.append(time.perf_counter())
    wall = time.perf_counter() - t
    stages = {}
    for r in results:
        for k, v in (r.seconds or {}).items():
            stages[k] = stages.get(k, 0.0) + v
    print(f"GPU finishing {on}: {wall:.2f} s; kernel seconds "
          + ", ".join(f"{k} {v:.2f}" for k, v in backend.kernel_seconds.items())
          + "; stages summed over threads " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    print("timeline (s from the start): kind, calls, first start, last end, busy seconds; then busy per 2 s")
    edges = np.arange(0.0, wall + 2.0, 2.0)
    for kind in ("filter batch", "gpu finishing", "cpu piece", "records"):
        mine = [(a - t, b - t) for k, a, b in spans if k == kind]
        if not mine:
            continue
        busy = [sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in mine) for lo, hi in zip(edges[:-1], edges[1:])]
        print(f"  {kind:14s} {len(mine):6d} {min(a for a, _ in mine):6.2f} {max(b for _, b in mine):6.2f} "
              f"{sum(b - a for a, b in mine):7.1f}  " + " ".join(f"{x / 2:.1f}" for x in busy))
    marks = [yielded[int(q * (len(yielded) - 1))] - t for q in (0.0, 0.25, 0.5, 0.75, 1.0)]
    print("  models handed on at 0/25/50/75/100%: " + " ".join(f"{x:.2f}" for x in marks))
    return results, wall


if __name__ == "__main__":
    sys.exit(main())
