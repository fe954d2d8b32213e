"""The traceback's worker processes of a GPU run.

The traceback (stage 4, and the hit list before it) is Python around compiled
code: on threads it would share the GIL with the threads that feed the GPUs.
It runs instead on worker processes forked once the database is loaded, which
inherit the setup and the queries; each task carries one query's preliminary
HSPs (and the GPU gapped kernel's HSPs, whose E-values are reaped there).  A
long hit list comes back cut into pieces, for the scheduler to trace back on
several processes.  The workers never call CUDA.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from . import gapped, pipeline, traceback
from .alphabet import NCBISTDAA
from .hitlist import SubjectResult, hit_list
from .matrix import load_matrix
from .output import fields_reduce

_FORKED: tuple | None = None       # (setup, queries, row_text) in the worker processes
# (lock, done) shared by the worker processes: the first to take the lock loads the traceback's
# compiled code while the others wait for ``done`` (see _warm_up)
_GATE: tuple | None = None
GATE_TIMEOUT = 600.0               # seconds a worker waits for another's compilation at most


def traceback_task(index: int, codes, kbp, cutoffs, prelim: dict, gpu_hsps=None,
                   split: int | None = None, hits: list | None = None, align: bool = False, aligned=None):
    """The end of one query in a worker process: the E-values of the HSPs the GPU's gapped
    kernel found (``gpu_hsps``, PRELIM_BATCH rows, or None) reaped into ``prelim`` (the
    subjects done on CPU threads), the hit list (or ``hits``, a piece of one) and its
    traceback (``pipeline.traceback_stage``, with ``aligned``: the extensions the GPU
    aligned, ``traceback.traceback_hit_list``'s argument).

    Returns (("results", results), start, end, process id); with ``split``
    (``BlastSettings.traceback_split``) and a hit list whose HSPs span more query letters than that,
    (("pieces", pieces), ...) instead: the hit list cut into pieces of about ``split``
    letters, each (hits, their rows), for this function to trace back on several
    processes (in the hit list's order: the pieces' results, concatenated, are the
    serial ones).  With ``align`` (the traceback's alignments on the GPUs), a hit list to
    trace back gives (("align", plans), ...) instead: the alignment jobs
    (``pipeline.alignment_plan``) of the hit list, or of each of its pieces where ``split``
    cuts it, for the GPU, then this function again for each with ``aligned``.

    An error comes back as a RuntimeError carrying the worker's traceback (an exception
    that cannot be pickled back would otherwise be lost)."""
    t0 = time.perf_counter()
    _pass_gate()
    setup, queries, row_text = _FORKED
    work = pipeline.QueryWork(index=index, codes=codes, kbp=kbp, cutoffs=cutoffs, prelim=prelim)
    try:
        if gpu_hsps is not None:
            work.prelim.update(pipeline.reap_by_evalue(gpu_hsps, work, setup))
        if hits is None:
            hits = hit_list(work, setup)
        pieces = hit_list_pieces(hits, work.prelim, split) if split is not None else []
        if align and hits:                   # each piece's jobs, made here: its HSPs cross once
            parts = [h for h, _ in pieces] if len(pieces) > 1 else [hits]
            return ("align", [pipeline.alignment_plan(work, setup, h) for h in parts]), t0, time.perf_counter(), \
                os.getpid()
        if len(pieces) > 1:                  # (one piece: traced back here)
            return ("pieces", pieces), t0, time.perf_counter(), os.getpid()
        results = as_sent(pipeline.traceback_stage(work, setup, queries, hits, aligned), row_text)
    except Exception as exc:
        import traceback as tb

        raise RuntimeError(f"traceback of query {index + 1} failed: {exc!r}\n{tb.format_exc()}") from None
    return ("results", results), t0, time.perf_counter(), os.getpid()


def search_task(index: int):
    """One whole query in a worker process (a CPU run with composition-based statistics):
    its results (``pipeline.search_query``)."""
    _pass_gate()
    setup, queries, row_text = _FORKED
    try:
        return as_sent(pipeline.search_query(index, queries, setup), row_text)
    except Exception as exc:
        import traceback as tb

        raise RuntimeError(f"search of query {index + 1} failed: {exc!r}\n{tb.format_exc()}") from None


def as_sent(results: list, row_text) -> list[tuple]:
    """``results`` as a worker sends them back: each SubjectResult as the plain tuple of its
    fields (``received`` makes it again), with each row as its output line (``row_text``,
    ``output.row_formatter``: a tabular run that saves no hits), else as it is.

    The parent loads every answer on one thread, the process pool's.  Python run there (a
    dataclass's constructor per result) lets the threads feeding the GPUs take the GIL at
    each call, and the answers queue behind it; tuples, numbers and strings load without
    running any Python, and the writer's thread rebuilds the results.  (With the pieces'
    alignment jobs made in the worker, this took the 500-query run of
    bench/probes/blastp_where.sh from 7.8-8.3 s to 6.2-6.4 s.)  Rows come back as lines
    instead of Hsp objects where they can, for the same reason."""
    if row_text is not None:
        for r in results:
            r.rows = [row_text(h) for h in r.rows]
    return [fields_reduce(r)[1] for r in results]


def received(results: list) -> list[SubjectResult]:
    """A query's results as the writer takes them: those a worker sent (``as_sent``) made
    SubjectResults again; those made on the parent's threads as they are."""
    return [r if isinstance(r, SubjectResult) else SubjectResult(*r) for r in results]


def hit_list_pieces(hits: list, prelim: dict, split: int) -> list[tuple]:
    """A hit list cut, in order, into pieces whose HSPs span about ``split`` query letters
    each: [(hits, {subject: rows})] (the whole list as one piece when it spans less)."""
    span = np.array([int(np.sum(prelim[s]["q_end"] - prelim[s]["q_start"])) for _, s in hits], dtype=np.int64)
    total = int(span.sum())
    cuts = np.searchsorted(np.cumsum(span), np.arange(split, total, split), side="right") if total > split else []
    bounds = [0, *sorted({int(c) for c in cuts if 0 < c < len(hits)}), len(hits)]
    return [(hits[a:b], {s: prelim[s] for _, s in hits[a:b]}) for a, b in zip(bounds, bounds[1:])]


def start_workers(setup, queries, workers: int, row_text=None):
    """A pool of ``workers`` forked processes for the traceback, or None where fork is not
    available (then threads do it).  Call before any thread of the run is started.
    ``row_text``: an Hsp's output line (``output.row_formatter``), where the run writes
    tabular rows and saves no hits: the workers then send rows back as lines (``as_sent``)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _FORKED, _GATE
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    _FORKED = (setup, queries, row_text)
    fork = multiprocessing.get_context("fork")
    _GATE = (fork.Lock(), fork.Event())
    procs = ProcessPoolExecutor(max_workers=workers, mp_context=fork,
                                initializer=_worker_start, initargs=(os.getpid(),))
    try:
        procs.submit(int).result()     # with fork, every worker starts now, before our threads do
    except BaseException:
        shut_down(procs)
        raise
    return procs


def shut_down(procs) -> None:
    """End the traceback's worker processes (None: none) and drop what they inherited."""
    global _FORKED, _GATE
    if procs is not None:
        procs.shutdown(cancel_futures=True)
    _FORKED = _GATE = None


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
    # first task, not inside it, while the parent starts the GPUs
    threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()


def _warm_up() -> None:
    """The traceback's compiled code loaded by one worker, then by the others.

    On a host where numba's cache is empty (a first run) every worker would compile the same
    loops at once: 16 copies of the same 15-25 s of work, on the cores the parent needs for
    its own first compilations.  One worker compiles them into the cache while the others
    wait, then load them from there; where the cache is full the wait is one load (a fraction
    of a second, before any task can have come)."""
    lock, done = _GATE
    if lock.acquire(block=False):
        try:
            _warm_up_traceback()
        finally:
            done.set()
    elif done.wait(GATE_TIMEOUT):
        _warm_up_traceback()


def _pass_gate() -> None:
    """Wait, in a task, until one worker has loaded the traceback's compiled code (``_warm_up``):
    a task that came first would compile it again itself."""
    if _GATE is not None:
        _GATE[1].wait(GATE_TIMEOUT)


def _warm_up_traceback() -> None:
    """Tiny tracebacks: numba loads the code of both ways the workers trace back, a query's
    hit list at once (without composition-based statistics; preliminary HSPs as the
    preliminary stage gives them) and one subject's HSPs with their strings (the redo's
    pieces), from its cache or, on a first run, by compiling them."""
    try:
        from .alphabet import encode

        q, s = encode("W" * 10 + "E" * 10 + "W" * 10), encode("W" * 10 + "C" * 10 + "W" * 10)
        row = (110, 0, 10, 0, 10, 5, 5)
        prelim = np.array([row], dtype=gapped.PRELIM_HSP_DTYPE)
        matrix = load_matrix("BLOSUM62").scores
        r = traceback.traceback(prelim, q, s, matrix, 11, 1, 64)
        r.strings(q, s, NCBISTDAA)
        batch = np.zeros(1, dtype=gapped.PRELIM_BATCH_DTYPE)
        for name, value in zip(gapped.PRELIM_HSP_DTYPE.names, row):
            batch[name] = value
        traceback.traceback_hit_list([batch], q, [0], s, np.array([0, len(s)], np.int64), matrix, 11, 1, 64,
                                     evalue=lambda scores, lengths: np.zeros(len(scores)), expect_value=10.0,
                                     letters=NCBISTDAA)
    except Exception:                  # only a warm-up: the real task reports any error
        pass
