"""hmmsearch: search profile HMMs against a protein database.

The staged pipeline (p7_Pipeline, split at the seam the GPU plugs into):

    models ──> [filter stage] ──survivors──> [pyhmmer: Forward, domains] ──> hits

* ``device="cpu"``: no separate filter stage; pyhmmer runs HMMER's whole
  pipeline over the database on all cores (the reference for everything).
* ``device="reference"``: MSV and Viterbi filters from the exact numpy
  reference (:mod:`.reference`), bias filter in numba; survivors finished by
  pyhmmer.  Slow; for testing the seam on machines without a GPU.
* ``device="gpu"``: the same cascade with CUDA kernels (:mod:`.gpu`).

Survivors are finished with ``Z`` fixed to the number of sequences of the
whole database, so E-values, inclusion and domain definition are those of a
full search (``docs/gpu-design.md``).  The stage counters of
HMMER's statistics come from the cascade; the rest from pyhmmer.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from ..seqdb import SequenceDB, amino_degeneracy
from .cascade import LengthTables, Stopped, run_cascade_batch
from .gpufinish import GpuFinishing, gpu_finishing_applies
from .options import SearchOptions
from .profile import FilterProfile


@dataclass
class PipelineStats:
    """The numbers of HMMER's 'Internal pipeline statistics summary'."""

    nmodels: int
    nnodes: int
    nseqs: int
    nres: int
    n_past_msv: int
    n_past_bias: int
    n_past_vit: int
    n_past_fwd: int
    Z: float
    domZ: float
    Z_from_option: bool
    domZ_from_option: bool
    F1: float
    F2: float
    F3: float
    bias_filter: bool
    do_max: bool


@dataclass
class SearchResult:
    """The hits of one model (a pyhmmer ``TopHits``) and its pipeline statistics."""

    hmm: object
    hits: object
    stats: PipelineStats
    seconds: dict | None = None   # time per stage (filtered path), for benchmarks
    # ``hits.__getstate__()`` where the search took it (for the statistics): the report
    # workers are sent it rather than serializing the hits again (not to be changed)
    hits_state: dict | None = None


def default_Z(db: SequenceDB, n_searched: int) -> float:
    """Number of targets for E-values: the whole database's, even for a shard."""
    return float(db.total_seqs if db.shard else n_searched)


def pipeline_stats(hits, options: SearchOptions, *, nseqs=None, nres=None, cascade=None,
                   state: dict | None = None) -> PipelineStats:
    """The statistics of ``hits`` (``state``: their ``__getstate__()`` where already taken)."""
    pli = (state if state is not None else hits.__getstate__())["pipeline"]
    return PipelineStats(
        nmodels=1,
        nnodes=int(pli["nnodes"]),
        nseqs=int(nseqs if nseqs is not None else pli["nseqs"]),
        nres=int(nres if nres is not None else pli["nres"]),
        n_past_msv=cascade.n_past_msv if cascade else int(pli["n_past_msv"]),
        n_past_bias=cascade.n_past_bias if cascade else int(pli["n_past_bias"]),
        n_past_vit=cascade.n_past_vit if cascade else int(pli["n_past_vit"]),
        n_past_fwd=int(pli["n_past_fwd"]),
        Z=float(hits.Z),
        domZ=float(hits.domZ),
        Z_from_option=options.Z is not None,
        domZ_from_option=options.domZ is not None,
        F1=options.F1, F2=options.F2, F3=options.F3,
        bias_filter=options.bias_filter,
        do_max=options.max,
    )


def make_backend(device: str, db: SequenceDB, gpus=None):
    """The filter backend of a device ('reference' or 'gpu')."""
    if device == "reference":
        from .reference import ReferenceBackend

        return ReferenceBackend(db)
    if device == "gpu":
        from .gpu import GpuBackend

        return GpuBackend(db, gpus=gpus)
    raise ValueError(device)


def hmmsearch(
    hmms: Iterable,
    db: SequenceDB,
    options: SearchOptions | None = None,
    *,
    device: str = "cpu",
    cpus: int | None = None,
    skip_long: bool = False,
    gpus=None,
    backend=None,
    callback: Callable[[object, int], None] | None = None,
    filter_threads: int | None = None,
    gpu_finishing: bool | str = "auto",
) -> Iterator[SearchResult]:
    """Search every model of ``hmms`` against ``db``; yield results in model order.

    Args:
        hmms: pyhmmer ``HMM`` objects (protein).
        db: the target database.
        options: HMMER's options (defaults if None).
        device: 'cpu', 'reference' or 'gpu' (already resolved, see :mod:`gpu_search.device`).
        cpus: CPU threads (all cores by default).
        skip_long: leave out sequences over HMMER's 100,000-residue limit
            instead of refusing the database.
        gpus: GPU ids for the 'gpu' device (all visible by default).
        backend: an already built filter backend (database already on the GPU),
            to search many model files against one loaded database.
        callback: called as ``callback(hmm, n_done)`` after each model.
        filter_threads: threads running batches of models through the filter cascade at once
            (at most ``cpus``); by default as measured best (:func:`_filter_threads`).
        gpu_finishing: on a GPU, where HMMER's finishing of the survivors is done: "auto"
            (the GPU takes a batch's survivors, where exact (:mod:`.gpufinish`), where they
            are GPU_BATCH_PAIRS or more, or while the CPU threads have more than
            BACKLOG_SECONDS of finishing queued), True (the GPU takes every batch's) or False
            (the CPU threads finish all); the hits are the same (tests and benchmarks compare
            them).

    Yields:
        :class:`SearchResult` per model, in the order of ``hmms``.
    """
    options = options or SearchOptions()
    if not (gpu_finishing is True or gpu_finishing is False or gpu_finishing == "auto"):
        raise ValueError(f"gpu_finishing must be True, False or 'auto', not {gpu_finishing!r}")
    cpus = cpus or os.cpu_count() or 1
    skipped = db.check_for_hmmsearch(skip_long)
    searched = np.arange(db.n_seqs)
    if skipped is not None:
        searched = np.setdiff1d(searched, skipped)
    n_searched = len(searched)
    nres = int(db.lengths[searched].sum())
    Z = options.Z if options.Z is not None else default_Z(db, n_searched)
    kwargs = options.pipeline_kwargs(Z)

    if device == "cpu":
        yield from _search_pyhmmer(hmms, db, searched, options, kwargs, cpus, callback)
    else:
        backend = backend or make_backend(device, db, gpus)
        yield from _search_filtered(hmms, db, searched, options, kwargs, cpus, backend,
                                    n_searched, nres, callback, filter_threads, gpu_finishing)


def _search_pyhmmer(hmms, db, searched, options, kwargs, cpus, callback):
    """HMMER's whole pipeline in pyhmmer, over every searched sequence.

    pyhmmer's hmmsearch gives each model one thread: a search of fewer models than threads
    left cores idle (one model: one core).  There the database is cut into pieces instead
    (:class:`PiecewiseSearch`), each model's pieces searched on every thread.  Without -Z,
    both keep the hits serial HMMER keeps against its running Z (:func:`serial_hits`)."""
    import pyhmmer

    queries = list(hmms)
    if 1 < cpus and len(queries) < cpus:
        pieces = -(-PIECES_PER_THREAD * cpus // max(1, len(queries)))
        yield from _search_in_pieces(queries, db, searched, options, kwargs, cpus, pieces, callback)
        return
    block = db.digital_block(searched)
    if running_z_applies(options, db):
        kwargs = dict(kwargs, Z=None)       # (one serial search per model: HMMER's running Z itself)
    done = 0

    def tick(hmm, total):
        nonlocal done
        done += 1
        if callback:
            callback(hmm, done)

    for hmm, hits in zip(queries, pyhmmer.hmmsearch(queries, block, cpus=cpus, callback=tick, **kwargs)):
        yield SearchResult(hmm, hits, pipeline_stats(hits, options))


def cut_by_work(idx: np.ndarray, work: np.ndarray, n: int) -> list[np.ndarray]:
    """``idx`` cut into at most n contiguous pieces of about equal summed ``work`` (one value
    per index), none empty."""
    if n <= 1 or len(idx) <= 1:
        return [idx]
    total = np.cumsum(work, dtype=np.float64)
    cuts = np.searchsorted(total, total[-1] * np.arange(1, n) / n)
    return [piece for piece in np.split(idx, cuts) if len(piece)]


def merge_pieces(parts: list):
    """One model's pieces' ``TopHits`` as one (with Z fixed, those of one search of all the
    pieces' sequences: the same hits, the pipeline's counters summed; with Z unset, Z is the
    pieces' sum and the hits are thresholded against it)."""
    return parts[0].merge(*parts[1:]) if len(parts) > 1 else parts[0]


# --- the hits serial HMMER keeps with Z unset ------------------------------------------------
# Without -Z, HMMER keeps a hit when its P-value x the number of targets read so far is within E
# (p7_pli_NewSeq sets Z = nseqs so far; p7_pli_TargetReportable), and reports against the final
# Z.  A hit kept and never reported prints nothing, but every output's name columns are as wide
# as the longest name of the kept hits (p7_tophits_GetMaxNameLength).  The CPU path's one
# serial search per model leaves Z unset, as HMMER; its search in database pieces leaves Z
# unset in each piece and drops what serial HMMER would not keep (serial_hits); the filter
# engine fixes Z from the start (survivors finished apart), so after a model's search the
# longest-named of those extra hits among the survivors, the one that can widen the columns,
# is looked for and added, unreported (with_running_z_hit).

# pyhmmer's TopHits.__getstate__()["pipeline"] (P7_PIPELINE's fields), by Python type
PIPELINE_BOOL = ("by_E", "dom_by_E", "inc_by_E", "incdom_by_E", "do_max", "do_biasfilter", "do_null2",
                 "long_targets")
PIPELINE_FLOAT = ("E", "T", "domE", "domT", "incE", "incT", "incdomE", "incdomT", "Z", "domZ", "F1", "F2", "F3")
PIPELINE_INT = ("use_bit_cutoffs", "Z_setby", "domZ_setby", "B1", "B2", "B3", "nmodels", "nseqs", "nres",
                "nnodes", "n_past_msv", "n_past_bias", "n_past_vit", "n_past_fwd", "n_output", "pos_past_msv",
                "pos_past_bias", "pos_past_vit", "pos_past_fwd", "pos_output", "mode", "strands", "W",
                "block_length")
# its counters (64-bit in HMMER): a merge sums them; zero in an added hit's TopHits, so that
# merging it sums the search's own
PIPELINE_COUNTERS = tuple(name for name in PIPELINE_INT if name.startswith(("n", "pos_")))
# those counting sequences (a merge sums them; it keeps its first part's nmodels and nnodes)
SEQUENCE_COUNTERS = tuple(name for name in PIPELINE_COUNTERS if name not in ("nmodels", "nnodes"))


def tophits_from_state(query, state: dict):
    """A pyhmmer ``TopHits`` of ``query`` rebuilt from a ``__getstate__`` dict.  Its C code
    trusts the dict: give it one pyhmmer made, or one checked field by field first."""
    from pyhmmer.plan7 import TopHits

    hits = TopHits(query)
    hits.__setstate__(state)
    return hits


def running_z_applies(options: SearchOptions, db: SequenceDB) -> bool:
    """Whether HMMER's running Z decides which hits are kept: E-value thresholds and Z unset
    (a shard's search is not the whole database's serial one)."""
    return options.Z is None and options.T is None and not options.bit_cutoffs and not db.shard


def name_bytes(db: SequenceDB) -> np.ndarray:
    """Each sequence's name length in bytes (HMMER's strlen)."""
    return np.diff(np.asarray(db.name_offsets, dtype=np.int64))


def with_running_z_hit(hits, survivors: np.ndarray, searched: np.ndarray, name_len: np.ndarray, search_one,
                       name_of=None):
    """``hits`` (Z fixed) with the longest-named hit serial HMMER also keeps, unreported.

    Args:
        survivors: the database sequences through the filters (only they can hold a hit).
        searched: the searched sequences, in database order (a sequence's k is its place there).
        name_len: :func:`name_bytes`.
        search_one(idx, Z, E): the model's TopHits against the survivors idx (finished as the
            others), with that Z and E.
        name_of: the name a hit of survivor i is given (hmmsearch: the sequence's; hmmscan: the
            model's), to search the candidates together first (below); None: each alone.
    """
    kept = {h.name for h in hits}
    widest = max([8] + [len(name.encode()) for name in kept])     # (HMMER's narrowest column: 8)
    longer = survivors[name_len[survivors] > widest]
    if not len(longer):
        return hits
    Z, E = float(hits.Z), float(hits.E)
    k = np.searchsorted(searched, longer) + 1
    order = np.lexsort((k, -name_len[longer])).tolist()          # longest first, then earliest
    if name_of is not None and len(order) > 1:
        # all of them searched once, with the smallest k as Z: HMMER keeps a hit where its
        # P-value x Z is within E, the rest of its pipeline the same whatever Z, so a sequence not
        # kept there is not kept with its own k either; only those kept are searched again, each
        # with its own k (with few homologs a model had hundreds of these one-sequence searches,
        # each on a new pipeline, on the thread that hands the models on)
        kept_once = {h.name for h in search_one(longer, float(k.min()), E)}
        order = [j for j in order if name_of(int(longer[j])) in kept_once]
    for j in order:
        i = int(longer[j])
        one = search_one(np.array([i]), float(k[j]), E)           # HMMER's own decision and hit
        if len(one):
            return hits.merge(_unreported(one, Z))
    return hits


def serial_hits(hits, hmm, db: SequenceDB, searched: np.ndarray, place: dict):
    """``hits`` without the hits kept and not reported that serial HMMER would not keep (P x k
    over E, k the sequence's place among the searched ones).

    ``place``: name -> k, filled here the first time it is needed (where names repeat, a name's
    first place)."""
    E = float(hits.E)
    drop = []
    for rank, hit in enumerate(hits):
        if hit.reported or hit.included:
            continue
        if not place:
            for k, i in enumerate(searched.tolist(), start=1):
                place.setdefault(db.name(i), k)
        if hit.pvalue * place[hit.name] > E:
            drop.append(rank)
    if not drop:
        return hits
    state = hits.__getstate__()
    order = state["hit"]                    # unsorted positions, in the sorted order
    gone = {order[rank] for rank in drop}
    kept = [i for i in range(len(state["unsrt"])) if i not in gone]
    new_place = {old: new for new, old in enumerate(kept)}
    state.update(unsrt=[state["unsrt"][i] for i in kept], hit=[new_place[i] for i in order if i not in gone],
                 N=len(kept), Nalloc=max(1, len(kept)))
    return tophits_from_state(hmm, state)


def _unreported(hits, Z: float):
    """``hits`` with Z and zero counters, so that ``TopHits.merge`` takes them beside a search
    with Z fixed, its E-values and counters unchanged (the merge thresholds every hit against
    that Z again: over E there, they are kept and not reported)."""
    state = hits.__getstate__()
    state["pipeline"].update({"Z": Z}, **dict.fromkeys(PIPELINE_COUNTERS, 0))
    return tophits_from_state(hits.query, state)


class ThreadPipelines:
    """One ``pyhmmer.plan7.Pipeline`` per calling thread, reused for every search it runs
    (cleared after each), as pyhmmer's own hmmsearch keeps one per thread: no pipeline,
    background or dispatcher is built per search."""

    def __init__(self, alphabet, background, kwargs: dict):
        self.alphabet, self.background, self.kwargs = alphabet, background, kwargs
        self._local = threading.local()

    def search(self, hmm, block):
        """``Pipeline.search_hmm(hmm, block)`` on this thread's pipeline."""
        pipeline = getattr(self._local, "pipeline", None)
        if pipeline is None:
            from pyhmmer.plan7 import Pipeline

            pipeline = self._local.pipeline = Pipeline(self.alphabet, background=self.background, **self.kwargs)
        try:
            return pipeline.search_hmm(hmm, block)
        finally:
            pipeline.clear()         # its counters start again from zero for the next search

    def once(self, hmm, block, **options):
        """``search_hmm`` on a pipeline of its own, with some of the options changed."""
        from pyhmmer.plan7 import Pipeline

        return Pipeline(self.alphabet, background=self.background, **dict(self.kwargs, **options)).search_hmm(hmm, block)


class PiecewiseSearch:
    """HMMER's whole pipeline (pyhmmer's ``Pipeline.search_hmm``) of a model over a database cut
    into pieces, the pieces searched at once on a pool of threads (:class:`ThreadPipelines`).
    With Z fixed (``kwargs``), a model's pieces merged are its search of the whole database:
    the same hits and domains, the pipeline's counters summed (tests: the CPU path against
    HMMER's, models on more threads than models).  With Z unset, the merged pieces keep more
    weak, unreported hits than serial HMMER, which :func:`serial_hits` drops.

    Args:
        blocks: the pieces, pyhmmer ``DigitalSequenceBlock``s.
        kwargs: the pipeline's options, Z among them.
        pool: the threads (a ``ThreadPoolExecutor``).
    """

    def __init__(self, blocks: list, kwargs: dict, pool):
        from pyhmmer.plan7 import Background

        self.blocks, self.pool = blocks, pool
        self.pipelines = ThreadPipelines(blocks[0].alphabet, Background(blocks[0].alphabet), kwargs)

    def submit(self, hmm) -> list:
        """The model's search of each piece, under way (futures)."""
        return [self.pool.submit(self.pipelines.search, hmm, block) for block in self.blocks]

    @staticmethod
    def merged(futures):
        """The pieces' hits as one ``TopHits`` (waiting for them)."""
        return merge_pieces([f.result() for f in futures])


# Pieces of the database a model's CPU search is cut into, per thread the model has: a few,
# so that the pieces of models of different lengths balance across the threads, and a search
# stopped early (Ctrl-C, an error) waits only for the pieces under way
PIECES_PER_THREAD = 4


def _search_in_pieces(queries, db, searched, options, kwargs, cpus, pieces, callback):
    """:func:`_search_pyhmmer` for fewer models than threads: the database cut into ``pieces``
    pieces of about equal residues, every (model, piece) on the pool; results in model order.

    Without -Z each piece is searched with Z unset: its count of targets read starts again at
    zero, so it keeps every hit serial HMMER keeps in it, and some more; merged, Z is the
    sum (the searched sequences) and the hits are thresholded against it, and the kept hits
    serial HMMER would not keep are dropped (:func:`serial_hits`)."""
    blocks = [db.digital_block(piece) for piece in cut_by_work(searched, db.lengths[searched], pieces)]
    running_z = running_z_applies(options, db)
    if running_z:
        kwargs = dict(kwargs, Z=None)
    place = {}                             # name -> k, made when first needed
    with ThreadPoolExecutor(max_workers=cpus, thread_name_prefix="search") as pool:
        search = PiecewiseSearch(blocks, kwargs, pool)
        under_way = [search.submit(hmm) for hmm in queries]
        try:
            for done, (hmm, futures) in enumerate(zip(queries, under_way), start=1):
                hits = search.merged(futures)
                if running_z:
                    hits = serial_hits(hits, hmm, db, searched, place)
                if callback:
                    callback(hmm, done)
                yield SearchResult(hmm, hits, pipeline_stats(hits, options))
        finally:
            for futures in under_way:        # a failure, or a caller that stopped early: the pieces
                for future in futures:       # not yet started are dropped
                    future.cancel()


class Finisher:
    """HMMER's pipeline after the filters, on survivors: Forward, domain definition,
    thresholds (pyhmmer, in the calling thread).

    Each worker thread keeps one ``pyhmmer.plan7.Pipeline`` for every model and piece
    (:class:`ThreadPipelines`).  The survivors already passed MSV, bias and Viterbi
    filters, so F1 = F2 = 1 (MSV lets all through, the Viterbi filter is skipped); the
    bias filter stays on, since Forward's P-value uses its score.

    A database sequence becomes a pyhmmer ``DigitalSequence`` once, the first time it
    survives, and is reused for every later model it survives (with many homologs each
    sequence survives many models): building one holds the interpreter lock, which the
    filter threads and the report need too.  The sequences kept are bounded by
    CACHED_RESIDUES; beyond it a piece's sequences are built for it alone.
    """

    CACHED_RESIDUES = 1 << 28

    def __init__(self, db: SequenceDB, alphabet, background, kwargs: dict):
        self.db = db
        self.alphabet = alphabet
        self.pipelines = ThreadPipelines(alphabet, background, dict(kwargs, F1=1.0, F2=1.0))
        self._sequences: dict[int, object] = {}
        self._cached_residues = 0

    def block(self, survivors: np.ndarray):
        """The survivors as one pyhmmer ``DigitalSequenceBlock``, in the order given."""
        from pyhmmer.easel import DigitalSequenceBlock

        cache = self._sequences
        ids = survivors.tolist()
        missing = [i for i in ids if i not in cache]
        if missing:
            made = dict(zip(missing, self.db.digital_block(missing, self.alphabet)))
            if self._cached_residues > self.CACHED_RESIDUES:
                return DigitalSequenceBlock(self.alphabet, [made[i] if i in made else cache[i] for i in ids])
            for i, seq in made.items():
                cache.setdefault(i, seq)      # (another thread may have made it too: either is right)
            self._cached_residues += int(self.db.lengths[missing].sum())
        return DigitalSequenceBlock(self.alphabet, [cache[i] for i in ids])

    def alone(self, hmm):
        """search_one(idx, Z, E) of :func:`with_running_z_hit`: ``hmm`` against the survivors
        idx, finished with that Z and E (on the calling thread)."""
        return lambda idx, Z, E: self.pipelines.once(hmm, self.block(idx), Z=Z, E=E)

    def __call__(self, hmm, survivors: np.ndarray):
        """(TopHits of ``hmm`` over the database sequences ``survivors``, seconds taken)."""
        t = time.perf_counter()
        hits = self.pipelines.search(hmm, self.block(survivors))
        return hits, time.perf_counter() - t


class FinishingBacklog:
    """The finishing work handed to the CPU threads and not yet done, in DP cells, and in
    seconds of all the threads at the rate their finished pieces have shown so far."""

    def __init__(self, threads: int):
        self.threads = max(1, threads)
        self._lock = threading.Lock()
        self._cells = 0.0               # handed on, not done
        self._done_cells = 0.0          # done, and the thread-seconds they took
        self._done_seconds = 0.0

    def add(self, cells: float) -> None:
        with self._lock:
            self._cells += cells

    def done(self, cells: float, seconds: float | None) -> None:
        """A piece of ``cells`` is through (seconds None where it failed or was cancelled)."""
        with self._lock:
            self._cells -= cells
            if seconds is not None:
                self._done_cells += cells
                self._done_seconds += seconds

    def seconds(self) -> float:
        """The backlog's seconds on all threads (0 before any piece has finished: no rate yet)."""
        with self._lock:
            if self._done_cells <= 0.0:
                return 0.0
            return self._cells * self._done_seconds / self._done_cells / self.threads


# Finishing pieces: about FINISH_CELLS DP cells (survivors x length x M) and at least
# FINISH_MIN_SEQS sequences each; in a search of at most LOOKAHEAD_MODELS models, pieces of
# SMALL_RUN_CELLS and SMALL_RUN_MIN_SEQS, so that the last models' survivors are finished on
# all cores, not one model's on one while the others wait (20 models x 273 M residues on an
# H200 with 16 cores: the last 0.4 s of a 1.9 s run had one finishing call under way).
FINISH_CELLS, FINISH_MIN_SEQS = 1e7, 16
SMALL_RUN_CELLS, SMALL_RUN_MIN_SEQS = 1e6, 2


def _chunks_by_cells(survivors: np.ndarray, lengths: np.ndarray, M: int,
                     cells: float = FINISH_CELLS, min_size: int = FINISH_MIN_SEQS) -> list[np.ndarray]:
    """Split survivors into pieces of about ``cells`` DP cells for the CPU threads."""
    if len(survivors) <= min_size:
        return [survivors]
    work = lengths[survivors].astype(np.float64) * M
    return cut_by_work(survivors, work, int(min(len(survivors) // min_size, max(1, work.sum() // cells))))


# Models a filter task runs through the cascade together (one launch a geometry each
# stage), and how far ahead of the oldest model not yet started it looks for models of
# the same kernel geometry to fill a batch: one model's launch over a proteome-sized
# database is bound by latency, not by work.
BATCH_MODELS = 32
LOOKAHEAD_MODELS = 512
# With gpu_finishing="auto", a batch's survivors go to the GPU only while the CPU threads have
# more than this many seconds of finishing queued.  Where the CPU threads keep up, the GPU's
# finishing saves no time and slows the filters, the search's critical path then: its host
# work holds the interpreter's lock the filter threads need, and its kernels share the GPU.
# 2,000 models x 6.8 M residues on an H200 host with 16 cores, in one process
# (bench/probes/finish_split.py --ab), seconds with every batch on the GPU / none / "auto":
# few homologs 7.5 / 4.7 / 4.8; many homologs, three runs, 12.7-15.1 / 14.9-16.6 / 12.0-13.7
# (another host: a backlog of 0.3 s as fast as every batch on the GPU, 3 s as slow as none).
# With the GPU's stochastic traces a warp a region (its finishing about twice as fast), many
# homologs: every batch 14.3 s, none 17.3, a backlog of 1 s 13.6, 0.5 s 13.8, 0.25 s 12.8.
BACKLOG_SECONDS = 0.25
# ... and whatever the backlog, a batch with at least this many survivors: with many homologs the
# GPU's finishing (the longest pairs too, gpufinish.MAX_GPU_CELLS) spares the CPU threads more
# than its host work costs the filters.  2,000 models x 6.8 M residues on H200 hosts, in one
# process (finish_split.py --ab, medians of 2 runs): many homologs (about 1,100 survivors a batch
# of 32 models) every batch on the GPU 13.6 s, by the backlog alone 17.2 s (a backlog of 0.1 s
# 16.2, 0 s 15.5); few homologs (about 200 a batch) 11.4 against 8.1 s.  With this rule, on
# another host: many 11.2 s (every batch 12.9, by the backlog alone 13.8), few 6.17 (6.14).
GPU_BATCH_PAIRS = 512


# The interpreter's switch interval while a filtered search runs (restored after).  The threads
# feeding the GPU (filter batches, GPU finishing calls) give up the interpreter's lock at every
# kernel wait and copy, and the records thread and the report hold it between; with the default
# 5 ms each return could wait that long for it.  2,000 models x 6.8 M residues, many homologs, on
# an H200 host with 16 cores, in one process (bench/probes/finish_split.py --modes auto
# --switch-intervals 0.005,0.0005,0.0001 --repeat 3: three rounds, settings alternated), 5 ms
# (two runs a round) 13.5 and 14.9 s, 13.7 and 13.9, 12.1 and 11.6; 0.5 ms 12.0, 12.0, 11.5;
# 0.1 ms 12.0, 22.3, 11.7 (the slow run's GPU finishing calls took twice their usual time).
# Few homologs: within the runs' spread.
SWITCH_INTERVAL = 0.0005


# Threads building the models' profiles for the filter threads (see _search_filtered)
PROFILE_THREADS = 2


# The most models in flight (filtered or being filtered, not yet handed on in order); see
# _search_filtered
WINDOW_MODELS = 512


def _filter_threads(n_models_ahead: int) -> int:
    """Filter threads for a search whose first LOOKAHEAD_MODELS + 1 models read are
    ``n_models_ahead``: 4 for a search of at most LOOKAHEAD_MODELS models, where batches
    running side by side bring the first survivors to the finishing threads sooner, else 2:
    past the first batches more threads only wait for one another (the interpreter's lock,
    the cores the finishing threads use).  Measured in one process on an H200 host with 16
    cores (bench/probes/filter_wait_probe.py), seconds with 1 / 2 / 3 / 4 filter threads:
    2,000 models x 6.8 M residues, few homologs, 6.12 / 5.97 / 7.02 / 8.71 (the last on
    another host of that kind, where 2 took 6.90); many homologs, 2 and 4: 15.97 / 16.47;
    200 models, few homologs: 1.48 / 1.31; 20 models x 273 M: 0.78 / 0.73."""
    return 4 if n_models_ahead <= LOOKAHEAD_MODELS else 2


def _search_filtered(hmms, db, searched, options, kwargs, cpus, backend, n_searched, nres, callback,
                     filter_threads, gpu_finishing: bool | str = "auto"):
    """Filter cascade on the backend, survivors finished by pyhmmer; models overlap.

    Two pools: a few threads run batches of models through the cascade (GPU
    kernels for the whole batch at once, host P-values, bias filter), and every
    CPU thread finishes survivors in pieces of about equal work (Forward, domain
    definition in pyhmmer).  So while the CPUs finish one batch the GPU already
    filters the next ones (the CPU/GPU overlap of cuBLASTP and CUDAMPF), and a
    long model's Forward is spread over all cores.  A batch takes the oldest model
    not yet started and models of the same kernel geometry (``backend.batch_key``)
    from the next LOOKAHEAD_MODELS.  Pieces of one model are merged with
    ``TopHits.merge``, exact with Z fixed.  Results are yielded in model order.
    """
    from pyhmmer.plan7 import Background

    hmms = iter(hmms)
    head = list(itertools.islice(hmms, LOOKAHEAD_MODELS + 1))     # (the first models, to size the pools)
    if not head:
        return
    first = head[0]
    if filter_threads is None:
        filter_threads = _filter_threads(len(head))
    small_run = len(head) <= LOOKAHEAD_MODELS
    piece_cells, piece_seqs = (SMALL_RUN_CELLS, SMALL_RUN_MIN_SEQS) if small_run else (FINISH_CELLS, FINISH_MIN_SEQS)
    filter_threads = max(1, min(filter_threads, cpus))
    # shared by all models: background, degeneracy, length-dependent tables
    bg = Background(first.alphabet)
    bg_freq = np.asarray(bg.residue_frequencies, dtype=np.float32)
    degeneracy = amino_degeneracy()
    first_prof = FilterProfile.from_hmm(first, bg)
    tables = LengthTables(db, searched, first_prof)
    finish = Finisher(db, first.alphabet, bg, kwargs)
    gpu_finish = None
    if gpu_finishing and getattr(backend, "name", None) == "gpu" and gpu_finishing_applies(options):
        from pyhmmer.easel import DigitalSequenceBlock

        # the pipeline fields of the CPU's searches (thresholds, Z), for the GPU's hits to merge with them
        template = finish.pipelines.once(first, DigitalSequenceBlock(first.alphabet)).__getstate__()["pipeline"]
        template.update(dict.fromkeys(SEQUENCE_COUNTERS, 0))
        gpu_finish = GpuFinishing(db, backend, template, F3=options.F3)
    backlog = FinishingBacklog(cpus)
    running_z = running_z_applies(options, db)
    name_len = name_bytes(db) if running_z else None
    batch_key = getattr(backend, "batch_key", lambda M: None)

    stop = threading.Event()      # the kill switch: batches being filtered end at their next stage
    failures = []                 # the filter tasks' errors, first first
    # the GPU's hits are made into HMMER's records on one thread of their own: that is Python
    # work holding the interpreter's lock, and on every finishing thread at once it kept the
    # filter threads waiting for the lock (2,000 models x 6.8 M residues, many homologs, on an
    # H200 with 16 cores: the filter batches took four times as long as with no GPU finishing)
    # a batch's profiles are built (and laid out for the kernels) on threads of their own as the
    # batch is formed, ahead of the filter thread that takes it: HMMER's configuration and
    # conversion give up the interpreter's lock, and on the filter threads each taking it back
    # waited behind the finishing threads
    # (2,000 models x 6.8 M residues on an H200 host: a fifth of the filter threads' time)
    with ThreadPoolExecutor(max_workers=max(1, cpus), thread_name_prefix="finish") as finish_pool, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="records") as records_pool, \
            ThreadPoolExecutor(max_workers=PROFILE_THREADS, thread_name_prefix="profiles") as profile_pool, \
            ThreadPoolExecutor(max_workers=filter_threads, thread_name_prefix="filter") as filter_pool:

        def to_cpu(hmm, piece) -> Future:
            """A piece of a model's survivors to the finishing threads, counted in the backlog
            until done."""
            cells = float(db.lengths[piece].sum()) * hmm.M
            backlog.add(cells)
            try:
                future = finish_pool.submit(finish, hmm, piece)
            except BaseException:
                backlog.done(cells, None)
                raise
            future.add_done_callback(lambda f: backlog.done(
                cells, None if f.cancelled() or f.exception() is not None else f.result()[1]))
            return future

        pack_ahead = getattr(backend, "pack_ahead", None)

        def profiles_of(batch):
            if stop.is_set():
                raise Stopped()
            profs = [FilterProfile.from_hmm(hmm, bg) for hmm in batch]
            if pack_ahead is not None:
                pack_ahead(profs)
            return profs

        def cascade_task(batch, profiles: Future):
            try:
                profs = profiles.result()
                if stop.is_set():
                    raise Stopped()
                results = run_cascade_batch(profs, db, backend, F1=options.F1, F2=options.F2, F3=options.F3,
                                            bias_filter=options.bias_filter, bg_freq=bg_freq,
                                            degeneracy=degeneracy, searched=searched, tables=tables,
                                            should_stop=stop.is_set)
            except BaseException as exc:
                # the kill switch pulled at once: the batches filtered beside this one end at
                # their next stage, those queued at their start, without waiting for the
                # search's loop to meet this failure at the model it waits for (which may be
                # one of theirs: it raises this failure, not their Stopped)
                if not isinstance(exc, Stopped):
                    failures.append(exc)
                stop.set()
                raise
            if stop.is_set():
                raise Stopped()
            # HMMER's finishing: on the GPU where it is exact there (the GPU finishing thread,
            # several batches a call), the rest on the CPU threads; each model's tasks there
            # (the GPU's hits made into HMMER's records, pyhmmer on the rest) in its holder
            holders = [Future() for _ in results]

            def to_finishing_threads(finished) -> None:
                """finished: per model (its GPU hits' maker or None, survivors left), or an error."""
                if isinstance(finished, BaseException):
                    for holder in holders:
                        holder.set_exception(finished)
                    return
                for hmm, holder, (make, left) in zip(batch, holders, finished):
                    try:
                        holder.set_result(([records_pool.submit(make)] if make else [],
                                           [to_cpu(hmm, piece) for piece in
                                            _chunks_by_cells(left, db.lengths, hmm.M, piece_cells, piece_seqs)]))
                    except RuntimeError as exc:          # (the pool shut down: the search has stopped)
                        holder.set_exception(exc)

            survivors = [c.survivors for c in results]
            if gpu_finish is not None and (gpu_finishing is True or backlog.seconds() > BACKLOG_SECONDS
                                           or sum(len(s) for s in survivors) >= GPU_BATCH_PAIRS):
                gpu_finish.submit(batch, profs, survivors, to_finishing_threads,
                                  [None if c.untested is None else (c.untested, c.untested_filt) for c in results])
            else:
                to_finishing_threads([(None, s) for s in survivors])
            return list(zip(results, holders))

        def collect(hmm, fut, j):
            cascade, holder = fut.result()[j]
            gpu_part, pieces = holder.result()
            parts = [f.result() for f in pieces]
            hits = merge_pieces([f.result() for f in gpu_part] + [h for h, _ in parts])
            if running_z:
                hits = with_running_z_hit(hits, np.asarray(cascade.survivors), searched, name_len,
                                          finish.alone(hmm), db.name)
            seconds = dict(cascade.seconds, finish=sum(t for _, t in parts))
            # (serialized once: the statistics read it, and the report workers are sent it)
            state = hits.__getstate__()
            stats = pipeline_stats(hits, options, nseqs=n_searched, nres=nres, cascade=cascade, state=state)
            return SearchResult(hmm, hits, stats, seconds, hits_state=state)

        def finished(entry) -> bool:
            """Whether a model is through both stages (its cascade and every piece)."""
            _, fut, j = entry
            if not fut.done():
                return False
            holder = fut.result()[j][1]
            return holder.done() and (holder.exception() is not None or all(f.done() for part in holder.result()
                                                                             for f in part))

        # Models in flight: the filters run up to `window` models ahead of the oldest one
        # not yet finished, so the finishing threads always have work queued; a model is
        # handed on only once finished (waiting on the oldest's cascade alone stalled the
        # filters behind a long model's finishing), or when the window is full.  A wide
        # window keeps the filters going past a model with thousands of survivors (2,000
        # models x 6.8 M residues on 16 cores: a window of 512 models 8-12% faster than one of
        # 64, and 2,048 no faster than 512); it holds each model's survivors, then its hits, so
        # it stops at WINDOW_MODELS whatever the host's cores.
        # Every batch holds BATCH_MODELS models where the stream has them, whatever the timing:
        # a batch starts only where the window has room for a whole one, so which models
        # share a launch, and so the kernel shapes a search compiles (a launch takes its
        # largest model's geometry), is the same on every run of the same models, and a
        # second run finds every shape compiled.
        window = max(BATCH_MODELS, WINDOW_MODELS)
        ahead = deque()          # (position, hmm) read, not started
        started = {}             # position -> (hmm, batch future, place in the batch)
        profile_futures = []     # batches' profiles being built (to cancel on a stop)
        read = 0
        handed = 0
        models = itertools.chain(head, hmms)

        prepare_kernels = getattr(backend, "prepare_kernels", None)

        def fill() -> None:
            nonlocal read
            first = len(ahead)
            while len(ahead) < LOOKAHEAD_MODELS:
                hmm = next(models, None)
                if hmm is None:
                    break
                ahead.append((read, hmm))
                read += 1
            if prepare_kernels is not None and len(ahead) > first:
                # the kernel shapes of the models read, compiled side by side before their
                # batches ask for them, where this host has none of them yet
                prepare_kernels([hmm.M for _, hmm in itertools.islice(ahead, first, None)], cpus,
                                finishing=gpu_finish is not None)

        def start_batch() -> None:
            """The oldest model not started and up to BATCH_MODELS - 1 of its geometry from
            those read ahead, as one filter task."""
            key = batch_key(ahead[0][1].M)
            batch = [ahead.popleft()]
            kept = deque()
            while ahead and len(batch) < BATCH_MODELS:
                entry = ahead.popleft()
                (batch if batch_key(entry[1].M) == key else kept).append(entry)
            ahead.extendleft(reversed(kept))
            members = [hmm for _, hmm in batch]
            profiles = profile_pool.submit(profiles_of, members)
            profile_futures[:] = [f for f in profile_futures if not f.done()] + [profiles]
            fut = filter_pool.submit(cascade_task, members, profiles)
            for j, (position, hmm) in enumerate(batch):
                started[position] = (hmm, fut, j)

        def hand_on() -> SearchResult:
            """The oldest model's result (waiting for it), counted and reported."""
            nonlocal handed
            try:
                r = collect(*started.pop(handed))
            except Stopped:
                if failures:
                    raise failures[0] from None
                raise
            handed += 1
            if callback:
                callback(r.hmm, handed)
            return r

        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            while True:
                fill()
                while handed in started and finished(started[handed]):
                    yield hand_on()
                # (the oldest model not handed on is always started, even past a full window:
                # a batch may have taken later models of its geometry past it)
                if ahead and (len(started) + BATCH_MODELS <= window or handed not in started):
                    start_batch()
                elif handed in started:
                    yield hand_on()
                else:
                    break
        finally:
            sys.setswitchinterval(switch_interval)
            # a failure, or a caller that stopped early: models not started are dropped,
            # batches being filtered end at their next stage, rather than run to the end
            # (kill switch); leaving the pools waits only for that
            stop.set()
            for profiles in profile_futures:
                profiles.cancel()
            for _, fut, j in started.values():
                if fut.cancel():
                    continue
                if fut.done() and fut.exception() is None:
                    holder = fut.result()[j][1]
                    if holder.done() and holder.exception() is None:
                        for piece in [f for part in holder.result() for f in part]:
                            piece.cancel()
            if gpu_finish is not None:
                gpu_finish.close()
            if prepare_kernels is not None:
                backend.stop_preparing()
