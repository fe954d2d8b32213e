"""Run the blastp GPU kernel on a few queries, for ncu / compute-sanitizer on the GPU host.

    python bench/blastp_profile.py [--copies 20] [--lengths 127,517,1054]

Database: pyhmmer's proteome plus COPIES shuffled copies (hmmsearch_bench.build_database).
Each query is searched twice (the first call compiles); the init HSPs are
checked against the CPU word finder on the proteome-only database.  Each variant
timed is an engine of its own, built with that variant's constructor arguments
(``GpuUngapped(..., block=, extension=, window_lanes=, scores=, prefilter=,
hit_slots=, streamed=)``), and must find the same init HSPs as the default engine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmsearch_bench import build_database, pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402
from gpu_search.blast import pipeline  # noqa: E402
from gpu_search.blast.gpu import GpuUngapped  # noqa: E402
from gpu_search.blast.options import BlastOptions  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--lengths", default="127,517,1054")
    ap.add_argument("--queries", default="",
                    help="also these proteome sequences (indices), e.g. 863 (a low-complexity 457-aa query)")
    ap.add_argument("--launches", action="store_true",
                    help="print each kernel launch of a query's last run: grid, subjects, GPU time (CUDA "
                         "events), and the hit counts of the subjects that overflowed the blocks' buffers")
    ap.add_argument("--hit-slots", default="",
                    help="also time with these hit buffers per block, e.g. 65536,262144 (subjects with more "
                         "hits run a second pass)")
    ap.add_argument("--blocks", default="", help="also time these block sizes, e.g. 64,128,256,512")
    ap.add_argument("--extensions", default="",
                    help="also time these extension variants, e.g. diagonal,window,window8 (window + threads "
                         "per window)")
    ap.add_argument("--scores", default="", help="also time these score sources: pssm,matrix")
    ap.add_argument("--gapped", default="",
                    help="also time the preliminary gapped stage on the GPU with these ring sizes, e.g. 256,512 "
                         "(against gapped.py's numba code on one CPU thread, same HSPs)")
    ap.add_argument("--budgets", default="",
                    help="with --gapped: DP cell budgets per subject to time, e.g. 16384,65536,0 (0: none)")
    ap.add_argument("--kernels", default="warp",
                    help="with --gapped: the gapped kernels to time, e.g. warp,thread (a warp or a thread per subject)")
    ap.add_argument("--prefilter", action="store_true",
                    help="also time the window-based extension with the bins that cannot trigger struck off "
                         "first (PREFILTER) and without, alternately")
    ap.add_argument("--kernel-ab", default="",
                    help="also time the ungapped kernel built from these .cu files (e.g. an earlier commit's "
                         "ungapped.cu; comma-separated) and the current one, alternately")
    ap.add_argument("--streamed", action="store_true",
                    help="also time the database streamed through the GPU in 4 chunks a query")
    args = ap.parse_args()
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    if args.copies:
        fasta = Path(f"/tmp/prof{args.copies}.faa")
        if not fasta.exists():
            build_database(args.copies, fasta)
        db = seqdb.open_database(fasta)
    else:
        db = base
    setup = pipeline.make_setup(db, BlastOptions(num_threads=4))
    gpu = GpuUngapped(setup.residues, setup.offsets)

    def variant(**kw):
        """An engine of its own for a variant: the database uploaded again, its buffers."""
        return GpuUngapped(setup.residues, setup.offsets, **kw)

    wanted = [int(np.argmin(np.abs(base.lengths - int(n)))) for n in args.lengths.split(",") if n.strip()]
    wanted += [int(x) for x in args.queries.split(",") if x.strip()]
    for i in wanted:
        launches = watch_launches(gpu) if args.launches else []
        for rep in range(2):
            launches.clear()                     # (the last run's are printed)
            work = pipeline.new_work(i, base)
            t = time.perf_counter()
            pipeline.ungapped_stage(work, setup, gpu)
            print(f"query {i} ({base.lengths[i]} aa), run {rep}: {time.perf_counter() - t:.4f} s, "
                  f"{len(work.init)} init HSPs, {gpu.overflowed} overflowed", flush=True)
        ref = work.init
        if args.launches:
            for grid, n_order, over, event in launches:
                event[1].synchronize()
                ms = gpu.cp.cuda.get_elapsed_time(*event)
                hits = "" if over is None else (f", overflowed subjects' hits: max {int(over[:, 1].max()):,}, "
                                                f"median {int(np.median(over[:, 1])):,}")
                print(f"  launch: grid {grid}, {n_order:,} subjects, {ms:.2f} ms GPU time{hits}", flush=True)
            del gpu._launch                      # the class's own again: no syncs in the timed runs

        def best_of_4(label, g):
            """The best of 4 runs of query i on engine g; its init HSPs must be the default's."""
            best = 1e9
            for _ in range(4):
                work = pipeline.new_work(i, base)
                lookup = pipeline.prepare_query(work, setup)
                t = time.perf_counter()
                pipeline.ungapped_stage(work, setup, g, lookup)
                best = min(best, time.perf_counter() - t)
            assert np.array_equal(work.init, ref), label
            print(f"  {label}: {best * 1e3:8.2f} ms (best of 4, same init HSPs)", flush=True)

        def timed_variant(label, **kw):
            g = variant(**kw)
            best_of_4(label, g)
            del g
            gpu.cp.get_default_memory_pool().free_all_blocks()

        for slots in (int(b) for b in args.hit_slots.split(",") if b.strip()):
            timed_variant(f"hit slots {slots:>8}", hit_slots=slots)
        for block in (int(b) for b in args.blocks.split(",") if b.strip()):
            timed_variant(f"block {block:4d}", block=block)
        for extension in (x for x in args.extensions.split(",") if x):
            timed_variant(f"{extension:>8}-based extension",
                          extension="window" if extension.startswith("window") else extension,
                          window_lanes=int(extension[6:]) if extension[6:].isdigit() else None)
        for scores in (x for x in args.scores.split(",") if x):
            timed_variant(f"scores from {scores:>6}", scores=scores)
        if args.prefilter:              # off and on, alternately, an engine each
            engines = {on: variant(prefilter=on) for on in (False, True)}
            for on in (False, True, False, True):
                best_of_4(f"bins struck off first {'on' if on else 'off':>3}", engines[on])
            del engines
            gpu.cp.get_default_memory_pool().free_all_blocks()
        if args.kernel_ab:
            from gpu_search.gpu.loader import clear_cache

            # the module that loads the ungapped kernel (where GpuUngapped finds load_kernel)
            kernels = sys.modules[sys.modules[GpuUngapped.__module__].load_kernel.__module__]
            current = kernels.KERNEL_FILE
            for path in ([Path(f) for f in args.kernel_ab.split(",")] + [current]) * 2:
                kernels.KERNEL_FILE = path
                clear_cache()              # (compiled kernels are kept by file and options)
                best_of_4(f"kernel {path.name:>24}", gpu)
            kernels.KERNEL_FILE = current
            clear_cache()
        for band in (int(b) for b in args.gapped.split(",") if b.strip()):
            for budget in [int(b) for b in args.budgets.split(",") if b.strip()] or [None]:
                for kernel in (k for k in args.kernels.split(",") if k.strip()):
                    time_gapped(gpu, setup, work, band, budget, kernel)
        if args.streamed:
            timed_variant("streamed in 4 chunks", streamed=True, max_chunk_residues=len(setup.residues) // 4 + 1)


def watch_launches(gpu):
    """Record each kernel launch of the engine from now on: (grid, subjects, overflow list after
    it or None, CUDA events around it); ``del gpu._launch`` stops it."""
    launches = []
    launch = gpu._launch

    def timed(kernel, block, c, order, n_order, query, grid, smem, scratch, slots):
        cp = gpu.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(gpu.stream)
        launch(kernel, block, c, order, n_order, query, grid, smem, scratch, slots)
        end.record(gpu.stream)
        n_over = int(gpu.counters[2:3].get()[0])
        over = gpu.overflow[:2 * n_over].get().reshape(-1, 2) if n_over else None
        launches.append((grid, int(n_order), over, (start, end)))

    gpu._launch = timed
    return launches


def time_gapped(gpu, setup, work, band, budget=None, kernel="warp"):
    """GpuPrelim.run on one query's init HSPs (best of 3; kernel part apart) against the numba code,
    and the numba code's time for the subjects the GPU leaves to the CPU."""
    from gpu_search.blast import gapped
    from gpu_search.blast.gpu.gapped import CELL_BUDGET, GpuPrelim

    budget = CELL_BUDGET if budget is None else (budget or 1 << 30)
    prelim = GpuPrelim(gpu, band=band, cell_budget=budget, kernel=kernel)
    cut = work.cutoffs
    args = (work.codes, setup.matrix.scores, setup.gap_open, setup.gap_extend, cut.x_drop_gapped,
            cut.cutoff_score)
    launch = prelim._launch
    spent = [0.0]

    def timed_launch(*a):
        t = time.perf_counter()
        r = launch(*a)
        spent[0] += time.perf_counter() - t
        return r

    prelim._launch = timed_launch
    best = best_launch = 1e9
    for _ in range(3):
        spent[0] = 0.0
        t = time.perf_counter()
        hsps, left = prelim.run(work.init, *args)
        best = min(best, time.perf_counter() - t)
        best_launch = min(best_launch, spent[0])
    t = time.perf_counter()
    ref, _ = gapped.preliminary_gapped_hsps_batch(work.init, work.codes, setup.residues, setup.offsets,
                                                  *args[1:])
    t_cpu = time.perf_counter() - t
    t = time.perf_counter()
    cpu, _ = gapped.preliminary_gapped_hsps_batch(left, work.codes, setup.residues, setup.offsets, *args[1:])
    t_left = time.perf_counter() - t
    both = np.concatenate([hsps, cpu])
    same = np.array_equal(both[np.argsort(both["subject"], kind="stable")], ref)
    print(f"  gapped, {kernel:>6} kernel, ring {band}, budget {budget:>10}: {best * 1e3:8.2f} ms on the GPU "
          f"(kernel GPU time {prelim.kernel_seconds / 3 * 1e3:.2f} ms, kernel+copies "
          f"{best_launch * 1e3:.2f} ms), {len(np.unique(left['subject']))} subjects left to the CPU "
          f"({prelim.overflowed // 3} overflowed) {t_left * 1e3:.1f} ms on one CPU thread; "
          f"all on one CPU thread {t_cpu * 1e3:.1f} ms; same HSPs: {same}", flush=True)
    assert same


if __name__ == "__main__":
    main()
