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
start (importing pyhmmer, under a second) overlaps the search's own.
"""

from __future__ import annotations

import io
import itertools
import multiprocessing
import signal
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Iterable, Iterator

from . import report

# A worker formats a model of 40 hits in about 3 ms (development machine, the hits rebuilt
# included), against about 6 ms of search a model in that search: two leave room for slower cores
WORKERS = 2
# Searches of fewer queries format in the searching process: their text is small and a
# worker's start (under a second) could outlast the search.
MIN_QUERIES = 16
# Queries submitted and not yet written, at most: bounds the text held back behind a slow one.
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


def _fields(obj, names: tuple[str, ...]) -> SimpleNamespace | None:
    return None if obj is None else SimpleNamespace(**{name: getattr(obj, name) for name in names})


# What the report reads of a model (hmmsearch, phmmer), of the hits' query (the tables'
# first columns), and of a query sequence (phmmer, hmmscan)
_MODEL = ("name", "M", "accession", "description", "consensus_structure", "reference")
_HITS_QUERY = ("name", "accession")
_QUERY = ("name", "length", "accession", "description")


def _portable(result) -> tuple:
    """What format_query reads of a result as plain values, small to pickle: the model's and
    query's fields, the statistics, and the hits as HMMER serializes them (without the
    model pyhmmer's own pickle of them carries)."""
    state = result.hits.__getstate__()
    # each hit's record is a pyhmmer vector, slow to pickle one by one: all in one bytes
    records = state["unsrt"]
    state["unsrt"] = (b"".join(records), [len(r) for r in records])
    return (_fields(getattr(result, "hmm", None), _MODEL), _fields(result.hits.query, _HITS_QUERY),
            state, SimpleNamespace(**vars(result.stats)), _fields(getattr(result, "query", None), _QUERY))


def _rebuilt(portable) -> SimpleNamespace:
    from pyhmmer.easel import VectorU8
    from pyhmmer.plan7 import TopHits

    hmm, hits_query, state, stats, query = portable
    joined, sizes = state["unsrt"]
    joined, ends = memoryview(bytearray(joined)), itertools.accumulate(sizes)    # (VectorU8 takes a writable one)
    state["unsrt"] = [VectorU8(joined[end - size:end]) for size, end in zip(sizes, ends)]
    hits = TopHits(hits_query)
    hits.__setstate__(state)
    return SimpleNamespace(hmm=hmm, hits=hits, stats=stats, query=query)


_WORKER: dict = {}


def _start_worker(options, table_formats: tuple[str, ...], scan: bool) -> None:
    # Ctrl-C reaches the whole process group: the searching process says it, once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER.update(options=options, table_formats=table_formats, scan=scan)


def _format_portable(portable, first: bool, timing: report.Timing) -> QueryText:
    w = _WORKER
    return format_query(_rebuilt(portable), w["options"], w["table_formats"], first, w["scan"], timing)


def _ready() -> None:
    """A first task: starts the workers while the search starts."""


def query_texts(results: Iterable, options, table_formats: tuple[str, ...], scan: bool, workers: int,
                timings: Iterator[report.Timing]) -> Iterator[tuple[object, QueryText]]:
    """(result, its text) for each result of ``results``, in their order, formatted by
    ``workers`` processes (0: here).  ``timings`` gives each query's "# CPU time" figures,
    taken as it arrives.  A pool that breaks (a worker killed) leaves the rest to this
    process, with the same text."""
    if workers <= 0:
        for i, result in enumerate(results):
            yield result, format_query(result, options, table_formats, i == 0, scan, next(timings))
        return
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(options, table_formats, scan))
    pending: deque = deque()        # (result, its arguments, future or None)

    def submit(job):
        try:
            return pool.submit(_format_portable, _portable(job[0]), *job[1:])
        except BrokenProcessPool:
            return None

    def text_of(entry) -> QueryText:
        result, (_, first, timing), future = entry
        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:
                pass
        return format_query(result, options, table_formats, first, scan, timing)

    try:
        for _ in range(workers):
            pool.submit(_ready)
        for i, result in enumerate(results):
            job = (result, i == 0, next(timings))
            pending.append((result, job, submit(job)))
            while pending and (len(pending) > MAX_PENDING or pending[0][2] is None or pending[0][2].done()):
                entry = pending.popleft()
                yield entry[0], text_of(entry)
        while pending:
            entry = pending.popleft()
            yield entry[0], text_of(entry)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
