"""hmmscan: each query sequence searched against every model of a profile database.

HMMER's hmmscan (hmmscan.c) reads its database pressed by hmmpress: the MSV
filter part of each model from ``.h3f``, the rest from ``.h3p`` (``.h3m`` and
the ``.h3i`` index only have to be there).  For each query sequence it makes one
pipeline in scan mode and runs every model through it, in file order:
p7_pli_NewModel, p7_Pipeline, and the results grouped per query.  Z, unless
``-Z`` sets it, is the number of models (counted as they are read: the
threshold for keeping a hit grows with it, which decides which weak hits are
kept and so the width of the reports' name columns).

This module does the same with pyhmmer (HMMER 3.4's own code): the models as
HMMER's optimized profiles (:func:`open_hmmdb`: read from the pressed files, or
configured from a text or binary HMM file as hmmpress configures them), then
either

* on the CPU, pyhmmer's ``Pipeline.scan_seq`` per query, which is hmmscan's serial
  loop.  Queries run on several threads; each has its own pipeline, so the results
  are those of serial hmmscan whatever the thread count; or
* on the GPU (or the numpy reference), hmmsearch's filter engine transposed: the
  query sequences are the resident database and the models the stream
  (:func:`gpu_search.hmmer.cascade.run_cascade_batch`, batches of models per
  kernel launch), each model's filter profile taken from the very profile hmmscan
  uses; the (query, model) pairs through MSV, bias and Viterbi filters are finished
  by HMMER's pipeline, one pair at a time (:class:`ScanFinisher`), and each
  query's pairs merged.  Z is the number of models from the start; the hits serial
  hmmscan also keeps against its running Z are added as hmmsearch's engine adds
  them (:func:`gpu_search.hmmer.search.with_running_z_hit`).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import numpy as np

from ..errors import AlphabetError, EmptyInputError, FormatError, InputFileError, printable
from ..seqdb import SequenceDB, amino_degeneracy, check_readable
from .cascade import LengthTables, Stopped, run_cascade_batch
from .options import SearchOptions
from .profile import FilterProfile
from .queries import Query, query_of
from .queries import read_queries as _read_queries
from .search import (BATCH_MODELS, PIECES_PER_THREAD, PipelineStats, cut_by_work, make_backend, merge_pieces,
                     pipeline_stats, running_z_applies, serial_hits, with_running_z_hit)

# the files hmmpress writes beside an HMM file (hmmpress.c): binary models, their SSI
# index, the MSV filter part of the optimized profiles and the rest of them
PRESSED_SUFFIXES = (".h3m", ".h3i", ".h3f", ".h3p")

# hmmpress configures each model's profile for this length (p7_ProfileConfig, local mode)
PRESS_LENGTH = 400


@dataclass
class ModelDB:
    """The database's models as HMMER's optimized profiles, in file order."""

    path: str                   # as named on the command line
    profiles: object            # pyhmmer OptimizedProfileBlock
    pressed: bool               # read from hmmpress's files

    @property
    def n_models(self) -> int:
        return len(self.profiles)


@dataclass
class ScanResult:
    """One query sequence's hits (a pyhmmer ``TopHits`` of models) and pipeline statistics."""

    query: Query
    hits: object
    stats: PipelineStats


# --- the database ----------------------------------------------------------------------


def pressed_base(path: str | os.PathLike) -> str | None:
    """The name hmmpress was given, where ``path`` names a pressed database; else None.

    HMMER's rule (p7_hmmfile_Open): ``X`` is pressed where ``X.h3m`` exists, the text
    file ``X`` itself may be gone; a gzipped file or a pipe never is.  Beyond HMMER,
    ``X.h3m`` named itself is the pressed database ``X`` where another of its files
    is there (HMMER reads it as an unpressed binary file, and refuses it)."""
    p = os.fspath(path)
    if p.endswith(".gz") or p == "-":
        return None
    if os.path.exists(p + ".h3m"):
        return p
    if p.endswith(".h3m") and any(os.path.exists(p[:-4] + s) for s in PRESSED_SUFFIXES[1:]):
        return p[:-4]
    return None


def open_hmmdb(path: str | os.PathLike, threads: int | None = None) -> ModelDB:
    """The models of HMMDB: a pressed database (its ``.h3f`` and ``.h3p`` files, as hmmscan
    reads them), or an HMM file (text or binary, plain or gzip, checked as hmmsearch checks
    it) whose models are configured as hmmpress configures them.

    Raises:
        InputFileError (a file missing), EmptyInputError, FormatError (damaged, or pressed
        files that do not belong together), AlphabetError (nucleotide models).
    """
    base = pressed_base(path)
    if base is not None:
        profiles = _read_pressed(os.fspath(path), base)
        pressed = True
    else:
        from .models import read_hmms

        profiles = _configure(read_hmms(path, threads=threads, program="hmmscan"), threads)
        pressed = False
    return ModelDB(path=os.fspath(path), profiles=profiles, pressed=pressed)


def _configure(hmms: list, threads: int | None):
    """Each model's optimized profile as hmmpress makes it: p7_ProfileConfig at L = 400,
    local, then p7_oprofile_Convert (each thread with its own null model)."""
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background, OptimizedProfileBlock, Profile

    abc = Alphabet.amino()
    local = threading.local()

    def convert(hmm):
        if not hasattr(local, "background"):
            local.background = Background(abc)
        profile = Profile(hmm.M, abc)
        profile.configure(hmm, local.background, PRESS_LENGTH)
        return profile.to_optimized()

    workers = max(1, min(threads or os.cpu_count() or 1, len(hmms)))
    if workers == 1:
        optimized = [convert(hmm) for hmm in hmms]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hmmscan-profiles") as pool:
            optimized = list(pool.map(convert, hmms))
    return OptimizedProfileBlock(abc, optimized)


def _read_pressed(shown: str, base: str):
    """The optimized profiles of a pressed database, checked to be one database: every file
    there, the SSI index (.h3i) holding each model of the profile files (.h3f, .h3p) at the
    place in the model file (.h3m) where the profile says it is.  (HMMER reads mismatched
    files silently, or crashes on them.)"""
    from pyhmmer.easel import Alphabet, SSIReader
    from pyhmmer.plan7 import HMMPressedFile, OptimizedProfileBlock

    for suffix in PRESSED_SUFFIXES:
        if not os.path.exists(base + suffix):
            raise InputFileError(f"{printable(shown)}: a pressed HMM database ({printable(base)}.h3m) without its "
                                 f"{suffix} file: press the HMM file again (hmmpress -f)")
        check_readable(Path(base + suffix))
    mismatch = (f"{printable(shown)}: the pressed files {printable(base)}.h3m, .h3i, .h3f, .h3p are damaged or "
                f"do not belong together")
    try:
        with HMMPressedFile(base) as pf:
            indexed = len(pf)
            profiles = list(pf)
        index = SSIReader(base + ".h3i")
        entries = [index.find_name(om.name) for om in profiles]
    except Exception as exc:       # pyhmmer's ValueError, KeyError of a name not indexed, EaselError...
        raise FormatError(f"{mismatch} ({type(exc).__name__}: {printable(str(exc), 80)}): press the HMM file "
                          f"again (hmmpress -f)") from None
    if not profiles:
        raise EmptyInputError(f"{printable(shown)}: no models in the pressed database")
    if indexed != len(profiles):
        raise FormatError(f"{mismatch} (the .h3i index holds {indexed} models, the profiles {len(profiles)}): "
                          f"press the HMM file again (hmmpress -f)")
    with open(base + ".h3m", "rb") as mfp:
        magic = mfp.read(4)
        size = os.fstat(mfp.fileno()).st_size
        for om, entry in zip(profiles, entries):
            at = om.offsets.model
            mfp.seek(at if at is not None else 0)
            if at is None or entry.record_offset != at or at >= size or mfp.read(4) != magic:
                raise FormatError(f"{mismatch} (model '{printable(om.name)}' is not where the index and the "
                                  f"profiles place it): press the HMM file again (hmmpress -f)")
    for om in profiles:
        if om.alphabet.type != "amino":
            raise AlphabetError(
                f"{printable(shown)}: model '{printable(om.name)}' is a {om.alphabet.type} model; "
                f"gpu-search hmmscan searches protein sequences (use nhmmscan for nucleotide models)")
    return OptimizedProfileBlock(Alphabet.amino(), profiles)


def check_cutoffs(db: ModelDB, options: SearchOptions) -> None:
    """--cut_ga/nc/tc need every model to carry that cutoff.  (HMMER's hmmscan checks a model
    only where it passes the MSV filter, and then leaves it out without a word, its
    thresholds those of the model before: every model is checked here, before the search.)"""
    from .models import check_cutoff

    if options.bit_cutoffs:
        for om in db.profiles:
            check_cutoff(om, options.bit_cutoffs)


# --- the queries -----------------------------------------------------------------------


def read_queries(path: str | os.PathLike, fmt: str | None = None) -> SequenceDB:
    """hmmscan's query sequences (:func:`.queries.read_queries`)."""
    return _read_queries(path, "the HMM database comes first: hmmscan HMMDB SEQFILE", fmt)


# --- the search ------------------------------------------------------------------------


def _stats(hits, options: SearchOptions) -> PipelineStats:
    """The numbers of p7_pli_Statistics, from the pipeline pyhmmer keeps with the hits: as a
    search's, but the models are those scanned."""
    return dataclasses.replace(pipeline_stats(hits, options), nmodels=int(hits.searched_models))


def hmmscan(queries: SequenceDB, db: ModelDB, options: SearchOptions | None = None, *,
            device: str = "cpu", cpus: int | None = None, gpus=None, backend=None,
            callback=None, filter_threads: int = 2) -> Iterator[ScanResult]:
    """Search every query sequence against every model of ``db``, as HMMER's hmmscan;
    results in query order.

    Args:
        queries: the query sequences (protein FASTA, read as phmmer reads its queries).
        db: the models (:func:`open_hmmdb`).
        options: HMMER's reporting, inclusion and filter options (defaults if None);
            ``Z`` None: the number of models, as hmmscan counts them.
        device: 'cpu' (pyhmmer's hmmscan), 'reference' or 'gpu' (the filter engine,
            :func:`_scan_filtered`), already resolved.
        cpus: threads (all cores by default).
        gpus: GPU ids for the 'gpu' device (all visible by default).
        backend: an already built filter backend holding ``queries``.
        callback: called with (queries done, number of queries) as each is done; on the
            filter engine also with (0, number of queries, a note) while the models are
            filtered and finished, before the first query is done.
        filter_threads: threads running batches of models through the filters at once
            (at most ``cpus``).
    """
    options = options or SearchOptions()
    threads = max(1, cpus or os.cpu_count() or 1)
    if queries.n_seqs == 0:          # (every query left out by --skip-long): no results, empty outputs
        return
    if device == "cpu":
        yield from _scan_pyhmmer(queries, db, options, threads, callback)
    else:
        backend = backend or make_backend(device, queries, gpus)
        yield from _scan_filtered(queries, db, options, threads, backend, callback, filter_threads)


def _scan_pyhmmer(queries: SequenceDB, db: ModelDB, options: SearchOptions, threads: int,
                  callback) -> Iterator[ScanResult]:
    """pyhmmer's hmmscan: each query's serial scan of every model, queries on threads (with
    fewer queries than threads, :func:`_scan_in_pieces`)."""
    import pyhmmer
    from pyhmmer.easel import Alphabet

    n = queries.n_seqs
    # (a model's place among the models decides the hits serial hmmscan keeps; where two models
    # share a name, the pieces' hits could not be told apart by name: pyhmmer's serial scans)
    if n < threads and db.n_models > 1 and len({om.name for om in db.profiles}) == db.n_models:
        yield from _scan_in_pieces(queries, db, options, threads, callback)
        return
    abc = Alphabet.amino()
    block = queries.digital_block(None, abc)
    done = 0

    def progress(query, total):
        nonlocal done
        done += 1
        if callback is not None:
            callback(done, total)

    # (Z None: pyhmmer's pipeline counts the models as serial hmmscan does)
    kwargs = options.pipeline_kwargs(options.Z)
    results = pyhmmer.hmmscan(block, db.profiles, cpus=threads, callback=progress, **kwargs)
    for i, hits in enumerate(results):
        yield ScanResult(query=query_of(queries, i), hits=hits, stats=_stats(hits, options))


def _scan_in_pieces(queries: SequenceDB, db: ModelDB, options: SearchOptions, threads: int,
                    callback) -> Iterator[ScanResult]:
    """pyhmmer's hmmscan for fewer queries than threads (one protein against Pfam ran on one
    core): the models cut into pieces of about equal nodes, every (query, piece) scanned on the
    pool, each query's pieces merged.

    As hmmsearch's search in database pieces (:func:`gpu_search.hmmer.search._search_in_pieces`):
    with Z unset each piece counts its own models, so it keeps every hit serial hmmscan keeps
    in it and some more; merged, Z is the number of models and the hits are thresholded
    against it, and the kept hits serial hmmscan would not keep (P x the model's place over
    E) are dropped (:func:`gpu_search.hmmer.search.serial_hits`).  Each piece is one block
    scanned by every query, so that its profiles' locks keep two threads from setting one
    profile's length at once."""
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import OptimizedProfileBlock, Pipeline

    abc = Alphabet.amino()
    seqs = queries.digital_block(None, abc)
    profiles = list(db.profiles)
    n = queries.n_seqs
    pieces = -(-PIECES_PER_THREAD * threads // n)
    nodes = np.array([om.M for om in profiles], dtype=np.float64)
    blocks = [OptimizedProfileBlock(abc, [profiles[m] for m in piece.tolist()])
              for piece in cut_by_work(np.arange(len(profiles)), nodes, pieces)]
    kwargs = options.pipeline_kwargs(options.Z)
    running_z = running_z_applies(options, queries)
    place = {om.name: k for k, om in enumerate(profiles, start=1)}   # model name -> its place (names unique)
    local = threading.local()

    def scan(q: int, b: int):
        pipeline = getattr(local, "pipeline", None)
        if pipeline is None:
            pipeline = local.pipeline = Pipeline(abc, **kwargs)
        try:
            return pipeline.scan_seq(seqs[q], blocks[b])
        finally:
            pipeline.clear()

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hmmscan") as pool:
        under_way = [[pool.submit(scan, q, b) for b in range(len(blocks))] for q in range(n)]
        try:
            for q in range(n):
                parts = [future.result() for future in under_way[q]]
                if options.bit_cutoffs:
                    limits = parts[0].__getstate__()["pipeline"]
                    parts = parts[:1] + [_with_thresholds(h, limits) for h in parts[1:]]
                hits = merge_pieces(parts)
                if running_z:
                    hits = serial_hits(hits, seqs[q], None, None, place)
                if callback is not None:
                    callback(q + 1, n)
                yield ScanResult(query=query_of(queries, q), hits=hits, stats=_stats(hits, options))
        finally:
            for futures in under_way:        # a failure, or a caller that stopped early
                for future in futures:
                    future.cancel()


class ScanFinisher:
    """HMMER's pipeline after the filters for one (query sequence, model) pair: Forward,
    domain definition, thresholds (pyhmmer's ``Pipeline.scan_seq`` with that one model).

    As for hmmsearch's finishing (:class:`gpu_search.hmmer.search.Finisher`), the pair
    already passed MSV, bias and Viterbi filters, so F1 = F2 = 1 and the bias filter stays
    on (Forward's P-value uses its score).  scan_seq sets a profile's length to the query's
    before scoring it, under a lock of the block holding the profile: every pair of a model
    is scanned through one block holding that model alone, so two threads never configure
    one profile at once (a block per query's models would not share those locks).
    """

    def __init__(self, alphabet, kwargs: dict, profiles: list):
        self.alphabet = alphabet
        self.kwargs = dict(kwargs, F1=1.0, F2=1.0)
        self.profiles = profiles
        self._blocks: dict[int, object] = {}
        self._blocks_lock = threading.Lock()
        self._local = threading.local()

    def _block(self, m: int):
        """The block holding model m alone (one per model, made once)."""
        block = self._blocks.get(m)
        if block is None:
            from pyhmmer.plan7 import OptimizedProfileBlock

            with self._blocks_lock:
                block = self._blocks.get(m)
                if block is None:
                    block = self._blocks[m] = OptimizedProfileBlock(self.alphabet, [self.profiles[m]])
        return block

    def _scan(self, seq, block):
        """``scan_seq`` on this thread's pipeline (cleared after, for the next pair)."""
        pipeline = getattr(self._local, "pipeline", None)
        if pipeline is None:
            from pyhmmer.plan7 import Pipeline

            pipeline = self._local.pipeline = Pipeline(self.alphabet, **self.kwargs)
        try:
            return pipeline.scan_seq(seq, block)
        finally:
            pipeline.clear()

    def __call__(self, seq, m: int):
        """The TopHits of query ``seq`` against model m."""
        return self._scan(seq, self._block(m))

    def nothing(self, seq):
        """The TopHits of ``seq`` against no model: where its pairs' are merged."""
        from pyhmmer.plan7 import OptimizedProfileBlock

        return self._scan(seq, OptimizedProfileBlock(self.alphabet))

    def alone(self, seq):
        """search_one(idx, Z, E) of :func:`with_running_z_hit`: ``seq`` against the models
        idx, with that Z and E (on the calling thread).  Several models are scanned in a block
        of copies of their profiles (scan_seq configures each profile of its block, and the
        finishing threads may hold these profiles in their own blocks)."""
        from pyhmmer.plan7 import OptimizedProfileBlock, Pipeline

        def search_one(idx, Z, E):
            models = idx.tolist()
            block = (self._block(models[0]) if len(models) == 1 else
                     OptimizedProfileBlock(self.alphabet, [self.profiles[m].copy() for m in models]))
            return Pipeline(self.alphabet, **dict(self.kwargs, Z=Z, E=E)).scan_seq(seq, block)
        return search_one


def _with_thresholds(hits, limits: dict):
    """``hits`` (one pair's, with its model's --cut_* thresholds) with the thresholds of the
    pipeline state ``limits``, so that ``TopHits.merge`` takes them.  With model cutoffs each hit's and
    domain's flags are set by the pipeline of its own model, and neither the merge nor HMMER's
    p7_tophits_Threshold sets them again: the thresholds left in the merged pipeline decide
    nothing (serial hmmscan leaves there those of the database's last model)."""
    from .search import tophits_from_state

    state = hits.__getstate__()
    state["pipeline"].update({name: limits[name] for name in ("T", "incT", "domT", "incdomT")})
    return tophits_from_state(hits.query, state)


def _scan_filtered(queries: SequenceDB, db: ModelDB, options: SearchOptions, threads: int, backend,
                   callback, filter_threads: int) -> Iterator[ScanResult]:
    """hmmscan on hmmsearch's filter engine: the queries resident, the models streamed.

    A few filter threads run batches of models (BATCH_MODELS of one kernel geometry,
    in file order within it) through the cascade over every query; the pairs each batch
    leaves go to the finishing threads (:class:`ScanFinisher`), one task per model, while
    the next batches are filtered.  Once every model is through, each query's pairs are merged (with Z
    fixed: its hits and domains those of one scan of every model) and its pipeline
    statistics are the cascade's counts of its pairs past each filter, Forward's from
    the finishing pipelines.
    """
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background

    abc = Alphabet.amino()
    seqs = queries.digital_block(None, abc)
    profiles = list(db.profiles)
    nq, n_models = queries.n_seqs, len(profiles)
    Z = options.Z if options.Z is not None else float(n_models)
    finish = ScanFinisher(abc, options.pipeline_kwargs(Z), profiles)
    searched = np.arange(nq)
    bg_freq = np.asarray(Background(abc).residue_frequencies, dtype=np.float32)
    degeneracy = amino_degeneracy()
    tables = LengthTables(queries, searched, FilterProfile.from_optimized(profiles[0]))
    batch_key = getattr(backend, "batch_key", lambda M: None)
    geometries: dict = {}
    for m, om in enumerate(profiles):
        geometries.setdefault(batch_key(om.M), []).append(m)
    batches = [models[i:i + BATCH_MODELS] for models in geometries.values()
               for i in range(0, len(models), BATCH_MODELS)]

    past = np.zeros((3, nq), dtype=np.int64)       # per query: pairs past MSV, bias, Viterbi
    past_lock = threading.Lock()
    found = [[] for _ in range(nq)]                # per query: (model, TopHits) of its pairs
    stop = threading.Event()                       # the kill switch

    def finish_model(m, survivors):
        for q in survivors.tolist():
            if stop.is_set():
                raise Stopped()
            found[q].append((m, finish(seqs[q], m)))

    def cascade_task(batch):
        profs = [FilterProfile.from_optimized(profiles[m]) for m in batch]
        results = run_cascade_batch(profs, queries, backend, F1=options.F1, F2=options.F2, F3=options.F3,
                                    bias_filter=options.bias_filter, bg_freq=bg_freq, degeneracy=degeneracy,
                                    searched=searched, tables=tables, should_stop=stop.is_set)
        with past_lock:
            for r in results:
                for row, idx in enumerate((r.past_msv, r.past_bias, r.past_vit)):
                    past[row] += np.bincount(idx, minlength=nq)
        # one finishing task a model: scan_seq sets a profile's length under a lock of its
        # block, so two threads finishing pairs of one model would wait for each other (as
        # pyhmmer's hmmscan threads do, each going through the models in the same order)
        return [finish_pool.submit(finish_model, m, r.survivors) for m, r in zip(batch, results) if len(r.survivors)]

    filter_threads = max(1, min(filter_threads, threads))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hmmscan-finish") as finish_pool, \
            ThreadPoolExecutor(max_workers=filter_threads, thread_name_prefix="hmmscan-filter") as filter_pool:
        under_way = []
        try:
            if hasattr(backend, "prepare_kernels"):
                # the batches' kernel shapes compiled side by side, in the batches' order, where
                # this host has none of them yet
                backend.prepare_kernels([profiles[m].M for batch in batches for m in batch], threads)
            under_way = [filter_pool.submit(cascade_task, batch) for batch in batches]
            pieces, filtered = [], 0
            for batch, fut in zip(batches, under_way):
                pieces.extend(fut.result())
                filtered += len(batch)
                if callback is not None:
                    callback(0, nq, f"{filtered:,} of {n_models:,} models through the filters")
            for done, piece in enumerate(pieces, start=1):
                piece.result()
                if callback is not None and done % 64 == 0:
                    callback(0, nq, f"finishing: {done:,} of {len(pieces):,} models")
        finally:
            stop.set()              # an error, Ctrl-C: what is not started is dropped
            for fut in under_way:
                fut.cancel()
            finish_pool.shutdown(wait=False, cancel_futures=True)
            if hasattr(backend, "stop_preparing"):
                backend.stop_preparing()

    running_z = running_z_applies(options, queries)
    name_len = np.array([len(om.name.encode()) for om in profiles]) if running_z else None

    def model_name(m: int) -> str:           # (as a hit against model m is named)
        return profiles[m].name
    every_model = np.arange(n_models)
    nnodes = sum(om.M for om in profiles)
    for q in range(nq):
        pairs = sorted(found[q], key=lambda pair: pair[0])
        found[q] = None
        hits = finish.nothing(seqs[q])
        parts = [h for _, h in pairs]
        if options.bit_cutoffs:
            limits = hits.__getstate__()["pipeline"]
            parts = [_with_thresholds(h, limits) for h in parts]
        if parts:
            hits = hits.merge(*parts)
        if running_z:
            hits = with_running_z_hit(hits, np.array([m for m, _ in pairs], dtype=np.int64), every_model,
                                      name_len, finish.alone(seqs[q]), model_name)
        counts = SimpleNamespace(n_past_msv=int(past[0, q]), n_past_bias=int(past[1, q]),
                                 n_past_vit=int(past[2, q]))
        stats = dataclasses.replace(
            pipeline_stats(hits, options, nseqs=1, nres=int(queries.lengths[q]), cascade=counts),
            nmodels=n_models, nnodes=nnodes)
        if callback is not None:
            callback(q + 1, nq)
        yield ScanResult(query=query_of(queries, q), hits=hits, stats=stats)
