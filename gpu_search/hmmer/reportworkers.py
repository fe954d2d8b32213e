"""Each query's report text formatted in worker processes, beside the search.

A query's main report (``-o``) and table rows are Python work over every hit and domain
(:mod:`.report`), and Python work holds the interpreter lock: in the searching process it
competes with the threads that feed the GPU and build the hit records.  Here worker processes
format the queries instead.  The searching process only serializes each query's hits (HMMER's
own serialization, in C, joined into one bytes object) and writes the returned text, in query
order.  The text is the one that formatting in the searching process gives (``workers=0``).
(2,000 models x 6.8 M residues, many homologs, 69,650 hits, one H200 host, in one process:
the search alone 12.6-13.4 s; with its report and tables formatted in the searching process
14.3-15.7 s, in two workers 13.7-14.8 s.)

Workers are spawned, not forked: the searching process has threads and a CUDA context,
which a fork would copy half-made.  They start when the first query is awaited, so their
start (importing pyhmmer and the report's modules, under a second) overlaps the search's own.
They ignore Ctrl-C (the searching process says it, once) and end with the searching
process, however it ends.  Each query's "# CPU time" line counts the searching process's
time since the query before, as without workers, not the workers' formatting.
"""

from __future__ import annotations

import io
import itertools
import multiprocessing
import os
import signal
import threading
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Iterable, Iterator

from . import report

# A worker formats a query of 40 hits in about 3 ms, rebuilding the hits included; the search
# takes about 6 ms a query (2,000 x 6.8 M, many homologs, H200): one worker keeps up, the
# second leaves room for slower cores
WORKERS = 2
# Searches of fewer queries format in the searching process: their text is small and a
# worker's start (under a second) could outlast the search.
MIN_QUERIES = 16
# Queries submitted and not yet written, at most: bounds the results and text held back
# behind a slow one (a count of queries, whatever their hits)
MAX_PENDING = 64


@dataclass(frozen=True)
class QueryText:
    """One query's text: its main report block and its rows of each table asked for."""

    main: str
    tables: tuple[str, ...]


def worker_count(n_queries: int, cpus: int | None) -> int:
    """Workers for a search of ``n_queries`` queries with ``cpus`` threads (--cpu): none for
    a small search or a single-threaded one."""
    if n_queries < MIN_QUERIES or (cpus is not None and cpus <= 1):
        return 0
    return WORKERS


def format_query(result, options, table_formats: tuple[str, ...], first: bool, scan: bool,
                 timing: report.Timing) -> QueryText:
    """The main report block (hmmsearch's, phmmer's or, with ``scan``, hmmscan's) and the
    table rows of one query; ``first``: the tables' header lines too (first query only)."""
    main = io.StringIO()
    (report.write_scan_query if scan else report.write_query)(main, result, options, timing)
    tables = []
    for fmt in table_formats:
        buf = io.BytesIO()
        result.hits.write(buf, format=fmt, header=first)
        tables.append(buf.getvalue().decode())
    return QueryText(main.getvalue(), tuple(tables))


# What the report and tables read of a model (hmmsearch, phmmer) and of the hits' query (the
# tables' first columns): the model itself is large to pickle
_MODEL = ("name", "M", "accession", "description", "consensus_structure", "reference")
_HITS_QUERY = ("name", "accession")


def _fields(obj, names: tuple[str, ...]) -> SimpleNamespace | None:
    return None if obj is None else SimpleNamespace(**{name: getattr(obj, name) for name in names})


def _portable(result) -> tuple:
    """What format_query reads of a result, small to pickle: the model's fields, the hits as
    HMMER serializes them (each hit's record a pyhmmer vector, slow to pickle one by one: all
    in one bytes object), the statistics and the query sequence (phmmer, hmmscan)."""
    state = getattr(result, "hits_state", None)
    state = dict(state) if state is not None else result.hits.__getstate__()   # (the result's own unchanged)
    records = state["unsrt"]
    state["unsrt"] = (b"".join(records), [len(r) for r in records])
    return (_fields(getattr(result, "hmm", None), _MODEL), _fields(result.hits.query, _HITS_QUERY), state,
            result.stats, getattr(result, "query", None))


def _rebuilt(portable) -> SimpleNamespace:
    from pyhmmer.easel import VectorU8

    from .search import tophits_from_state

    hmm, hits_query, state, stats, query = portable
    joined, sizes = state["unsrt"]
    joined, ends = memoryview(bytearray(joined)), itertools.accumulate(sizes)    # (VectorU8 takes a writable one)
    state["unsrt"] = [VectorU8(joined[end - size:end]) for size, end in zip(sizes, ends)]
    return SimpleNamespace(hmm=hmm, hits=tophits_from_state(hits_query, state), stats=stats, query=query)


_WORKER: dict = {}


def _start_worker(options, table_formats: tuple[str, ...], scan: bool) -> None:
    _WORKER.update(options=options, table_formats=table_formats, scan=scan)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()


def _end_with(parent) -> None:
    # a searching process killed (out of memory, kill -9) closes no pipe its workers wait on
    parent.join()
    os._exit(1)


def _format_portable(portable, first: bool, timing: report.Timing) -> QueryText:
    w = _WORKER
    return format_query(_rebuilt(portable), w["options"], w["table_formats"], first, w["scan"], timing)


def _ready() -> None:
    """A first task: starts the workers while the search starts."""


def _start_pool(workers: int, options, table_formats: tuple[str, ...], scan: bool):
    """The worker processes, started (None where this host cannot start them: no POSIX
    semaphores, a process limit).  They are started with Ctrl-C ignored, which a new process
    keeps from its first instruction (the interpreter then installs no handler of its own), so
    that a Ctrl-C while they import prints no traceback of theirs; a Ctrl-C in the few
    milliseconds of their start is lost."""
    main_thread = threading.current_thread() is threading.main_thread()    # (handlers are set there only)
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    pool = None
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(options, table_formats, scan))
        for _ in range(workers):        # (a spawning pool starts a process a task, up to `workers`)
            pool.submit(_ready)
        return pool
    except (OSError, NotImplementedError, BrokenProcessPool):
        # (NotImplementedError: ProcessPoolExecutor's own check of the host's semaphore limits;
        # OSError: no /dev/shm, or a process limit at the first spawn)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        return None
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, handler)


def query_texts(results: Iterable, options, table_formats: tuple[str, ...], scan: bool, workers: int,
                timings: Iterator[report.Timing]) -> Iterator[tuple[object, QueryText]]:
    """(result, its text) for each result of ``results``, in their order, formatted by
    ``workers`` processes (0: here).  ``timings`` gives each query's "# CPU time" figures,
    taken as it arrives.  A pool that cannot start, or breaks (a worker killed), leaves the
    rest to this process, with the same text."""
    pool = _start_pool(workers, options, table_formats, scan) if workers > 0 else None
    broken = pool is None
    pending: deque = deque()        # (result, first, timing, future: None where formatted here)

    def text_of(result, first, timing, future) -> QueryText:
        nonlocal broken
        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:
                broken = True
        return format_query(result, options, table_formats, first, scan, timing)

    try:
        for i, result in enumerate(results):
            timing, future = next(timings), None
            if not broken:
                try:
                    future = pool.submit(_format_portable, _portable(result), i == 0, timing)
                except BrokenProcessPool:
                    broken = True
            pending.append((result, i == 0, timing, future))
            while pending and (len(pending) > MAX_PENDING or pending[0][3] is None or pending[0][3].done()):
                entry = pending.popleft()
                yield entry[0], text_of(*entry)
        while pending:
            entry = pending.popleft()
            yield entry[0], text_of(*entry)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
