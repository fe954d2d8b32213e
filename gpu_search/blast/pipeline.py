"""The blastp stages of one query, in BLAST+'s order (the CPU path, and the pieces the
scheduler runs around the GPU).

For each query against the whole database (BLAST+ searches queries in
batches, but every decision below is taken per query: checked against the binary;
only whether a long query is searched in chunks depends on its batch, :mod:`.split`):

1. ungapped stage (:mod:`.ungapped`, or the GPU's :mod:`.gpu`): lookup table,
   word hits binned by diagonal, two-hit rule, ungapped X-drop extension ->
   init HSPs;
2. preliminary gapped stage per subject (:mod:`.gapped`), restricted first where
   BLAST decides so, exact where a restricted score lands near the cutoff;
   E-values (Spouge), HSPs over the preliminary E threshold dropped
   (``Blast_HSPListReapByEvalue``);
3. preliminary hit list: the best ``prelim_hitlist_size`` subjects
   (:mod:`.hitlist`);
4. traceback per subject (:mod:`.traceback`): ALIGN_EX, purging, E-values,
   reap by -evalue; ``-max_hsps``;
5. subjects sorted by best E-value, then best score, then later database
   position first, cut to ``-max_target_seqs`` (``hitlist.select_batch``).

Like HMMER's p7_pipeline.c, this module holds the stages only; who runs them
where (threads, GPUs, worker processes) is :mod:`.scheduler`'s and
:mod:`.workers`' business.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError
from . import gapped, kappa, split, stats, traceback
from .alphabet import EASEL_TO_NCBISTDAA, NCBISTDAA, blast_query_codes, easel_to_ncbistdaa
from .hitlist import (EVALUE_EPSILON, SubjectResult, evalue_key, evalues_by_length, hit_list, list_order_key,
                      prelim_hitlist_size)
from .lookup import build_lookup
from .matrix import load_matrix
from .options import BlastOptions
from .output import Hsp, stored_title
from .split import split_queries
from .ungapped import UngappedJob, ungapped_extensions


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
    # the queries BLAST+ splits in the preliminary stage, with their pieces (split.split_queries)
    splits: dict = field(default_factory=dict)


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
    # a query BLAST+ splits (split.py): its pieces in BLAST+'s chunks, each a QueryWork of
    # its own (``chunk_start``: where it starts on the query; ``lookup``: its table until its
    # ungapped stage), and the hit list their merged preliminary HSPs give
    # (``split_prelim_stage``); chunks is None for a query searched whole
    chunks: list | None = None
    chunk_start: int | None = None
    lookup: object = None
    hits: list | None = None


def make_setup(subjects, options: BlastOptions, query_lengths=()) -> SearchSetup:
    """The run's fixed parameters, checked, and the database in NCBIstdaa; ``query_lengths``:
    the query set's, for the queries BLAST+ splits (none given: none split)."""
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
        db_length=db_length, subjects=subjects, splits=split_queries(query_lengths),
    )


def new_work(i: int, queries) -> QueryWork:
    """Query i of the query set, in BLAST's query alphabet."""
    codes = blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(queries.sequence(i))])
    return QueryWork(index=i, codes=codes)


# --- 1. ungapped stage -------------------------------------------------------------------


def prepare_query(work: QueryWork, setup: SearchSetup):
    """Statistics, cutoffs and lookup table of one query (None when BLAST skips the query).

    A query BLAST+ splits (``setup.splits``) gets its chunks' works in ``work.chunks``
    instead, each with its own statistics, cutoffs and table (a chunk BLAST cannot score is
    left out), and returns that list."""
    if not _statistics(work, setup):
        return None
    pieces = setup.splits.get(work.index) if work.chunk_start is None else None
    if not pieces:
        return build_lookup(work.codes, setup.matrix.scores, setup.options.word_size, setup.threshold)
    work.chunks = []
    for a, b in pieces:
        chunk = QueryWork(index=work.index, codes=work.codes[a:b], chunk_start=a)
        chunk.lookup = prepare_query(chunk, setup)
        if chunk.lookup is not None:
            work.chunks.append(chunk)
    return work.chunks


def _statistics(work: QueryWork, setup: SearchSetup) -> bool:
    """The ungapped Karlin block and the cutoffs of a query (or of a chunk of one); False where
    BLAST finds no valid Karlin block (e.g. all X) and skips it."""
    q = work.codes
    work.kbp = stats.ungapped_params(q, setup.matrix)
    if work.kbp is None:
        return False
    work.cutoffs = stats.search_cutoffs(work.kbp, setup.gapped, len(q), stats.BLAST_SEQSRC_MINLENGTH,
                                        setup.db_length, evalue=setup.options.evalue,
                                        comp_based_stats=setup.options.comp_based_stats)
    return True


def ungapped_stage(work: QueryWork, setup: SearchSetup, gpu=None, lookup=None) -> None:
    """Init HSPs of one query: on the GPU (``gpu``: a blast.gpu.GpuUngapped) or the CPU.

    ``lookup``: what ``prepare_query`` returned, if it already ran.  A query BLAST+ splits
    gets its chunks' init HSPs instead, each in its own work.
    """
    if lookup is None:
        lookup = prepare_query(work, setup)
    if lookup is None:
        return
    if work.chunks is not None:
        for chunk in work.chunks:
            ungapped_stage(chunk, setup, gpu, chunk.lookup)
            chunk.lookup = None
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
    # BLAST+ 2.12's x_dropoff is x_dropoff_init as it is, even above a low cutoff (-evalue 10000)
    return UngappedJob(work.codes, lookup, setup.matrix.scores, x_drop=cut.x_drop_ungapped,
                       cutoff=cut.ungapped_cutoff, window=setup.window_size)


def ungapped_batch(items: list, setup: SearchSetup, gpu) -> None:
    """Init HSPs of several queries ((work, what ``prepare_query`` returned) pairs) in one pass
    of the GPU ``gpu`` over the database (GpuUngapped.ungapped_extensions_many), a split
    query's chunks each as a query of its own; a query without a lookup table has none."""
    searched = []
    for work, lookup in items:
        if lookup is not None:
            searched += [(c, c.lookup) for c in work.chunks] if work.chunks is not None else [(work, lookup)]
    if len(searched) == 1:
        work, lookup = searched[0]
        ungapped_stage(work, setup, gpu, lookup)
    elif searched:
        found = gpu.ungapped_extensions_many([ungapped_job(work, setup, lookup) for work, lookup in searched])
        for (work, _), init in zip(searched, found, strict=True):
            work.init = init
    for work, _ in searched:
        work.lookup = None


# --- 2. preliminary gapped stage -----------------------------------------------------------


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
    ev = evalues_by_length(hsps["score"], setup.lengths[hsps["subject"]], work, setup)
    kept = hsps[ev <= work.cutoffs.prelim_evalue]
    if not len(kept):
        return {}
    subj = kept["subject"]
    starts = np.flatnonzero(np.r_[True, subj[1:] != subj[:-1]])
    return {int(subj[a]): kept[a:b] for a, b in zip(starts, np.r_[starts[1:], len(kept)])}


def prelim_stage(work: QueryWork, setup: SearchSetup) -> None:
    """Preliminary gapped HSPs of every subject with init HSPs (``prelim_hsps``), in ``work.prelim``."""
    if work.chunks is not None:
        work.prelim.update(split_prelim_stage(work, setup))
        return
    work.prelim.update(prelim_hsps(work.init, work, setup))


def split_prelim_stage(work: QueryWork, setup: SearchSetup, found: list | None = None) -> dict:
    """The preliminary stage of a query BLAST+ splits (:mod:`.split`): each chunk's hit list
    (``chunk_hit_list``; ``found``: those already made, in the chunks' order) cut to the
    preliminary list's size as its chunk's search leaves it, then the chunks' lists merged in
    order.  Sets ``work.hits`` (the hit list, from the chunks' E-values) and returns
    {subject: PRELIM_HSP rows}, positions on the whole query, in score order."""
    size = prelim_hitlist_size(setup.options.max_target_seqs, setup.options.comp_based_stats)
    first = int(setup.subjects.first_index)
    chunks = work.chunks or []
    if found is None:
        found = [chunk_hit_list(chunk, setup) for chunk in chunks]
    combined: dict = {}
    for chunk, lists in zip(chunks, found, strict=True):
        combined = split.merge_chunk(combined, split.best_lists(lists, size, first), chunk.chunk_start, size,
                                     first)
    work.hits = sorted((split.list_key(hsps, first + s), s) for s, hsps in combined.items())
    return {s: rows for s, (rows, _) in combined.items()}


def chunk_hit_list(chunk: QueryWork, setup: SearchSetup) -> dict:
    """One chunk's preliminary HSPs per subject: {subject: (PRELIM_HSP rows, their E-values)},
    the E-values with the chunk's length (Spouge's m), the rows moved to positions on the
    whole query."""
    lists = {}
    for s, rows in prelim_hsps(chunk.init, chunk, setup).items():
        rows = rows.copy()
        evalues = evalues_by_length(rows["score"], np.full(len(rows), setup.lengths[s]), chunk, setup)
        for name in ("q_start", "q_end", "q_gapped_start"):
            rows[name] += chunk.chunk_start
        lists[s] = (rows, evalues)
    chunk.init = np.zeros(0)
    return lists


def init_pieces(init: np.ndarray, size: int) -> list[np.ndarray]:
    """A query's init HSPs cut at subject boundaries into pieces of about ``size`` rows
    (``BlastSettings.gapped_piece``), for several threads."""
    if len(init) <= size:
        return [init]
    subj = init["subject"]
    starts = np.flatnonzero(np.r_[True, subj[1:] != subj[:-1]])
    cuts = np.unique(starts[np.minimum(np.searchsorted(starts, np.arange(size, len(init), size)),
                                       len(starts) - 1)])
    bounds = [0, *[int(c) for c in cuts if c > 0], len(init)]
    return [init[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


# --- 3-5. hit list, traceback, rows ----------------------------------------------------------


def final_stage(work: QueryWork, setup: SearchSetup, queries) -> list[SubjectResult]:
    """Traceback of the subjects of the preliminary hit list (Blast_HitListUpdate)."""
    hits = work.hits if work.hits is not None else hit_list(work, setup)
    return traceback_stage(work, setup, queries, hits)


def alignment_plan(work: QueryWork, setup: SearchSetup, hits: list[tuple]):
    """The alignments of the traceback of ``hits`` (``hitlist.hit_list``), for the GPU
    (``gpu.traceback.AlignmentPlan``; ``traceback_stage`` then takes what it gives)."""
    from .gpu.traceback import AlignmentPlan, alignment_jobs

    subjects = [s for _, s in hits]
    prelims = traceback.stack_prelims([work.prelim[s] for s in subjects])
    jobs, starts = alignment_jobs(prelims, work.codes, subjects, setup.residues, setup.offsets,
                                  setup.matrix.scores, work.cutoffs.x_drop_final)
    return AlignmentPlan(hits, prelims, jobs, starts)


def traceback_stage(work: QueryWork, setup: SearchSetup, queries, hits: list[tuple],
                    aligned=None) -> list[SubjectResult]:
    """Final HSPs with traceback of the subjects of ``hits`` (``hitlist.hit_list``); with
    composition-based statistics, their redo (:mod:`.kappa`).  ``aligned``: the hit list's
    preliminary HSPs with their extensions aligned on the GPU (``gpu.traceback.Aligned``; then
    ``work.prelim`` is not read), or None."""
    opts = setup.options
    if opts.comp_based_stats:
        return redo_stage(work, setup, queries, hits)
    if not hits:                   # (a query BLAST skips has no cutoffs)
        return []
    first = int(setup.subjects.first_index)
    subjects = [s for _, s in hits]
    prelims = aligned.prelims if aligned is not None else [work.prelim[s] for s in subjects]
    tb = traceback.traceback_hit_list(
        prelims, work.codes, subjects, setup.residues, setup.offsets,
        setup.matrix.scores, setup.gap_open, setup.gap_extend, work.cutoffs.x_drop_final,
        evalue=lambda scores, lengths: evalues_by_length(scores, lengths, work, setup),
        expect_value=opts.evalue, letters=NCBISTDAA,
        aligned=aligned.ahead() if aligned is not None else None)
    h = tb.hsps
    # per subject, Blast_HSPListSortByEvalue: E-value up (as s_EvalueComp compares them), then
    # score order (the traceback's order)
    order = np.lexsort((np.arange(len(h)), np.where(h["evalue"] < EVALUE_EPSILON, 0.0, h["evalue"]), tb.subject))
    cuts = np.flatnonzero(np.diff(tb.subject[order])) + 1
    results = []
    for group in (np.split(order, cuts) if len(order) else []):
        if opts.max_hsps is not None:
            group = group[: opts.max_hsps]
        key, s = hits[int(tb.subject[group[0]])]
        best = group[0]
        final_key = list_order_key(float(h["evalue"][best]), int(h["score"][best]), first + s)
        results.append(SubjectResult(first + s, key, final_key, traced_hsps(work, setup, queries, s, tb, group)))
    return results


def redo_stage(work: QueryWork, setup: SearchSetup, queries, hits: list[tuple]) -> list[SubjectResult]:
    """The subjects of ``hits`` redone with composition-based statistics, each with its
    heap record (which of them BLAST keeps is ``hitlist.select_batch``'s business: it depends on
    the other subjects)."""
    opts = setup.options
    first = int(setup.subjects.first_index)
    kq = kappa.kappa_query(work.codes, setup, opts.comp_based_stats)
    results = []
    for key, s in hits:
        a, b = setup.offsets[s], setup.offsets[s + 1]
        subject = setup.residues[a:b]
        aligns = kappa.redo_subject(work.prelim[s], kq, subject, setup.matrix.scores)
        done = kappa.finish_subject(aligns, kq, setup, int(b - a), opts.evalue)
        if done is None:
            continue
        # Blast_HSPListSortByEvalue: E-value up, then the redo's score order
        order = sorted(range(len(done.aligns)), key=lambda i: (evalue_key(float(done.evalues[i])), i))
        if opts.max_hsps is not None:
            order = order[: opts.max_hsps]
        final_key = list_order_key(float(done.evalues[order[0]]), int(done.scores[order[0]]), first + s)
        rows = redone_hsps(work, setup, queries, s, done, order)
        results.append(SubjectResult(first + s, key, final_key, rows,
                                     heap_record=(done.best_evalue, done.best_scaled_score, first + s)))
    return results


def _pair_fields(work: QueryWork, setup: SearchSetup, queries, s: int) -> dict:
    """The fields every output row of query ``work`` against subject ``s`` shares: the
    query's header line (``output.query_definition`` makes its title); the subject's id and
    title as a BLAST database made from the FASTA holds them (``output.stored_title``: the
    whole header line, non-ASCII bytes as '#', a tab as three spaces), or as a BLAST
    database made with -parse_seqids gives them."""
    db = setup.subjects
    columns = db.blast_columns(s)
    return dict(query_id=queries.name(work.index), query_title=queries.header(work.index),
                query_length=len(work.codes), subject_id=stored_title(db.name(s)),
                subject_title=columns.split("\t", 1)[0] if columns else stored_title(db.header(s)),
                subject_length=int(setup.offsets[s + 1] - setup.offsets[s]), oid=int(db.first_index) + int(s),
                subject_columns=columns)


def redone_hsps(work: QueryWork, setup: SearchSetup, queries, s: int, done, order) -> list[Hsp]:
    """Output rows of one redone subject: numbers counted on the unmasked sequences."""
    pair = _pair_fields(work, setup, queries, s)
    subject = setup.residues[setup.offsets[s]:setup.offsets[s + 1]]
    rows = []
    for i in order:
        al = done.aligns[i]
        ident, pos, _length, gaps, opens = kappa.alignment_numbers(al, work.codes, subject, setup.matrix.scores)
        qseq, sseq = traceback.alignment_strings(work.codes, subject, al.q0, al.s0, al.ops, al.nums, NCBISTDAA)
        rows.append(Hsp(
            **pair, score=int(done.scores[i]), bit_score=float(done.bit_scores[i]), evalue=float(done.evalues[i]),
            q_start=al.q0 + 1, q_end=al.q1, s_start=al.s0 + 1, s_end=al.s1, qseq=qseq, sseq=sseq,
            nident=int(ident), positive=int(pos), gaps=int(gaps), gapopen=int(opens)))
    return rows


def traced_hsps(work: QueryWork, setup: SearchSetup, queries, s: int, tb, rows) -> list[Hsp]:
    """Output rows of one subject: HSPs ``rows`` of ``tb`` (``traceback.HitListTraceback``)."""
    pair = _pair_fields(work, setup, queries, s)
    kbp = setup.gapped.kbp
    out = []
    for i in rows.tolist():
        h = tb.hsps[i]
        score = int(h["score"])
        out.append(Hsp(
            **pair, score=score, bit_score=stats.bit_score(score, kbp), evalue=float(h["evalue"]),
            q_start=int(h["q_start"]) + 1, q_end=int(h["q_end"]), s_start=int(h["s_start"]) + 1,
            s_end=int(h["s_end"]), qseq=tb.qseq[i], sseq=tb.sseq[i], nident=int(h["num_ident"]),
            positive=int(h["num_positives"]), gaps=int(h["gaps"]), gapopen=int(h["gap_opens"])))
    return out


def search_query(i: int, queries, setup: SearchSetup) -> list[SubjectResult]:
    """All stages for one query: every subject of its preliminary hit list with final rows."""
    work = new_work(i, queries)
    ungapped_stage(work, setup)
    prelim_stage(work, setup)
    return final_stage(work, setup, queries)
