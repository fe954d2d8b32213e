"""The blastp engine: the stages in BLAST+'s order, for every query (the CPU path).

For each query against the whole database (BLAST+ searches queries in
batches, but every decision below is taken per query: checked against the binary):

1. ungapped stage per query (``ungapped.py``): lookup table, word hits binned
   by diagonal, two-hit rule, ungapped X-drop extension -> init HSPs;
2. preliminary gapped stage per subject (``gapped.py``), restricted first where
   BLAST decides so, exact where a restricted score lands near the cutoff;
   E-values (Spouge), HSPs over the preliminary E threshold dropped
   (``Blast_HSPListReapByEvalue``);
3. preliminary hit list per query: the best ``prelim_hitlist_size`` subjects
   (``Blast_HitListUpdate``, ``s_EvalueCompareHSPLists``);
4. traceback per query and subject (``traceback.py``): ALIGN_EX, purging,
   E-values, reap by -evalue; ``-max_hsps``;
5. subjects sorted by best E-value, then best score, then later database
   position first, cut to ``-max_target_seqs``; rows written.

Queries run on a thread pool (the compiled stages release the GIL); rows are
written in query order.  With a GPU (``device="gpu"``), stage 1 runs there
(blast/gpu: cuBLASTP's hit detection, binning, two-hit filter and ungapped
extension) query after query, while CPU threads run stages 2-4 of the
queries already through it (most of stage 2 on the GPU too) and worker
processes their tracebacks (stage 4's last part, 5).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..errors import DeviceError, OptionError
from . import gapped, stats, traceback
from .alphabet import EASEL_TO_NCBISTDAA, NCBISTDAA, blast_query_codes, easel_to_ncbistdaa
from .lookup import build_lookup
from .matrix import load_matrix
from .options import BlastOptions
from .output import Hsp, fields_reduce, write_footer, write_query
from .ungapped import UngappedJob, ungapped_extensions

EVALUE_EPSILON = 1.0e-180          # s_EvalueComp: smaller E-values compare equal
GPU_STREAMS = 3                    # queries in flight per GPU (--gpu-streams; measured, docs/benchmarks.md)
GPU_SWITCH_INTERVAL = 0.0005       # seconds: the interpreter's GIL switch interval during GPU runs
PRELIM_THREADS = 2                 # host threads (and streams) per GPU launching that kernel (1 or 2:
#                                    2 faster in the last three runs on an H100, docs/benchmarks.md)
TRACEBACK_SPLIT = 20_000           # a query's hit list whose HSPs span more query letters than this
#                                    is traced back on several worker processes (its tail ends the run)
PRELIM_BATCH_QUERIES = 4           # most queries per launch of the GPU's preliminary gapped kernel (measured:
#                                    docs/benchmarks.md; larger batches bunch the CPU work that follows)


@dataclass
class SearchSetup:
    """Everything fixed for a whole run: matrix, gap costs, database in BLAST's alphabet."""

    options: BlastOptions
    matrix: object
    gap_open: int
    gap_extend: int
    gapped: object
    threshold: float
    window_size: int              # two-hit window: -window_size, or the matrix's default
    residues: np.ndarray          # the database, NCBIstdaa codes
    offsets: np.ndarray
    lengths: np.ndarray
    db_length: int                # residues for statistics: -dbsize, or the whole database's
    subjects: object              # the SequenceDB (names, titles)


@dataclass
class QueryWork:
    """One query's state through the stages."""

    index: int
    codes: np.ndarray
    kbp: object = None
    cutoffs: object = None
    init: np.ndarray = field(default_factory=lambda: np.zeros(0))  # INIT_HSP rows, subject by subject
    prelim: dict = field(default_factory=dict)            # subject -> PRELIM_HSP rows (E-value reaped)
    evalues: dict = field(default_factory=dict)           # (score, subject length) -> E-value


def make_setup(subjects, options: BlastOptions) -> SearchSetup:
    matrix = load_matrix(options.matrix)
    go, ge = matrix.default_gap
    go = options.gapopen if options.gapopen is not None else go
    ge = options.gapextend if options.gapextend is not None else ge
    if options.gapopen is not None and options.gapextend is None or \
            options.gapopen is None and options.gapextend is not None:
        raise OptionError("give both -gapopen and -gapextend, or neither")
    gapped_params = stats.gapped_params(matrix.name, go, ge)
    if options.dbsize is not None:
        db_length = int(options.dbsize)
    else:  # a .gsdb shard knows the whole database's size
        db_length = int(subjects.total_residues)
    return SearchSetup(
        options=options, matrix=matrix, gap_open=go, gap_extend=ge, gapped=gapped_params,
        threshold=options.threshold if options.threshold is not None else matrix.word_threshold,
        window_size=options.window_size if options.window_size is not None else matrix.window_size,
        residues=easel_to_ncbistdaa(subjects.residues, options.num_threads or os.cpu_count() or 1),
        offsets=np.asarray(subjects.offsets, dtype=np.int64),
        lengths=np.asarray(subjects.lengths, dtype=np.int64),
        db_length=db_length, subjects=subjects,
    )


# --- 1. ungapped stage -------------------------------------------------------------------


def prepare_query(work: QueryWork, setup: SearchSetup):
    """Statistics, cutoffs and lookup table of one query (None when BLAST skips the query)."""
    q = work.codes
    work.kbp = stats.ungapped_params(q, setup.matrix)
    if work.kbp is None:          # BLAST: no valid Karlin block for this query (e.g. all X)
        return None
    work.cutoffs = stats.search_cutoffs(work.kbp, setup.gapped, len(q), stats.BLAST_SEQSRC_MINLENGTH,
                                        setup.db_length, evalue=setup.options.evalue)
    return build_lookup(q, setup.matrix.scores, setup.options.word_size, setup.threshold)


def ungapped_stage(work: QueryWork, setup: SearchSetup, gpu=None, lookup=None) -> None:
    """Init HSPs of one query: on the GPU (``gpu``: a blast.gpu.GpuUngapped) or the CPU.

    ``lookup``: the query's table if ``prepare_query`` already ran.
    """
    if lookup is None:
        lookup = prepare_query(work, setup)
    if lookup is None:
        return
    job = ungapped_job(work, setup, lookup)
    if gpu is not None:
        work.init = gpu.ungapped_extensions(*job)
        return
    work.init = ungapped_extensions(
        job.query_codes, lookup, setup.residues, setup.offsets, np.arange(len(setup.lengths), dtype=np.int64),
        setup.matrix.scores, x_drop=job.x_drop, cutoff=job.cutoff, window=job.window, method="scan")


def ungapped_job(work: QueryWork, setup: SearchSetup, lookup) -> UngappedJob:
    """The ungapped stage's arguments for one query (a GPU batch takes a list of them)."""
    cut = work.cutoffs
    return UngappedJob(work.codes, lookup, setup.matrix.scores, x_drop=min(cut.x_drop_ungapped, cut.ungapped_cutoff),
                       cutoff=cut.ungapped_cutoff, window=setup.window_size)


def ungapped_batch(items: list, setup: SearchSetup, gpu) -> None:
    """Init HSPs of several queries ((work, lookup) pairs) in one pass of the GPU ``gpu`` over
    the database (GpuUngapped.ungapped_extensions_many); a query without a lookup table has none."""
    on_gpu = [(work, lookup) for work, lookup in items if lookup is not None]
    if len(on_gpu) == 1:
        work, lookup = on_gpu[0]
        ungapped_stage(work, setup, gpu, lookup)
    elif on_gpu:
        found = gpu.ungapped_extensions_many([ungapped_job(work, setup, lookup) for work, lookup in on_gpu])
        for (work, _), init in zip(on_gpu, found, strict=True):
            work.init = init


# --- 2. preliminary gapped stage -----------------------------------------------------------


def _evalue(score: int, work, setup, subject_len: int) -> float:
    """Spouge E-value of a raw score against a subject length, remembered per query
    (HSPs of a query repeat few (score, length) pairs)."""
    key = (score, subject_len)
    e = work.evalues.get(key)
    if e is None:
        g = setup.gapped
        e = work.evalues[key] = stats.spouge_evalue(score, g.kbp, g.gbp, len(work.codes), subject_len,
                                                    setup.db_length)
    return e


def _evalues(scores, work, setup, subject_len: int) -> np.ndarray:
    return np.array([_evalue(int(s), work, setup, int(subject_len)) for s in scores], dtype=np.float64)


def _evalues_by_length(scores, lengths, work, setup) -> np.ndarray:
    """E-values of many (score, subject length) pairs: each distinct pair computed once."""
    pairs, inverse = np.unique(np.stack([np.asarray(scores, np.int64), np.asarray(lengths, np.int64)]),
                               axis=1, return_inverse=True)
    ev = np.array([_evalue(int(sc), work, setup, int(n)) for sc, n in pairs.T], dtype=np.float64)
    return ev[inverse.ravel()]


PRELIM_PIECE = 4096      # init HSPs per task when one query's gapped stage is spread over threads


def prelim_hsps(init: np.ndarray, work: QueryWork, setup: SearchSetup) -> dict:
    """Preliminary gapped HSPs of the subjects of ``init`` (init HSPs, whole subjects), E-value reaped.

    BLAST_GetGappedScore per subject, restricted extensions first where the
    query's best init HSP of the subject is below 0.68 x its cutoff (decided
    per query: what BLAST+ 2.12 does even for queries searched together), then
    Blast_HSPListReapByEvalue with the preliminary E-value.  Subjects are
    independent, so any split of the init HSPs at subject boundaries gives
    the same HSPs.

    Returns:
        {subject: PRELIM_HSP rows}.
    """
    if work.cutoffs is None or not len(init):
        return {}
    cut = work.cutoffs
    hsps, _ = gapped.preliminary_gapped_hsps_batch(
        init, work.codes, setup.residues, setup.offsets, setup.matrix.scores,
        setup.gap_open, setup.gap_extend, cut.x_drop_gapped, cut.cutoff_score,
        restricted=None, expect_value=setup.options.evalue)
    return reap_by_evalue(hsps, work, setup)


def reap_by_evalue(hsps: np.ndarray, work: QueryWork, setup: SearchSetup) -> dict:
    """Blast_HSPListReapByEvalue with the preliminary E-value, on PRELIM_BATCH rows.

    Returns {subject: its rows whose E-value is <= the threshold, order kept}.
    """
    if not len(hsps):
        return {}
    ev = _evalues_by_length(hsps["score"], setup.lengths[hsps["subject"]], work, setup)
    kept = hsps[ev <= work.cutoffs.prelim_evalue]
    if not len(kept):
        return {}
    subj = kept["subject"]
    starts = np.flatnonzero(np.r_[True, subj[1:] != subj[:-1]])
    return {int(subj[a]): kept[a:b] for a, b in zip(starts, np.r_[starts[1:], len(kept)])}


def prelim_stage(work: QueryWork, setup: SearchSetup) -> None:
    """Preliminary gapped HSPs of every subject with init HSPs (``prelim_hsps``), in ``work.prelim``."""
    work.prelim.update(prelim_hsps(work.init, work, setup))


def init_pieces(init: np.ndarray, size: int | None = None) -> list[np.ndarray]:
    """A query's init HSPs cut at subject boundaries into pieces of about ``size`` rows (PRELIM_PIECE)."""
    size = size or PRELIM_PIECE
    if len(init) <= size:
        return [init]
    subj = init["subject"]
    starts = np.flatnonzero(np.r_[True, subj[1:] != subj[:-1]])
    cuts = np.unique(starts[np.minimum(np.searchsorted(starts, np.arange(size, len(init), size)),
                                       len(starts) - 1)])
    bounds = [0, *[int(c) for c in cuts if c > 0], len(init)]
    return [init[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


# --- 3-5. hit list, traceback, ordering ------------------------------------------------------


def _evalue_key(e: float) -> float:
    return 0.0 if e < EVALUE_EPSILON else e


def _list_order_key(best_evalue: float, best_score: int, oid: int):
    """s_EvalueCompareHSPLists: E-value up, score down, ordinal id down."""
    return (_evalue_key(best_evalue), -best_score, -oid)


@dataclass
class SubjectResult:
    """One subject's final rows for a query, with the two keys BLAST orders subjects by.

    ``prelim_key`` ranks it in the preliminary hit list (best preliminary
    E-value, score, later database position first), ``final_key`` in the
    output; ``oid`` is the position in the whole database (shards included).
    """

    oid: int
    prelim_key: tuple
    final_key: tuple
    rows: list

    def __reduce__(self):
        return fields_reduce(self)


def prelim_hitlist_size(max_target_seqs: int) -> int:
    """SBlastHitsParametersNew (gapped search, no composition statistics)."""
    return max(min(2 * max_target_seqs, max_target_seqs + 50), 10)


def select(results: list[SubjectResult], max_target_seqs: int) -> list[SubjectResult]:
    """BLAST's subjects for output: the preliminary hit list (its best
    ``prelim_hitlist_size`` subjects), traced back, sorted, cut to max_target_seqs.

    Works on one search's results or on the union of database shards' results.
    """
    kept = sorted(results, key=lambda r: r.prelim_key)[: prelim_hitlist_size(max_target_seqs)]
    return sorted(kept, key=lambda r: r.final_key)[:max_target_seqs]


def final_stage(work: QueryWork, setup: SearchSetup, queries) -> list[SubjectResult]:
    """Traceback of the subjects of the preliminary hit list (Blast_HitListUpdate)."""
    return traceback_stage(work, setup, queries, hit_list(work, setup))


def hit_list(work: QueryWork, setup: SearchSetup) -> list[tuple]:
    """The preliminary hit list: (order key, subject) of the subjects kept for the traceback,
    best first (Blast_HitListUpdate)."""
    if not work.prelim:
        return []
    first = int(setup.subjects.first_index)
    # every subject's best E-value and score at once (a query has thousands of subjects here,
    # chance hits mostly: a Python loop over them held the GIL the GPU threads wait for)
    subjects = list(work.prelim)
    counts = np.array([len(work.prelim[s]) for s in subjects], dtype=np.int64)
    scores = np.concatenate([work.prelim[s]["score"] for s in subjects]).astype(np.int64)
    ev = _evalues_by_length(scores, np.repeat(setup.lengths[subjects], counts), work, setup)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    best_ev = np.minimum.reduceat(ev, starts).tolist()
    best_score = np.maximum.reduceat(scores, starts).tolist()
    lists = sorted((_list_order_key(e, sc, first + s), s) for e, sc, s in zip(best_ev, best_score, subjects))
    return lists[: prelim_hitlist_size(setup.options.max_target_seqs)]


def traceback_stage(work: QueryWork, setup: SearchSetup, queries, hits: list[tuple]) -> list[SubjectResult]:
    """Final HSPs with traceback of the subjects of ``hits`` (``hit_list``)."""
    opts = setup.options
    first = int(setup.subjects.first_index)
    results = []
    for key, s in hits:
        a, b = setup.offsets[s], setup.offsets[s + 1]
        subject = setup.residues[a:b]
        res = traceback.traceback(
            work.prelim[s], work.codes, subject, setup.matrix.scores, setup.gap_open, setup.gap_extend,
            work.cutoffs.x_drop_final,
            evalue=lambda scores, n=b - a: _evalues(scores, work, setup, n),
            expect_value=opts.evalue)
        if len(res) == 0:
            continue
        # Blast_HSPListSortByEvalue: E-value up, then score (ScoreCompareHSPs)
        order = sorted(range(len(res)), key=lambda i: (_evalue_key(float(res.hsps["evalue"][i])), i))
        if opts.max_hsps is not None:
            order = order[: opts.max_hsps]
        final_key = _list_order_key(float(res.hsps["evalue"][order[0]]), int(res.hsps["score"][order[0]]),
                                    first + s)
        results.append(SubjectResult(first + s, key, final_key, to_hsps(work, setup, queries, s, res, order)))
    return results


# The traceback in worker processes (GPU runs): its Python would otherwise share the GIL with
# the threads feeding the GPUs.  The workers are forked once the database is loaded and
# inherit it (and the queries) from here; each task carries one query's hit list.
_FORKED: tuple | None = None       # (setup, queries) in the worker processes


def _traceback_in_process(index: int, codes, kbp, cutoffs, prelim: dict, gpu_hsps=None,
                          split: int | None = None, hits: list | None = None):
    """The end of one query in a worker process: the E-values of the HSPs the GPU's gapped
    kernel found (``gpu_hsps``, PRELIM_BATCH rows, or None) reaped into ``prelim`` (the
    subjects done on CPU threads), the hit list (or ``hits``, a piece of one) and its
    traceback (``traceback_stage``).

    Returns (("results", results), start, end, process id); with ``split``
    (TRACEBACK_SPLIT) and a hit list whose HSPs span more query letters than that,
    (("pieces", pieces), ...) instead: the hit list cut into pieces of about ``split``
    letters, each (hits, their rows), for this function to trace back on several
    processes (in the hit list's order: the pieces' results, concatenated, are the
    serial ones).

    An error comes back as a RuntimeError carrying the worker's traceback (an exception
    that cannot be pickled back would otherwise be lost)."""
    t0 = time.perf_counter()
    setup, queries = _FORKED
    work = QueryWork(index=index, codes=codes, kbp=kbp, cutoffs=cutoffs, prelim=prelim)
    try:
        if gpu_hsps is not None:
            work.prelim.update(reap_by_evalue(gpu_hsps, work, setup))
        if hits is None:
            hits = hit_list(work, setup)
        pieces = _hit_list_pieces(hits, work.prelim, split) if split is not None else []
        if len(pieces) > 1:                  # (one piece: traced back here)
            return ("pieces", pieces), t0, time.perf_counter(), os.getpid()
        results = traceback_stage(work, setup, queries, hits)
    except Exception as exc:
        import traceback as tb

        raise RuntimeError(f"traceback of query {index + 1} failed: {exc!r}\n{tb.format_exc()}") from None
    return ("results", results), t0, time.perf_counter(), os.getpid()


def _hit_list_pieces(hits: list, prelim: dict, split: int) -> list[tuple]:
    """A hit list cut, in order, into pieces whose HSPs span about ``split`` query letters
    each: [(hits, {subject: rows})] (the whole list as one piece when it spans less)."""
    span = np.array([int(np.sum(prelim[s]["q_end"] - prelim[s]["q_start"])) for _, s in hits], dtype=np.int64)
    total = int(span.sum())
    cuts = np.searchsorted(np.cumsum(span), np.arange(split, total, split), side="right") if total > split else []
    bounds = [0, *sorted({int(c) for c in cuts if 0 < c < len(hits)}), len(hits)]
    return [(hits[a:b], {s: prelim[s] for _, s in hits[a:b]}) for a, b in zip(bounds, bounds[1:])]


def traceback_processes(setup: SearchSetup, queries, workers: int):
    """A pool of ``workers`` forked processes for the traceback, or None where fork is not
    available or ``GPU_SEARCH_TRACEBACK_PROCESSES=0`` (then threads do it)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _FORKED
    if os.environ.get("GPU_SEARCH_TRACEBACK_PROCESSES", "1") == "0" or \
            "fork" not in multiprocessing.get_all_start_methods():
        return None
    _FORKED = (setup, queries)
    procs = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                initializer=_worker_start, initargs=(os.getpid(),))
    try:
        procs.submit(int).result()     # with fork, every worker starts now, before our threads do
    except BaseException:
        _shut_down(procs)
        raise
    return procs


def _worker_start(parent: int) -> None:
    """In each worker: end with the parent, even one killed (a scheduler's SIGKILL or SIGTERM),
    instead of waiting for work forever (Linux's PR_SET_PDEATHSIG)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)    # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:         # the parent died before that
        os._exit(1)
    # load the traceback's compiled code (numba's cache) while the worker waits for its
    # first task, not inside it: all workers at once, while the parent starts the GPUs
    threading.Thread(target=_warm_up_traceback, name="warm-up", daemon=True).start()


def _warm_up_traceback() -> None:
    """One tiny traceback (a doctest of traceback.traceback): numba loads its code."""
    try:
        from .alphabet import encode

        q, s = encode("W" * 10 + "E" * 10 + "W" * 10), encode("W" * 10 + "C" * 10 + "W" * 10)
        prelim = np.array([(110, 0, 10, 0, 10, 5, 5)], dtype=gapped.PRELIM_HSP_DTYPE)
        r = traceback.traceback(prelim, q, s, load_matrix("BLOSUM62").scores, 11, 1, 64)
        r.strings(q, s, NCBISTDAA)
    except Exception:                  # only a warm-up: the real task reports any error
        pass


def _warm_up_lookup(queries, setup: SearchSetup) -> None:
    """The first query's statistics and lookup table, thrown away: numba loads its code."""
    try:
        prepare_query(new_work(0, queries), setup)
    except Exception:                  # only a warm-up: the real call reports any error
        pass


def _shut_down(procs) -> None:
    """End the traceback's worker processes (None: none) and drop what they inherited."""
    global _FORKED
    if procs is not None:
        procs.shutdown(cancel_futures=True)
    _FORKED = None


def to_hsps(work: QueryWork, setup: SearchSetup, queries, s: int, res, order) -> list[Hsp]:
    """Output rows of one subject."""
    db = setup.subjects
    qname = queries.name(work.index)
    qdesc = queries.description(work.index)
    qtitle = f"{qname} {qdesc}" if qdesc else qname
    g = setup.gapped
    a, b = setup.offsets[s], setup.offsets[s + 1]
    subject = setup.residues[a:b]
    sname, sdesc = db.name(s), db.description(s)
    strings = res.strings(work.codes, subject, NCBISTDAA)
    rows = []
    for i in order:
        h = res.hsps[i]
        qseq, sseq = strings[i]
        rows.append(Hsp(
            query_id=qname, query_title=qtitle, query_length=len(work.codes),
            subject_id=sname, subject_title=f"{sname} {sdesc}" if sdesc else sname,
            subject_length=int(b - a), score=int(h["score"]),
            bit_score=stats.bit_score(int(h["score"]), g.kbp), evalue=float(h["evalue"]),
            q_start=int(h["q_start"]) + 1, q_end=int(h["q_end"]),
            s_start=int(h["s_start"]) + 1, s_end=int(h["s_end"]),
            qseq=qseq, sseq=sseq, nident=int(h["num_ident"]), positive=int(h["num_positives"]),
            gaps=int(h["gaps"]), gapopen=int(h["gap_opens"]), oid=int(db.first_index) + int(s)))
    return rows


def new_work(i: int, queries) -> QueryWork:
    codes = blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(queries.sequence(i))])
    return QueryWork(index=i, codes=codes)


class PhaseTimes:
    """Seconds spent per phase, summed over threads (``GPU_SEARCH_TIMINGS=1`` prints them).

    With ``GPU_SEARCH_TIMELINE=file.json`` every timed interval is also kept
    (thread, phase, start, end; bench/timeline.py summarises them)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.events: list | None = [] if os.environ.get("GPU_SEARCH_TIMELINE") else None

    def add(self, phase: str, t0: float) -> None:
        t1 = time.perf_counter()
        self.add_seconds(phase, t1 - t0)
        if self.events is not None:
            with self._lock:
                self.events.append((threading.current_thread().name, phase, t0, t1))

    def save_timeline(self, origin: float) -> None:
        if self.events is not None:
            import json

            with open(os.environ["GPU_SEARCH_TIMELINE"], "w") as fh:
                json.dump([(n, p, a - origin, b - origin) for n, p, a, b in self.events], fh)

    def add_span(self, thread: str, phase: str, t0: float, t1: float) -> None:
        """An interval timed elsewhere (a worker process: perf_counter is the system's monotonic clock)."""
        self.add_seconds(phase, t1 - t0)
        if self.events is not None:
            with self._lock:
                self.events.append((thread, phase, t0, t1))

    def add_seconds(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def count(self, what: str, n: int = 1) -> None:
        """Events counted rather than timed (e.g. hit lists cut into pieces)."""
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def line(self) -> str:
        return "  ".join([f"{k} {v:.2f} s" for k, v in self.seconds.items()] +
                         [f"{k} {v}" for k, v in self.counts.items()])


def search_query(i: int, queries, setup: SearchSetup) -> list[SubjectResult]:
    """All stages for one query: every subject of its preliminary hit list with final rows."""
    work = new_work(i, queries)
    ungapped_stage(work, setup)
    prelim_stage(work, setup)
    return final_stage(work, setup, queries)


def _results_in_order(queries, setup: SearchSetup, pool, threads: int, gpus: list, times: PhaseTimes,
                      gpu_prelims: dict | None = None, procs=None):
    """Each query's results, in query order.

    CPU (``gpus`` empty): queries run whole on the pool's threads.  GPU: one
    thread per GPU feeds it queries (the next one not yet taken; the database
    stays on every GPU), their statistics and lookup tables built ahead on a
    helper thread; each query's init HSPs are cut into pieces (whole subjects)
    whose preliminary gapped extensions run on the pool's threads while the
    GPUs go on with the next queries (cuBLASTP's overlap of GPU and CPU phases;
    pieces keep every thread busy even when one query has most of the work);
    when a query's last piece is done, its traceback (only the preliminary hit
    list's subjects) is queued on the pool as well.  This thread writes the
    queries in order.  With ``gpu_prelims`` ({id(GpuUngapped): [GpuPrelim, ...]},
    the same list for every engine of one GPU) the GPU threads hand each
    query, its init HSPs found, to the GPU's gapped threads (one per
    GpuPrelim, each on a stream of its own), which run the preliminary
    gapped extensions of the subjects with few init HSPs
    (blast/gpu/gapped.py) for the queries waiting, up to
    PRELIM_BATCH_QUERIES, in one kernel launch; the pool gets the E-values
    of their HSPs and the other subjects.  With ``procs`` (``traceback_processes``)
    the tracebacks run on those worker processes instead of the pool.
    """
    n = queries.n_seqs
    gpu_prelims = gpu_prelims or {}
    if not gpus:
        yield from pool.map(lambda i: search_query(i, queries, setup), range(n))
        return

    def prelim_piece(piece, work):
        t0 = time.perf_counter()
        hsps = prelim_hsps(piece, work, setup)
        times.add("preliminary gapped (CPU threads)", t0)
        return hsps

    def reap_piece(hsps, work):
        t0 = time.perf_counter()
        kept = reap_by_evalue(hsps, work, setup)
        times.add("E-values of GPU gapped HSPs (CPU threads)", t0)
        return kept

    def prepare(i):
        t0 = time.perf_counter()
        work = new_work(i, queries)
        lookup = prepare_query(work, setup)
        times.add("statistics+lookup (ahead of the GPU)", t0)
        return work, lookup

    def traceback_task(work):
        t0 = time.perf_counter()
        results = final_stage(work, setup, queries)
        times.add("traceback (CPU threads)", t0)
        return results

    def traceback_in_process(work, gpu_hsps) -> Future:
        """The query's E-values of its GPU gapped HSPs, hit list and traceback on a worker
        process (their Python holds no GIL here), a long hit list's traceback cut into
        pieces for several processes; its results come back to the future."""
        done: Future = Future()
        args = (work.index, work.codes, work.kbp, work.cutoffs)
        lock = threading.Lock()
        pieces_back: dict = {}

        def fail(exc):
            with lock:
                if not done.done():
                    done.set_exception(exc)

        def back(f, piece=None, n_pieces=0):
            try:
                (what, value), t0, t1, pid = f.result()
                times.add_span(f"blastp-process-{pid}", "E-values+traceback (worker processes)", t0, t1)
                if what == "pieces":
                    times.count("hit lists cut into pieces")
                    times.count("pieces", len(value))
                    # handed to a pool thread: this callback runs on the process pool's own
                    # thread, which should not wait on its own queue
                    pool.submit(submit_pieces, value).add_done_callback(
                        lambda g: g.exception() is not None and fail(g.exception()))
                elif piece is None:
                    done.set_result(value)
                else:
                    with lock:
                        pieces_back[piece] = value
                        last = len(pieces_back) == n_pieces
                    if last:
                        done.set_result([r for k in range(n_pieces) for r in pieces_back[k]])
            except BaseException as exc:
                fail(exc)

        def submit_pieces(pieces):
            for k, (hits, rows) in enumerate(pieces):
                procs.submit(_traceback_in_process, *args, rows, hits=hits).add_done_callback(
                    lambda g, k=k, n=len(pieces): back(g, k, n))

        procs.submit(_traceback_in_process, *args, work.prelim, gpu_hsps,
                     TRACEBACK_SPLIT).add_done_callback(back)
        return done

    def submit(work, gpu_hsps=None) -> Future:
        """The query's gapped pieces on the pool (and the E-values of the gapped HSPs found
        on the GPU, or with ``procs`` on the worker process with the traceback); when the
        last one is done its traceback goes on the pool or a process.  The returned future
        gives the query's results."""
        pieces = init_pieces(work.init)
        done: Future = Future()
        left = [len(pieces)]
        lock = threading.Lock()

        def fail(exc):
            with lock:
                if not done.done():
                    done.set_exception(exc)

        def finished(f):
            if f.exception() is not None:
                fail(f.exception())
            else:
                done.set_result(f.result())

        def piece_done(f):
            try:
                hsps = f.result()
                with lock:
                    work.prelim.update(hsps)
                    left[0] -= 1
                    last = left[0] == 0
                if last and procs is not None:
                    traceback_in_process(work, gpu_hsps).add_done_callback(finished)
                elif last:
                    pool.submit(traceback_task, work).add_done_callback(finished)
            except BaseException as exc:
                fail(exc)

        reap_here = gpu_hsps is not None and procs is None
        if reap_here:
            left[0] += 1
        for piece in pieces:
            pool.submit(prelim_piece, piece, work).add_done_callback(piece_done)
        if reap_here:
            pool.submit(reap_piece, gpu_hsps, work).add_done_callback(piece_done)
        return done

    # shared by the GPU threads: the next query, the tables built ahead, the results by query
    state = threading.Condition()
    taken = [0]
    ahead_futures: dict = {}
    results: dict = {}
    errors: list = []
    # bounds the queries taken whose results are not ready (their init HSPs are held); a
    # query's room is given back when its results are, not when they are written: one slow
    # query (a long traceback) must not hold back the GPUs until it is written
    # (a GPU taking queries in batches, one pass over the database each -- a streamed
    # database -- holds a batch's worth more)
    per_pass = {id(g): max(1, int(getattr(g, "queries_per_pass", 1))) for g in gpus}
    room = 2 * threads + 2 * len(gpus) + sum(b - 1 for b in per_pass.values())
    in_flight = threading.Semaphore(room)
    # and a looser bound on the queries taken and not yet written (finished results wait
    # for the slow query before them)
    unwritten_cap = 4 * room
    written = [0]
    lookahead = max(2 + 2 * len(gpus), *per_pass.values())

    def take(ahead, wait=True):
        """The next query and its tables' future, or None: none left (or, with ``wait``
        False, none to be taken now without waiting for the writer)."""
        with state:
            while taken[0] - written[0] >= unwritten_cap and not errors:
                if not wait:
                    return None
                state.wait()
            i = taken[0]
            if i >= n or errors:
                return None
            taken[0] += 1
            for k in range(i, min(n, i + lookahead)):
                if k not in ahead_futures:
                    ahead_futures[k] = ahead.submit(prepare, k)
            return i, ahead_futures.pop(i)

    def publish(i, future):
        future.add_done_callback(lambda f: in_flight.release())
        with state:
            results[i] = future
            state.notify_all()

    def give_up(exc):                       # handed to the writer, which raises it
        with state:
            errors.append(exc)
            state.notify_all()

    # per GpuPrelim: the queries handed over and not yet launched, the GPU threads still feeding it
    waiting = {id(ps): [] for ps in gpu_prelims.values()}
    feeders = {id(ps): sum(1 for g in gpus if gpu_prelims.get(id(g)) is ps) for ps in gpu_prelims.values()}

    def produce(gpu, ahead):
        prelims = gpu_prelims.get(id(gpu))
        passes = 0
        try:
            while True:
                t0 = time.perf_counter()
                while not in_flight.acquire(timeout=0.1):
                    if errors:                  # queries not published never give their room back
                        return
                times.add("GPU threads held back (queries in flight)", t0)
                item = take(ahead)
                if item is None:
                    in_flight.release()
                    return
                # and more, up to a pass's worth, where there is room now.  Batches ramp up
                # 1, 2, 4... so that the CPU stages start as early as with single queries, and
                # the last ones are shared between the GPUs
                left = n - taken[0] + 1               # queries not taken yet, this one too
                most = min(per_pass[id(gpu)], 1 << min(passes, 16), -(-left // len(gpus)))
                passes += 1
                items = [item]
                while len(items) < most and in_flight.acquire(blocking=False):
                    item = take(ahead, wait=False)
                    if item is None:
                        in_flight.release()
                        break
                    items.append(item)
                batch = [(i, *prepared.result()) for i, prepared in items]
                t0 = time.perf_counter()
                ungapped_batch([(work, lookup) for _, work, lookup in batch], setup, gpu)
                times.add("GPU phases", t0)
                for i, work, _ in batch:
                    if prelims is not None and len(work.init):
                        with state:
                            waiting[id(prelims)].append((i, work))
                            state.notify_all()
                    else:
                        publish(i, submit(work))
        except BaseException as exc:
            give_up(exc)
        finally:
            if prelims is not None:
                with state:
                    feeders[id(prelims)] -= 1
                    state.notify_all()

    def prelim_batches(prelim, key):
        """One of a GPU's gapped threads: the queries waiting for the GPU ``key``, in one launch."""
        from .gpu.gapped import PrelimJob

        # GPU_SEARCH_PRELIM_BATCH: for benchmarks comparing batch sizes (1: one query per launch)
        most = int(os.environ.get("GPU_SEARCH_PRELIM_BATCH") or PRELIM_BATCH_QUERIES)
        try:
            while True:
                with state:
                    while not waiting[key] and feeders[key] and not errors:
                        state.wait()
                    if errors or not waiting[key]:
                        return
                    batch = waiting[key][:max(1, most)]
                    del waiting[key][:len(batch)]
                t0 = time.perf_counter()
                jobs = [PrelimJob(work.init, work.codes, work.cutoffs.x_drop_gapped, work.cutoffs.cutoff_score,
                                  setup.options.evalue) for _, work in batch]
                found = prelim.run_many(jobs, setup.matrix.scores, setup.gap_open, setup.gap_extend)
                times.add("preliminary gapped (GPU threads)", t0)
                for (i, work), (gpu_hsps, left) in zip(batch, found):
                    work.init = left
                    publish(i, submit(work, gpu_hsps))
        except BaseException as exc:
            give_up(exc)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="blastp-lookup") as ahead:
        for k, gpu in enumerate(gpus):
            threading.Thread(target=produce, args=(gpu, ahead), name=f"blastp-gpu{k}", daemon=True).start()
        for k, prelims in enumerate({id(ps): ps for ps in gpu_prelims.values()}.values()):
            for m, prelim in enumerate(prelims):
                threading.Thread(target=prelim_batches, args=(prelim, id(prelims)), name=f"blastp-gapped{k}.{m}",
                                 daemon=True).start()
        for i in range(n):
            with state:
                while i not in results and not errors:
                    state.wait()
                if errors:
                    raise errors[0]
                future = results.pop(i)
                written[0] += 1
                state.notify_all()
            yield future.result()


def _gpu_engines(setup, device, quiet, gpus, gpu_extension, gpu_window_lanes, gpu_gapped, gpu_streams,
                 gpu_gapped_cells, times, started=None):
    """(engines, prelims, per_device) of a GPU run (--device resolved to gpu), or ([], {}, {}):
    the database on every GPU, several engines (streams) per GPU, and each GPU's gapped engines.
    ``started`` is called once CUDA is up, before the upload."""
    from ..device import resolve, wait_cuda

    t0 = time.perf_counter()
    wait_cuda()                        # (started by the command while it read the inputs)
    if resolve(device, quiet) != "gpu":
        return [], {}, {}
    from ..device import gpu_status
    from .gpu import GpuUngapped

    times.add("GPU start (CUDA; overlapped with the inputs)", t0)
    if started is not None:
        started()
    t0 = time.perf_counter()
    n_visible = len(gpu_status()[2])
    ids = list(gpus) if gpus else list(range(n_visible or 1))
    if n_visible and any(d >= n_visible for d in ids):
        raise DeviceError(f"--gpus {','.join(map(str, ids))}: {n_visible} GPU(s) visible")
    # GPU_SEARCH_STREAM_RESIDUES=N: the database streamed through the GPU in chunks of N residues
    # even where it fits (benchmarks of a database larger than GPU memory)
    stream = int(os.environ.get("GPU_SEARCH_STREAM_RESIDUES") or 0)
    streaming = dict(streamed=True, max_chunk_residues=stream) if stream > 0 else {}
    engines = [GpuUngapped(setup.residues, setup.offsets, device_id=d, extension=gpu_extension,
                           window_lanes=gpu_window_lanes, length_order=setup.subjects.length_order, **streaming)
               for d in ids]
    # several queries in flight per GPU, each engine on its own stream and host thread
    engines += [e.worker() for e in list(engines) if not e.streamed for _ in range(gpu_streams - 1)]
    times.add("GPU upload", t0)
    prelims, per_device = {}, {}
    if gpu_gapped:
        from .gpu.gapped import GpuPrelim

        kw = {} if gpu_gapped_cells is None else dict(cell_budget=gpu_gapped_cells)
        # GPU_SEARCH_GAPPED_KERNEL=thread: one GPU thread per subject (benchmarks against a warp)
        kw["kernel"] = os.environ.get("GPU_SEARCH_GAPPED_KERNEL") or "warp"
        # PRELIM_THREADS per GPU, each on a stream of its own (twins of the GPU's first engine):
        # the kernel lasts as long as its longest subject and leaves most of the GPU free, and
        # each thread's host work (inputs, purge) overlaps the others' kernels
        # (GPU_SEARCH_PRELIM_THREADS: for benchmarks comparing thread counts)
        n_threads = max(1, int(os.environ.get("GPU_SEARCH_PRELIM_THREADS") or PRELIM_THREADS))
        for e in engines:
            if not e.streamed and e.device_id not in per_device:
                per_device[e.device_id] = [GpuPrelim(e.stream_twin(), **kw) for _ in range(n_threads)]
        prelims = {id(e): per_device[e.device_id] for e in engines if not e.streamed}
    return engines, prelims, per_device


def run_blastp(queries, subjects, options: BlastOptions, fh, *, fmt: int, columns: list[str],
               db_name: str, quiet: bool = False, hits_out=None, device: str = "cpu",
               gpus: list[int] | None = None, gpu_extension: str = "auto",
               gpu_window_lanes: int | None = None, gpu_gapped: bool = True,
               gpu_streams: int = GPU_STREAMS, gpu_gapped_cells: int | None = None) -> None:
    """Search every query against the database and write the rows.

    ``device`` (``--device``: auto, gpu, cpu; resolved once the options
    and inputs are known good): "gpu" runs hit detection, the two-hit filter
    and ungapped extension on the GPUs ``gpus`` (default: all visible; each
    holds the database and takes the next query; ``gpu_streams`` queries
    in flight on each), with ``gpu_gapped`` also
    the preliminary gapped extensions of subjects with few init HSPs, and
    the rest of the gapped stages on CPU threads, overlapped; the CPU path
    runs everything on CPU threads.  The rows are the same.

    With ``hits_out`` the rows are also saved, with full-precision E-values
    and database positions, for merging the results of database shards
    (:mod:`gpu_search.blast.merge`).
    """
    from ..progress import Progress

    times = PhaseTimes()
    t0 = t_start = time.perf_counter()
    setup = make_setup(subjects, options)
    times.add("setup", t0)
    threads = options.num_threads or os.cpu_count() or 1
    procs = None
    if device == "gpu" or (device == "auto" and importlib.util.find_spec("cupy") is not None):
        # the traceback's processes, forked before any thread of ours but device.start_cuda's,
        # which may be starting CUDA in the driver (the workers never call CUDA, as PyTorch's
        # DataLoader workers forked after CUDA's start, and CuPy was imported on this thread):
        # given back below if the run is on the CPU after all
        t0 = time.perf_counter()
        procs = traceback_processes(setup, queries, threads)
        times.add("worker processes started", t0)

    def warm_up():
        # the statistics' and lookup's compiled code loaded while the database is uploaded
        # (the copy waits on the GPU without the GIL), not before the first query.  Not
        # during CuPy's import: two threads importing modules only take turns.
        threading.Thread(target=_warm_up_lookup, args=(queries, setup), name="warm-up", daemon=True).start()

    try:
        engines, prelims, per_device = _gpu_engines(setup, device, quiet, gpus, gpu_extension, gpu_window_lanes,
                                                    gpu_gapped, gpu_streams, gpu_gapped_cells, times, warm_up)
        if not engines:
            _shut_down(procs)              # a CPU run: threads do everything
            procs = None
        progress = Progress("blastp", queries.n_seqs, "queries", quiet)
        saved = []
        n_done = 0
        # The GPU threads release the GIL at every kernel wait and copy; with many CPU
        # threads running Python between their compiled stages, each release can cost
        # a whole round of 5 ms switch intervals before the GIL comes back
        # (bench/gil_convoy.py on 2 cores: 200 releases among 15 busy threads took
        # 16-23 s at 5 ms, 2.2-2.7 s at 0.5 ms).  A shorter interval while the GPUs are fed.
        switch_interval = sys.getswitchinterval()
        if engines:
            # GPU_SEARCH_SWITCH_INTERVAL (seconds): for benchmarks comparing intervals
            wanted = float(os.environ.get("GPU_SEARCH_SWITCH_INTERVAL") or GPU_SWITCH_INTERVAL)
            sys.setswitchinterval(wanted if wanted > 0 else switch_interval)
        try:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="blastp") as pool:
                # queries are independent: several at a time, written in input order
                for i, results in enumerate(_results_in_order(queries, setup, pool, threads, engines, times,
                                                              prelims, procs)):
                    qname, qdesc = queries.name(i), queries.description(i)
                    qtitle = f"{qname} {qdesc}" if qdesc else qname
                    rows = [h for r in select(results, options.max_target_seqs) for h in r.rows]
                    write_query(fh, fmt, columns, qtitle, db_name, rows)
                    if hits_out is not None:
                        saved.append((qtitle, results))
                    n_done += 1
                    progress.update(n_done)
        finally:
            sys.setswitchinterval(switch_interval)
        progress.close()
        for gpu in engines:
            for part, seconds in gpu.seconds.items():
                times.add_seconds(f"GPU phases threads: {part}", seconds)
        for per_gpu in per_device.values():
            for prelim in per_gpu:
                times.add_seconds("preliminary gapped kernel (GPU time)", prelim.kernel_seconds)
                for part, seconds in prelim.seconds.items():
                    times.add_seconds(f"gapped GPU threads: {part}", seconds)
        write_footer(fh, fmt, n_done)
        if hits_out is not None:
            from .merge import save_hits

            save_hits(hits_out, saved, options=options, db_name=db_name)
        times.save_timeline(t_start)
        if os.environ.get("GPU_SEARCH_TIMINGS"):
            print(f"gpu-search blastp timings: {times.line()}  wall {time.perf_counter() - t_start:.2f} s",
                  file=sys.stderr)
    finally:
        _shut_down(procs)
