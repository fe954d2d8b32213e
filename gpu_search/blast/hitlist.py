"""The hit list: E-values of a query's HSPs, BLAST's order of subjects, and its cuts.

BLAST keeps, per query, the best ``prelim_hitlist_size`` subjects of the
preliminary gapped stage (``Blast_HitListUpdate``, ordered by
``s_EvalueCompareHSPLists``: best E-value, then best score, then the later
database position first), traces back only those, and writes the best
``-max_target_seqs`` of them.  With composition-based statistics the subjects
kept also depend on the other queries of BLAST+'s batch of queries and on its
thread count (``select_batch``).  The same cuts serve one search and the union
of database shards' results (:mod:`.merge`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import stats
from .output import fields_reduce

EVALUE_EPSILON = 1.0e-180          # s_EvalueComp: smaller E-values compare equal


# --- E-values of a query's HSPs ---------------------------------------------------------------


def evalue(score: int, work, setup, subject_len: int) -> float:
    """Spouge E-value of a raw score against a subject length, remembered per query in
    ``work.evalues`` (HSPs of a query repeat few (score, length) pairs)."""
    key = (score, subject_len)
    e = work.evalues.get(key)
    if e is None:
        g = setup.gapped
        e = work.evalues[key] = stats.spouge_evalue(score, g.kbp, g.gbp, len(work.codes), subject_len,
                                                    setup.db_length)
    return e


def evalues(scores, work, setup, subject_len: int) -> np.ndarray:
    """E-values of several scores against one subject length."""
    return np.array([evalue(int(s), work, setup, int(subject_len)) for s in scores], dtype=np.float64)


def evalues_by_length(scores, lengths, work, setup) -> np.ndarray:
    """E-values of many (score, subject length) pairs: each distinct pair computed once."""
    pairs, inverse = np.unique(np.stack([np.asarray(scores, np.int64), np.asarray(lengths, np.int64)]),
                               axis=1, return_inverse=True)
    ev = np.array([evalue(int(sc), work, setup, int(n)) for sc, n in pairs.T], dtype=np.float64)
    return ev[inverse.ravel()]


# --- BLAST's order of subjects -----------------------------------------------------------------


def evalue_key(e: float) -> float:
    """An E-value as s_EvalueComp compares it (below EVALUE_EPSILON: equal to 0)."""
    return 0.0 if e < EVALUE_EPSILON else e


def list_order_key(best_evalue: float, best_score: int, oid: int):
    """s_EvalueCompareHSPLists: E-value up, score down, ordinal id down."""
    return (evalue_key(best_evalue), -best_score, -oid)


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
    rows: list                          # Hsp objects, or their output lines (workers.as_sent)
    heap_record: tuple | None = None   # composition statistics: (best E-value, best scaled score, oid)

    def __reduce__(self):
        return fields_reduce(self)


def prelim_hitlist_size(max_target_seqs: int, comp_based_stats: int = 0) -> int:
    """BlastHSPCollectorParamsNew (gapped search): without composition-based statistics the
    smaller of twice -max_target_seqs and it plus 50, at least 10.

    With them, its formula is twice the hit list size plus 50, and BLAST+ 2.12's rows show
    a list never shorter than the default's 1,050 (2 x 500 + 50) subjects: with
    -max_target_seqs 2 to 60 it gives rows of subjects ranked down to 218th in the
    preliminary list (tested against the binary; a list of 2 x 20 + 50 lost 15 of its 425
    rows at -max_target_seqs 20)."""
    if comp_based_stats:
        return 2 * max(max_target_seqs, 500) + 50
    return max(min(2 * max_target_seqs, max_target_seqs + 50), 10)


def hit_list(work, setup) -> list[tuple]:
    """The preliminary hit list of a query (``work.prelim``: subject -> PRELIM_HSP rows):
    (order key, subject) of the subjects kept for the traceback, best first
    (Blast_HitListUpdate)."""
    if not work.prelim:
        return []
    first = int(setup.subjects.first_index)
    # every subject's best E-value and score at once (a query has thousands of subjects here,
    # chance hits mostly: a Python loop over them held the GIL the GPU threads wait for)
    subjects = list(work.prelim)
    counts = np.array([len(work.prelim[s]) for s in subjects], dtype=np.int64)
    scores = np.concatenate([work.prelim[s]["score"] for s in subjects]).astype(np.int64)
    ev = evalues_by_length(scores, np.repeat(setup.lengths[subjects], counts), work, setup)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    best_ev = np.minimum.reduceat(ev, starts).tolist()
    best_score = np.maximum.reduceat(scores, starts).tolist()
    lists = sorted((list_order_key(e, sc, first + s), s) for e, sc, s in zip(best_ev, best_score, subjects))
    return lists[: prelim_hitlist_size(setup.options.max_target_seqs, setup.options.comp_based_stats)]


def select_batch(batch: list[list[SubjectResult]], max_target_seqs: int, comp_based_stats: int = 0,
                 threads: int = 1) -> list[list[SubjectResult]]:
    """BLAST's subjects for output, per query of one batch of queries (``query_batches``):
    the preliminary hit list (its best ``prelim_hitlist_size`` subjects), traced back, sorted,
    cut to max_target_seqs.

    With composition-based statistics the subjects are redone, and which of them are kept
    depends on the batch's other queries and on BLAST+'s thread count ``threads``
    (``kappa.redo_selection``): each thread's heaps of a query are cut to max_target_seqs
    (s_FillResultsFromCompoHeaps), the threads' lists joined, sorted and cut again.

    Works on one search's results or on the union of database shards' results.
    """
    size = prelim_hitlist_size(max_target_seqs, comp_based_stats)
    lists = [sorted(results, key=lambda r: r.prelim_key)[:size] for results in batch]
    if not comp_based_stats:
        return [sorted(kept, key=lambda r: r.final_key)[:max_target_seqs] for kept in lists]
    from .kappa import redo_selection

    matches = [(q, r.prelim_key[0], r.heap_record, r) for q, kept in enumerate(lists) for r in kept]
    joined: list[list[SubjectResult]] = [[] for _ in batch]
    for per_query in redo_selection(matches, len(batch), max_target_seqs, threads):
        for q, items in enumerate(per_query):
            joined[q] += sorted(items, key=lambda r: r.final_key)[:max_target_seqs]
    return [sorted(kept, key=lambda r: r.final_key)[:max_target_seqs] for kept in joined]


QUERY_BATCH_RESIDUES = 10_000      # GetQueryBatchSize(eBlastp)


def query_batches(lengths) -> list[range]:
    """BLAST+'s batches of concatenated queries (CBlastInput::GetNextSeqBatch): queries are
    added to a batch until it holds at least 10,000 residues, the last one included."""
    batches, start, size = [], 0, 0
    for i, n in enumerate(lengths):
        size += int(n)
        if size >= QUERY_BATCH_RESIDUES:
            batches.append(range(start, i + 1))
            start, size = i + 1, 0
    if start < len(lengths):
        batches.append(range(start, len(lengths)))
    return batches


def output_batches(lengths, comp_based_stats: int) -> list[range]:
    """The queries whose subjects are chosen together (``select_batch``): with composition-based
    statistics BLAST+'s query batches (which subjects it keeps depends on the other queries of
    the batch), without them each query alone."""
    if comp_based_stats:
        return query_batches(lengths)
    return [range(q, q + 1) for q in range(len(lengths))]
