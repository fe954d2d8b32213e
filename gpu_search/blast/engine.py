"""One blastp run, from its options to its rows (``run_blastp``).

It builds the run's setup, starts the traceback's worker processes and the GPU
engines where the run uses GPUs, hands the queries to the scheduler and writes
each query's rows in query order.  The parts, one module each:

    pipeline.py    the stages of one query, in BLAST+'s order (the CPU path)
    hitlist.py     E-values, BLAST's order of subjects, the preliminary hit list and its cuts
    scheduler.py   who runs which stage where: GPU feeders, gapped launchers, CPU threads
    workers.py     the traceback's worker processes
    settings.py    how the run uses the machine (``BlastSettings``)
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from dataclasses import dataclass, field

from . import pipeline, workers
from .crossover import auto_device
from .hitlist import output_batches, select_batch
from .options import BlastOptions
from .output import PAIRWISE, TABULAR, XML, row_formatter, write_footer, write_query
from .scheduler import PhaseTimes, Scheduler
from .settings import BlastSettings


@dataclass(frozen=True)
class GpuEngineTypes:
    """The classes a GPU run builds its engines from: ``blast.gpu``'s by default (tests pass
    stand-ins that run on the CPU, as ``hmmsearch(..., backend=)`` takes a backend)."""

    ungapped: type      # GpuUngapped: the database on one GPU, the ungapped stage
    gapped: type        # GpuPrelim: the preliminary gapped kernel on one stream of a GPU
    traceback: type | None = None   # GpuTraceback: the traceback's alignments on one stream of a GPU


@dataclass
class GpuEngines:
    """The GPU side of a run: ``settings.streams`` ungapped engines per GPU (each on a stream
    and host thread of its own) and each GPU's gapped engines (``settings.gapped_threads``)."""

    ungapped: list = field(default_factory=list)
    gapped: dict = field(default_factory=dict)       # id(ungapped engine) -> its GPU's gapped engines
    per_device: dict = field(default_factory=dict)   # device id -> that GPU's gapped engines
    tracers: list = field(default_factory=list)      # GpuTraceback launchers (GPUs with a resident database)


def build_gpu_engines(setup: pipeline.SearchSetup, ids: list[int], settings: BlastSettings,
                      types: GpuEngineTypes) -> GpuEngines:
    """The database on every GPU of ``ids``, its engines and gapped engines."""
    streaming = dict(streamed=True, max_chunk_residues=settings.stream_residues) if settings.stream_residues else {}
    engines = GpuEngines()
    engines.ungapped = [types.ungapped(setup.residues, setup.offsets, device_id=d, extension=settings.extension,
                                       window_lanes=settings.window_lanes, prefilter=settings.prefilter,
                                       queries_per_pass=settings.queries_per_pass,
                                       length_order=setup.subjects.length_order, **streaming)
                        for d in ids]
    # several queries in flight per GPU, each engine on its own stream and host thread
    engines.ungapped += [e.worker() for e in list(engines.ungapped) if not e.streamed
                         for _ in range(settings.streams - 1)]
    if settings.gapped:
        kw = {} if settings.gapped_cells is None else dict(cell_budget=settings.gapped_cells)
        # several launchers per GPU, each on a stream of its own (twins of the GPU's first
        # engine): the kernel lasts as long as its longest subject and leaves most of the GPU
        # free, and each launcher's host work (inputs, purge) overlaps the others' kernels
        for e in engines.ungapped:
            if not e.streamed and e.device_id not in engines.per_device:
                engines.per_device[e.device_id] = [types.gapped(e.stream_twin(), kernel=settings.gapped_kernel, **kw)
                                                   for _ in range(settings.gapped_threads)]
        engines.gapped = {id(e): engines.per_device[e.device_id] for e in engines.ungapped if not e.streamed}
    if settings.traceback_gpu and types.traceback is not None:
        # each GPU's traceback launchers, on streams of their own (twins of its first engine)
        firsts = {e.device_id: e for e in reversed(engines.ungapped) if not e.streamed}
        engines.tracers = [types.traceback(e.stream_twin(), kernel=settings.traceback_kernel) for e in firsts.values()
                           for _ in range(settings.traceback_threads)]
    return engines


def _start_gpus(setup, device: str, quiet: bool, gpus, settings: BlastSettings, types: GpuEngineTypes | None,
                times: PhaseTimes, started) -> GpuEngines:
    """The run's GPU engines, or none where ``device`` resolves to the CPU.  ``started`` is
    called once CUDA is up, before the database's upload."""
    t0 = time.perf_counter()
    if types is None:
        from ..device import resolve, wait_cuda

        wait_cuda()                        # (started by the command while it read the inputs)
        if resolve(device, quiet) != "gpu":
            return GpuEngines()
        from ..gpu import check_gpus
        from .gpu import GpuUngapped
        from .gpu.gapped import GpuPrelim
        from .gpu.traceback import GpuTraceback

        types = GpuEngineTypes(GpuUngapped, GpuPrelim, GpuTraceback)
        ids = check_gpus(gpus)
    else:                                  # stand-ins: the GPU ids they are given
        ids = list(gpus) if gpus else [0]
    times.add("GPU start (CUDA; overlapped with the inputs)", t0)
    started()
    t0 = time.perf_counter()
    engines = build_gpu_engines(setup, ids, settings, types)
    times.add("GPU upload", t0)
    return engines


def _warm_up_lookup(queries, setup) -> None:
    """The first query's statistics and lookup table, thrown away: numba loads its code."""
    try:
        pipeline.prepare_query(pipeline.new_work(0, queries), setup)
    except Exception:                  # only a warm-up: the real call reports any error
        pass


def _xml_writer(fh, queries, subjects, setup, db_name: str):
    """-outfmt 5: the BLAST XML writer, its header from the first query and the run's settings."""
    from .xml import XmlWriter

    return XmlWriter(fh, db_name=db_name, matrix=setup.matrix.name, evalue=setup.options.evalue,
                     gap_open=setup.gap_open, gap_extend=setup.gap_extend,
                     first_query_title=queries.header(0),
                     first_query_len=int(queries.lengths[0]))


def _xml_query(xml, i: int, title: str, length: int, rows, subjects, setup) -> None:
    """One query's Iteration, with its statistics as BLAST+ reports them: the whole database's
    real size (-dbsize counts in the search space only), the gapped K, lambda and H."""
    from . import stats

    g = setup.gapped
    eff = stats.effective_lengths(length, int(subjects.total_residues), int(subjects.total_seqs), g,
                                  dbsize=setup.options.dbsize)
    xml.query(i, title, length, rows, db_num_seqs=int(subjects.total_seqs),
              db_length=int(subjects.total_residues), length_adjustment=eff.length_adjustment,
              eff_space=eff.eff_searchsp, kappa=g.kbp.K, lambda_=g.kbp.Lambda, entropy=g.kbp.H)


def _pairwise_writer(fh, subjects, setup, db_name: str, num_alignments: int | None):
    """-outfmt 0: the pairwise report's writer.  BLAST+ shows -max_target_seqs descriptions
    and alignments where it is given, else 500 and 250 (``num_alignments`` None: not given)."""
    from .pairwise import PairwiseWriter

    n = setup.options.max_target_seqs
    return PairwiseWriter(fh, db_name=db_name, db_num_seqs=int(subjects.total_seqs),
                          db_length=int(subjects.total_residues), matrix=setup.matrix.name,
                          gap_open=setup.gap_open, gap_extend=setup.gap_extend, threshold=setup.threshold,
                          window_size=setup.window_size, num_descriptions=n,
                          num_alignments=n if num_alignments is None else num_alignments)


def _pairwise_query(pw, i: int, title: str, length: int, rows, queries, subjects, setup) -> None:
    """One query's part of the pairwise report, with its statistics as BLAST+ reports them:
    the query's ungapped Karlin block, the gapped one, the effective search space, and each
    subject's composition-statistics method."""
    from . import stats
    from .pairwise import subject_groups, adjustment_methods

    codes = pipeline.new_work(i, queries).codes
    g = setup.gapped
    eff = stats.effective_lengths(length, int(subjects.total_residues), int(subjects.total_seqs), g,
                                  dbsize=setup.options.dbsize)
    first = int(setup.subjects.first_index)

    def subject_codes(oid):
        s = oid - first
        return setup.residues[setup.offsets[s]:setup.offsets[s + 1]]

    groups = subject_groups(rows)[:pw.num_alignments]
    methods = adjustment_methods(groups, codes, subject_codes, setup, setup.options.comp_based_stats)
    pw.query(title, length, rows, ungapped=stats.ungapped_params(codes, setup.matrix), gapped=g,
             eff_space=eff.eff_searchsp, methods=methods)


def run_blastp(queries, subjects, options: BlastOptions, fh, *, fmt: int, columns: list[str],
               db_name: str, quiet: bool = False, hits_out=None, device: str = "cpu",
               gpus: list[int] | None = None, settings: BlastSettings | None = None,
               engine_types: GpuEngineTypes | None = None, num_alignments: int | None = None) -> None:
    """Search every query against the database and write the rows.

    ``device`` (``--device``: auto, gpu, cpu; resolved once the options
    and inputs are known good): "gpu" runs hit detection, the two-hit filter
    and ungapped extension on the GPUs ``gpus`` (default: all visible; each
    holds the database and takes the next queries), with ``settings.gapped``
    also the preliminary gapped extensions of subjects with few init HSPs, and
    the rest of the gapped stages on CPU threads, overlapped; the CPU path
    runs everything on CPU threads.  The rows are the same.  ``settings``:
    how the machine is used (:class:`BlastSettings`, defaults measured);
    ``engine_types``: the GPU engines' classes, for stand-ins (then no GPU is
    looked for).  ``num_alignments``: -outfmt 0's alignments shown (None: as many as
    -max_target_seqs, BLAST+'s rule where it is given).

    With ``hits_out`` the rows are also saved, with full-precision E-values
    and database positions, for merging the results of database shards
    (:mod:`gpu_search.blast.merge`).
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    from ..progress import Progress

    settings = settings or BlastSettings()
    times = PhaseTimes(settings.timeline)
    t0 = t_start = time.perf_counter()
    if not quiet and sys.stderr.isatty():
        from .._numba import not_compiled_here
        from .traceback import _traceback_kernel

        if not_compiled_here(_traceback_kernel):
            print("gpu-search blastp: the first run on this host compiles its loops (about 20 s on 16 cores; "
                  "`gpu-search compile` does it once, ahead of time)", file=sys.stderr)
    setup = pipeline.make_setup(subjects, options, queries.lengths)
    times.add("setup", t0)
    threads = options.num_threads or os.cpu_count() or 1
    if device == "auto" and engine_types is None:     # (options and inputs known good: said now)
        device = auto_device(queries.n_seqs, queries.n_residues, subjects.n_residues, threads)
    procs = None
    maybe_gpu = engine_types is not None or device == "gpu" or \
        (device == "auto" and importlib.util.find_spec("cupy") is not None)
    # a CPU run with composition-based statistics runs whole queries on the processes: the
    # Python between the redo's compiled steps runs on one thread at a time on threads (the
    # interpreter lock)
    cpu_processes = bool(options.comp_based_stats) and threads > 1
    if (maybe_gpu or cpu_processes) and settings.traceback_processes:
        # the traceback's processes, forked before any thread of ours but device.start_cuda's,
        # which may be starting CUDA in the driver (the workers never call CUDA, as PyTorch's
        # DataLoader workers forked after CUDA's start, and CuPy was imported on this thread):
        # given back below if the run is on the CPU after all
        t0 = time.perf_counter()
        row_text = row_formatter(tuple(columns), TABULAR[fmt]) if fmt in TABULAR and hits_out is None else None
        procs = workers.start_workers(setup, queries, threads, row_text)
        times.add("worker processes started", t0)

    def warm_up():
        # the statistics' and lookup's compiled code loaded while the database is uploaded
        # (the copy waits on the GPU without the GIL), not before the first query.  Not
        # during CuPy's import: two threads importing modules only take turns.
        threading.Thread(target=_warm_up_lookup, args=(queries, setup), name="warm-up", daemon=True).start()

    try:
        engines = _start_gpus(setup, device, quiet, gpus, settings, engine_types, times, warm_up)
        if not engines.ungapped and not cpu_processes:
            workers.shut_down(procs)           # a CPU run: threads do everything
            procs = None
        progress = Progress("blastp", queries.n_seqs, "queries", quiet)
        saved = []
        n_done = 0
        # The GPU threads release the GIL at every kernel wait and copy; with many CPU
        # threads running Python between their compiled stages, each release can cost
        # a whole round of 5 ms switch intervals before the GIL comes back
        # (bench/probes/gil_convoy.py on 2 cores: 200 releases among 15 busy threads took
        # 16-23 s at 5 ms, 2.2-2.7 s at 0.5 ms).  A shorter interval while the GPUs are fed.
        switch_interval = sys.getswitchinterval()
        if engines.ungapped and settings.switch_interval > 0:
            sys.setswitchinterval(settings.switch_interval)
        try:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="blastp") as pool:
                # the traceback's alignments on the GPUs, for the worker processes (without
                # composition-based statistics: the redo aligns with its own matrices)
                tracers = engines.tracers if procs is not None and not options.comp_based_stats else []
                scheduler = Scheduler(queries, setup, pool, threads, engines.ungapped, times, engines.gapped,
                                      procs, settings, tracers)
                # queries are independent: several at a time, written in input order
                xml = _xml_writer(fh, queries, subjects, setup, db_name) if fmt == XML else None
                pw = _pairwise_writer(fh, subjects, setup, db_name, num_alignments) if fmt == PAIRWISE else None
                # a batch's queries are written together (hitlist.output_batches)
                batch_ends = {b.stop - 1 for b in output_batches(queries.lengths, options.comp_based_stats)}
                pending = []
                for i, results in enumerate(scheduler.results_in_order()):
                    pending.append(results)
                    if i not in batch_ends:
                        continue
                    chosen = select_batch(pending, options.max_target_seqs, options.comp_based_stats,
                                          options.blast_threads)
                    for k, (results, kept) in enumerate(zip(pending, chosen), start=i + 1 - len(pending)):
                        qtitle = queries.header(k)
                        rows = [h for r in kept for h in r.rows]
                        if xml is not None:
                            _xml_query(xml, k, qtitle, int(queries.lengths[k]), rows, subjects, setup)
                        elif pw is not None:
                            _pairwise_query(pw, k, qtitle, int(queries.lengths[k]), rows, queries, subjects,
                                            setup)
                        else:
                            write_query(fh, fmt, columns, qtitle, db_name, rows)
                        if hits_out is not None:
                            saved.append((qtitle, int(queries.lengths[k]), results))
                    n_done += len(pending)
                    pending = []
                    progress.update(n_done)
        finally:
            sys.setswitchinterval(switch_interval)
        progress.close()
        for gpu in engines.ungapped:
            for part, seconds in getattr(gpu, "seconds", {}).items():
                times.add_seconds(f"GPU phases threads: {part}", seconds)
        for per_gpu in engines.per_device.values():
            for prelim in per_gpu:
                times.add_seconds("preliminary gapped kernel (GPU time)", prelim.kernel_seconds)
                for part, seconds in prelim.seconds.items():
                    times.add_seconds(f"gapped GPU threads: {part}", seconds)
        for tracer in engines.tracers:
            times.add_seconds("traceback kernel (GPU time)", tracer.kernel_seconds)
            for part, seconds in tracer.seconds.items():
                times.add_seconds(f"traceback GPU threads: {part}", seconds)
            if tracer.overflowed:
                times.count("traceback jobs left to the CPU", tracer.overflowed)
        if fmt == XML:
            xml.close()
        elif fmt == PAIRWISE:
            pw.close()
        else:
            write_footer(fh, fmt, n_done)
        if hits_out is not None:
            from .merge import save_hits

            save_hits(hits_out, saved, options=options, db_name=db_name, database=subjects)
        times.save_timeline(t_start)
        if settings.timings:
            print(f"gpu-search blastp timings: {times.line()}  wall {time.perf_counter() - t_start:.2f} s",
                  file=sys.stderr)
    finally:
        workers.shut_down(procs)
